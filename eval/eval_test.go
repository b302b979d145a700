package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	imagepng "image/png"
	"math"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/chart"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/report"
	"github.com/ecntune/ecntune/simenv/scenario"
)

// tiny is a 4-host star with 3-to-1 incasts of 60 KB every 150 µs and
// small background flows, 2 ms: a run takes milliseconds.
func tiny() Scenario {
	cfg := simenv.DefaultConfig()
	cfg.Name = "tiny"
	cfg.Seed = 5
	cfg.Duration = 2 * simenv.Millisecond
	cfg.Topology = simenv.StarTopology(4, 100e9, simenv.Microsecond)
	cfg.Workloads = []simenv.Workload{
		{Kind: simenv.WorkloadIncast, Priority: 3, Fanin: 3, SizeBytes: 60_000, Every: 150 * simenv.Microsecond},
		{Kind: simenv.WorkloadCDF, Priority: 3, Load: 0.4, CDF: []simenv.CDFPoint{{Bytes: 1000, Percent: 0}, {Bytes: 20_000, Percent: 70},
			{Bytes: 2_000_000, Percent: 100}}},
	}
	return Scenario{Named: scenario.Named{Name: "tiny", Config: cfg}}
}

func TestEvalEndToEnd(t *testing.T) {
	specs := []string{"static:hpcc", "adaptive", "builtin", Oracle}
	opt := Options{Seeds: 3, Workers: 2, Interval: 100 * simenv.Microsecond}
	res, err := RunAll([]Scenario{tiny()}, specs, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 12 || len(res.Aggregates) != 4 {
		t.Fatalf("%d runs and %d aggregates, want 12 (4 policies x 3 seeds) and 4", len(res.Runs), len(res.Aggregates))
	}
	// 7 presets (hpcc already ran) + 16 catalogue settings, 3 seeds each.
	if len(res.OracleRuns) != 69 || len(DefaultOracleGrid) != 16 {
		t.Fatalf("%d oracle candidate runs (grid of %d), want 69 (grid of 16)", len(res.OracleRuns), len(DefaultOracleGrid))
	}
	for i, r := range res.Runs {
		if r.Scenario != "tiny" || r.Policy != specs[i/3] || r.Seed != 5+uint64(i%3) {
			t.Fatalf("run %d is (%s, %s, %d), want (tiny, %s, %d)", i, r.Scenario, r.Policy, r.Seed, specs[i/3], 5+i%3)
		}
		if r.Flows < 20 || r.Finished == 0 || r.Decisions != 19 || r.SmallP99 < 1 || r.LargeGoodputGbps <= 0 {
			t.Fatalf("run %d: flows %d finished %d decisions %d small p99 %g large goodput %g", i, r.Flows, r.Finished,
				r.Decisions, r.SmallP99, r.LargeGoodputGbps)
		}
		if r.MarkRate < 0 || r.MarkRate > 1 || r.Utilisation <= 0 || r.Utilisation > 1 {
			t.Fatalf("run %d: mark rate %g utilisation %g", i, r.MarkRate, r.Utilisation)
		}
	}
	// Seeds differ; the same seed replays exactly.
	h := res.RunsOf("tiny", "static:hpcc")
	if h[0].Flows == h[1].Flows && h[0].SmallP99 == h[1].SmallP99 {
		t.Fatal("seeds 5 and 6 gave the same run")
	}
	again, err := RunAll([]Scenario{tiny()}, []string{"static:hpcc"}, Options{Seeds: 1, Interval: 100 * simenv.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := again.Runs[0], h[0]; a.FCTSlowdown != b.FCTSlowdown || a.SmallP99 != b.SmallP99 || a.ECNMarked != b.ECNMarked {
		t.Fatalf("replay of seed 5 differs: %+v vs %+v", a.FCTSlowdown, b.FCTSlowdown)
	}
	// The aggregate is the t-interval of the three seeds.
	agg := res.AggregateOf("tiny", "static:hpcc")
	v := []float64{h[0].SmallP99, h[1].SmallP99, h[2].SmallP99}
	if m := agg.Metrics["small_p99"]; m.N != 3 || math.Abs(m.Mean-(v[0]+v[1]+v[2])/3) > 1e-12 || m != MeanCI(v) {
		t.Fatalf("small_p99 aggregate %+v for %v", m, v)
	}
	// The oracle is the candidate the objective picks, with its own runs.
	o := res.AggregateOf("tiny", Oracle)
	if o.Chosen == "" || len(o.Seeds) != 3 {
		t.Fatalf("oracle aggregate %+v", o)
	}
	byCand := map[string][]Run{}
	var order []string
	for _, r := range append(append([]Run(nil), res.Runs[:3]...), res.OracleRuns...) {
		if _, ok := byCand[r.Policy]; !ok {
			order = append(order, r.Policy)
		}
		byCand[r.Policy] = append(byCand[r.Policy], r)
	}
	if got := PickOracle(order, byCand); got != o.Chosen {
		t.Fatalf("oracle chose %s, objective says %s", o.Chosen, got)
	}
	for _, c := range order {
		if MeanCI(smallP99s(byCand[c])).Mean < o.Metrics["small_p99"].Mean-1e-9 && noDrops(byCand[c]) &&
			MeanCI(goodputs(byCand[c])).Mean >= 0.95*bestGoodput(byCand) {
			t.Fatalf("candidate %s beats the oracle's %s on the objective", c, o.Chosen)
		}
	}

	cmp := res.Compare("builtin")
	if len(cmp) != 1 || !strings.HasPrefix(cmp[0].BestPreset, "static:") {
		t.Fatalf("Compare(builtin) = %+v", cmp)
	}
	presets := map[string][]Run{}
	var porder []string
	for _, c := range order {
		if strings.HasPrefix(c, "static:") {
			presets[c] = byCand[c]
			porder = append(porder, c)
		}
	}
	bp := PickOracle(porder, presets)
	mine := smallP99s(res.RunsOf("tiny", "builtin"))
	wantCut := 1 - MeanCI(mine).Mean/MeanCI(smallP99s(presets[bp])).Mean
	if cmp[0].BestPreset != bp || math.Abs(cmp[0].SmallP99Cut-wantCut) > 1e-12 ||
		math.Abs(cmp[0].VsOracle-MeanCI(mine).Mean/o.Metrics["small_p99"].Mean) > 1e-12 {
		t.Fatalf("comparison %+v, want best preset %s, cut %g", cmp[0], bp, wantCut)
	}

	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var objs []map[string]any
	if err := json.Unmarshal(js.Bytes(), &objs); err != nil {
		t.Fatal(err)
	}
	if len(objs) != 12 || objs[0]["scenario"] != "tiny" || objs[0]["policy"] != "static:hpcc" || objs[11]["chosen"] != o.Chosen {
		t.Fatalf("json objects: %d, first %v/%v, last chosen %v", len(objs), objs[0]["scenario"], objs[0]["policy"], objs[11]["chosen"])
	}
	if _, ok := objs[0]["fct_slowdown"].(map[string]any)["10KB-100KB"]; !ok {
		t.Fatalf("json lacks the sim --json fct_slowdown buckets: %v", objs[0]["fct_slowdown"])
	}
	var txt bytes.Buffer
	if err := res.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if s := txt.String(); !strings.Contains(s, "scenario tiny (3 seeds") || !strings.Contains(s, "static:best ("+shortSetting(o.Chosen)+")") ||
		!strings.Contains(s, "best preset "+bp) {
		t.Fatalf("text report:\n%s", s)
	}
	var html, png bytes.Buffer
	if err := res.WriteHTML(&html); err != nil || !strings.Contains(html.String(), "data:image/png;base64,iVBOR") {
		t.Fatalf("html: err %v, %d bytes", err, html.Len())
	}
	// The comparison table: one row per non-preset policy, with the cut the
	// text report gives.
	if h := strings.ReplaceAll(html.String(), "&#43;", "+"); !strings.Contains(h, "<th>p99 / best fixed at its goodput</th>") ||
		!strings.Contains(h, "<td>builtin</td><td>"+bp+"</td><td>"+cmp[0].cells()[2]+"</td>") ||
		!strings.Contains(h, "<td>adaptive</td>") || strings.Contains(h, "<td>static:hpcc</td><td>static:") {
		t.Fatalf("html comparison table missing or wrong:\n%s", h[:min(len(h), 4000)])
	}
	if err := res.PlotCDF(&png, "tiny"); err != nil || !bytes.HasPrefix(png.Bytes(), []byte("\x89PNG")) {
		t.Fatalf("cdf plot: %v", err)
	}
}

func smallP99s(rs []Run) []float64 {
	var v []float64
	for _, r := range rs {
		v = append(v, r.SmallP99)
	}
	return v
}

func goodputs(rs []Run) []float64 {
	var v []float64
	for _, r := range rs {
		v = append(v, r.LargeGoodputGbps)
	}
	return v
}

func noDrops(rs []Run) bool {
	for _, r := range rs {
		if r.Drops > 0 {
			return false
		}
	}
	return true
}

func bestGoodput(m map[string][]Run) float64 {
	b := 0.0
	for _, rs := range m {
		b = math.Max(b, MeanCI(goodputs(rs)).Mean)
	}
	return b
}

func TestMeanCI(t *testing.T) {
	m := MeanCI([]float64{1, 2, 3})
	// sd 1, t(0.975, 2 df) = 4.302653
	if math.Abs(m.Mean-2) > 1e-12 || math.Abs(m.CI95-4.302653/math.Sqrt(3)) > 1e-5 || m.N != 3 {
		t.Fatalf("MeanCI(1,2,3) = %+v", m)
	}
	m = MeanCI([]float64{10, 12, 11, 13, 9, 11, 12, 10, 11, 11})
	// mean 11, sd 1.1547, t(0.975, 9) = 2.262157
	if math.Abs(m.Mean-11) > 1e-12 || math.Abs(m.CI95-2.262157*1.1547005/math.Sqrt(10)) > 1e-5 {
		t.Fatalf("MeanCI(10 values) = %+v", m)
	}
	if m := MeanCI([]float64{4}); m.Mean != 4 || m.CI95 != 0 || m.String() != "4.00" {
		t.Fatalf("one value: %+v %q", m, m.String())
	}
	if m := MeanCI(nil); m.N != 0 || m.Mean != 0 {
		t.Fatalf("no value: %+v", m)
	}
}

// oracleRun is a run of small-flow p99 p99, large-flow goodput good and
// drops drops, for PickOracle.
func oracleRun(p99, good float64, drops uint64) Run {
	r := Run{SmallP99: p99, LargeGoodputGbps: good}
	r.Drops = drops
	return r
}

func TestPickOracleObjective(t *testing.T) {
	run := oracleRun
	runs := map[string][]Run{
		"a": {run(10, 50, 0), run(12, 50, 0)}, // p99 11, goodput 50
		"b": {run(5, 45, 0), run(5, 46, 0)},   // best p99 but goodput 45.5 < 0.95*50
		"c": {run(8, 48, 0), run(9, 48, 0)},   // p99 8.5, goodput 48 >= 47.5
		"d": {run(2, 50, 1), run(2, 50, 0)},   // drops
	}
	if got := PickOracle([]string{"a", "b", "c", "d"}, runs); got != "c" {
		t.Fatalf("oracle = %s, want c", got)
	}
	if got := PickOracle([]string{"d"}, map[string][]Run{"d": runs["d"]}); got != "d" {
		t.Fatalf("only dropping candidates: oracle = %s, want d", got)
	}
}

// The bar of "within 5% of the best goodput" is set by the candidates
// that drop nothing: a dropping one at twice the goodput of the others
// left none within 5%, and the pick fell to the lowest p99 at any goodput.
func TestPickOracleBarFromCleanCandidates(t *testing.T) {
	run := oracleRun
	runs := map[string][]Run{
		"a": {run(5, 100, 3), run(5, 100, 0)}, // the most goodput, drops
		"b": {run(4, 90, 0), run(4, 90, 0)},   // no drops, the best goodput of those
		"c": {run(2, 50, 0), run(2, 50, 0)},   // the lowest p99 at half the goodput
	}
	if got := PickOracle([]string{"a", "b", "c"}, runs); got != "b" {
		t.Fatalf("oracle = %s, want b", got)
	}
}

// A fixed setting acts from the start: its figures do not depend on the
// scenario's own ecn:, which it ran for the first interval (static:cisco's
// mark rate 0.00038 under one scenario setting, 0.00465 under another).
func TestFixedSettingFromTheStart(t *testing.T) {
	a, b := tiny(), tiny()
	b.Config.ECN = simenv.ECN{KminBytes: 5_000, KmaxBytes: 10_000, Pmax: 1}
	opt := Options{Seeds: 2, Interval: 200 * simenv.Microsecond}
	ra, err := RunAll([]Scenario{a}, []string{"static:cisco", "fixed:100KB/400KB/5%"}, opt)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := RunAll([]Scenario{b}, []string{"static:cisco", "fixed:100KB/400KB/5%"}, opt)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ra.Runs {
		x, y := ra.Runs[i], rb.Runs[i]
		if x.SmallP99 != y.SmallP99 || x.MarkRate != y.MarkRate || x.LargeGoodputGbps != y.LargeGoodputGbps {
			t.Errorf("%s seed %d: p99 %g / %g, mark rate %g / %g, goodput %g / %g under two scenario settings", x.Policy, x.Seed,
				x.SmallP99, y.SmallP99, x.MarkRate, y.MarkRate, x.LargeGoodputGbps, y.LargeGoodputGbps)
		}
	}
}

// With PmaxStep, the grid points a switch holds as another's are not run
// twice and listed as settings that never ran (the 0.3% points as 1%);
// the runs record the step, and a deployed loop's zero would-change
// figures are written, not left out.
func TestPmaxStepCandidatesAndRecords(t *testing.T) {
	grid := [][3]int{{8, 0, 1}, {8, 0, 0}}
	if n, q := len(oracleCandidates(grid, 0)), len(oracleCandidates(grid, env.PmaxStep)); q != n-1 {
		t.Fatalf("%d candidates as decided, %d at a 1%% step: want one fewer", n, q)
	}
	res, err := RunAll([]Scenario{tiny()}, []string{"static:hpcc"}, Options{Seeds: 1, Interval: 200 * simenv.Microsecond, Frontier: true,
		PmaxStep: env.PmaxStep, OracleCatalogue: grid})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Summary().FixedSettings {
		if strings.Contains(f.Setting, "0.3%") {
			t.Errorf("fixed setting %s listed, which a 1%% switch never runs", f.Setting)
		}
	}
	if res.Runs[0].PmaxStep != env.PmaxStep {
		t.Errorf("run records pmax step %g", res.Runs[0].PmaxStep)
	}
	b, err := json.Marshal(LoopFigures{Intervals: 20, Queues: 4, Rejections: map[string]int{}})
	if err != nil || !strings.Contains(string(b), `"would_changes_after_settle":0`) || !strings.Contains(string(b), `"idle_held":0`) {
		t.Errorf("a deployed loop's figures: %s (%v)", b, err)
	}
	if b, _ := json.Marshal(LoopFigures{Intervals: 20}); strings.Contains(string(b), "would_changes") {
		t.Errorf("a bare policy's figures: %s", b)
	}
}

func TestRunAllErrors(t *testing.T) {
	sc := tiny()
	for _, c := range []struct {
		scs   []Scenario
		specs []string
		opt   Options
		want  string
	}{
		{nil, []string{"adaptive"}, Options{}, "no scenario"},
		{[]Scenario{sc}, nil, Options{}, "no policy"},
		{[]Scenario{sc}, []string{"static:nope"}, Options{}, `unknown preset "nope"`},
		{[]Scenario{sc}, []string{"adaptive", "adaptive"}, Options{}, "given twice"},
		// two scenarios of one name were one table, runs paired across them
		{[]Scenario{sc, sc}, []string{"adaptive"}, Options{}, `scenarios 0 and 1 are both named "` + sc.Name + `"`},
		{[]Scenario{sc}, []string{"adaptive"}, Options{Seeds: -1}, "seeds -1"},
		{[]Scenario{sc}, []string{Oracle}, Options{OracleCatalogue: [][3]int{{19, 0, 0}}}, "outside the catalogue"},
	} {
		if _, err := RunAll(c.scs, c.specs, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want %q", err, c.want)
		}
	}
}

// An explicit setting and a schedule run through eval like any policy; a
// schedule whose every step is one preset replays that preset exactly, and
// neither counts as a vendor preset in Compare.
func TestEvalFixedAndSchedule(t *testing.T) {
	specs := []string{"static:hpcc", "schedule:hpcc,1ms=hpcc", "fixed:400KB/1600KB/20%", "schedule:hpcc,1ms=40KB/100KB/100%"}
	res, err := RunAll([]Scenario{tiny()}, specs, Options{Seeds: 1, Workers: 2, Interval: 100 * simenv.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	h, same, fx, sw := res.Runs[0], res.Runs[1], res.Runs[2], res.Runs[3]
	if same.Policy != specs[1] || same.SmallP99 != h.SmallP99 || same.LargeGoodputGbps != h.LargeGoodputGbps || same.Flows != h.Flows {
		t.Fatalf("schedule of hpcc only: %+v, static:hpcc: %+v", same, h)
	}
	// hpcc at 100G is 400KB/1.6MB/20%: the explicit setting is the same.
	if fx.SmallP99 != h.SmallP99 || fx.LargeGoodputGbps != h.LargeGoodputGbps {
		t.Fatalf("fixed:400KB/1600KB/20%%: %+v, static:hpcc: %+v", fx, h)
	}
	if sw.SmallP99 == h.SmallP99 && sw.MarkRate == h.MarkRate {
		t.Fatal("switching to 40KB/100KB/100% at 1 ms changed nothing")
	}
	for _, p := range specs[1:] {
		if c := res.Compare(p); len(c) != 1 || c[0].BestPreset != "static:hpcc" {
			t.Fatalf("Compare(%s) = %+v, want static:hpcc as the only preset", p, c)
		}
	}
}

// A schedule whose entries are policies runs them: one whose every step
// is the model replays the model's run exactly, and each of the others
// departs from its first entry's run once its second entry starts. A
// daily schedule runs as the timed one from midnight.
func TestEvalScheduleOfPolicies(t *testing.T) {
	specs := []string{"builtin", "schedule:builtin,1ms=builtin", "static:hpcc", "schedule:hpcc,1ms=builtin", "schedule:builtin,1ms=hpcc",
		"daily:00:00=builtin,00:00:00.001=hpcc"}
	res, err := RunAll([]Scenario{tiny()}, specs, Options{Seeds: 1, Workers: 2, Interval: 500 * simenv.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	b, same, h, late, early, daily := res.Runs[0], res.Runs[1], res.Runs[2], res.Runs[3], res.Runs[4], res.Runs[5]
	// simulated time starts at midnight UTC: the daily schedule is the
	// timed one
	if daily.SmallP99 != early.SmallP99 || daily.MarkRate != early.MarkRate || daily.LargeGoodputGbps != early.LargeGoodputGbps {
		t.Fatalf("daily:00:00=builtin,00:00:00.001=hpcc: %+v, schedule:builtin,1ms=hpcc: %+v", daily, early)
	}
	if same.SmallP99 != b.SmallP99 || same.LargeGoodputGbps != b.LargeGoodputGbps || same.MarkRate != b.MarkRate || same.HeldForInterval != 0 {
		t.Fatalf("schedule of the model only: %+v, builtin: %+v", same, b)
	}
	// a schedule's model deciding outside its validated intervals (100 µs)
	// holds, and eval counts those holds as it does a bare model's
	fast, err := RunAll([]Scenario{tiny()}, []string{"builtin", "schedule:builtin,1ms=hpcc"}, Options{Seeds: 1, Workers: 2, Interval: 100 * simenv.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if bare, sch := fast.Runs[0], fast.Runs[1]; bare.HeldForInterval == 0 || sch.HeldForInterval == 0 || sch.HeldForInterval >= bare.HeldForInterval ||
		!strings.HasPrefix(sch.heldWhy, "counters over 100µs") {
		t.Fatalf("holds outside the validated intervals: builtin %d, schedule %d (%q)", bare.HeldForInterval, sch.HeldForInterval, sch.heldWhy)
	}
	if b.MarkRate == h.MarkRate || late.MarkRate == h.MarkRate || early.MarkRate == b.MarkRate {
		t.Fatalf("mark rates: builtin %g, hpcc %g, hpcc then builtin %g, builtin then hpcc %g: want each schedule apart from its first entry alone",
			b.MarkRate, h.MarkRate, late.MarkRate, early.MarkRate)
	}
}

func TestCompareAtGoodput(t *testing.T) {
	run := func(pol string, p99, good float64, drops uint64) Run {
		r := Run{Policy: pol, SmallP99: p99, LargeGoodputGbps: good}
		r.Scenario, r.Drops = "s", drops
		return r
	}
	res := &Result{Scenarios: []string{"s"},
		Runs: []Run{run("pol", 4, 8.5, 0), run("pol", 4, 8.5, 0), run("hot", 1, 20, 0)},
		OracleRuns: []Run{run("static:a", 10, 5, 0), run("catalogue:x", 6, 9, 0), run("catalogue:x", 4, 9, 0),
			run("catalogue:y", 3, 8, 0), run("catalogue:z", 2, 12, 7), run("static:b", 8, 8.6, 0)}}
	c := res.Compare("pol")
	// x keeps the goodput (9 >= 8.5) with p99 5; y is better but keeps only
	// 8; z drops; b keeps it with a worse p99.
	if len(c) != 1 || c[0].AtGoodput != "catalogue:x" || math.Abs(c[0].VsAtGoodput-0.8) > 1e-12 {
		t.Fatalf("Compare(pol) = %+v, want catalogue:x at 0.8", c)
	}
	if c := res.Compare("hot"); len(c) != 1 || c[0].AtGoodput != "" || c[0].VsAtGoodput != 0 {
		t.Fatalf("Compare(hot) = %+v: no fixed setting keeps 20 Gb/s", c)
	}
	var buf bytes.Buffer
	res.Policies = []string{"pol", "hot"}
	if err := res.writeComparisons(&buf); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); !strings.Contains(s, "vs the best fixed setting at its full large-flow goodput (catalogue:x): small-flow p99 x0.80") ||
		!strings.Contains(s, "vs the best preset static:b: small-flow p99 50.0% lower") ||
		!strings.Contains(s, "  hot on s\n") || !strings.Contains(s, "    frontier ratio: none of the 5 fixed settings run keeps 98% of its large-flow goodput (beyond them)\n") {
		t.Fatalf("comparison text:\n%s", s)
	}
	// A scenario with no small flow: fixed settings keep the goodput, but
	// there is no ratio; not "beyond the frontier".
	none := &Result{Scenarios: []string{"s"}, Runs: []Run{run("quiet", 0, 50, 0), run("quiet", 0, 50, 0)},
		OracleRuns: []Run{run("static:a", 0, 100, 0), run("catalogue:x", 0, 60, 0)}}
	if c := none.Compare("quiet"); len(c) != 1 || c[0].Frontier != "" || !c[0].NoSmallFlowFigure || c[0].Beyond() {
		t.Fatalf("Compare(quiet) = %+v: no small-flow figure, not beyond", c)
	}
	if c := res.Compare("hot"); len(c) != 1 || !c[0].Beyond() || c[0].NoSmallFlowFigure {
		t.Fatalf("Compare(hot) = %+v: beyond", c)
	}
	// The best preset the comparisons name is a row of the table.
	res.Aggregates = []Aggregate{aggregate("s", "pol", res.RunsOf("s", "pol")), aggregate("s", "hot", res.RunsOf("s", "hot"))}
	buf.Reset()
	if err := res.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "static:b (best preset)") {
		t.Fatalf("table without the best preset:\n%s", buf.String())
	}
	// The HTML report has the same row, and says why a ratio is missing:
	// beyond the fixed settings, or no small flow, never a bare "–".
	buf.Reset()
	if err := res.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	if h := buf.String(); !strings.Contains(h, "<td>static:b (best preset)</td>") ||
		!strings.Contains(h, "<td>beyond them: none of the 5 fixed settings run keeps 98% of its large-flow goodput</td>") {
		t.Fatalf("HTML report without the best preset's row or the word for beyond:\n%s", h)
	}
	if cells := none.Compare("quiet")[0].cells(); cells[9] != "none (no small flow finished)" {
		t.Fatalf("frontier ratio cell of a scenario without small flows %q", cells[9])
	}
}

// The loop table, in text and HTML alike, counts flaps, fallbacks,
// rollbacks and repairs per run, and says so.
func TestLoopTableTextAndHTML(t *testing.T) {
	loop := func(seed uint64, flaps int) Run {
		r := Run{Policy: "agent:x.yaml", SmallP99: 5, LargeGoodputGbps: 10,
			Loop: &LoopFigures{Intervals: 110, Queues: 4, Changes: 8, ChangesAfter: 4, Flaps: flaps, Rollbacks: 1,
				Rejections: map[string]int{}, WouldChangesAfter: 4}}
		r.Scenario, r.Seed = "s", seed
		return r
	}
	res := &Result{Scenarios: []string{"s"}, Policies: []string{"agent:x.yaml"}, Runs: []Run{loop(1, 2), loop(2, 4)}}
	for i := range res.Runs {
		res.Runs[i].Loop.SetRates()
	}
	res.Aggregates = []Aggregate{aggregate("s", "agent:x.yaml", res.Runs)}
	var text, html bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := res.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	// 8 changes of 4 queues over 110 intervals: 1.82 per queue per 100;
	// 4 past the first 10: 1.00; flaps 3.0 a run.
	if s := text.String(); !strings.Contains(s, "flaps, fallbacks, rollbacks and repairs a count per run") ||
		!regexp.MustCompile(`agent:x.yaml\s+110\s+1.82\s+1.00\s+3.0\s+0.0\s+1.0\s+0.0 \(0.0\)\s+1.00`).MatchString(s) {
		t.Fatalf("loop table text:\n%s", s)
	}
	if h := html.String(); !strings.Contains(h, "<th>flaps per run</th>") ||
		!strings.Contains(h, "<tr><td>agent:x.yaml</td><td>110</td><td>1.82</td><td>1.00</td><td>3.0</td>") {
		t.Fatalf("HTML report without the loop table:\n%s", h)
	}
}

// A policy that starves a collective can stand beyond the frontier, which
// reads flows only: the comparison counts the collective iterations
// against its frontier setting, seed by seed, and says when they are fewer.
func TestCompareCollectiveIterations(t *testing.T) {
	run := func(pol string, seed uint64, p99, good float64, iters ...int) Run {
		r := Run{Policy: pol, SmallP99: p99, LargeGoodputGbps: good}
		r.Scenario, r.Seed = "s", seed
		for i, n := range iters {
			r.Collectives = append(r.Collectives, report.Collective{Workload: i, Kind: "allreduce", Iterations: n})
		}
		return r
	}
	res := &Result{Scenarios: []string{"s"}}
	with := func(r Run, g float64) Run { r.CollectiveGoodputGbps = g; return r }
	for seed := uint64(1); seed <= 4; seed++ {
		f := 1 + 0.01*float64(seed)
		res.Runs = append(res.Runs, with(run("starve", seed, 2, 10, 0, 0), 5*f), with(run("keep", seed, 2, 10, 1, int(seed%2)), 9.9*f))
		res.OracleRuns = append(res.OracleRuns, run("static:a", seed, 5, 10, 1, int(seed%2)), with(run("catalogue:x", seed, 4, 10, 1, 1), 10*f))
	}
	// both policies stand beyond the frontier (catalogue:x, p99 4 against 2)
	starve, keep := res.Compare("starve"), res.Compare("keep")
	if len(starve) != 1 || starve[0].Frontier != "catalogue:x" || starve[0].FrontierRatio != 0.5 || len(keep) != 1 {
		t.Fatalf("Compare = %+v, %+v", starve, keep)
	}
	s, k := starve[0], keep[0]
	if s.Iterations != 0 || s.FrontierIterations != 2 || s.VsFrontierIterations.N != 4 || s.VsFrontierIterations.Mean != -2 || !s.FewerIterations() ||
		math.Abs(s.VsFrontierCollectiveGoodput.Mean-0.5) > 1e-9 || !s.SlowerCollectives() {
		t.Fatalf("the starving policy: %+v", s)
	}
	// 1.5 against 2 a run, -1 or 0 by seed: within the noise of 4 seeds;
	// 99% of the setting's collective goodput
	if k.Iterations != 1.5 || k.VsFrontierIterations.Mean != -0.5 || k.VsFrontierIterations.Hi <= 0 || k.FewerIterations() ||
		math.Abs(k.VsFrontierCollectiveGoodput.Mean-0.99) > 1e-9 || k.SlowerCollectives() {
		t.Fatalf("the keeping policy: %+v", k)
	}
	// One more iteration than the setting on every seed, at half its
	// flows' mean goodput: ahead, not SLOWER (the mean counts the flows of
	// the iteration the setting never reached).
	more := &Result{Scenarios: []string{"s"}}
	for seed := uint64(1); seed <= 4; seed++ {
		f := 1 + 0.01*float64(seed)
		more.Runs = append(more.Runs, with(run("more", seed, 2, 10, 3), 5*f))
		more.OracleRuns = append(more.OracleRuns, run("static:a", seed, 5, 10, 2), with(run("catalogue:x", seed, 4, 10, 2), 10*f))
	}
	if m := more.Compare("more"); len(m) != 1 || !m[0].MoreIterations() || m[0].FewerIterations() || m[0].SlowerCollectives() ||
		math.Abs(m[0].VsFrontierCollectiveGoodput.Mean-0.5) > 1e-9 {
		t.Fatalf("the policy with more iterations: %+v", m)
	}
	// An all-reduce that loses an iteration beside an all-to-all that gains
	// six: more in sum, fewer where it counts.
	mixed := &Result{Scenarios: []string{"s"}}
	for seed := uint64(1); seed <= 4; seed++ {
		mixed.Runs = append(mixed.Runs, with(run("mixed", seed, 2, 10, 1, 9), 5))
		mixed.OracleRuns = append(mixed.OracleRuns, run("static:a", seed, 5, 10, 2, 3), with(run("catalogue:x", seed, 4, 10, 2, 3), 10))
	}
	if m := mixed.Compare("mixed"); len(m) != 1 || m[0].VsFrontierIterations.Lo <= 0 || !m[0].FewerIterations() || m[0].MoreIterations() ||
		!m[0].SlowerCollectives() {
		t.Fatalf("fewer of one workload, more of another: %+v", m)
	}
	// No iteration either way; the policy finished no collective flow on 3
	// seeds of 4 (no ratio there), the setting on none.
	starved := &Result{Scenarios: []string{"s"}}
	for seed := uint64(1); seed <= 4; seed++ {
		g := 0.0
		if seed == 4 {
			g = 9.9
		}
		starved.Runs = append(starved.Runs, with(run("starved", seed, 2, 10, 0), g))
		starved.OracleRuns = append(starved.OracleRuns, run("static:a", seed, 5, 10, 0), with(run("catalogue:x", seed, 4, 10, 0), 10))
	}
	if m := starved.Compare("starved"); len(m) != 1 || m[0].VsFrontierCollectiveGoodput.N != 0 || m[0].VsFrontierCollectives.Starved != 3 ||
		!m[0].SlowerCollectives() || m[0].FewerIterations() {
		t.Fatalf("starved on seeds without a ratio: %+v", m)
	}
	var starvedText bytes.Buffer
	starved.Policies = []string{"starved"}
	if err := starved.writeComparisons(&starvedText); err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(strings.Fields(starvedText.String()), " "); !strings.Contains(s, "no collective flow finished on 3 seeds on which that setting's did (the reverse on 0): SLOWER") {
		t.Fatalf("starved, in words:\n%s", starvedText.String())
	}
	var moreText bytes.Buffer
	more.Policies = []string{"more"}
	if err := more.writeComparisons(&moreText); err != nil {
		t.Fatal(err)
	}
	if s := moreText.String(); !strings.Contains(s, "collective iterations 3.0 a run against 2.0 of catalogue:x (difference +1.0 [+1.0, +1.0] over 4 seeds)") ||
		!strings.Contains(s, ": MORE, ahead of that setting in what its ratio does not count") || strings.Contains(s, "SLOWER") {
		t.Fatalf("the policy with more iterations, in words:\n%s", s)
	}
	var buf bytes.Buffer
	res.Policies = []string{"starve", "keep"}
	if err := res.writeComparisons(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "collective iterations 0.0 a run against 2.0 of catalogue:x (difference -2.0 [-2.0, -2.0] over 4 seeds),\n      collective flows' goodput x0.50 [0.50, 0.50] of its: FEWER and SLOWER") ||
		!strings.Contains(out, "collective iterations 1.5 a run against 2.0 of catalogue:x (difference -0.5") || strings.Count(out, "FEWER") != 1 ||
		!strings.Contains(out, "collective flows' goodput x0.99 [0.99, 0.99] of its\n") {
		t.Fatalf("comparison text:\n%s", out)
	}
	// without a collective workload there is nothing to count
	plain := &Result{Scenarios: []string{"s"}, Runs: []Run{run("p", 1, 2, 10), run("p", 2, 2, 10)},
		OracleRuns: []Run{run("static:a", 1, 5, 10), run("static:a", 2, 5, 10), run("catalogue:x", 1, 4, 10), run("catalogue:x", 2, 4, 10)}}
	if c := plain.Compare("p"); len(c) != 1 || c[0].VsFrontierIterations.N != 0 || c[0].FewerIterations() {
		t.Fatalf("no collective: %+v", c)
	}
}

// A run's collective goodput is its collective workloads' finished flows'
// mean goodput, whatever their size; other workloads' flows and
// unfinished ones are left out.
func TestCollectiveGoodput(t *testing.T) {
	ws := []simenv.Workload{{Kind: simenv.WorkloadCDF}, {Kind: simenv.WorkloadAllReduce}, {Kind: simenv.WorkloadAllToAll}}
	us := simenv.Microsecond
	flows := []simenv.FlowRecord{
		{Workload: 0, SizeBytes: 1e6, Start: 0, Finish: 100 * us}, // 80 Gb/s, not a collective
		{Workload: 1, SizeBytes: 512 << 10, Start: 0, Finish: 100 * us},
		{Workload: 2, SizeBytes: 50e3, Start: 10 * us, Finish: 20 * us}, // 40 Gb/s
		{Workload: 1, SizeBytes: 1e6, Start: 0},                         // unfinished
	}
	var r Run
	r.setCollectiveGoodput(flows, ws)
	want := (float64(512<<10)*8/100e-6/1e9 + 40) / 2
	if math.Abs(r.CollectiveGoodputGbps-want) > 1e-9 {
		t.Fatalf("collective goodput %g, want %g", r.CollectiveGoodputGbps, want)
	}
	r = Run{}
	if r.setCollectiveGoodput(flows[:1], ws); r.CollectiveGoodputGbps != 0 {
		t.Fatalf("no collective flow: %g", r.CollectiveGoodputGbps)
	}
}

// The per-seed comparison pairs runs by seed: ratios 2, 1 and 4 on seeds
// 0-2 give a geometric mean of 2 and Student's t interval on their logs;
// a seed only one side ran, or a zero p99, pairs with nothing.
func TestPairedRatio(t *testing.T) {
	run := func(seed uint64, p99 float64) Run {
		r := Run{SmallP99: p99}
		r.Seed = seed
		return r
	}
	p99 := func(r Run) float64 { return r.SmallP99 }
	a := []Run{run(0, 4), run(1, 3), run(2, 8), run(3, 5), run(4, 0)}
	b := []Run{run(2, 2), run(0, 2), run(1, 3), run(4, 7), run(9, 1)}
	q := PairedRatio(a, b, p99)
	// logs ln2, 0, ln4: mean ln2, sd ln2, t(2) 4.3027 over sqrt 3.
	half := 4.302652729911275 * math.Ln2 / math.Sqrt(3)
	if q.N != 3 || math.Abs(q.Mean-2) > 1e-12 || math.Abs(q.Lo-2*math.Exp(-half)) > 1e-9 || math.Abs(q.Hi-2*math.Exp(half)) > 1e-9 {
		t.Fatalf("pairedRatio = %+v, want mean 2 over 3 seeds, [%g, %g]", q, 2*math.Exp(-half), 2*math.Exp(half))
	}
	if s := q.String(); s != fmt.Sprintf("2.00 [%.2f, %.2f]", q.Lo, q.Hi) {
		t.Fatalf("String = %q", s)
	}
	if q := PairedRatio(a[:1], b, p99); q.N != 0 || q.String() != "–" {
		t.Fatalf("one pair gave %+v", q)
	}
	// In Compare: equal runs on every seed give exactly 1 [1, 1].
	res := &Result{Scenarios: []string{"s"}, Policies: []string{"pol"}}
	for s := uint64(0); s < 3; s++ {
		for _, p := range []string{"pol", "static:a", Oracle} {
			r := run(s, float64(s+2))
			r.Scenario, r.Policy, r.LargeGoodputGbps = "s", p, 10
			res.Runs = append(res.Runs, r)
		}
	}
	c := res.Compare("pol")
	if len(c) != 1 || c[0].PairedVsPreset != (Ratio{1, 1, 1, 3}) || c[0].PairedVsOracle != (Ratio{1, 1, 1, 3}) {
		t.Fatalf("Compare = %+v", c)
	}
	var buf bytes.Buffer
	if err := res.writeComparisons(&buf); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); !strings.Contains(s, "small-flow p99 0.0% lower (ratio 1.00 [1.00, 1.00])") || !strings.Contains(s, "small-flow p99 x1.00 (ratio 1.00 [1.00, 1.00])") {
		t.Fatalf("comparison text:\n%s", s)
	}
}

// peerRecorder holds the default setting and counts the peers it is shown.
type peerRecorder struct {
	mu    sync.Mutex
	peers map[env.Peer]int
}

func (p *peerRecorder) Name() string { return "peers" }
func (p *peerRecorder) Decide(obs []env.Observation) []policy.Decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]policy.Decision, len(obs))
	for i, o := range obs {
		p.peers[o.Peer]++
		out[i] = policy.Decision{Key: o.Key, Setting: o.Current, Action: -1}
	}
	return out
}

// HidePeer reaches the policies: on a leaf-spine they see host and switch
// peers, with it only unknown ones.
func TestEvalHidePeer(t *testing.T) {
	sc := tiny()
	sc.Config.Topology = simenv.LeafSpineTopology(2, 1, 2, 100e9, 100e9, simenv.Microsecond)
	for _, hide := range []bool{false, true} {
		rec := &peerRecorder{peers: map[env.Peer]int{}}
		_, err := RunAll([]Scenario{sc}, []string{"peers"}, Options{Seeds: 1, Workers: 1, HidePeer: hide,
			Lookup: func(string) (policy.Policy, error) { return rec, nil }})
		if err != nil {
			t.Fatal(err)
		}
		shown := rec.peers[env.PeerHost] > 0 && rec.peers[env.PeerSwitch] > 0 && rec.peers[env.PeerUnknown] == 0
		if hide == shown || (hide && rec.peers[env.PeerUnknown] == 0) {
			t.Errorf("hide-peer %v: policy saw %v", hide, rec.peers)
		}
	}
}

// TestEvalCollectives: a scenario with an allreduce reports its iteration
// times per run and in the aggregates, shows the columns, and compares
// the policy's iteration p99 with the best preset's; one without shows no
// iteration columns.
func TestEvalCollectives(t *testing.T) {
	cfg := simenv.DefaultConfig()
	cfg.Name, cfg.Seed, cfg.Duration = "ring", 3, 2*simenv.Millisecond
	cfg.Topology = simenv.StarTopology(4, 100e9, simenv.Microsecond)
	cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadAllReduce, Priority: 3, Ranks: 4, SizeBytes: 256_000, Gap: 50 * simenv.Microsecond}}
	sc := Scenario{Named: scenario.Named{Name: "ring", Config: cfg}}
	res, err := RunAll([]Scenario{sc}, []string{"static:hpcc", "static:sonic-default", "adaptive"}, Options{Seeds: 2, Interval: 100 * simenv.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Runs {
		if len(r.Collectives) != 1 || r.Collectives[0].Iterations == 0 || r.IterP99Us <= 0 || r.IterP50Us > r.IterP99Us {
			t.Fatalf("%s: collectives %+v, iteration p50 %g p99 %g", r.Policy, r.Collectives, r.IterP50Us, r.IterP99Us)
		}
	}
	if m := res.AggregateOf("ring", "adaptive").Metrics["iter_p99_us"]; m.Mean <= 0 {
		t.Fatalf("aggregate iteration p99 %+v", m)
	}
	cs := res.Compare("adaptive")
	if len(cs) != 1 || cs[0].IterRatio <= 0 {
		t.Fatalf("comparison %+v", cs)
	}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "iter p99 µs") || !strings.Contains(b.String(), "collective iteration p99 x") {
		t.Fatalf("text without the collective columns or comparison:\n%s", b.String())
	}
	b.Reset()
	plain, err := RunAll([]Scenario{tiny()}, []string{"static:hpcc"}, Options{Seeds: 1, Interval: 100 * simenv.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "iter p") {
		t.Fatalf("a scenario without collectives shows iteration columns:\n%s", b.String())
	}
}

// TestFrontier: with Options.Frontier the fixed settings run without
// static:best, and each comparison's frontier ratio is, as a step, the
// policy's small-flow p99 over the lowest mean p99 among the fixed
// settings that keep 98% of its large-flow goodput and never drop, and
// interpolated, over the line between the frontier's settings either
// side of its goodput, each worked out here from the runs.
func TestFrontier(t *testing.T) {
	res, err := RunAll([]Scenario{tiny()}, []string{"static:hpcc", "adaptive"}, Options{Seeds: 2, Interval: 100 * simenv.Microsecond,
		Frontier: true, FrontierShape: FrontierStep, OracleCatalogue: [][3]int{{0, 0, 1}, {8, 0, 1}, {12, 0, 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.HasFrontier("tiny") || len(res.OracleRuns) == 0 {
		t.Fatal("no fixed-setting runs with Frontier")
	}
	cs := res.Compare("adaptive")
	if len(cs) != 1 {
		t.Fatalf("comparisons %+v", cs)
	}
	c := cs[0]
	mine := res.RunsOf("tiny", "adaptive")
	myP99, myGood := mean(mine, smallP99), mean(mine, largeGoodput)
	byCand, fixed := group(res.allRuns(), "tiny", isFixed)
	best, bestP := "", math.Inf(1)
	for _, f := range fixed {
		rs := byCand[f]
		if !anyDrops(rs) && mean(rs, largeGoodput) >= 0.98*myGood && mean(rs, smallP99) < bestP {
			best, bestP = f, mean(rs, smallP99)
		}
	}
	if best == "" {
		t.Fatal("no fixed setting keeps 98% of adaptive's goodput on tiny; pick another catalogue")
	}
	if c.Frontier != best || math.Abs(c.FrontierRatio-myP99/bestP) > 1e-12 || c.PairedVsFrontier.N != 2 {
		t.Fatalf("frontier %q ratio %g (paired %+v), want %q %g", c.Frontier, c.FrontierRatio, c.PairedVsFrontier, best, myP99/bestP)
	}
	// interpolated: the lowest p99 among the settings that keep all of
	// its goodput, and the one with the most goodput short of it and a
	// lower p99
	at, atP, atG := "", math.Inf(1), 0.0
	for _, f := range fixed {
		if rs := byCand[f]; !anyDrops(rs) && mean(rs, largeGoodput) >= myGood && mean(rs, smallP99) < atP {
			at, atP, atG = f, mean(rs, smallP99), mean(rs, largeGoodput)
		}
	}
	lo, loP, loG := "", 0.0, math.Inf(-1)
	for _, f := range fixed {
		if rs := byCand[f]; !anyDrops(rs) && mean(rs, largeGoodput) < myGood && mean(rs, smallP99) < atP && mean(rs, largeGoodput) > loG {
			lo, loP, loG = f, mean(rs, smallP99), mean(rs, largeGoodput)
		}
	}
	if at == "" || lo == "" {
		t.Fatalf("adaptive's goodput %.3g is not between two fixed settings on tiny (%q above, %q below); pick another catalogue", myGood, at, lo)
	}
	w := (atG - myGood) / (atG - loG)
	res.FrontierShape = ""
	c = res.Compare("adaptive")[0]
	if c.Frontier != at || c.FrontierBelow != lo || math.Abs(c.FrontierBelowShare-w) > 1e-12 ||
		math.Abs(c.FrontierRatio-myP99/(w*loP+(1-w)*atP)) > 1e-12 || c.PairedVsFrontier.N != 2 {
		t.Fatalf("interpolated: frontier %q, below %q (%.3g), ratio %g (paired %+v); want %q, %q (%.3g), %g",
			c.Frontier, c.FrontierBelow, c.FrontierBelowShare, c.FrontierRatio, c.PairedVsFrontier, at, lo, w, myP99/(w*loP+(1-w)*atP))
	}
	if s := res.Compare("static:hpcc")[0]; s.FrontierRatio < 1-1e-12 {
		t.Errorf("interpolated: a fixed setting scores %.4g against the frontier it is a point of or behind", s.FrontierRatio)
	}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "frontier ratio") {
		t.Fatalf("text has no frontier ratio:\n%s", b.String())
	}
	// the summary: the same comparisons, every fixed setting with its means
	var js bytes.Buffer
	if err := res.WriteSummaryJSON(&js); err != nil {
		t.Fatal(err)
	}
	var sum Summary
	if err := json.Unmarshal(js.Bytes(), &sum); err != nil {
		t.Fatalf("summary JSON: %v\n%s", err, js.String())
	}
	if len(sum.Comparisons) != 1 || sum.Comparisons[0].Frontier != c.Frontier || sum.Comparisons[0].FrontierBelow != c.FrontierBelow || sum.Comparisons[0].FrontierRatio != c.FrontierRatio ||
		sum.Comparisons[0].Policy != "adaptive" || sum.Comparisons[0].Scenario != "tiny" {
		t.Fatalf("summary comparisons %+v, want %+v", sum.Comparisons, c)
	}
	if len(sum.FixedSettings) != len(fixed) {
		t.Fatalf("summary has %d fixed settings, the run %d (%v)", len(sum.FixedSettings), len(fixed), fixed)
	}
	for _, f := range sum.FixedSettings {
		rs := byCand[f.Setting]
		if f.Scenario != "tiny" || f.Seeds != len(rs) || f.SmallP99 != mean(rs, smallP99) || f.LargeGoodputGbps != mean(rs, largeGoodput) {
			t.Fatalf("fixed setting %+v: not the means of its %d runs", f, len(rs))
		}
		if f.Setting == best && !f.OnFrontier {
			t.Fatalf("%s is the frontier point of the ratio but not on_frontier", best)
		}
	}
	var png bytes.Buffer
	if err := res.PlotFrontier(&png, "tiny"); err != nil {
		t.Fatal(err)
	}
	if _, err := imagepng.Decode(&png); err != nil {
		t.Fatalf("frontier plot: %v", err)
	}
}

// TestSummaryOnFrontier: a fixed setting is on the frontier unless
// another that dropped nothing is as good on both axes and better on one;
// one that dropped never is, nor does it push others off. Scenarios lose
// their @DURATION unless two would then share a name.
func TestSummaryOnFrontier(t *testing.T) {
	r := &Result{Scenarios: []string{"s@20ms", "u@1ms", "u@2ms"}}
	add := func(sc, base, pol string, p99, good float64, drops uint64) {
		x := Run{Policy: pol, SmallP99: p99, LargeGoodputGbps: good, baseName: base}
		x.Scenario, x.Drops = sc, drops
		r.OracleRuns = append(r.OracleRuns, x)
	}
	c := func(s string) string { return "catalogue:" + s + " @100G" }
	want := map[string]bool{}
	for _, p := range []struct {
		pol       string
		p99, good float64
		drops     uint64
		on        bool
	}{
		{"static:hpcc", 10, 20, 0, true},                         // nothing with its goodput has a lower p99
		{c("kmin 50KB kmax 100KB pmax 1%"), 5, 10, 0, true},      // the lowest p99
		{c("kmin 100KB kmax 200KB pmax 1%"), 12, 15, 0, false},   // hpcc: more goodput at a lower p99
		{c("kmin 500KB kmax 1MB pmax 1%"), 30, 25, 0, true},      // the most goodput without drops
		{c("kmin 1MB kmax 2MB pmax 1%"), 2, 40, 1, false},        // it dropped
		{c("kmin 250KB kmax 500KB pmax 1%"), 10, 20, 0, true},    // level with hpcc on both axes
		{c("kmin 200KB kmax 400KB pmax 0.3%"), 10, 15, 0, false}, // hpcc's p99 with more goodput
	} {
		add("s@20ms", "s", p.pol, p.p99, p.good, p.drops)
		want[p.pol] = p.on
	}
	add("u@1ms", "u", "static:hpcc", 1, 1, 0)
	add("u@2ms", "u", "static:hpcc", 2, 2, 0)
	s := r.Summary()
	if len(s.FixedSettings) != len(want)+2 || s.Comparisons == nil {
		t.Fatalf("summary %+v", s)
	}
	for _, f := range s.FixedSettings[:len(want)] {
		if f.OnFrontier != want[f.Setting] || f.Scenario != "s" {
			t.Errorf("%s: on_frontier %v scenario %q, want %v and the name without @DURATION", f.Setting, f.OnFrontier, f.Scenario, want[f.Setting])
		}
	}
	if u1, u2 := s.FixedSettings[len(want)], s.FixedSettings[len(want)+1]; u1.Scenario != "u@1ms" || u2.Scenario != "u@2ms" {
		t.Errorf("one scenario at two durations: named %q and %q, want them kept apart", u1.Scenario, u2.Scenario)
	}
}

func TestFrontierLine(t *testing.T) {
	pts := plotter.XYs{{X: 10, Y: 5}, {X: 20, Y: 8}, {X: 15, Y: 9}, {X: 5, Y: 2}, {X: 20, Y: 7}, {X: 12, Y: 4}}
	got := frontierLine(pts)
	want := plotter.XYs{{X: 5, Y: 2}, {X: 12, Y: 4}, {X: 20, Y: 7}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("frontier %v, want %v", got, want)
	}
}

// A policy worse than the best preset is said to be worse, not "cut".
func TestComparisonTextSaysWorse(t *testing.T) {
	var b bytes.Buffer
	Comparison{Scenario: "s", Policy: "p", BestPreset: "static:hpcc", SmallP99Cut: -0.25, GoodputRatio: 1.1}.writeText(&b)
	if !strings.Contains(b.String(), "vs the best preset static:hpcc: small-flow p99 25.0% HIGHER (worse), large-flow goodput 110.0% of its") {
		t.Errorf("got %q", b.String())
	}
}

// The report's trace watches without touching: runs are identical with
// and without it, the first seed of each policy carries one, and the
// HTML report draws it.
func TestTraceDoesNotDisturb(t *testing.T) {
	opt := Options{Seeds: 2, Interval: 100 * simenv.Microsecond}
	plain, err := RunAll([]Scenario{tiny()}, []string{"static:hpcc", "adaptive"}, opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.Trace = true
	traced, err := RunAll([]Scenario{tiny()}, []string{"static:hpcc", "adaptive"}, opt)
	if err != nil {
		t.Fatal(err)
	}
	for i := range plain.Runs {
		a, b := plain.Runs[i], traced.Runs[i]
		a.WallS, b.WallS, a.PacketHopsPerWall, b.PacketHopsPerWall = 0, 0, 0, 0
		if !reflect.DeepEqual(a.Summary, b.Summary) {
			t.Fatalf("run %d differs with a trace:\n%+v\n%+v", i, a.Summary, b.Summary)
		}
		if (b.trace != nil) != (b.Seed == tiny().Config.Seed) {
			t.Errorf("run %d (seed %d): trace %v", i, b.Seed, b.trace != nil)
		}
	}
	var buf bytes.Buffer
	if err := traced.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), `alt="queue heatmap of `); n != 2 {
		t.Errorf("%d queue heatmaps in the report, want 2", n)
	}
	// The two policies' depth heatmaps compare: one scale, the deeper
	// queue of both rounded up to a stable step.
	hs, _ := traced.depthHeatmaps(traced.Scenarios[0])
	if len(hs) != 2 || hs[0].Max != hs[1].Max || hs[0].Max != max(1, chart.NiceCeil(chart.MaxOf(hs...))) {
		t.Errorf("depth heatmaps' scales: %d maps, %g and %g", len(hs), hs[0].Max, hs[len(hs)-1].Max)
	}
}

// A switch that pauses its incast's senders shows paused time: the PAUSE
// a switch sends counts, not only the PAUSE it receives (it was blind to
// every pause of a star, where only switches send them).
func TestEvalCountsPausesTheSwitchSends(t *testing.T) {
	c := simenv.DefaultConfig()
	c.Name = "pfc"
	c.Topology = simenv.StarTopology(9, 100e9, simenv.Microsecond)
	c.BufferBytes = 2_000_000
	c.Duration = 400 * simenv.Microsecond
	c.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Priority: 3, Fanin: 8, SizeBytes: 500_000,
		Every: 200 * simenv.Microsecond, End: 400 * simenv.Microsecond}}
	res, err := RunAll([]Scenario{{Named: scenario.Named{Name: "pfc", Config: c}}}, []string{"static:sonic-default"},
		Options{Seeds: 1, Interval: 100 * simenv.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Runs[0]
	if r.PFCPauses == 0 || r.PFCPausedUs <= 0 {
		t.Fatalf("%d PAUSE frames, %.1f µs paused", r.PFCPauses, r.PFCPausedUs)
	}
}

// Deciding outside its validated intervals, the built-in model holds, and
// the table says so instead of showing the default setting's figures as
// the model's.
func TestEvalWarnsOutsideValidatedInterval(t *testing.T) {
	res, err := RunAll([]Scenario{tiny()}, []string{"builtin"}, Options{Seeds: 1, Interval: 50 * simenv.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs[0].HeldForInterval == 0 {
		t.Fatal("no decision held at 50 µs")
	}
	var b bytes.Buffer
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "WARNING: builtin held") || !strings.Contains(b.String(), "counters over 50µs") {
		t.Errorf("text:\n%s", b.String())
	}
}

// A run that completed no collective iteration has no iteration time: the
// aggregate leaves it out, and the comparison pairs only the seeds in
// which both policies completed one (averaged in as 0, the policy that
// finishes fewer iterations would look faster).
func TestIterationTimesSkipRunsWithout(t *testing.T) {
	iterRun := func(seed uint64, us float64) Run {
		r := Run{IterP99Us: us}
		r.Seed = seed
		return r
	}
	runs := []Run{iterRun(1, 100), iterRun(2, 0), iterRun(3, 300)}
	a := aggregate("s", "p", runs)
	if m := a.Metrics["iter_p99_us"]; m.N != 2 || m.Mean != 200 {
		t.Fatalf("aggregate over runs with an iteration: %+v, want n 2 mean 200", m)
	}
	preset := []Run{iterRun(1, 50), iterRun(2, 400), iterRun(3, 150)}
	r := PairedRatio(runs, preset, iterP99)
	if r.N != 2 || math.Abs(r.Mean-2) > 1e-9 || countIf(runs, iterP99) != 2 {
		t.Fatalf("paired iteration ratio %+v (want 2 over 2 seeds), %d runs with one", r, countIf(runs, iterP99))
	}
}

// A warm-up leaves the flows that start before it out of the flow figures
// of every policy, and one control interval's warm-up is the same as that
// interval given as a time; PFC and goodput still cover the whole run.
func TestEvalWarmup(t *testing.T) {
	dt := 100 * simenv.Microsecond
	run := func(o Options) Run {
		t.Helper()
		o.Seeds, o.Workers, o.Interval = 1, 1, dt
		res, err := RunAll([]Scenario{tiny()}, []string{"static:hpcc"}, o)
		if err != nil {
			t.Fatal(err)
		}
		return res.Runs[0]
	}
	all, half, one, byTime := run(Options{}), run(Options{Warmup: simenv.Millisecond}), run(Options{WarmupIntervals: 1}), run(Options{Warmup: dt})
	if !(half.Flows < all.Flows && half.Flows > 0) || half.WarmupUs != 1000 || all.WarmupUs != 0 {
		t.Fatalf("flows %d of %d with a 1 ms warm-up (%g µs recorded)", half.Flows, all.Flows, half.WarmupUs)
	}
	if half.GoodputGbps != all.GoodputGbps || half.PFCPauses != all.PFCPauses ||
		half.UtilisationFromFirstFlow != all.UtilisationFromFirstFlow || half.FirstFlowS != all.FirstFlowS {
		t.Fatalf("the warm-up changed the whole-run figures: goodput %g/%g, PAUSE %d/%d, utilisation from the first flow %g/%g",
			half.GoodputGbps, all.GoodputGbps, half.PFCPauses, all.PFCPauses, half.UtilisationFromFirstFlow, all.UtilisationFromFirstFlow)
	}
	if one.Flows != byTime.Flows || one.SmallP99 != byTime.SmallP99 || one.WarmupUs != 100 || one.Flows >= all.Flows {
		t.Fatalf("one interval: %d flows, p99 %g (%g µs); 100 µs: %d flows, p99 %g; none: %d flows", one.Flows, one.SmallP99, one.WarmupUs, byTime.Flows, byTime.SmallP99, all.Flows)
	}
	// a warm-up that reaches the end of the run would leave nothing to
	// judge (every figure 0, read as a perfect p99): refused, with the scenario
	_, err := RunAll([]Scenario{tiny()}, []string{"static:hpcc"}, Options{Seeds: 1, Workers: 1, Interval: dt, Warmup: simenv.Second})
	if err == nil || !strings.Contains(err.Error(), "warmup 1s is not before the end of scenario") {
		t.Fatalf("a warm-up past the end: %v", err)
	}
}

// A scenario that names its interval and warmup (a twin: the agent's
// interval, its lead-in) is run with them where eval is given none, and
// as the same flags would run it; given flags win.
func TestEvalScenarioIntervalAndWarmup(t *testing.T) {
	dt := 100 * simenv.Microsecond
	run := func(sc Scenario, o Options) Run {
		t.Helper()
		o.Seeds, o.Workers = 1, 1
		res, err := RunAll([]Scenario{sc}, []string{"builtin"}, o)
		if err != nil {
			t.Fatal(err)
		}
		return res.Runs[0]
	}
	named := tiny()
	named.Config.Interval, named.Config.Warmup = dt, simenv.Millisecond
	own, flags, plain := run(named, Options{}), run(tiny(), Options{Interval: dt, Warmup: simenv.Millisecond}), run(tiny(), Options{})
	if own.Decisions != flags.Decisions || own.Flows != flags.Flows || own.SmallP99 != flags.SmallP99 || own.WarmupUs != 1000 {
		t.Fatalf("the scenario's own: %d decisions, %d flows, p99 %g, warmup %g µs; as flags: %d, %d, %g", own.Decisions, own.Flows, own.SmallP99, own.WarmupUs,
			flags.Decisions, flags.Flows, flags.SmallP99)
	}
	if plain.Decisions == own.Decisions || plain.Flows <= own.Flows || plain.WarmupUs != 0 {
		t.Fatalf("without them: %d decisions, %d flows; with: %d, %d", plain.Decisions, plain.Flows, own.Decisions, own.Flows)
	}
	over := run(named, Options{Interval: 2 * dt, WarmupIntervals: 1})
	if over.WarmupUs != 200 || over.Decisions >= own.Decisions {
		t.Fatalf("given flags: warmup %g µs, %d decisions (the scenario's: %d)", over.WarmupUs, over.Decisions, own.Decisions)
	}
	// a negative warmup (eval --warmup 0) judges every flow, the scenario's warmup too
	none := run(named, Options{Warmup: -1})
	if none.WarmupUs != 0 || none.Flows <= own.Flows || none.Decisions != own.Decisions {
		t.Fatalf("no warmup: %g µs, %d flows, %d decisions; the scenario's: %d flows, %d decisions", none.WarmupUs, none.Flows, none.Decisions, own.Flows, own.Decisions)
	}
}

// The first run to fail stops the evaluation: no job starts after it, and
// its error, naming the scenario, policy and seed, is returned at once,
// not after every other simulation.
func TestRunAllStopsAtTheFirstFailure(t *testing.T) {
	var calls atomic.Int32
	fail := func(sc Scenario, spec string, seed uint64, interval simenv.Time) (*simenv.Sim, LoopFigures, error) {
		calls.Add(1)
		return nil, LoopFigures{}, errors.New("the loop's switch is gone")
	}
	_, err := RunAll([]Scenario{tiny()}, []string{"bad:x", "static:hpcc"},
		Options{Seeds: 20, Workers: 1, Loops: map[string]LoopRunner{"bad:": fail}})
	if err == nil || !strings.Contains(err.Error(), "policy bad:x, seed") || !strings.Contains(err.Error(), "the loop's switch is gone") {
		t.Fatalf("err = %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d failing runs started after the first failure, want none", n-1)
	}
}

// A closed loop is set beside its bare policy seed by seed, its small-flow
// p99 and large-flow goodput over the bare runs', where the same eval ran
// them: two frontier ratios read at two goodputs can part far more than
// the runs do.
func TestCompareLoopWithItsBarePolicy(t *testing.T) {
	run := func(pol string, seed uint64, p99, good float64, bare string) Run {
		r := Run{Policy: pol, SmallP99: p99, LargeGoodputGbps: good}
		r.Scenario, r.Seed = "s", seed
		if strings.HasPrefix(pol, "agent:") {
			r.Loop = &LoopFigures{Intervals: 20, Queues: 2, Rejections: map[string]int{}, Bare: bare}
		}
		return r
	}
	res := &Result{Scenarios: []string{"s"}, Policies: []string{"bare", "agent:a.yaml", "agent:b.yaml", "agent:c.yaml"}}
	for seed := uint64(1); seed <= 4; seed++ {
		f := 1 + 0.1*float64(seed)
		res.Runs = append(res.Runs, run("bare", seed, 10*f, 100*f, ""),
			run("agent:a.yaml", seed, 9.4*f, 96.5*f, "bare"), // paired: x0.94 and x0.965 on every seed
			run("agent:b.yaml", seed, 9*f, 90*f, "other"),    // its bare policy not run here
			run("agent:c.yaml", seed, 9*f, 90*f, ""))         // shadow, or models from another registry
		res.OracleRuns = append(res.OracleRuns, run("static:a", seed, 12, 100, ""))
	}
	a := res.Compare("agent:a.yaml")
	if len(a) != 1 || a[0].Bare != "bare" || math.Abs(a[0].VsBareP99.Mean-0.94) > 1e-9 || math.Abs(a[0].VsBareGoodput.Mean-0.965) > 1e-9 ||
		a[0].VsBareP99.N != 4 || a[0].VsBareP99.Lo > a[0].VsBareP99.Mean || a[0].VsBareP99.Hi < a[0].VsBareP99.Mean {
		t.Fatalf("loop beside its bare policy: %+v", a)
	}
	for _, pol := range []string{"agent:b.yaml", "agent:c.yaml", "bare"} {
		if c := res.Compare(pol); len(c) != 1 || c[0].Bare != "" || c[0].VsBareP99.N != 0 {
			t.Fatalf("%s set beside a bare policy: %+v", pol, c)
		}
	}
	var b bytes.Buffer
	writeComparisonsOf(&b, append(res.Compare("agent:a.yaml"), res.Compare("agent:b.yaml")...))
	if s := strings.Join(strings.Fields(b.String()), " "); !strings.Contains(s, "vs its bare policy bare, seed by seed: small-flow p99 x0.940 [0.940, 0.940], large-flow goodput x0.965 [0.965, 0.965]") ||
		strings.Count(s, "vs its bare policy") != 1 {
		t.Fatalf("comparisons text:\n%s", s)
	}
	// and in the summary file
	js, err := json.Marshal(a[0])
	if err != nil || !strings.Contains(string(js), `"bare_policy":"bare","vs_bare_small_p99":{"mean":0.94`) {
		t.Fatalf("summary JSON (%v): %s", err, js)
	}
}
