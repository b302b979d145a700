package eval

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/scenario"
)

// TestTruthBound: a truth: bound whose two policies agree plays exactly
// as that policy (reading the truth changes no run); with two different
// ones it plays as neither, and each queue's decision follows whether a
// small flow crosses it.
func TestTruthBound(t *testing.T) {
	tight, loose := "fixed:40KB/100KB/100%", "fixed:400KB/1600KB/20%"
	same := "truth:small=" + loose + ";else=" + loose
	mixed := "truth:small=" + tight + ";else=" + loose
	res, err := RunAll([]Scenario{tiny()}, []string{loose, tight, same, mixed}, Options{Seeds: 2, Interval: 100 * simenv.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 2; s++ {
		l, ti, sm, mx := res.Runs[s], res.Runs[2+s], res.Runs[4+s], res.Runs[6+s]
		if sm.Policy != same || sm.SmallP99 != l.SmallP99 || sm.LargeGoodputGbps != l.LargeGoodputGbps || sm.MarkRate != l.MarkRate {
			t.Fatalf("seed %d: %s played %+v, %s %+v", s, same, sm, loose, l)
		}
		if mx.MarkRate == l.MarkRate || mx.MarkRate == ti.MarkRate {
			t.Fatalf("seed %d: %s marked %g, as one of its policies (%g, %g)", s, mixed, mx.MarkRate, l.MarkRate, ti.MarkRate)
		}
	}

	b, err := parseTruthBound(mixed, policy.Lookup)
	if err != nil {
		t.Fatal(err)
	}
	obs := make([]env.Observation, 2)
	for i := range obs {
		obs[i] = env.Observation{Valid: true, RateBps: 100e9}
	}
	b.marked = []bool{false, true} // a small flow crosses the second queue
	ds := b.Decide(obs)
	if ds[0].Setting.KmaxBytes != 1_600_000 || ds[1].Setting.KmaxBytes != 100_000 || !strings.HasSuffix(ds[1].Reason, "(small flows crossing)") {
		t.Fatalf("decisions %+v", ds)
	}

	for spec, want := range map[string]string{
		"truth:small=static:hpcc":                      "no ;else=",
		"truth:small=static:hpcc;else=static:nope":     `else=static:nope: `,
		"truth:small=static:nope;else=static:hpcc":     `small=static:nope: `,
		"truth:small=static:hpcc;else=":                "else= is empty",
		"truth:small=;else=static:hpcc":                "small= is empty",
		"truth:busy=static:hpcc;else=static:hpcc":      "neither small= nor arriving=",
		"truth:small=static:hpcc; else=static:hpcc":    "no ;else=",
		"truth:small=static:hpcc;else=static:hpcc;x=1": `else=static:hpcc;x=1: `,
	} {
		if _, err := RunAll([]Scenario{tiny()}, []string{spec}, Options{Seeds: 1}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to mention %q", spec, err, want)
		}
	}
}

// TestTruthBoundKeepsHolds: a bound of one learned policy on both sides
// counts its holds outside the validated intervals as the policy does (the
// bound's note goes after the reason eval reads).
func TestTruthBoundKeepsHolds(t *testing.T) {
	same := "truth:small=builtin;else=builtin"
	res, err := RunAll([]Scenario{tiny()}, []string{"builtin", same}, Options{Seeds: 1, Interval: 50 * simenv.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	plain, bound := res.Runs[0], res.Runs[1]
	if plain.HeldForInterval == 0 || bound.HeldForInterval != plain.HeldForInterval {
		t.Fatalf("builtin held %d decisions at 50 µs, %s %d", plain.HeldForInterval, same, bound.HeldForInterval)
	}
}

// TestTruthBoundSpecs: either side may be a roles: spec, with its own
// ";", and the specs inside a bound are warned about as on their own.
func TestTruthBoundSpecs(t *testing.T) {
	roles := "roles:host=static:hpcc;fabric=static:sonic-default"
	small, rest, err := TruthSpecs("truth:small=" + roles + ";else=" + roles)
	if err != nil || small != roles || rest != roles {
		t.Fatalf("split %q and %q (%v)", small, rest, err)
	}
	if _, err := parseTruthBound("truth:small="+roles+";else=static:hpcc", policy.Lookup); err != nil {
		t.Fatal(err)
	}
	inner := "fixed:400B/1000B/1%"
	alone := policy.SpecWarnings(inner)
	if len(alone) == 0 {
		t.Fatalf("%s: no warning on its own", inner)
	}
	w := SpecWarnings("truth:small=static:hpcc;else=" + inner)
	if len(w) != len(alone) || w[0] != "else: "+alone[0] {
		t.Fatalf("warnings inside a bound %q, alone %q", w, alone)
	}
	if w := SpecWarnings(inner); len(w) != len(alone) {
		t.Fatalf("eval.SpecWarnings(%s) = %q", inner, w)
	}
}

// TestTruthBoundArriving: a bound that knows the coming interval's small
// flows plays as its policy when both sides agree, as neither when they
// differ; it marks exactly the queues the flows starting in the window
// cross; and it refuses a scenario whose arrivals depend on the network.
func TestTruthBoundArriving(t *testing.T) {
	tight, loose := "fixed:40KB/100KB/100%", "fixed:400KB/1600KB/20%"
	same := "truth:arriving=" + loose + ";else=" + loose
	mixed := "truth:arriving=" + tight + ";else=" + loose
	present := "truth:small=" + tight + ";else=" + loose
	res, err := RunAll([]Scenario{tiny()}, []string{loose, tight, same, mixed, present}, Options{Seeds: 1, Interval: 100 * simenv.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	l, ti, sm, mx, pr := res.Runs[0], res.Runs[1], res.Runs[2], res.Runs[3], res.Runs[4]
	if sm.SmallP99 != l.SmallP99 || sm.LargeGoodputGbps != l.LargeGoodputGbps || sm.MarkRate != l.MarkRate {
		t.Fatalf("%s played %+v, %s %+v", same, sm, loose, l)
	}
	if mx.MarkRate == l.MarkRate || mx.MarkRate == ti.MarkRate || mx.MarkRate == pr.MarkRate {
		t.Fatalf("%s marked %g: as loose %g, tight %g or the present-flow bound %g", mixed, mx.MarkRate, l.MarkRate, ti.MarkRate, pr.MarkRate)
	}

	arr := []arrival{{start: 10, queues: []int{0}}, {start: 20, queues: []int{2, 1}}, {start: 30, queues: []int{3}}}
	next := make([]bool, 4)
	k := markArriving(next, arr, 0, 15, 30)
	if k != 1 || next[0] || !next[1] || !next[2] || next[3] {
		t.Fatalf("window [15, 30): cursor %d, marked %v", k, next)
	}
	if k = markArriving(next, arr, k, 30, 40); k != 2 || next[1] || !next[3] {
		t.Fatalf("window [30, 40): cursor %d, marked %v", k, next)
	}

	cfg := simenv.DefaultConfig()
	cfg.Name, cfg.Seed, cfg.Duration = "a2a", 3, 2*simenv.Millisecond
	cfg.Topology = simenv.StarTopology(4, 100e9, simenv.Microsecond)
	// An all-to-all's next iteration starts when the last one's flows
	// finish, so its arrivals move with the marking.
	cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadAllToAll, Priority: 3, Ranks: 4, SizeBytes: 2_400_000, Gap: 20 * simenv.Microsecond},
		tiny().Config.Workloads[1]}
	a2a := Scenario{Named: scenario.Named{Name: "a2a", Config: cfg}}
	_, err = RunAll([]Scenario{a2a}, []string{"truth:arriving=fixed:10KB/20KB/100%;else=fixed:10KB/20KB/100%"}, Options{Seeds: 1, Interval: 100 * simenv.Microsecond})
	if err == nil || !strings.Contains(err.Error(), "arrivals depend on the network") {
		t.Fatalf("all-to-all under an arriving bound: %v", err)
	}
}

// TestSameArrivals: a run that starts more or fewer flows than the first
// one, or moves one between other hosts, is refused, not only one whose
// common flows differ.
func TestSameArrivals(t *testing.T) {
	a := []simenv.FlowRecord{{ID: 0, Src: 1, Dst: 2, Start: 5, SizeBytes: 1000}, {ID: 1, Src: 2, Dst: 3, Start: 9, SizeBytes: 2000}}
	if err := sameArrivals(a, a); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]simenv.FlowRecord{
		"fewer": a[:1],
		"more":  append(append([]simenv.FlowRecord(nil), a...), simenv.FlowRecord{ID: 2, Start: 12}),
		"moved": {a[0], {ID: 1, Src: 3, Dst: 2, Start: 9, SizeBytes: 2000}},
		"later": {a[0], {ID: 1, Src: 2, Dst: 3, Start: 10, SizeBytes: 2000}},
	} {
		if err := sameArrivals(a, b); err == nil || !strings.Contains(err.Error(), "arrivals depend on the network") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := sameArrivals(a[:1], a); err == nil || !strings.Contains(err.Error(), "1 flows started in the first run, 2 under the bound (the first extra one, flow 1") {
		t.Errorf("extra flow under the bound: %v", err)
	}
}
