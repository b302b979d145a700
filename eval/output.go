package eval

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/chart"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/policy"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WriteJSON writes one object per (scenario, policy, seed): the `ecntune
// sim --json` summary plus "scenario" and "policy" (and eval's extras).
// "scenario" is the scenario's own name (Scenario.BaseName when set), as
// sim --json writes it; a --duration override shows in sim_time_s.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	runs := make([]Run, len(r.Runs))
	for i, x := range r.Runs {
		if x.baseName != "" {
			x.Scenario = x.baseName
		}
		runs[i] = x
	}
	return enc.Encode(runs)
}

// column is one metric of the tables and its heading in the wide table
// and, for the columns of the compact table (the text table's default;
// Result.Wide prints them all), in the compact one ("": not there).
type column struct {
	key, head, compact string
}

// textColumns are the table's metrics and headings; the collective
// iteration columns show only when some run completed an iteration.
var textColumns = []column{
	{"small_p99", "<100KB p99", "<100KB p99"},
	{"<10KB_p50", "<10KB p50", ""}, {"<10KB_p99", "p99", ""},
	{"10KB-100KB_p50", "10-100KB p50", ""}, {"10KB-100KB_p99", "p99", ""},
	{"100KB-1MB_p50", "100KB-1MB p50", ""}, {"100KB-1MB_p99", "p99", ""},
	{">=1MB_p50", ">=1MB p50", ""}, {">=1MB_p99", "p99", ">=1MB p99"},
	{"large_goodput_gbps", "large Gb/s", "large Gb/s"}, {"utilisation", "util", ""}, {"goodput_gbps", "goodput Gb/s", "goodput Gb/s"},
	{"pfc_paused_us", "pause µs", "pause µs"}, {"drops", "drops", "drops"}, {"ecn_mark_rate", "mark rate", "mark rate"},
	{"iter_p50_us", "iter p50 µs", "iter p50 µs"}, {"iter_p99_us", "iter p99 µs", "iter p99 µs"},
}

// row is an aggregate's table row: the policy (with the setting static:best
// chose) and textColumns' metrics, for the text and the HTML report.
func (a *Aggregate) row(cols []column) []string {
	name := a.Policy
	if a.Chosen != "" {
		name += " (" + shortSetting(a.Chosen) + ")"
	}
	row := []string{name}
	for _, c := range cols {
		row = append(row, a.Metrics[c.key].String())
	}
	return row
}

// columns are the table columns of r: textColumns (the compact ones
// unless wide), less the collective iteration ones when no run of r
// completed a collective iteration.
func (r *Result) columns(wide bool) []column {
	coll := false
	for _, a := range r.Aggregates {
		coll = coll || a.Metrics["iter_p99_us"].Mean > 0
	}
	var out []column
	for _, c := range textColumns {
		if !coll && strings.HasPrefix(c.key, "iter_") {
			continue
		}
		if wide {
			out = append(out, c)
		} else if c.compact != "" {
			out = append(out, column{key: c.key, head: c.compact, compact: c.compact})
		}
	}
	return out
}

// WriteText prints, per scenario, one row per policy: FCT slowdown
// p50/p99 per bucket, large-flow goodput, utilisation, goodput, PFC pause
// time, drops, ECN mark rate and, where some run completed a collective
// iteration, the collective iteration time p50/p99, each as mean±95% CI
// over seeds.
func (r *Result) WriteText(w io.Writer) error {
	for i, sc := range r.Scenarios {
		if i > 0 {
			fmt.Fprintln(w)
		}
		n := 0
		if a := r.AggregateOf(sc, r.Policies[0]); a != nil {
			n = len(a.Seeds)
		}
		if n == 1 {
			fmt.Fprintf(w, "scenario %s (1 seed: FCT slowdown, no confidence interval)\n", sc)
		} else {
			fmt.Fprintf(w, "scenario %s (%d seeds: FCT slowdown, mean±95%% CI)\n", sc, n)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		head := []string{"policy"}
		cols := r.columns(r.Wide)
		for _, c := range cols {
			head = append(head, c.head)
		}
		fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
		rows := r.tableRows(sc, cols)
		for _, row := range rows {
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if hasFewFlows(rows) {
			writeWrapped(w, FewFlowsNote)
		}
		if err := r.writeLoopText(w, sc); err != nil {
			return err
		}
		for _, p := range r.Policies {
			for _, run := range r.RunsOf(sc, p) {
				if run.HeldForInterval > 0 {
					writeWrapped(w, fmt.Sprintf("WARNING: %s held %d decisions (seed %d): %s; choose --interval inside that range",
						p, run.HeldForInterval, run.Seed, run.heldWhy))
					break
				}
			}
		}
		if r.AggregateOf(sc, Oracle) != nil {
			fmt.Fprintf(w, "%s: of the presets and %d catalogue settings (cat KMIN/KMAX/PMAX at 100G, scaled per port), the one with\n"+
				"  the lowest mean small-flow p99 among those with no drop and a mean large-flow goodput within 5%% of the best one's,\n"+
				"  chosen once per scenario over all seeds; a preset that gives up more goodput can have a lower p99.\n", Oracle, r.catalogueSettings())
		}
	}
	return r.writeComparisons(w)
}

// tableRows are sc's table rows in policy order (Aggregate.row), and the
// best preset the comparisons speak of as a row of its own where it was
// not a policy, named "(best preset)": for the text and HTML tables.
func (r *Result) tableRows(sc string, cols []column) [][]string {
	var rows [][]string
	listed := map[string]bool{}
	for _, p := range r.Policies {
		a := r.AggregateOf(sc, p)
		if a == nil {
			continue
		}
		listed[p] = true
		rows = append(rows, a.row(cols))
	}
	if bp := r.bestPreset(sc); bp != "" && !listed[bp] {
		a := aggregate(sc, bp, r.candidateRuns(sc, bp))
		a.Policy = bp + " (best preset)"
		rows = append(rows, a.row(cols))
	}
	return rows
}

// hasFewFlows reports whether a table row has a p99 marked FewFlowsMark.
func hasFewFlows(rows [][]string) bool {
	for _, row := range rows {
		for _, c := range row[1:] {
			if strings.HasSuffix(c, FewFlowsMark) {
				return true
			}
		}
	}
	return false
}

// loopHeads are the columns of the loop table (loopRows).
var loopHeads = []string{"policy", "intervals", "changes per queue per 100 intervals", "after", "flaps per run",
	"fallbacks per run", "rollbacks per run", "repairs (of own) per run", "would-change after", "idle held"}

// loopRows are, for the policies of sc that are not fixed settings, how
// often they changed the queues' settings (LoopFigures, means over
// seeds), under loopHeads; none when no policy of sc has loop figures.
func (r *Result) loopRows(sc string) [][]string {
	type row struct {
		p string
		f []LoopFigures
	}
	var rows []row
	for _, p := range r.Policies {
		if isFixed(p) {
			continue
		}
		var fs []LoopFigures
		for _, run := range r.RunsOf(sc, p) {
			if run.Loop != nil {
				fs = append(fs, *run.Loop)
			}
		}
		if len(fs) > 0 {
			rows = append(rows, row{p, fs})
		}
	}
	var out [][]string
	for _, x := range rows {
		mean := func(v func(LoopFigures) float64) float64 {
			t := 0.0
			for _, f := range x.f {
				t += v(f)
			}
			return t / float64(len(x.f))
		}
		idle := "–"
		if n := mean(func(f LoopFigures) float64 { return float64(f.IdleIntervals) }); n > 0 {
			idle = fmt.Sprintf("%.0f%%", 100*mean(func(f LoopFigures) float64 { return float64(f.IdleHeld) })/n)
		}
		would := "–"
		if x.f[0].Rejections != nil {
			would = fmt.Sprintf("%.2f", mean(func(f LoopFigures) float64 { return f.WouldChangesPerQueuePer100After }))
		}
		out = append(out, []string{x.p,
			fmt.Sprintf("%.0f", mean(func(f LoopFigures) float64 { return float64(f.Intervals) })),
			fmt.Sprintf("%.2f", mean(func(f LoopFigures) float64 { return f.ChangesPerQueuePer100 })),
			fmt.Sprintf("%.2f", mean(func(f LoopFigures) float64 { return f.ChangesPerQueuePer100After })),
			fmt.Sprintf("%.1f", mean(func(f LoopFigures) float64 { return float64(f.Flaps) })),
			fmt.Sprintf("%.1f", mean(func(f LoopFigures) float64 { return float64(f.Fallbacks) })),
			fmt.Sprintf("%.1f", mean(func(f LoopFigures) float64 { return float64(f.Rollbacks) })),
			fmt.Sprintf("%.1f (%.1f)", mean(func(f LoopFigures) float64 { return float64(f.Repairs) }),
				mean(func(f LoopFigures) float64 { return float64(f.RepairsOfOwn) })),
			would, idle})
	}
	return out
}

// loopTableNote says what loopRows' figures are.
const loopTableNote = "how often settings changed (means over seeds): changes and would-change per queue per 100 intervals, \"after\" past the first %d intervals; flaps, fallbacks, rollbacks and repairs a count per run"

// writeLoopText prints, for the policies of sc that are not fixed
// settings, how often they changed the queues' settings (LoopFigures,
// means over seeds): the loop as deployed shows its guard's work too.
func (r *Result) writeLoopText(w io.Writer, sc string) error {
	rows := r.loopRows(sc)
	if len(rows) == 0 {
		return nil
	}
	writeWrapped(w, fmt.Sprintf(loopTableNote, SettleIntervals))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tintervals\tchanges\tafter\tflaps\tfallbacks\trollbacks\trepairs (of own)\twould-change after\tidle held\t")
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// bestPreset is the best vendor preset of scenario sc by static:best's
// objective ("" when no preset ran).
func (r *Result) bestPreset(sc string) string {
	all := r.allRuns()
	byCand, fixed := group(all, sc, isFixed)
	var order []string
	for _, c := range fixed {
		if isPreset(c) {
			order = append(order, c)
		}
	}
	if len(order) == 0 {
		return ""
	}
	return PickOracle(order, byCand)
}

// candidateRuns are the runs of a fixed setting on sc, as a policy or as
// a candidate of static:best.
func (r *Result) candidateRuns(sc, spec string) []Run {
	if rs := r.RunsOf(sc, spec); len(rs) > 0 {
		return rs
	}
	var out []Run
	for _, x := range r.OracleRuns {
		if x.Scenario == sc && x.Policy == spec {
			out = append(out, x)
		}
	}
	return out
}

// cells are a Comparison's columns in the HTML report.
func (c Comparison) cells() []string {
	vs, at := "–", "–"
	if c.VsOracle > 0 {
		vs = fmt.Sprintf("%.2f (%s)", c.VsOracle, c.Oracle)
		at = "none keeps it"
	}
	if c.VsAtGoodput > 0 {
		at = fmt.Sprintf("%.2f (%s)", c.VsAtGoodput, c.AtGoodput)
	}
	fr := "–"
	switch {
	case c.FrontierRatio > 0:
		fr = fmt.Sprintf("%.2f (%s)", c.FrontierRatio, c.frontierText())
	case c.NoSmallFlowFigure:
		fr = "none (no small flow finished)"
	case c.Beyond():
		fr = fmt.Sprintf("beyond them: none of the %d fixed settings run keeps %.0f%% of its large-flow goodput", c.FixedRun, 100*FrontierGoodput)
	case c.FixedRun > 0:
		fr = fmt.Sprintf("none (it dropped %d packets; no fixed setting keeps %.0f%% of its goodput without drops)", c.Drops, 100*FrontierGoodput)
	}
	cut := fmt.Sprintf("%.1f%% lower", 100*c.SmallP99Cut)
	switch {
	case c.NoSmallP99Cut:
		cut = "– (no small flow finished)"
	case c.SmallP99Cut < 0:
		cut = fmt.Sprintf("%.1f%% higher (worse)", -100*c.SmallP99Cut)
	}
	return []string{c.Policy, c.BestPreset, cut, c.PairedVsPreset.String(),
		fmt.Sprintf("%.1f%%", 100*c.GoodputRatio), fmt.Sprint(c.Drops), vs, c.PairedVsOracle.String(), at, fr, c.PairedVsFrontier.String()}
}

// FrontierName is what c's frontier ratio is against, short: a setting
// ("cat 387KB/774KB/1%"), or the line between two ("0.37·cat
// 232KB/464KB/0.3% + 0.63·cat 299.5KB/599KB/1%"; Comparison.Frontier).
func (c Comparison) FrontierName() string {
	if c.FrontierBelow != "" {
		return fmt.Sprintf("%.2f·%s + %.2f·%s", c.FrontierBelowShare, shortSetting(c.FrontierBelow), 1-c.FrontierBelowShare, shortSetting(c.Frontier))
	}
	return shortSetting(c.Frontier)
}

// frontierText names what c's frontier ratio is against (Comparison.Frontier).
func (c Comparison) frontierText() string {
	if c.FrontierBelow != "" {
		return "the frontier at its large-flow goodput, the line " + c.FrontierName()
	}
	if c.FrontierShape == FrontierStep {
		return fmt.Sprintf("%s, the best fixed setting that keeps %.0f%% of its large-flow goodput", shortSetting(c.Frontier), 100*FrontierGoodput)
	}
	return shortSetting(c.Frontier) + ", the frontier at its large-flow goodput"
}

// String is "1.15 [0.98, 1.35]", or "–" for the zero Ratio.
func (q Ratio) String() string {
	if q.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f [%.2f, %.2f]", q.Mean, q.Lo, q.Hi)
}

// comparisons are Compare's results for every policy that is neither a
// preset nor static:best, in policy order.
func (r *Result) comparisons() []Comparison {
	var out []Comparison
	for _, p := range r.Policies {
		if !isPreset(p) && p != Oracle {
			out = append(out, r.Compare(p)...)
		}
	}
	return out
}

// fixedSettings is how many fixed settings the frontier and static:best
// choose from (Result.FixedSettings; a Result built by hand: the default
// grid's with the presets).
func (r *Result) fixedSettings() int {
	if r.FixedSettings > 0 {
		return r.FixedSettings
	}
	return len(oracleCandidates(DefaultOracleGrid, r.PmaxStep))
}

// noFrontierNote says what a frontier ratio reads without --frontier.
func (r *Result) noFrontierNote() string {
	return "  without --frontier (or static:best) a frontier ratio reads only the fixed settings given as policies, not the\n" +
		fmt.Sprintf("  frontier of fixed settings: run --frontier for the frontier's %d", r.fixedSettings())
}

// catalogueSettings is how many of them are catalogue points.
func (r *Result) catalogueSettings() int { return r.fixedSettings() - len(policy.PresetNames()) }

// writeComparisons prints, for every policy that is neither a preset nor
// static:best, how it compares with the best preset, static:best and the
// frontier of fixed settings: a few short lines each.
func (r *Result) writeComparisons(w io.Writer) error {
	var notes []string
	for _, sc := range r.Scenarios {
		if !r.HasFrontier(sc) {
			// the ratio is then against the presets given as policies,
			// not the frontier (it said "beyond the frontier" of one)
			notes = append(notes, r.noFrontierNote())
			break
		}
	}
	writeComparisonsOf(w, r.comparisons(), notes...)
	return nil
}

// PmaxStepNote says that the decisions ran at the Pmax a switch of
// resolution step holds (Options.PmaxStep).
func PmaxStepNote(step float64) string {
	return fmt.Sprintf("every decision of the policies and fixed settings ran at the Pmax a switch of %s resolution holds, as the agent's guard puts it (pmax-step)", env.FormatPmax(step))
}

// bestPresetRule says what "the best preset" of a comparison is.
const bestPresetRule = "  the best preset: of the vendor presets run, the one with the lowest mean small-flow p99 among those with no\n" +
	"  drop and within 5% of the best mean large-flow goodput (the rule of static:best, over presets only)"

// writeComparisonsOf prints cs under a heading that explains them.
func writeComparisonsOf(w io.Writer, cs []Comparison, notes ...string) {
	for i, c := range cs {
		if i == 0 {
			fmt.Fprintln(w, "\ncomparisons (means over seeds; [95% CI] of the per-seed ratio, same flows on each seed):")
			fmt.Fprintln(w, bestPresetRule)
			if c.PmaxStep > 0 {
				fmt.Fprintln(w, "  "+PmaxStepNote(c.PmaxStep))
			}
			for _, n := range notes {
				fmt.Fprintln(w, n)
			}
		}
		c.writeText(w)
	}
}

// writeText prints one comparison in a few short lines.
func (c Comparison) writeText(w io.Writer) {
	fmt.Fprintf(w, "  %s on %s\n", c.Policy, c.Scenario)
	cut := fmt.Sprintf("%.1f%% lower", 100*c.SmallP99Cut)
	switch {
	case c.NoSmallP99Cut:
		cut = "none (no small flow finished, for it or the preset)"
	case c.SmallP99Cut < 0:
		cut = fmt.Sprintf("%.1f%% HIGHER (worse)", -100*c.SmallP99Cut)
	}
	line := fmt.Sprintf("    vs the best preset %s: small-flow p99 %s", c.BestPreset, cut)
	if c.PairedVsPreset.N > 0 {
		line += fmt.Sprintf(" (ratio %s)", c.PairedVsPreset)
	}
	line += fmt.Sprintf(", large-flow goodput %.1f%% of its, drops %d", 100*c.GoodputRatio, c.Drops)
	if c.IterRatio > 0 {
		line += fmt.Sprintf(", collective iteration p99 x%.3f [%.2f, %.2f] over the %s in which both completed one (it did in %d, the preset in %d)",
			c.IterRatio, c.PairedIter.Lo, c.PairedIter.Hi, units.Count(c.PairedIter.N, "seed"), c.IterSeeds, c.PresetIterSeeds)
	}
	writeWrapped(w, line)
	if c.VsOracle > 0 {
		line = fmt.Sprintf("    vs static:best (%s): small-flow p99 x%.2f", shortSetting(c.Oracle), c.VsOracle)
		if c.PairedVsOracle.N > 0 {
			line += fmt.Sprintf(" (ratio %s)", c.PairedVsOracle)
		}
		writeWrapped(w, line)
	}
	if c.VsAtGoodput > 0 {
		writeWrapped(w, fmt.Sprintf("    vs the best fixed setting at its full large-flow goodput (%s): small-flow p99 x%.2f", shortSetting(c.AtGoodput), c.VsAtGoodput))
	}
	defer c.writeVsBare(w)
	switch {
	case c.FrontierRatio > 0:
		line = fmt.Sprintf("    frontier ratio %.2f", c.FrontierRatio)
		if c.PairedVsFrontier.N > 0 {
			line += fmt.Sprintf(" (ratio %s)", c.PairedVsFrontier)
		}
		line += ": vs " + c.frontierText() + " (below 1: beyond the frontier)"
		writeWrapped(w, line)
		if d := c.VsFrontierIterations; d.N > 0 {
			line = fmt.Sprintf("    collective iterations %.1f a run against %.1f of %s (difference %+.1f [%+.1f, %+.1f] over %s)",
				c.Iterations, c.FrontierIterations, shortSetting(c.Frontier), d.Mean, d.Lo, d.Hi, units.Count(d.N, "seed"))
			if g := c.VsFrontierCollectiveGoodput; g.N > 0 {
				line += fmt.Sprintf(", collective flows' goodput x%.2f [%.2f, %.2f] of its", g.Mean, g.Lo, g.Hi)
			}
			if k := c.VsFrontierCollectives; k.Starved > 0 || k.Fed > 0 {
				line += fmt.Sprintf(", no collective flow finished on %s on which that setting's did (the reverse on %d)", units.Count(k.Starved, "seed"), k.Fed)
			}
			switch fewer, slower := c.FewerIterations(), c.SlowerCollectives(); {
			case fewer && slower:
				line += ": FEWER and SLOWER, behind the frontier in what its ratio does not count"
			case fewer:
				line += ": FEWER, behind the frontier in what its ratio does not count"
			case slower:
				line += fmt.Sprintf(": SLOWER (below %.0f%%), behind the frontier in what its ratio does not count", 100*FrontierGoodput)
			case c.MoreIterations():
				line += ": MORE, ahead of that setting in what its ratio does not count"
			}
			writeWrapped(w, line)
		}
	case c.NoSmallFlowFigure:
		writeWrapped(w, "    frontier ratio: none (no small flow finished, for the policy or the best fixed setting that keeps its goodput, or 98% of it)")
	case c.Beyond():
		writeWrapped(w, fmt.Sprintf("    frontier ratio: none of the %d fixed settings run keeps %.0f%% of its large-flow goodput (beyond them)",
			c.FixedRun, 100*FrontierGoodput))
	case c.FixedRun > 0:
		writeWrapped(w, fmt.Sprintf("    frontier ratio: none (it dropped %d packets, and none of the %d fixed settings run keeps %.0f%% of its large-flow goodput without drops)",
			c.Drops, c.FixedRun, 100*FrontierGoodput))
	}
}

// writeVsBare prints a closed loop's runs against its bare policy's, seed
// by seed (Comparison.Bare), where both were run.
func (c Comparison) writeVsBare(w io.Writer) {
	if c.Bare == "" {
		return
	}
	line := fmt.Sprintf("    vs its bare policy %s, seed by seed: small-flow p99 %s, large-flow goodput %s", c.Bare, vsBare(c.VsBareP99), vsBare(c.VsBareGoodput))
	writeWrapped(w, line)
}

func vsBare(r Ratio) string {
	if r.N == 0 {
		return "none (fewer than two seeds with the figure on both)"
	}
	return fmt.Sprintf("x%.3f [%.3f, %.3f]", r.Mean, r.Lo, r.Hi)
}

// textWidth is the width eval's text output keeps to (the compact table
// and the comparisons; --wide tables may be wider).
const textWidth = 120

// writeWrapped prints line, broken after ", " or ": " outside brackets
// into lines of at most textWidth characters where it can be, continued
// 6 spaces in.
func writeWrapped(w io.Writer, line string) {
	for utf8.RuneCountInString(line) > textWidth {
		cut, depth := -1, 0
		for i := 0; i+2 <= len(line) && utf8.RuneCountInString(line[:i+2]) <= textWidth; i++ {
			switch line[i] {
			case '(', '[':
				depth++
			case ')', ']':
				depth--
			case ',', ':':
				if depth == 0 && line[i+1] == ' ' && strings.TrimSpace(line[:i]) != "" {
					cut = i + 1
				}
			}
		}
		if cut < 0 {
			break
		}
		fmt.Fprintln(w, line[:cut])
		line = "      " + line[cut+1:]
	}
	fmt.Fprintln(w, line)
}

// catalogueSetting matches the spec of a catalogue setting of static:best.
var catalogueSetting = regexp.MustCompile(`^catalogue:kmin (\S+) kmax (\S+) pmax (\S+) @100G$`)

// shortSetting is a fixed setting's name for the text tables:
// "catalogue:kmin 900KB kmax 1MB pmax 1% @100G" is "cat 900KB/1MB/1%"
// (at 100G, scaled per port; rounded as the catalogue names it); presets
// and anything else keep their name.
func shortSetting(spec string) string {
	if m := catalogueSetting.FindStringSubmatch(spec); m != nil {
		return "cat " + m[1] + "/" + m[2] + "/" + m[3]
	}
	return spec
}

// PlotCDF draws the CDF of FCT slowdown of one scenario, one line per
// policy (flows of every seed pooled), as a PNG. A scenario not in the
// result is an error; one where no flow finished gives an empty plot.
func (r *Result) PlotCDF(w io.Writer, scenario string) error {
	if !slices.Contains(r.Scenarios, scenario) {
		return fmt.Errorf("eval: plot: no scenario %q in the result", scenario)
	}
	p := plot.New()
	p.Title.Text = "FCT slowdown CDF: " + scenario
	p.X.Label.Text = "FCT slowdown (× ideal FCT, log scale)"
	p.Y.Label.Text = "fraction of flows"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = logTicks{}
	p.Y.Tick.Marker = fractionTicks{}
	p.Add(plotter.NewGrid())
	lines := 0
	cols := chart.SeriesColors(r.Policies)
	for i, pol := range r.Policies {
		var all []float64
		for _, run := range r.RunsOf(scenario, pol) {
			all = append(all, run.slowdowns...)
		}
		if len(all) == 0 {
			continue
		}
		sort.Float64s(all)
		pts := make(plotter.XYs, 0, min(len(all), 400))
		step := max(1, len(all)/400)
		for k := 0; k < len(all); k += step {
			pts = append(pts, plotter.XY{X: all[k], Y: float64(k+1) / float64(len(all))})
		}
		pts = append(pts, plotter.XY{X: all[len(all)-1], Y: 1})
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = cols[pol]
		l.Dashes = plotutil.Dashes(i / 2)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(pol, l)
		lines++
	}
	if lines == 0 { // a log axis needs a positive range
		p.Title.Text += " (no flow finished)"
		p.X.Min, p.X.Max = 1, 10
		p.Y.Min, p.Y.Max = 0, 1
	}
	return writePNG(w, p, 7, 4.5)
}

// HasFrontier reports whether r ran fixed settings beyond the policies on
// scenario (static:best or Options.Frontier), so that PlotFrontier has a
// frontier to draw.
func (r *Result) HasFrontier(scenario string) bool {
	for _, x := range r.OracleRuns {
		if x.Scenario == scenario {
			return true
		}
	}
	return false
}

// PlotFrontier draws one scenario's trade-off as a PNG: every fixed
// setting that ran (presets and catalogue grid points; mean over seeds) as
// a grey point at (large-flow goodput, small-flow p99), the frontier they
// draw (the lowest p99 at each goodput or more) as a line, each policy
// as a coloured point with its 95% confidence intervals on both axes, and
// a policy run at several preferences (builtin:prefer=P) as a line
// through its points in preference order.
// Below and to the right of the line is beyond every fixed setting.
// Presets are labelled by name; the legend is beside the plot.
func (r *Result) PlotFrontier(w io.Writer, scenario string) error {
	p, err := r.frontierPlot(scenario)
	if err != nil {
		return err
	}
	return writePNG(w, p, 8, 5)
}

// frontierPlot is PlotFrontier's plot.
func (r *Result) frontierPlot(scenario string) (*plot.Plot, error) {
	if !slices.Contains(r.Scenarios, scenario) {
		return nil, fmt.Errorf("eval: plot: no scenario %q in the result", scenario)
	}
	all := r.allRuns()
	byCand, fixed := group(all, scenario, isFixed)
	p := plot.New()
	p.Title.Text = "small-flow p99 vs large-flow goodput: " + scenario
	p.X.Label.Text = "large-flow goodput (Gb/s)"
	p.Y.Label.Text = "small-flow (<100 KB) p99 slowdown (× ideal FCT)"
	var pts, points plotter.XYs // every fixed setting; the frontier's points (frontierAt's)
	var names []string
	for _, c := range fixed {
		rs := byCand[c]
		xy := plotter.XY{X: mean(rs, largeGoodput), Y: SmallP99Mean(rs)}
		pts = append(pts, xy)
		if !anyDrops(rs) && xy.Y > 0 {
			points = append(points, xy)
		}
		names = append(names, "")
		if isPreset(c) {
			names[len(names)-1] = strings.TrimPrefix(c, policy.StaticPrefix)
		}
	}
	if err := addFixedFrontier(p, pts, names, points); err != nil {
		return nil, err
	}
	if err := r.addPolicyPoints(p, scenario); err != nil {
		return nil, err
	}
	if err := r.addPreferenceSweeps(p, scenario); err != nil {
		return nil, err
	}
	if r.seeds(scenario) > 1 {
		p.Title.Text += " (means, bars: 95% CI over seeds)"
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Add(plotter.NewGrid())
	if slices.ContainsFunc(names, func(n string) bool { return n != "" }) {
		p.X.Max += 0.12 * (p.X.Max - p.X.Min) // room for the names at the right
	}
	return p, nil
}

// addFixedFrontier draws the fixed settings' points pts in grey, each
// with its name when it has one (the presets), and, through two or more
// of points (those that drop nothing and have a small-flow p99), the
// frontier as a dashed line: the line the frontier ratio reads
// (Comparison.Frontier, interpolated).
func addFixedFrontier(p *plot.Plot, pts plotter.XYs, names []string, points plotter.XYs) error {
	if len(pts) == 0 {
		return nil
	}
	if err := addPresetLabels(p, pts, names); err != nil {
		return err
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Color = color.Gray{Y: 140}
	sc.GlyphStyle.Radius = vg.Points(2.5)
	p.Add(sc)
	p.Legend.Add("fixed settings", sc)
	if fr := frontierLine(points); len(fr) > 1 {
		l, err := plotter.NewLine(fr)
		if err != nil {
			return err
		}
		l.Color = color.Gray{Y: 90}
		l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
		p.Add(l)
		p.Legend.Add("frontier", l)
	}
	return nil
}

// addPresetLabels writes each named point's name beside it.
func addPresetLabels(p *plot.Plot, pts plotter.XYs, names []string) error {
	var xyl plotter.XYLabels
	for i, n := range names {
		if n != "" {
			xyl.XYs = append(xyl.XYs, pts[i])
			xyl.Labels = append(xyl.Labels, n)
		}
	}
	if len(xyl.Labels) == 0 {
		return nil
	}
	l, err := plotter.NewLabels(xyl)
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font.Size = vg.Points(7)
		l.TextStyle[i].Color = color.Gray{Y: 70}
	}
	l.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(2)}
	p.Add(l)
	return nil
}

// addPolicyPoints draws every policy other than a catalogue setting (a
// preset asked for by name is one) as a point in its colour at its means
// on scenario, with 95% confidence bars on both axes when it ran on
// several seeds.
func (r *Result) addPolicyPoints(p *plot.Plot, scenario string) error {
	cols := chart.SeriesColors(r.Policies)
	for _, pol := range r.Policies {
		a := r.AggregateOf(scenario, pol)
		if a == nil || strings.HasPrefix(pol, cataloguePrefix) {
			continue
		}
		g, q := a.Metrics["large_goodput_gbps"], a.Metrics["small_p99"]
		pt := errPoints{{X: g.Mean, Y: q.Mean, xe: g.CI95, ye: q.CI95}}
		sc, err := plotter.NewScatter(pt)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color = cols[pol]
		sc.GlyphStyle.Radius = vg.Points(4)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(sc)
		p.Legend.Add(pol, sc)
		if g.N > 1 {
			xe, err := plotter.NewXErrorBars(pt)
			if err != nil {
				return err
			}
			ye, err := plotter.NewYErrorBars(pt)
			if err != nil {
				return err
			}
			xe.Color, ye.Color = cols[pol], cols[pol]
			p.Add(xe, ye)
		}
	}
	return nil
}

// addPreferenceSweeps draws a line in its colour through the points on
// scenario of each policy run at several preferences, in preference
// order.
func (r *Result) addPreferenceSweeps(p *plot.Plot, scenario string) error {
	cols := chart.SeriesColors(r.Policies)
	for _, sw := range preferenceSweeps(r.Policies) {
		var line plotter.XYs
		for _, m := range sw.members {
			if a := r.AggregateOf(scenario, m.policy); a != nil {
				line = append(line, plotter.XY{X: a.Metrics["large_goodput_gbps"].Mean, Y: a.Metrics["small_p99"].Mean})
			}
		}
		if len(line) < 2 {
			continue
		}
		l, err := plotter.NewLine(line)
		if err != nil {
			return err
		}
		l.Color = cols[r.Policies[sw.color]]
		l.Width = vg.Points(1)
		p.Add(l)
		p.Legend.Add(sw.base+" preference sweep", l)
	}
	return nil
}

// sweep is one policy at several operator preferences: base (e.g.
// "builtin" or "model:NAME"), its members in preference order, and the
// index in the policy list of the first, for its colour.
type sweep struct {
	base    string
	color   int
	members []sweepPoint
}

type sweepPoint struct {
	policy string
	pref   float64
}

// preferenceSweeps finds, among policies, each policy run at two or more
// preferences ("builtin:prefer=P", "model:NAME:prefer=P" or ",prefer=P"; the policy
// without the option is its preference 0).
func preferenceSweeps(policies []string) []sweep {
	idx := map[string]int{}
	var out []sweep
	for i, pol := range policies {
		base, p := pol, 0.0
		if sp, err := policy.ParseSpec(pol); err == nil && len(sp.Rules) == 0 && (sp.Kind == policy.KindBuiltin || sp.Kind == policy.KindModel) {
			base, p = policy.BuiltinSpec, sp.Preference
			if sp.Kind == policy.KindModel {
				base = policy.ModelPrefix + sp.Model
			}
		}
		k, ok := idx[base]
		if !ok {
			k = len(out)
			idx[base] = k
			out = append(out, sweep{base: base, color: i})
		}
		out[k].members = append(out[k].members, sweepPoint{policy: pol, pref: p})
	}
	out = slices.DeleteFunc(out, func(s sweep) bool { return len(s.members) < 2 })
	for _, s := range out {
		slices.SortStableFunc(s.members, func(a, b sweepPoint) int { return cmp.Compare(a.pref, b.pref) })
	}
	return out
}

// frontierLine is the frontier of pts (X goodput, Y p99) in goodput
// order: staircase's, the points the frontier ratio's line runs through.
func frontierLine(pts plotter.XYs) plotter.XYs {
	var out plotter.XYs
	for _, i := range staircase(len(pts), func(i int) (float64, float64) { return pts[i].X, pts[i].Y }) {
		out = append(out, pts[i])
	}
	return out
}

// errPoints are points with symmetric errors on both axes.
type errPoints []struct {
	X, Y, xe, ye float64
}

func (e errPoints) Len() int                        { return len(e) }
func (e errPoints) XY(i int) (float64, float64)     { return e[i].X, e[i].Y }
func (e errPoints) XError(i int) (float64, float64) { return e[i].xe, e[i].xe }
func (e errPoints) YError(i int) (float64, float64) { return e[i].ye, e[i].ye }

// PlotBuckets draws, for one scenario, grouped bars of the p99 FCT
// slowdown per flow-size bucket (mean over seeds), one bar per policy. A
// scenario not in the result is an error.
func (r *Result) PlotBuckets(w io.Writer, scenario string) error {
	if !slices.Contains(r.Scenarios, scenario) {
		return fmt.Errorf("eval: plot: no scenario %q in the result", scenario)
	}
	keys := []string{"<10KB_p99", "10KB-100KB_p99", "100KB-1MB_p99", ">=1MB_p99"}
	names := []string{"<10KB", "10-100KB", "100KB-1MB", ">=1MB"}
	p := plot.New()
	p.Title.Text = "p99 FCT slowdown per flow size: " + scenario
	p.X.Label.Text = "flow size"
	p.Y.Label.Text = "p99 FCT slowdown (× ideal FCT)"
	n := len(r.Policies)
	width := vg.Points(float64(min(18, 90/max(1, n))))
	top := 0.0
	cols := chart.SeriesColors(r.Policies)
	for i, pol := range r.Policies {
		a := r.AggregateOf(scenario, pol)
		if a == nil {
			continue
		}
		vals := make(plotter.Values, len(keys))
		errs := make([]float64, len(keys))
		for k, key := range keys {
			vals[k], errs[k] = a.Metrics[key].Mean, a.Metrics[key].CI95
			top = max(top, vals[k]+errs[k])
		}
		b, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return err
		}
		b.Color = cols[pol]
		b.LineStyle.Width = 0
		b.Offset = vg.Length(float64(i)-float64(n-1)/2) * width
		p.Add(b, &barErrors{vals: vals, errs: errs, offset: b.Offset})
		p.Legend.Add(pol, b)
	}
	if r.seeds(scenario) > 1 {
		p.Title.Text += " (mean, bars: 95% CI over seeds)"
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(keys))-0.5
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Y.Min = 0
	p.Y.Tick.Marker = plainTicks{}
	p.Y.Max = top * 1.1
	return writePNG(w, p, 8, 5)
}

// seeds is the number of seeds of scenario's runs.
func (r *Result) seeds(scenario string) int {
	for _, p := range r.Policies {
		if a := r.AggregateOf(scenario, p); a != nil {
			return len(a.Seeds)
		}
	}
	return 0
}

// barErrors draws a confidence interval on each bar of a bar chart whose
// bars sit offset from their category.
type barErrors struct {
	vals, errs []float64
	offset     vg.Length
}

func (e *barErrors) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	st := draw.LineStyle{Color: color.Black, Width: vg.Points(1)}
	cap := vg.Points(3)
	for k, v := range e.vals {
		if e.errs[k] <= 0 {
			continue
		}
		x := trX(float64(k)) + e.offset
		lo, hi := trY(math.Max(0, v-e.errs[k])), trY(v+e.errs[k])
		c.StrokeLine2(st, x, lo, x, hi)
		c.StrokeLine2(st, x-cap, lo, x+cap, lo)
		c.StrokeLine2(st, x-cap, hi, x+cap, hi)
	}
}

func (e *barErrors) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmax = float64(len(e.vals) - 1)
	for k, v := range e.vals {
		ymax = math.Max(ymax, v+e.errs[k])
	}
	return 0, xmax, 0, ymax
}

// logTicks labels a log axis at 1, 2 and 5 times the powers of ten in its
// range (plot.LogTicks labels powers of ten only, which a slowdown axis
// from 1 to 30 hardly has), with minor ticks at the other integers.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	if !(lo > 0) || !(hi > lo) {
		return out
	}
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		base := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * base
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			out = append(out, t)
		}
	}
	return out
}

// fractionTicks labels a [0, 1] axis every 0.1, with minor ticks every
// 0.05.
// plainTicks are gonum's default linear ticks with about twice as many
// labelled values, labelled without trailing zeros (25, not 25.00).
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	var major []float64
	for _, t := range ts {
		if t.Label != "" {
			major = append(major, t.Value)
		}
	}
	if len(major) >= 2 && len(major) < 6 {
		// Halve the step: label the midpoints too.
		step := (major[1] - major[0]) / 2
		first := math.Ceil(lo/step) * step
		ts = ts[:0]
		for v := first; v <= hi+step*1e-9; v += step {
			ts = append(ts, plot.Tick{Value: v})
		}
	}
	for i := range ts {
		if ts[i].Label != "" || len(major) >= 2 && len(major) < 6 {
			ts[i].Label = strconv.FormatFloat(roundTick(ts[i].Value), 'g', 6, 64)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Value < ts[j].Value })
	return ts
}

// roundTick drops the float noise of a tick's value (0.30000000000000004).
func roundTick(v float64) float64 { return math.Round(v*1e9) / 1e9 }

type fractionTicks struct{}

func (fractionTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for i := 0; i <= 20; i++ {
		v := float64(i) / 20
		if v < lo-1e-9 || v > hi+1e-9 {
			continue
		}
		t := plot.Tick{Value: v}
		if i%2 == 0 {
			t.Label = strconv.FormatFloat(v, 'f', 1, 64)
		}
		out = append(out, t)
	}
	return out
}

// writePNG draws p as a PNG of wIn × hIn inches, its legend beside the
// data (chart.WritePlot).
func writePNG(w io.Writer, p *plot.Plot, wIn, hIn float64) error {
	p.BackgroundColor = color.White
	return chart.WritePlot(w, chart.PNG, p, vg.Length(wIn)*vg.Inch, vg.Length(hIn)*vg.Inch)
}

var reportTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>ecntune eval</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:90%}
td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}th{background:#eee}td:first-child{text-align:left}</style>
</head><body>
<h1>ecntune evaluation</h1>
<p>{{.SeedsText}} per scenario and policy; {{if eq .Seeds 1}}figures are that seed's (no confidence interval from one seed).{{else}}figures are mean ± 95% confidence interval over seeds (Student's t).{{end}}{{with .PmaxNote}} {{.}}{{end}}
static:best is the fixed setting (preset or catalogue entry) with the lowest small-flow (&lt;100 KB) p99 slowdown
among those with no drops and large-flow goodput within 5% of the best, chosen per scenario in hindsight.</p>
{{range .Scenarios}}<h2>{{.Name}}</h2>
<table><tr><th>policy</th>{{range $.Heads}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{if .FewNote}}<p>{{.FewNote}}</p>{{end}}
{{if .Loop}}<p>{{.LoopNote}}:</p>
<table><tr>{{range $.LoopHeads}}<th>{{.}}</th>{{end}}</tr>
{{range .Loop}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{if .Cmp}}<p>Against the best vendor preset (by the static:best rule among presets), static:best, and the best fixed
setting that keeps the policy's large-flow goodput (means over seeds; a ratio below 1 is a lower p99 than the fixed setting's).
"Per seed" columns are the geometric mean of the seed-by-seed ratios (same flows on each seed) [95% CI]:</p>
<table><tr>{{range $.CmpHeads}}<th>{{.}}</th>{{end}}</tr>
{{range .Cmp}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
<p><img src="data:image/png;base64,{{.CDF}}" alt="slowdown CDF"> <img src="data:image/png;base64,{{.Bars}}" alt="p99 per bucket">{{if .Frontier}} <img src="data:image/png;base64,{{.Frontier}}" alt="frontier of fixed settings">{{end}}</p>
{{if .Heat}}<h3>Where and when the queues built up (the 20 busiest lossless queues, first seed)</h3>
<p>{{range .Heat}}<img src="data:image/png;base64,{{.PNG}}" alt="queue heatmap of {{.Policy}}"> {{end}}</p>{{end}}
{{end}}</body></html>
`))

// heat is one policy's queue heatmap in the HTML report.
type heat struct{ Policy, PNG string }

// heatmaps draws the queue depth heatmap of every traced run of sc, all
// on one colour scale (rounded up to a stable step), so that the
// policies compare.
func (r *Result) heatmaps(sc string) ([]heat, error) {
	hs, pols := r.depthHeatmaps(sc)
	var out []heat
	for i, h := range hs {
		var b bytes.Buffer
		height := max(4.5*vg.Inch, min(1.2*vg.Inch+vg.Length(len(h.Rows))*0.22*vg.Inch, 8*vg.Inch))
		if err := h.Write(&b, chart.PNG, 8*vg.Inch, height); err != nil {
			return nil, err
		}
		out = append(out, heat{Policy: pols[i], PNG: base64.StdEncoding.EncodeToString(b.Bytes())})
	}
	return out, nil
}

// depthHeatmaps are the queue depth heatmaps of sc's traced runs, on
// one scale, and their policies.
func (r *Result) depthHeatmaps(sc string) ([]*chart.Heatmap, []string) {
	var hs []*chart.Heatmap
	var pols []string
	for _, p := range r.Policies {
		for _, run := range r.RunsOf(sc, p) {
			if run.trace == nil {
				continue
			}
			h, err := run.trace.TimeHeatmap("depth", 20)
			if err != nil {
				continue // no lossless queue
			}
			h.Title = fmt.Sprintf("%s, seed %d: queue depth at each decision", p, run.Seed)
			hs, pols = append(hs, &h), append(pols, p)
		}
	}
	chart.ShareScale(hs...)
	return hs, pols
}

// WriteHTML writes a self-contained report: per scenario the table of
// WriteText and both plots, embedded.

func (r *Result) WriteHTML(w io.Writer) error {
	type scen struct {
		Name                string
		Rows, Cmp, Loop     [][]string
		LoopNote, FewNote   string
		CDF, Bars, Frontier string
		Heat                []heat
	}
	data := struct {
		Seeds     int
		SeedsText string
		PmaxNote  string
		Heads     []string
		CmpHeads  []string
		LoopHeads []string
		Scenarios []scen
	}{CmpHeads: []string{"policy", "best preset", "small p99 vs best preset", "p99 / best preset per seed", "large goodput", "drops",
		"p99 / static:best", "p99 / static:best per seed", "p99 / best fixed at its goodput", "frontier ratio", "frontier ratio per seed"}, LoopHeads: loopHeads}
	cols := r.columns(true)
	for _, c := range cols {
		data.Heads = append(data.Heads, c.head)
	}
	cmps := r.comparisons()
	for _, sc := range r.Scenarios {
		s := scen{Name: sc}
		for _, p := range r.Policies {
			if a := r.AggregateOf(sc, p); a != nil {
				data.Seeds = len(a.Seeds)
			}
		}
		s.Rows = r.tableRows(sc, cols)
		if hasFewFlows(s.Rows) {
			s.FewNote = FewFlowsNote
		}
		if s.Loop = r.loopRows(sc); len(s.Loop) > 0 {
			s.LoopNote = fmt.Sprintf(loopTableNote, SettleIntervals)
		}
		for _, c := range cmps {
			if c.Scenario == sc {
				s.Cmp = append(s.Cmp, c.cells())
			}
		}
		var b bytes.Buffer
		err := r.PlotCDF(&b, sc)
		if err != nil {
			return err
		}
		s.CDF = base64.StdEncoding.EncodeToString(b.Bytes())
		b.Reset()
		if err := r.PlotBuckets(&b, sc); err != nil {
			return err
		}
		s.Bars = base64.StdEncoding.EncodeToString(b.Bytes())
		if r.HasFrontier(sc) {
			b.Reset()
			if err := r.PlotFrontier(&b, sc); err != nil {
				return err
			}
			s.Frontier = base64.StdEncoding.EncodeToString(b.Bytes())
		}
		if s.Heat, err = r.heatmaps(sc); err != nil {
			return err
		}
		data.Scenarios = append(data.Scenarios, s)
	}
	data.SeedsText = units.Count(data.Seeds, "seed")
	if r.PmaxStep > 0 {
		data.PmaxNote = fmt.Sprintf("Every decision of the policies and fixed settings ran at the Pmax a switch of %s resolution holds (--pmax-step).", env.FormatPmax(r.PmaxStep))
	}
	return reportTmpl.Execute(w, data)
}
