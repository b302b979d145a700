package eval

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
)

// Every candidate of static:best, written as a schedule entry, parses back
// to the very setting (a preset to its name).
func TestScheduleEntryParsesBack(t *testing.T) {
	for _, c := range oracleCandidates(DefaultOracleGrid) {
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
		"schedule:best@1ms,2ms": "offset 2ms is not before the end of scenario tiny",
	} {
		if _, err := RunAll([]Scenario{sc}, []string{spec}, Options{Seeds: 1}); err == nil || !strings.Contains(err.Error(), want) {
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
	opt := Options{Seeds: 2, Workers: 2, Interval: 100 * simenv.Microsecond, OracleCatalogue: grid,
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
	nCands := len(oracleCandidates(grid))
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
	entries := strings.Split(strings.TrimPrefix(plan, "schedule:"), ",1ms=")
	specs := []string{plan}
	for _, c := range oracleCandidates(grid) {
		e := scheduleEntry(c)
		for k, p := range []string{"schedule:" + e + ",1ms=" + entries[1], "schedule:" + entries[0] + ",1ms=" + e} {
			if e != entries[k] {
				specs = append(specs, p)
			}
		}
	}
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
