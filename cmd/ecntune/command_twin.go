package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/internal/chart"
	"github.com/ecntune/ecntune/scenarios/cdf"
	"github.com/ecntune/ecntune/twin"
)

// twinOpts are the flags of "ecntune twin".
type twinOpts struct {
	db, out, report, name string
	budget                time.Duration
	seed                  uint64
	intervals             int
	rivals                int
	runs                  int
	force                 bool
}

func newTwinCmd() *cobra.Command {
	var o twinOpts
	cmd := &cobra.Command{
		Use:   "twin",
		Short: "Fit a scenario of the fabric an agent watched (its twin) from the agent's database",
		Long: `Build an ordinary, editable scenario of the fabric an agent watched in shadow mode
(or in closed loop with store-recommendations: true): the topology from the switches'
fabric records in the agent's database (ports and speeds, LLDP neighbours, host-facing
ports, buffer, ECN and PFC state; star or two-tier leaf-spine), and a workload fitted by
simulation so that its counters, read through the agent's own observer, match the stored
ones: per-port utilisation, queue depth and watermark distributions, mark and PFC pause
rates and incast signatures, per role (host-facing or fabric ports). Candidate workloads
are the shipped flow-size families at a load, with incasts or all-reduce/all-to-all
collectives beside them: a coarse grid, then a coordinate search within --budget on all
cores given (2 simulations at a time); with --runs N, within N simulations instead, which
gives the same twin on any machine, however fast or loaded. Either bounds the search: the
fit's fixed part comes on top (each window's first candidates and the noise's calibration,
the final check of the twin on several seeds: about 20 simulations, seen to take 1.5-2.5
minutes on 2 cores for a leaf-spine of 60 hosts), and a Ctrl-C ends the search, not it. Where the observed traffic changes over time, each
window is fitted on its own and the scenario's workloads get start and end times.

--out gets the scenario and, beside it, the CDF files it names (cdf/*.txt) and up to
--rivals rival twins (OUT.rival-1.yaml, ...): the twin with one window's workload replaced
by one the fit nearly chose (another kind of workload, refined, whose loss with parameters
counted is within the statistics' noise or twice the winner's), nearest first; where too few
other kinds come that near, the winner's own kind at the edge of what the observations allow
(of the candidates of its kind within that loss, the one whose parameters lie farthest). The fit cannot tell them from the twin, so
train --twin OUT --rival OUT.rival-1.yaml ... judges a fine-tuned model on them too. A file at
--out or a rival's path that is not a twin (or rival) this command wrote, by its first line, is
refused before the fit unless --force; a twin it wrote is replaced, edits and all. The report
(every statistic observed, simulated and its error; the time of each step; what was not
observed and took a default) goes to stdout, and with --report DIR also to
DIR/report.txt and report.json with two plots: the per-interval figures observed and
simulated (timeseries.png) and every statistic simulated against observed (fit.png).`,
		Example: `  ecntune twin --db examples/agent-shadow.db --out twin/twin.yaml --report twin/report
  ecntune twin --db agent.db --out fabric.yaml --budget 10m --seed 2
  ecntune twin --db agent.db --out fabric.yaml --runs 300`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTwin(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.db, "db", "", "the agent's database (required)")
	f.StringVar(&o.out, "out", "", "the scenario file to write (required)")
	f.StringVar(&o.report, "report", "", "folder for the report and its plots")
	f.StringVar(&o.name, "name", "twin", "the scenario's name")
	f.DurationVar(&o.budget, "budget", 3*time.Minute, "wall time of the search (the fit's fixed part, about 20 simulations, comes on top)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of every simulation (1 or more)")
	f.IntVar(&o.intervals, "intervals", 600, "fit at most this many of the newest stored intervals")
	f.IntVar(&o.rivals, "rivals", 2, "rival twins to write beside --out (0: none)")
	f.BoolVar(&o.force, "force", false, "write --out and its rivals over files that are not a twin or rival this command wrote")
	f.IntVar(&o.runs, "runs", 0, "a budget of this many search simulations instead of --budget's wall time: the same twin on any machine (0: --budget; the fit's fixed part comes on top)")
	return cmd
}

func runTwin(cmd *cobra.Command, o twinOpts) error {
	if o.db == "" || o.out == "" {
		return errors.New("--db and --out are required")
	}
	switch {
	case o.budget <= 0:
		return fmt.Errorf("--budget %v: must be above 0", o.budget)
	case o.intervals < 3:
		return fmt.Errorf("--intervals %d: want at least 3", o.intervals)
	case o.rivals < 0:
		return fmt.Errorf("--rivals %d: must not be negative (0: none)", o.rivals)
	case o.runs < 0:
		return fmt.Errorf("--runs %d: must not be negative (0: --budget)", o.runs)
	case o.seed == 0:
		// twin.Options takes 0 as unset: the fit ran with seed 1, the
		// same twin as --seed 1
		return errors.New("--seed 0: seeds start at 1 (to see the fit's spread, fit with --seed 1, 2, ...)")
	}
	if o.runs > 0 && cmd.Flags().Changed("budget") {
		return errors.New("--budget and --runs: give one (a budget in wall time, or in simulations)")
	}
	// Before the fit, which takes --budget: where its files go.
	if err := notAnInput("out", o.out, o.db); err != nil {
		return err
	}
	if err := checkOutPath("out", o.out, ""); err != nil {
		return err
	}
	if err := checkTwinCDFs(o.out); err != nil {
		return err
	}
	if !o.force {
		if err := notAnotherFile(o.out, o.rivals); err != nil {
			return err
		}
	}
	if o.report != "" {
		if err := checkOutPath("report", o.report, "the report"); err != nil {
			return err
		}
	}
	in, err := readTwinInput(o.db, o.intervals)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	within := o.budget.String()
	if o.runs > 0 {
		within = fmt.Sprintf("%d simulations", o.runs)
	}
	fmt.Fprintf(stderr, "twin: %d samples of %d switches; fitting within %s\n", len(in.Samples), len(in.Fabric), within)
	if in.Damaged > 0 {
		fmt.Fprintf(stderr, "twin: warning: %d of the %d stored recommendations read fail their seal (damaged on disk): left out (the report says so)\n", in.Damaged, in.Read)
	}
	rivals := o.rivals
	if rivals == 0 {
		rivals = -1 // twin.Options: none
	}
	// A Ctrl-C ends the search, not the run: the twin is built from the
	// best found so far and written whole; a second one quits at once (it
	// lost the search's work with nothing said).
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var interrupted atomic.Bool
	go func() {
		<-ctx.Done()
		if cmd.Context().Err() == nil {
			interrupted.Store(true)
			stop() // the next Ctrl-C kills
			fmt.Fprintln(stderr, "twin: interrupt: the search ends now; the twin is built from the best found so far, checked (its final simulations: a minute or two) and written (Ctrl-C again quits at once, writing nothing)")
		}
	}()
	r, err := twin.Fit(in, twin.Options{Name: o.name, Budget: o.budget, Runs: o.runs, Seed: o.seed, Rivals: rivals, Stop: interrupted.Load,
		Log: func(format string, args ...any) { fmt.Fprintf(stderr, "twin: "+format+"\n", args...) }})
	if err != nil {
		return fmt.Errorf("twin of %s: %w", o.db, err)
	}
	if w := r.Report.SettingWarning(); w != "" {
		fmt.Fprintln(stderr, "twin: warning: "+w)
	}
	// The report first and the twin last, each file whole (written
	// aside, then renamed): a twin beside another fit's report was what
	// an interrupt between them left.
	if o.report != "" {
		if err := writeTwinReport(stderr, o.report, &r.Report); err != nil {
			return err
		}
	}
	r.Scenario.Comment = twinComment(o.db, r)
	if o.rivals > 0 {
		if err := writeRivals(stderr, o.out, r); err != nil {
			return err
		}
	} else if err := removeStaleRivals(stderr, o.out, 0); err != nil {
		// an earlier fit's rivals beside this twin would pass for its own
		return err
	}
	if err := writeTwinScenario(stderr, o.out, &r.Scenario); err != nil {
		return err
	}
	if err := r.Report.WriteText(cmd.OutOrStdout()); err != nil {
		return err
	}
	if interrupted.Load() {
		// written, but not the fit asked for: a script sees it
		return fmt.Errorf("interrupted: %s is the best the search found before it (its report says so); fit again for a closer twin", o.out)
	}
	return nil
}

// checkOutPath refuses, before a long run (the fit, a training, an
// evaluation), an output path its writes after the run would fail on: a
// file where a folder for dirFor ("the report") is wanted, a folder where
// a file is (dirFor ""), a path through a file, or a place this process
// cannot write (a read-only file system, a folder or file without write
// permission). Folders that do not exist yet are made when written.
func checkOutPath(flag, path, dirFor string) error {
	dir := dirFor != ""
	if st, err := os.Stat(path); err == nil {
		switch {
		case dir && !st.IsDir():
			return fmt.Errorf("--%s %s is a file: want a folder for %s", flag, path, dirFor)
		case !dir && st.IsDir():
			return fmt.Errorf("--%s %s is a folder: want the file to write", flag, path)
		case dir:
			return writableDir(flag, path, path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("--%s %s: cannot write it: %w", flag, path, err)
		}
		f.Close()
		return nil
	}
	// The nearest folder on the way up that can be read must be one
	// (a path through a file fails with ENOTDIR, not ErrNotExist), and
	// one this process can write in.
	for p := filepath.Dir(path); ; p = filepath.Dir(p) {
		if st, err := os.Stat(p); err == nil {
			if !st.IsDir() {
				return fmt.Errorf("--%s %s: %s is a file, not a folder", flag, path, p)
			}
			return writableDir(flag, path, p)
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

// writableDir checks that a file can be made in dir (for --flag path),
// by making one and removing it.
func writableDir(flag, path, dir string) error {
	f, err := os.CreateTemp(dir, ".ecntune-write-check-*")
	if err != nil {
		return fmt.Errorf("--%s %s: cannot write in %s: %w", flag, path, dir, err)
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return nil
}

// readTwinInput reads the fabric records and the newest intervals'
// measured samples from the agent's database.
func readTwinInput(db string, intervals int) (twin.Input, error) {
	j, err := journal.OpenJournalReadOnly(db, historyLockWait)
	if err != nil {
		if errors.Is(err, journal.ErrJournalLocked) {
			return twin.Input{}, fmt.Errorf("%w: stop the agent first (twin reads its db)", err)
		}
		return twin.Input{}, err
	}
	defer j.Close()
	times, err := j.RecommendationTimes(0)
	if err != nil {
		return twin.Input{}, err
	}
	if len(times) == 0 {
		return twin.Input{}, fmt.Errorf("agent db %s holds no stored recommendations, which hold the telemetry a twin is fitted to: run the agent in shadow mode for a while (it stores them), or set store-recommendations: true in a closed loop's configuration", db)
	}
	fabric, err := j.Fabric()
	if errors.Is(err, journal.ErrNoFabric) {
		return twin.Input{}, fmt.Errorf("%w: the agent that wrote it predates fabric records; run the agent (shadow mode) again with this version, whose records say what the switches' ports face", err)
	}
	if err != nil {
		return twin.Input{}, err
	}
	since := times[max(0, len(times)-intervals)]
	in := twin.Input{Fabric: fabric}
	// Rows are sealed one by one: a damaged one is left out and counted
	// (the report says so), unless so many are that the rest is suspect.
	in.Damaged, err = j.EachIntactRecommendation(since, func(r *core.Recommendation) error {
		in.Read++
		if r.Valid && r.Metrics.IntervalNs > 0 {
			in.Samples = append(in.Samples, twin.Sample{TimeNs: r.TimeNs, Key: r.Key, RateBps: r.RateBps, Metrics: r.Metrics, Setting: r.Current})
			in.Missing |= r.Missing
		}
		return nil
	})
	in.Read += in.Damaged
	if err != nil {
		return twin.Input{}, fmt.Errorf("%w (damaged: fit from newer intervals with --intervals, or from another db)", err)
	}
	if in.Damaged > 0 && float64(in.Damaged) > maxDamagedShare*float64(in.Read) {
		return twin.Input{}, fmt.Errorf("agent db %s: %d of the %d stored recommendations read fail their seal (damaged on disk; at most a tenth are left out): "+
			"fit from newer intervals than the damage with --intervals N (the newest N), or from another db; the agent's retention prunes the damaged rows in time",
			db, in.Damaged, in.Read)
	}
	if len(in.Samples) == 0 {
		return twin.Input{}, fmt.Errorf("agent db %s: none of its %d stored intervals was measured (every queue's first sample, or counter resets): let shadow mode run longer", db, len(times))
	}
	return in, nil
}

// maxDamagedShare is the share of the stored recommendations read that
// may fail their seal and be left out of a twin's input.
const maxDamagedShare = 0.1

// twinComment heads the scenario file: where it came from and what it
// assumed.
func twinComment(db string, r *twin.Result) []string {
	rep := &r.Report
	lines := []string{fmt.Sprintf(strings.TrimPrefix(twinHead, "# ")+" from %s (%d intervals of %v) on %s.", filepath.Base(db),
		rep.Intervals, time.Duration(rep.IntervalNs), time.Now().UTC().Format("2006-01-02")),
		"Fabric: " + rep.Fabric.Describe() + ".",
		fmt.Sprintf("Mean |error| over the statistics: %.0f%% (see the report). An ordinary scenario: edit it freely.", 100*rep.MeanAbsError(""))}
	if w := rep.SettingWarning(); w != "" {
		lines = append(lines, "Warning: "+w+".")
	}
	for _, n := range rep.Notes {
		lines = append(lines, "Assumed: "+n+".")
	}
	lines = append(lines, "DCQCN is not observable: its parameters follow the shipped scenarios, scaled to the host rate.")
	return lines
}

// writeTwinScenario writes the scenario to out and the CDF files it
// names beside it; a CDF file already there must be the same.
func writeTwinScenario(log io.Writer, out string, s *twin.Scenario) error {
	files, err := s.Files()
	if err != nil {
		return err
	}
	dir := filepath.Dir(out)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		path := filepath.Join(dir, filepath.FromSlash(n))
		if n == twin.File {
			path = out
		} else if old, err := os.ReadFile(path); err == nil {
			if !bytes.Equal(old, files[n].Data) {
				return fmt.Errorf("%s exists and is not the shipped %s: the twin names it; move it, or write the twin elsewhere", path, filepath.Base(n))
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := writeFileWhole(path, files[n].Data); err != nil {
			return err
		}
		fmt.Fprintln(log, "wrote", path)
	}
	return nil
}

// checkTwinCDFs refuses, before the fit, a twin at out whose CDF files
// could not be written beside it: a cdf that is not a folder, or a
// cdf/NAME.txt of a family the twin may name (twin.Families) that is not
// the shipped one (writeTwinScenario keeps a shipped one and refuses
// another).
func checkTwinCDFs(out string) error {
	dir := filepath.Join(filepath.Dir(out), "cdf")
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("--out %s: %s is a file: the twin's flow-size CDFs go in a folder cdf beside it; move it, or write the twin elsewhere", out, dir)
	}
	for _, fam := range twin.Families {
		path := filepath.Join(dir, fam+".txt")
		old, err := os.ReadFile(path)
		if err != nil {
			continue // none yet (written after the fit), or the write will say
		}
		shipped, err := fs.ReadFile(cdf.Files, fam+".txt")
		if err != nil {
			return err
		}
		if !bytes.Equal(old, shipped) {
			return fmt.Errorf("--out %s: %s exists and is not the shipped %s.txt, which a twin names there: move it, or write the twin elsewhere", out, path, fam)
		}
	}
	return nil
}

// writeFileWhole writes data to path whole or not at all: into a file
// beside it, renamed over it once complete.
func writeFileWhole(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// rivalPath is where the k-th rival twin of the twin at out goes.
func rivalPath(out string, k int) string {
	ext := filepath.Ext(out)
	return fmt.Sprintf("%s.rival-%d%s", strings.TrimSuffix(out, ext), k, ext)
}

// writeRivals writes r's rival twins beside out and says how to judge a
// model on them.
func writeRivals(log io.Writer, out string, r *twin.Result) error {
	if err := removeStaleRivals(log, out, len(r.Rivals)); err != nil {
		return err
	}
	if len(r.Rivals) == 0 {
		why := "no other workload came near enough the fit's choice"
		for _, p := range r.Report.Phases {
			if len(p.Untried) > 0 {
				why = "no other workload tried came near enough the fit's choice; the budget ended before it tried " + strings.Join(p.Untried, ", ") + " (raise --runs or --budget)"
				break
			}
		}
		fmt.Fprintf(log, "twin: no rival twin (%s)\n", why)
		return nil
	}
	cmd := "ecntune train --twin " + out
	for k := range r.Rivals {
		rs := &r.Rivals[k]
		path := rivalPath(out, k+1)
		rs.Scenario.Comment = []string{
			fmt.Sprintf(strings.TrimPrefix(rivalHead, "# ")+"%s (%s), fitted on %s: window %d's workload replaced by one the fit nearly chose,",
				filepath.Base(out), r.Scenario.Name, time.Now().UTC().Format("2006-01-02"), rs.Window),
			fmt.Sprintf("%s instead of %s (loss with parameters counted %.3f, the twin's +%.3f%s).",
				rs.Rival.Workload, r.Report.Phases[rs.Window].Workload, rs.Rival.Penalised, rs.Rival.Excess, edgeNote(rs.Edge)),
			"The fit cannot tell it from the twin: train --twin judges a fine-tuned model on it too (--rival).",
		}
		if u := r.Report.Phases[rs.Window].Untried; len(u) > 0 {
			rs.Scenario.Comment = append(rs.Scenario.Comment, "(Among the kinds the fit tried: its budget ended before "+strings.Join(u, ", ")+"; raise --runs or --budget.)")
		}
		if err := writeTwinScenario(log, path, &rs.Scenario); err != nil {
			return fmt.Errorf("rival %d: %w", k+1, err)
		}
		cmd += " --rival " + path
	}
	// the registry and the agent configuration are the operator's: named,
	// not guessed (without --db the model goes to ./ecntune.db)
	fmt.Fprintf(log, "twin: judge a fine-tuned model on the twin and its rivals with\n  %s --agent AGENT.yaml --db MODELS.db\n"+
		"  (AGENT.yaml the agent's configuration, whose loop the rule then judges; MODELS.db the registry its registry: will name)\n", cmd)
	return nil
}

// edgeNote says a rival is its window's own kind at the edge of what the
// observations allow.
func edgeNote(edge bool) string {
	if edge {
		return "; its own kind, at the edge of what the observations allow: too few other kinds came near"
	}
	return ""
}

// rivalHead starts every rival twin's file (writeRivals' comment).
const rivalHead = "# A rival of the twin "

// twinHead starts every twin's file (twinComment).
const twinHead = "# A twin fitted by ecntune twin"

// notAnotherFile refuses, before the fit, an --out that exists and is
// not a twin this command wrote (its first line is not twinHead: the
// agent's configuration, another scenario), and a path of its first
// rivals rival twins that holds a file that is not a rival (rivalHead):
// writing the twin would replace them (--force does).
func notAnotherFile(out string, rivals int) error {
	check := func(path, head, what string) error {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		if !bytes.HasPrefix(data, []byte(head)) {
			where := "--out " + out + ": " + path
			if path == out {
				where = "--out " + out
			}
			return fmt.Errorf("%s exists and is not a %s ecntune twin wrote (its first line is not \"%s\"): writing the twin would replace it; "+
				"write the twin elsewhere, or give --force", where, what, head)
		}
		return nil
	}
	if err := check(out, twinHead, "twin"); err != nil {
		return err
	}
	for k := 1; k <= rivals; k++ {
		if err := check(rivalPath(out, k), rivalHead, "rival twin"); err != nil {
			return err
		}
	}
	return nil
}

// removeStaleRivals removes the rival twins an earlier fit wrote beside
// out past the first n (their files start with rivalHead; another file of
// that name is left alone, and named), so that only this fit's rivals lie
// beside its twin.
func removeStaleRivals(log io.Writer, out string, n int) error {
	for k := n + 1; ; k++ {
		path := rivalPath(out, k)
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !bytes.HasPrefix(data, []byte(rivalHead)) {
			fmt.Fprintf(log, "twin: %s is not a rival twin this command wrote: left as it is\n", path)
			return nil
		}
		if err := os.Remove(path); err != nil {
			return err
		}
		fmt.Fprintln(log, "removed", path, "(a rival of an earlier fit)")
	}
}

// writeTwinReport writes the report's text, JSON and plots into dir.
func writeTwinReport(log io.Writer, dir string, r *twin.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var text, js bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		return err
	}
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	var ts, fit bytes.Buffer
	if err := r.WriteTimePlot(&ts, chart.PNG); err != nil {
		return fmt.Errorf("time plot: %w", err)
	}
	if err := r.WriteFitPlot(&fit, chart.PNG); err != nil {
		return fmt.Errorf("fit plot: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"report.txt", text.Bytes()}, {"report.json", js.Bytes()}, {"timeseries.png", ts.Bytes()}, {"fit.png", fit.Bytes()}} {
		path := filepath.Join(dir, f.name)
		if err := writeFileWhole(path, f.data); err != nil {
			return err
		}
		fmt.Fprintln(log, "wrote", path)
	}
	return nil
}
