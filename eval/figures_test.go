package eval

import (
	"math"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/report"
)

// figureRun is a run of pol on scenario "s" with the given figures.
func figureRun(pol string, seed uint64, p99, good float64, drops uint64) Run {
	r := Run{Policy: pol, SmallP99: p99, LargeGoodputGbps: good}
	r.Scenario, r.Seed, r.Drops = "s", seed, drops
	return r
}

// A run that finished no small flow has no small-flow p99: it is left out
// of the means instead of counted as 0, which made a policy that stalled
// its small flows on one seed of three look beyond the frontier (0.67,
// while every paired seed is 1.00), and a fixed setting that finished
// none the frontier (its 0 beat every real p99, and no ratio was left).
func TestSmallFlowFigureMissingIsNotZero(t *testing.T) {
	r := &Result{Scenarios: []string{"s"}, Policies: []string{"pol"},
		Runs:       []Run{figureRun("pol", 1, 2, 10, 0), figureRun("pol", 2, 2, 10, 0), figureRun("pol", 3, 0, 10, 0)},
		OracleRuns: []Run{figureRun("static:dcqcn", 1, 2, 10, 0), figureRun("static:dcqcn", 2, 2, 10, 0), figureRun("static:dcqcn", 3, 2, 10, 0)}}
	c := r.Compare("pol")[0]
	if math.Abs(c.FrontierRatio-1) > 1e-9 || math.Abs(c.PairedVsFrontier.Mean-1) > 1e-9 {
		t.Errorf("frontier ratio %.3f, paired %.3f: want 1.00 both", c.FrontierRatio, c.PairedVsFrontier.Mean)
	}
	if a := aggregate("s", "pol", r.Runs); a.Metrics["small_p99"].Mean != 2 || a.Metrics["small_p99"].N != 2 {
		t.Errorf("the table's small-flow p99: %+v, want 2 over the 2 seeds with one", a.Metrics["small_p99"])
	}

	var fixed []Run
	for s := uint64(1); s <= 3; s++ {
		fixed = append(fixed, figureRun("static:dcqcn", s, 0, 10, 0), figureRun("static:hpcc", s, 3, 10, 0))
	}
	r = &Result{Scenarios: []string{"s"}, Policies: []string{"pol"},
		Runs: []Run{figureRun("pol", 1, 6, 10, 0), figureRun("pol", 2, 6, 10, 0), figureRun("pol", 3, 6, 10, 0)}, OracleRuns: fixed}
	c = r.Compare("pol")[0]
	if c.Frontier != "static:hpcc" || math.Abs(c.FrontierRatio-2) > 1e-9 || c.NoSmallFlowFigure {
		t.Errorf("frontier %q ratio %.3f (no figure %v): want static:hpcc at 2.00", c.Frontier, c.FrontierRatio, c.NoSmallFlowFigure)
	}
	for _, f := range r.Summary().FixedSettings {
		if f.Setting == "static:dcqcn" && f.OnFrontier {
			t.Errorf("a setting with no small-flow figure on the frontier: %+v", f)
		}
	}
	// only settings without a figure qualify: no ratio, and not beyond
	r.OracleRuns = fixed[:0:0]
	for s := uint64(1); s <= 3; s++ {
		r.OracleRuns = append(r.OracleRuns, figureRun("static:dcqcn", s, 0, 10, 0))
	}
	if c = r.Compare("pol")[0]; c.Frontier != "" || !c.NoSmallFlowFigure || c.Beyond() {
		t.Errorf("only a setting without a small-flow figure qualifies: %+v", c)
	}
}

// A policy that drops is not beyond the frontier in goodput because every
// fixed setting dropped too (the frontier takes none that drops): it has
// no frontier figure. One that does not drop is.
func TestDroppingPolicyIsNotBeyond(t *testing.T) {
	var fixed []Run
	for s := uint64(1); s <= 2; s++ {
		fixed = append(fixed, figureRun("static:dcqcn", s, 2, 20, 1), figureRun("static:hpcc", s, 2, 20, 1))
	}
	r := &Result{Scenarios: []string{"s"}, Policies: []string{"pol", "clean"},
		Runs:       []Run{figureRun("pol", 1, 9, 10, 5), figureRun("pol", 2, 9, 10, 5), figureRun("clean", 1, 9, 10, 0), figureRun("clean", 2, 9, 10, 0)},
		OracleRuns: fixed}
	if c := r.Compare("pol")[0]; c.Beyond() || c.Frontier != "" {
		t.Errorf("a policy that dropped %d packets, every fixed setting dropping too: beyond %v", c.Drops, c.Beyond())
	}
	if c := r.Compare("clean")[0]; !c.Beyond() {
		t.Errorf("a policy without drops where every fixed setting drops: %+v, want beyond", c)
	}
}

// schedule:best's frontier choice does not take a plan that finished no
// small flow for the best ratio (its p99 of 0 made a ratio of 0).
func TestScheduleFrontierSkipsPlansWithoutSmallFlows(t *testing.T) {
	runs := map[string][]Run{}
	for s := uint64(1); s <= 2; s++ {
		runs["F"] = append(runs["F"], figureRun("F", s, 4, 10, 0))
		runs["planA"] = append(runs["planA"], figureRun("planA", s, 2, 10, 0))
		runs["planB"] = append(runs["planB"], figureRun("planB", s, 0, 10, 0))
	}
	if got := pickByFrontier([]string{"planB", "planA"}, []string{"F"}, runs, FrontierInterpolated); got != "planA" {
		t.Errorf("picked %s, want planA (ratio 0.5; planB finished no small flow)", got)
	}
}

// The hosts' utilisation from the first flow reads the run's first flow,
// as its busy time is the whole run's: given the flows after a warmup it
// came out above 100% (eval now passes every flow; TestEvalWarmup).
func TestUtilisationFromFirstFlow(t *testing.T) {
	ms := simenv.Millisecond
	flows := []simenv.FlowRecord{{SizeBytes: 1000, Start: ms}, {SizeBytes: 1000, Start: 3 * ms}}
	st := simenv.Stats{Now: 6 * ms, Hosts: 1, HostTxBusy: 5 * ms}
	if first, util := report.FromFirstFlow(flows, st); first != 0.001 || math.Abs(util-1) > 1e-9 {
		t.Errorf("from the first flow: %g s, %.2f; want 0.001 s, 1.00", first, util)
	}
}

// The censored large-flow goodput counts a large flow that did not finish
// but had time to at line rate, at the rate it got: a run that starves its
// 2 MB flow no longer has the higher goodput for it (the finished flows'
// goodput then fell back to the mid-sized flows': 40 against 10 Gb/s). A
// flow too young to have finished at line rate says nothing.
func TestCensoredGoodput(t *testing.T) {
	us := simenv.Microsecond
	finished := []simenv.FlowRecord{{SizeBytes: 2_000_000, Start: 0, Finish: 1600 * us, Standalone: 170 * us, Delivered: 2_000_000},
		{SizeBytes: 500_000, Start: 0, Finish: 100 * us, Standalone: 50 * us, Delivered: 500_000}}
	starved := []simenv.FlowRecord{{SizeBytes: 2_000_000, Start: 0, Standalone: 170 * us, Delivered: 250_000},
		{SizeBytes: 500_000, Start: 0, Finish: 100 * us, Standalone: 50 * us, Delivered: 500_000},
		{SizeBytes: 4_000_000, Start: 1900 * us, Standalone: 340 * us, Delivered: 10_000}} // too young to tell
	var a, b Run
	a.setFlowFigures(finished, 2000*us)
	b.setFlowFigures(starved, 2000*us)
	if math.Abs(a.LargeGoodputCensoredGbps-10) > 1e-9 || math.Abs(a.LargeGoodputFinishedGbps-10) > 1e-9 || a.LargeGoodputGbps != a.LargeGoodputCensoredGbps {
		t.Errorf("finished: censored %.2f, finished %.2f, read %.2f Gb/s; want 10 each", a.LargeGoodputCensoredGbps, a.LargeGoodputFinishedGbps, a.LargeGoodputGbps)
	}
	if math.Abs(b.LargeGoodputCensoredGbps-1) > 1e-9 || math.Abs(b.LargeGoodputFinishedGbps-40) > 1e-9 {
		t.Errorf("starved: censored %.2f (want 1: 250 KB in 2 ms), finished %.2f Gb/s (40: the mid-sized flow's)", b.LargeGoodputCensoredGbps, b.LargeGoodputFinishedGbps)
	}
}

// eval reads the censored figure by default, the finished one with
// --goodput finished; an unknown definition is refused.
func TestGoodputOption(t *testing.T) {
	run := func(g string) (Run, error) {
		res, err := RunAll([]Scenario{tiny()}, []string{"static:hpcc"}, Options{Seeds: 1, Workers: 1, Goodput: g})
		if err != nil {
			return Run{}, err
		}
		return res.Runs[0], nil
	}
	f, err := run(GoodputFinished)
	if err != nil {
		t.Fatal(err)
	}
	c, err := run("")
	if err != nil {
		t.Fatal(err)
	}
	if f.LargeGoodputGbps != f.LargeGoodputFinishedGbps || c.LargeGoodputGbps != c.LargeGoodputCensoredGbps ||
		c.LargeGoodputFinishedGbps != f.LargeGoodputFinishedGbps || c.LargeGoodputCensoredGbps <= 0 {
		t.Errorf("finished %+v / censored %+v", f, c)
	}
	if _, err := run("bytes"); err == nil || !strings.Contains(err.Error(), `goodput "bytes"`) {
		t.Errorf("an unknown definition: %v", err)
	}
}

// A scenario without small flows (an all-to-all of 256 KiB flows) still
// has a best preset and static:best a pick: the lowest p99 among those
// with one, else the first (the candidates without a figure gave none,
// static:best printed zeros and schedule:best indexed -1).
func TestBestPresetWithoutSmallFlows(t *testing.T) {
	var fixed []Run
	for s := uint64(1); s <= 2; s++ {
		fixed = append(fixed, figureRun("static:dcqcn", s, 0, 10, 0), figureRun("static:hpcc", s, 0, 10, 0))
	}
	by, order := group(fixed, "s", isFixed)
	if got := PickOracle(order, by); got != "static:dcqcn" {
		t.Errorf("pick %q, want the first, static:dcqcn", got)
	}
	r := &Result{Scenarios: []string{"s"}, Policies: []string{"pol"},
		Runs: []Run{figureRun("pol", 1, 0, 10, 0), figureRun("pol", 2, 0, 10, 0)}, OracleRuns: fixed}
	if c := r.Compare("pol"); len(c) != 1 || c[0].BestPreset != "static:dcqcn" {
		t.Errorf("comparisons %+v", c)
	}
	fixed[1].SmallP99, fixed[3].SmallP99 = 5, 5 // static:hpcc has one
	by, order = group(fixed, "s", isFixed)
	if got := PickOracle(order, by); got != "static:hpcc" {
		t.Errorf("pick %q, want static:hpcc (the one with a small-flow p99)", got)
	}
}

// The frontier between two settings run is the line between them: a
// policy whose goodput crosses a grid point's by a hair no longer jumps
// from one setting's p99 to the next (a step), and the line is never
// above the step. Settings that drop, or are beaten at more goodput, are
// no points of it.
func TestFrontierIsInterpolatedBetweenSettings(t *testing.T) {
	var fixed []Run
	for s := uint64(1); s <= 2; s++ {
		fixed = append(fixed,
			figureRun("static:lo", s, 8, 40, 0),      // the frontier short of the goodput
			figureRun("static:hi", s, 10, 44, 0),     // the frontier keeping it
			figureRun("static:worse", s, 12, 46, 0),  // keeps it, at a higher p99
			figureRun("static:drops", s, 9, 43, 1),   // drops: no point
			figureRun("static:beaten", s, 9, 39, 0),  // short of it, and above lo
			figureRun("static:nosmall", s, 0, 42, 0)) // no small-flow p99: no point
	}
	// pol's goodput 42: half-way from lo (40) to hi (44); a step takes hi,
	// which keeps 98% of it (41.16)
	pols := []Run{figureRun("pol", 1, 9, 42, 0), figureRun("pol", 2, 9, 42, 0)}
	for _, tc := range []struct {
		shape      string
		below      string
		share, p99 float64
	}{{FrontierInterpolated, "static:lo", 0.5, 9}, {"", "static:lo", 0.5, 9}, {FrontierStep, "", 0, 10}} {
		r := &Result{Scenarios: []string{"s"}, Policies: []string{"pol"}, Runs: pols, OracleRuns: fixed, FrontierShape: tc.shape}
		c := r.Compare("pol")[0]
		if c.Frontier != "static:hi" || c.FrontierBelow != tc.below || math.Abs(c.FrontierBelowShare-tc.share) > 1e-9 ||
			math.Abs(c.FrontierRatio-9/tc.p99) > 1e-9 {
			t.Errorf("shape %q: frontier %s, below %s (%.3g), ratio %.4g; want static:hi, %q (%.3g), %.4g",
				tc.shape, c.Frontier, c.FrontierBelow, c.FrontierBelowShare, c.FrontierRatio, tc.below, tc.share, 9/tc.p99)
		}
		if math.Abs(c.PairedVsFrontier.Mean-9/tc.p99) > 1e-9 || c.PairedVsFrontier.N != 2 {
			t.Errorf("shape %q: paired %+v, want %.4g over 2 seeds", tc.shape, c.PairedVsFrontier, 9/tc.p99)
		}
	}
	// at a setting's own goodput, with every setting keeping it, or past
	// the loosest's goodput by less than 2%, the frontier is that setting
	// alone; past it by more, the policy is beyond the frontier
	for _, tc := range []struct {
		g    float64
		want string
	}{{44, "static:hi"}, {30, "static:lo"}, {46.5, "static:worse"}, {48, ""}} {
		r := &Result{Scenarios: []string{"s"}, Policies: []string{"pol"}, OracleRuns: fixed,
			Runs: []Run{figureRun("pol", 1, 9, tc.g, 0), figureRun("pol", 2, 9, tc.g, 0)}}
		c := r.Compare("pol")[0]
		if c.Frontier != tc.want || c.FrontierBelow != "" || c.FrontierBelowShare != 0 || c.Beyond() != (tc.want == "") {
			t.Errorf("goodput %.4g: frontier %q below %q (%.3g), beyond %v; want %q alone", tc.g, c.Frontier, c.FrontierBelow, c.FrontierBelowShare, c.Beyond(), tc.want)
		}
	}
	// the schedule search reads the same line
	runs := map[string][]Run{}
	for _, x := range fixed {
		runs[x.Policy] = append(runs[x.Policy], x)
	}
	names := []string{"static:lo", "static:hi", "static:worse", "static:drops", "static:beaten", "static:nosmall"}
	if r := frontierRatio(pols, names, runs, FrontierInterpolated); math.Abs(r-1) > 1e-9 {
		t.Errorf("schedule search's ratio %.4g, want 1 (9 against the line's 9)", r)
	}
	if r := frontierRatio(pols, names, runs, FrontierStep); math.Abs(r-0.9) > 1e-9 {
		t.Errorf("schedule search's step ratio %.4g, want 0.9", r)
	}
}

// The line is continuous past the loosest setting's goodput (a policy
// that dominates the loosest setting is not judged against a tighter one
// that keeps 98% of its goodput), and a tie in p99 goes to the setting
// with more goodput whatever the order.
func TestFrontierLineEnds(t *testing.T) {
	two := func(name string, p, g float64) []Run {
		return []Run{figureRun(name, 1, p, g, 0), figureRun(name, 2, p, g, 0)}
	}
	ratio := func(fixed []Run, p, g float64) float64 {
		r := &Result{Scenarios: []string{"s"}, Policies: []string{"pol"}, Runs: two("pol", p, g), OracleRuns: fixed}
		return r.Compare("pol")[0].FrontierRatio
	}
	fixed := append(two("static:mid", 10.5, 45.5), two("static:top", 12, 46)...)
	below, at, past := ratio(fixed, 12, 45.99), ratio(fixed, 12, 46), ratio(fixed, 12, 46.01)
	if math.Abs(below-1) > 0.01 || math.Abs(at-1) > 1e-9 || math.Abs(past-1) > 1e-9 {
		t.Errorf("p99 12 at 45.99, 46, 46.01 Gb/s: %.4f %.4f %.4f, want about 1 (the loosest setting is 12 at 46)", below, at, past)
	}
	if r := ratio(fixed, 12, 47.5); r != 0 {
		t.Errorf("past 98%%: ratio %.4f, want none (beyond)", r)
	}
	a, b, l := two("static:a", 2, 10), two("static:b", 2, 12), two("static:l", 1, 5)
	ab, ba := ratio(append(append(append([]Run(nil), a...), b...), l...), 1, 9), ratio(append(append(append([]Run(nil), b...), a...), l...), 1, 9)
	if want := 1 / (3.0/7*1 + 4.0/7*2); math.Abs(ab-want) > 1e-9 || math.Abs(ba-want) > 1e-9 {
		t.Errorf("tie in p99: ratio %.4f (a first), %.4f (b first), want %.4f (the line from l to b)", ab, ba, want)
	}
}

// An unknown goodput or frontier shape is refused by name, before any run.
func TestUnknownYardstickOptions(t *testing.T) {
	for _, o := range []Options{{Goodput: "all"}, {FrontierShape: "stepwise"}} {
		_, err := RunAll([]Scenario{tiny()}, []string{"static:hpcc"}, o)
		if err == nil || !strings.Contains(err.Error(), `"all"`) && !strings.Contains(err.Error(), `"stepwise"`) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if o, err := (Options{}).withDefaults(); err != nil || o.Goodput != GoodputCensored || o.FrontierShape != FrontierInterpolated {
		t.Errorf("defaults %q %q (%v)", o.Goodput, o.FrontierShape, err)
	}
}

// A size bucket with no finished flow in a run has no percentile there:
// left out of the mean, not counted as 0 (a >=1MB p99 of 10.6 on one
// seed and none on two printed 3.54±15.2).
func TestBucketPercentileMissingIsNotZero(t *testing.T) {
	var rs []Run
	for seed, p99 := range []float64{0, 10.6, 0} {
		r := figureRun("pol", uint64(seed+1), 2, 10, 0)
		r.FCTSlowdown.From1MB.P99, r.FCTSlowdown.From1MB.P50 = p99, p99/2
		rs = append(rs, r)
	}
	a := aggregate("s", "pol", rs)
	if m := a.Metrics[">=1MB_p99"]; m.Mean != 10.6 || m.N != 1 {
		t.Errorf(">=1MB p99 %+v, want 10.6 from the one seed with a flow", m)
	}
	if m := a.Metrics[">=1MB_p50"]; m.Mean != 5.3 || m.N != 1 {
		t.Errorf(">=1MB p50 %+v, want 5.3 from the one seed with a flow", m)
	}
	// no seed with one: no figure, printed as none ("0±0" before)
	if m := a.Metrics["<10KB_p99"]; m.N != 0 || m.String() != "–" {
		t.Errorf("a bucket no seed has: %+v printed %q", m, m.String())
	}
}

// Numbers keep at least two significant digits down to 0.0001: mark rates
// of 0.0142 and 0.0113 both printed 0.01 beside CIs of ±0.0025.
func TestFmtNumKeepsTwoDigits(t *testing.T) {
	for v, want := range map[float64]string{0.01415: "0.014", 0.01133: "0.011", 0.0923: "0.092", 0.25: "0.25", 3.14159: "3.14", 12.34: "12.3", 0.0025: "0.0025"} {
		if got := fmtNum(v); got != want {
			t.Errorf("fmtNum(%g) = %q, want %q", v, got, want)
		}
	}
}
