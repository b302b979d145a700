package eval

import (
	"math"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
)

// Every candidate of static:best, written as a schedule entry, parses back
// to the very setting (a preset to its name).
func TestScheduleEntryParsesBack(t *testing.T) {
	for _, c := range oracleCandidates(DefaultOracleGrid, 0) {
		e := scheduleEntry(c)
		if c.set == nil {
			if _, err := policy.Preset(e); err != nil || "static:"+e != c.spec {
				t.Fatalf("%s: entry %q: %v", c.spec, e, err)
			}
			continue
		}
		got, err := policy.ParseFixed(e)
		if err != nil || got != *c.set {
			t.Fatalf("%s: entry %q parses to %+v (%v), want %+v", c.spec, e, got, err, *c.set)
		}
	}
	if got := exactBytes(1_077_001); got != "1077001B" {
		t.Fatalf("exactBytes(1077001) = %q: FormatBytes rounds it, so it must be written in bytes", got)
	}
}

func TestScheduleBestErrors(t *testing.T) {
	sc := tiny() // 2 ms
	for spec, want := range map[string]string{
		"schedule:best":         "no offset",
		"schedule:best@":        "no offset",
		"schedule:best@0ms":     "offset 1 is 0",
		"schedule:best@1ms,1ms": "offset 2 (1ms) is not after offset 1 (1ms)",
		"schedule:best@1":       "cannot parse duration",
		"schedule:best@1ms,2ms": "offset 2ms comes after the last decision on scenario tiny (at 1.9ms, deciding every 100µs over 2ms)",
		// after the last decision at 1.9 ms: every candidate would tie there
		"schedule:best@1950us":                  "offset 1950us comes after the last decision",
		"schedule:best@1ms+alpha=2":             "takes no +headroom= or +alpha= rule",
		"schedule:best@by=frontier":             "no offset",
		"schedule:best@1ms,by=latency":          "item 2 (by=latency): the one objective there is by=frontier",
		"schedule:best@by=frontier,1ms":         "item 1 (by=frontier)",
		"schedule:best@2ms,by=frontier":         "offset 2ms comes after the last decision",
		"schedule:best@1ms,by=frontier+alpha=2": "takes no +headroom=",
	} {
		if _, err := RunAll([]Scenario{sc}, []string{spec}, Options{Seeds: 1, Interval: 100 * simenv.Microsecond}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", spec, err, want)
		}
	}
}

// tinyPhases is tiny in two phases: its incasts and small flows for 1 ms,
// then long flows at 60% load.
func tinyPhases() Scenario {
	sc := tiny()
	sc.Name, sc.Config.Name = "tiny-phases", "tiny-phases"
	for i := range sc.Config.Workloads {
		sc.Config.Workloads[i].End = simenv.Millisecond
	}
	sc.Config.Workloads = append(sc.Config.Workloads, simenv.Workload{Kind: simenv.WorkloadCDF, Priority: 3, Load: 0.6,
		Start: simenv.Millisecond, CDF: []simenv.CDFPoint{{Bytes: 1000, Percent: 0}, {Bytes: 10_000, Percent: 50}, {Bytes: 3_000_000, Percent: 100}}})
	return sc
}

// schedule:best@ finds a plan that static:best's objective rates at least
// as well as static:best, that no single change of one phase's setting
// beats, and whose runs are the plan's own when run as a policy.
func TestScheduleBest(t *testing.T) {
	const spec = "schedule:best@1ms"
	grid := [][3]int{{0, 0, 1}, {12, 0, 1}}
	var calls, last, lastTotal int
	// Judged by the finished flows' goodput, under which this scenario's
	// phases want different settings (below); under the censored one
	// both want sonic-default.
	opt := Options{Seeds: 2, Workers: 2, Interval: 100 * simenv.Microsecond, OracleCatalogue: grid, Goodput: GoodputFinished,
		Progress: func(done, total int) {
			if done < last {
				t.Errorf("progress went back from %d to %d", last, done)
			}
			calls, last, lastTotal = calls+1, done, total
		}}
	res, err := RunAll([]Scenario{tinyPhases()}, []string{Oracle, spec}, opt)
	if err != nil {
		t.Fatal(err)
	}
	nCands := len(oracleCandidates(grid, 0))
	if max := (nCands + ScheduleBestRounds*2*(nCands-1)) * 2; lastTotal < max || last != lastTotal {
		t.Fatalf("progress ended at %d of %d, want the total to cover the search's bound %d and end full", last, lastTotal, max)
	}
	got := res.RunsOf("tiny-phases", spec)
	if len(got) != 2 || got[0].Chosen == "" || got[0].Chosen != got[1].Chosen {
		t.Fatalf("runs of %s: %+v", spec, got)
	}
	plan := got[0].Chosen
	if a := res.AggregateOf("tiny-phases", spec); a == nil || a.Chosen != plan {
		t.Fatalf("aggregate of %s: %+v, want chosen %s", spec, a, plan)
	}
	if _, err := policy.NewSchedule(strings.TrimPrefix(plan, "schedule:")); err != nil || !strings.Contains(plan, ",1ms=") {
		t.Fatalf("plan %q: %v", plan, err)
	}
	by, _ := group(res.OracleRuns, "tiny-phases", isFixed)
	good := bestGoodput(by)
	qualifies := func(rs []Run) bool { return noDrops(rs) && mean(rs, largeGoodput) >= 0.95*good }
	if !qualifies(got) {
		t.Fatalf("plan %s: goodput %.2f below 95%% of the best fixed setting's %.2f, or drops", plan, mean(got, largeGoodput), good)
	}
	if o := res.RunsOf("tiny-phases", Oracle); qualifies(o) && mean(got, smallP99) > mean(o, smallP99) {
		t.Fatalf("plan %s: small-flow p99 %.3f above static:best's %.3f", plan, mean(got, smallP99), mean(o, smallP99))
	}
	// The phases want different settings here (deterministic figures:
	// sonic-default, then 50KB/100KB/1% at 1 ms), so a search that stops
	// at static:best's pick finds too little.
	if o := res.RunsOf("tiny-phases", Oracle); !(mean(got, smallP99) < mean(o, smallP99)) {
		t.Fatalf("plan %s: small-flow p99 %.3f, no better than static:best's %.3f where the phases differ", plan, mean(got, smallP99), mean(o, smallP99))
	}
	// The plan run as a policy, and every plan one phase's setting away.
	specs := append([]string{plan}, neighbours(plan, grid)...)
	opt.Progress = nil
	again, err := RunAll([]Scenario{tinyPhases()}, specs, opt)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range again.RunsOf("tiny-phases", plan) {
		if r.SmallP99 != got[i].SmallP99 || r.LargeGoodputGbps != got[i].LargeGoodputGbps || r.Seed != got[i].Seed {
			t.Fatalf("seed %d: %s as a policy: p99 %v, goodput %v; found by the search: %v, %v", r.Seed, plan,
				r.SmallP99, r.LargeGoodputGbps, got[i].SmallP99, got[i].LargeGoodputGbps)
		}
	}
	for _, p := range specs[1:] {
		if rs := again.RunsOf("tiny-phases", p); qualifies(rs) && mean(rs, smallP99) < mean(got, smallP99) {
			t.Fatalf("%s has small-flow p99 %.3f below the plan %s's %.3f at goodput %.2f (the bar: %.2f)",
				p, mean(rs, smallP99), plan, mean(got, smallP99), mean(rs, largeGoodput), 0.95*good)
		}
	}
	t.Logf("plan %s: p99 %.3f, goodput %.2f; static:best %s: p99 %.3f; %d progress calls", plan, mean(got, smallP99),
		mean(got, largeGoodput), res.RunsOf("tiny-phases", Oracle)[0].Chosen, mean(res.RunsOf("tiny-phases", Oracle), smallP99), calls)
}

// A phase where the candidates tie keeps its setting (the search's round
// then changes nothing), wherever the current one stands in the order;
// a strictly better one still wins.
func TestPickPhaseKeepsCurrentOnTie(t *testing.T) {
	runs := map[string][]Run{}
	plans := []string{"a", "b", "c", "d"}
	for _, p := range plans {
		runs[p] = []Run{{SmallP99: 5, LargeGoodputGbps: 10}}
	}
	rate := func(order []string) string { return pickBy(order, runs, 10) }
	for cur := range plans {
		if got := pickPhase(plans, cur, rate); got != cur {
			t.Fatalf("all tie, current %s: picked %s", plans[cur], plans[got])
		}
	}
	runs["c"] = []Run{{SmallP99: 4, LargeGoodputGbps: 10}}
	if got := pickPhase(plans, 3, rate); got != 2 {
		t.Fatalf("c is better: picked %s", plans[got])
	}
	runs["c"] = []Run{{SmallP99: 1, LargeGoodputGbps: 9}} // below 95% of 10
	if got := pickPhase(plans, 3, rate); got != 3 {
		t.Fatalf("c gives up goodput: picked %s", plans[got])
	}
}

// With two scenarios the searches follow each other on one progress bar:
// it never goes back, never passes its total, and ends full.
func TestScheduleBestProgressTwoScenarios(t *testing.T) {
	last, lastTotal := 0, 0
	opt := Options{Seeds: 1, Workers: 2, Interval: 100 * simenv.Microsecond, OracleCatalogue: [][3]int{{0, 0, 1}},
		Progress: func(done, total int) {
			if done < last || done > total || (lastTotal != 0 && total != lastTotal) {
				t.Errorf("progress %d/%d after %d/%d", done, total, last, lastTotal)
			}
			last, lastTotal = done, total
		}}
	a, b := tinyPhases(), tinyPhases()
	b.Name = "tiny-phases-2"
	res, err := RunAll([]Scenario{a, b}, []string{"static:hpcc", "schedule:best@1ms"}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if last != lastTotal {
		t.Errorf("ended at %d/%d", last, lastTotal)
	}
	for _, sc := range []string{a.Name, b.Name} {
		if rs := res.RunsOf(sc, "schedule:best@1ms"); len(rs) != 1 || rs[0].Chosen == "" || rs[0].Scenario != sc {
			t.Errorf("%s: runs %+v", sc, rs)
		}
	}
}

// With static:best's candidates run anyway (--frontier), the search takes
// their runs for its one-setting plans instead of playing them again, and
// finds the same plan with the same runs.
func TestScheduleBestReusesFixedRuns(t *testing.T) {
	const spec = "schedule:best@1ms"
	run := func(frontier bool) (*Result, int) {
		n := 0
		opt := Options{Seeds: 1, Workers: 2, Interval: 100 * simenv.Microsecond, OracleCatalogue: [][3]int{{0, 0, 1}, {12, 0, 1}},
			Frontier: frontier, Progress: func(done, total int) {
				if done < total {
					n++
				}
			}}
		res, err := RunAll([]Scenario{tinyPhases()}, []string{spec}, opt)
		if err != nil {
			t.Fatal(err)
		}
		return res, n
	}
	alone, nAlone := run(false)
	with, nWith := run(true)
	a, w := alone.RunsOf("tiny-phases", spec), with.RunsOf("tiny-phases", spec)
	if a[0].Chosen != w[0].Chosen || a[0].SmallP99 != w[0].SmallP99 || a[0].LargeGoodputGbps != w[0].LargeGoodputGbps {
		t.Fatalf("alone: %s p99 %v; with the frontier: %s p99 %v", a[0].Chosen, a[0].SmallP99, w[0].Chosen, w[0].SmallP99)
	}
	if nCands := len(oracleCandidates([][3]int{{0, 0, 1}, {12, 0, 1}}, 0)); nWith != nAlone {
		t.Fatalf("%d runs alone, %d with the frontier's %d: its runs were played again", nAlone, nWith, nCands)
	}
}

// frontierRatio reckons as Compare does: against the drop-free fixed
// setting with the lowest p99 among those keeping 98% of the goodput, else
// against the drop-free one with the most goodput; pickByFrontier skips
// plans that drop and gives ties to the earlier plan.
func TestFrontierRatio(t *testing.T) {
	runs := map[string][]Run{
		"loose": {{SmallP99: 10, LargeGoodputGbps: 10}},
		"tight": {{SmallP99: 5, LargeGoodputGbps: 8}},
		"drops": {dropped(1, 10)},
	}
	fixed := []string{"loose", "tight", "drops"}
	for _, c := range []struct {
		p99, good, want float64
	}{
		{6, 10, 0.6},  // only loose keeps 9.8 Gb/s (drops drops)
		{6, 8, 1.2},   // tight keeps 7.84 at p99 5
		{6, 8.2, 0.6}, // tight's 8 is below 98% of 8.2 (8.036): loose
		{6, 12, 0.6},  // more than any: against the most goodput
	} {
		if got := frontierRatio([]Run{{SmallP99: c.p99, LargeGoodputGbps: c.good}}, fixed, runs, FrontierStep); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("p99 %v at %v Gb/s: ratio %v, want %v", c.p99, c.good, got, c.want)
		}
	}
	if got := frontierRatio(runs["loose"], []string{"drops"}, runs, FrontierStep); !math.IsInf(got, 1) {
		t.Errorf("every setting drops: ratio %v, want +Inf", got)
	}
	runs["a"] = []Run{dropped(4, 10)} // best ratio, but drops
	runs["b"] = []Run{{SmallP99: 6, LargeGoodputGbps: 10}}
	runs["c"] = []Run{{SmallP99: 6, LargeGoodputGbps: 10}}
	if got := pickByFrontier([]string{"a", "c", "b"}, fixed, runs, FrontierStep); got != "c" {
		t.Errorf("picked %s, want c (a drops; c ties b and comes first)", got)
	}
	if got := pickByFrontier([]string{"a", "drops"}, fixed, runs, FrontierStep); got != "drops" {
		t.Errorf("all drop: picked %s, want pickBy's drops (p99 1)", got)
	}
}

// schedule:best@...,by=frontier finds a plan whose frontier ratio, as
// Compare reports it, is no worse than its starting point's and that no
// single change of one phase's setting lowers.
func TestScheduleBestByFrontier(t *testing.T) {
	const spec = "schedule:best@1ms,by=frontier"
	grid := [][3]int{{0, 0, 1}, {12, 0, 1}}
	opt := Options{Seeds: 2, Workers: 2, Interval: 100 * simenv.Microsecond, OracleCatalogue: grid, Frontier: true}
	res, err := RunAll([]Scenario{tinyPhases()}, []string{Oracle, spec, "schedule:best@1ms"}, opt)
	if err != nil {
		t.Fatal(err)
	}
	got := res.RunsOf("tiny-phases", spec)
	if len(got) != 2 || got[0].Chosen == "" || !strings.Contains(got[0].Chosen, ",1ms=") {
		t.Fatalf("runs of %s: %+v", spec, got)
	}
	plan := got[0].Chosen
	by, fixed := group(res.OracleRuns, "tiny-phases", isFixed)
	if len(fixed) != len(oracleCandidates(grid, 0)) {
		t.Fatalf("%d fixed settings run, want %d", len(fixed), len(oracleCandidates(grid, 0)))
	}
	mine := frontierRatio(got, fixed, by, FrontierInterpolated)
	var cmp *Comparison
	for _, c := range res.Compare(spec) {
		cmp = &c
	}
	if cmp == nil || cmp.Frontier == "" || math.Abs(cmp.FrontierRatio-mine) > 1e-12 {
		t.Fatalf("Compare: %+v; the search's own reckoning %v", cmp, mine)
	}
	other := res.RunsOf("tiny-phases", "schedule:best@1ms")
	start := frontierRatio(res.RunsOf("tiny-phases", Oracle), fixed, by, FrontierInterpolated)
	if anyDrops(got) || mine > start {
		t.Fatalf("plan %s: ratio %.3f (drops %v), static:best's %.3f", plan, mine, anyDrops(got), start)
	}
	// Every plan one phase's setting away rates no better.
	specs := neighbours(plan, grid)
	opt.Frontier = false
	again, err := RunAll([]Scenario{tinyPhases()}, specs, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range specs {
		if rs := again.RunsOf("tiny-phases", p); !anyDrops(rs) && frontierRatio(rs, fixed, by, FrontierInterpolated) < mine {
			t.Fatalf("%s rates %.3f, below the plan %s's %.3f", p, frontierRatio(rs, fixed, by, FrontierInterpolated), plan, mine)
		}
	}
	t.Logf("by frontier: %s, ratio %.3f; by static:best's objective: %s, ratio %.3f; static:best %s, ratio %.3f",
		plan, mine, other[0].Chosen, frontierRatio(other, fixed, by, FrontierInterpolated), res.RunsOf("tiny-phases", Oracle)[0].Chosen, start)
}

// dropped is a run with small-flow p99 p, goodput g and a drop.
func dropped(p, g float64) Run {
	r := Run{SmallP99: p, LargeGoodputGbps: g}
	r.Drops = 1
	return r
}

// neighbours are the plans one phase's setting away from plan, a
// two-phase plan switched at 1 ms, among grid's candidates.
func neighbours(plan string, grid [][3]int) []string {
	entries := strings.Split(strings.TrimPrefix(plan, "schedule:"), ",1ms=")
	var out []string
	for _, c := range oracleCandidates(grid, 0) {
		e := scheduleEntry(c)
		for k, p := range []string{"schedule:" + e + ",1ms=" + entries[1], "schedule:" + entries[0] + ",1ms=" + e} {
			if e != entries[k] {
				out = append(out, p)
			}
		}
	}
	return out
}

// frontierRatio's 98% bar and its goodput-axis fallback (the drop-free
// setting with the most goodput, wherever it stands), and pickByFrontier's
// fallback when every plan drops (pickBy's pick, the current plan first).
func TestFrontierRatioEdges(t *testing.T) {
	runs := map[string][]Run{
		"tight": {{SmallP99: 5, LargeGoodputGbps: 8}},
		"loose": {{SmallP99: 10, LargeGoodputGbps: 10}},
		"drops": {dropped(1, 11)},
	}
	fixed := []string{"tight", "loose", "drops"} // the most goodput not first
	for _, c := range []struct{ p99, good, want float64 }{
		{6, 8.1, 1.2}, // 98% of 8.1 is 7.938: tight keeps it (100% would not)
		{6, 8.16, 1.2},
		{6, 8.17, 0.6}, // 98% is 8.0066: only loose
		{6, 12, 0.6},   // beyond all: loose, the drop-free one with the most
	} {
		if got := frontierRatio([]Run{{SmallP99: c.p99, LargeGoodputGbps: c.good}}, fixed, runs, FrontierStep); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("p99 %v at %v Gb/s: ratio %v, want %v", c.p99, c.good, got, c.want)
		}
	}
	runs["d1"], runs["d2"], runs["d3"] = []Run{dropped(3, 10)}, []Run{dropped(1, 10)}, []Run{dropped(2, 10)}
	if got := pickByFrontier([]string{"d1", "d2", "d3"}, fixed, runs, FrontierStep); got != "d2" {
		t.Errorf("all drop: picked %s, want pickBy's d2", got)
	}
	runs["d1"] = []Run{dropped(1, 10)}
	if got := pickByFrontier([]string{"d1", "d2", "d3"}, fixed, runs, FrontierStep); got != "d1" {
		t.Errorf("all drop, d1 ties d2: picked %s, want d1 (first)", got)
	}
}

// Spaces around the items, by=frontier included, are allowed, as around
// offsets.
func TestScheduleBestByFrontierSpaces(t *testing.T) {
	for _, s := range []string{"schedule:best@3ms, by=frontier", "schedule:best@3ms,by=frontier ", "schedule:best@ 3ms , by=frontier"} {
		if sb, err := parseScheduleBest(s); err != nil || !sb.byFrontier || len(sb.at) != 1 {
			t.Errorf("%q: %+v, %v", s, sb, err)
		}
	}
	for _, s := range []string{"schedule:best@ by=frontier", "schedule:best@by=frontier", "schedule:best@,by=frontier"} {
		if _, err := parseScheduleBest(s); err == nil || !strings.Contains(err.Error(), "no offset") {
			t.Errorf("%q: err %v, want no offset", s, err)
		}
	}
}

func TestFixedSpec(t *testing.T) {
	seen := 0
	for _, c := range oracleCandidates(DefaultOracleGrid, 0) {
		spec, ok := FixedSpec(c.spec, nil)
		if !ok {
			t.Fatalf("%s: not found", c.spec)
		}
		p, err := policy.Lookup(spec)
		if err != nil {
			t.Fatalf("%s -> %s: %v", c.spec, spec, err)
		}
		if c.set == nil {
			if spec != c.spec {
				t.Fatalf("preset %s -> %s", c.spec, spec)
			}
			continue
		}
		seen++
		got, err := policy.ParseFixed(strings.TrimPrefix(spec, policy.FixedPrefix))
		if err != nil || got.KminBytes != c.set.KminBytes || got.KmaxBytes != c.set.KmaxBytes || got.Pmax != c.set.Pmax {
			t.Fatalf("%s -> %s (%s) = %+v, %v; want %+v", c.spec, spec, p.Name(), got, err, *c.set)
		}
	}
	if seen != len(DefaultOracleGrid) {
		t.Fatalf("%d catalogue settings, want %d", seen, len(DefaultOracleGrid))
	}
	if s, ok := FixedSpec("catalogue:kmin 1B kmax 2B pmax 1% @100G", nil); ok {
		t.Fatalf("a setting off the grid: %s", s)
	}
}
