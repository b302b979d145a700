package core

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/policy"
)

// A lossless PG below its headroom floor is repaired first: an alarm, a
// repair change to the floor that neither min-hold nor the change budget
// holds back, and the policy's decision for that queue waits.
func TestGuardRepairsHeadroomBelowFloor(t *testing.T) {
	g := newTestGuard(t, func(c *GuardConfig) { c.ChangeBudget = 1 })
	low := cur
	low.HeadroomBytes = 1
	a, b := ob(kA, low), ob(kB, cur)
	a.MinHeadroomBytes, b.MinHeadroomBytes = 52_376, 52_376
	// a change of kA made just now: min-hold would block a tune
	g.Adopt(kA, cur, low, 9*sec)
	p := step(t, g, 10*sec, []env.Observation{a, b}, []policy.Decision{
		dc(kA, env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.1}, 0.9),
		dc(kB, env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.1}, 0.9)})
	var repair, tune *Change
	for i := range p.Changes {
		switch p.Changes[i].Kind {
		case KindRepair:
			repair = &p.Changes[i]
		case KindTune:
			tune = &p.Changes[i]
		}
	}
	if repair == nil || repair.Key != kA || repair.New.HeadroomBytes != 52_376 || repair.New.KmaxBytes != cur.KmaxBytes {
		t.Fatalf("no headroom repair of %s: %+v", kA, p)
	}
	if tune == nil || tune.Key != kB {
		t.Fatalf("the repair must not use the change budget: %+v", p)
	}
	if len(p.Alarms) != 1 || p.Alarms[0].Rule != RuleHeadroom || !strings.Contains(p.Alarms[0].Msg, "below the lossless floor") {
		t.Fatalf("alarms %+v", p.Alarms)
	}
	found := false
	for _, r := range p.Rejections {
		found = found || (r.Key == kA && r.Rule == RulePending)
	}
	if !found {
		t.Fatalf("the policy's decision for the repaired queue must wait: %+v", p.Rejections)
	}
	// Once applied, the queue is inside the invariants: no more repairs.
	g.Result(*repair, Applied, repair.New, 10*sec)
	g.Result(*tune, Applied, tune.New, 10*sec)
	a.Current = repair.New
	if p := step(t, g, 11*sec, []env.Observation{a}, nil); len(p.Changes) != 0 || len(p.Alarms) != 0 {
		t.Fatalf("after the repair: %+v", p)
	}
}

// A floor ecntune estimated (from a cable length and MTU, not the
// switch's own) is not a reason to rewrite the switch: a vendor headroom
// below it is reported once and left alone; a change that does not ask
// for more headroom keeps the switch's; one asking for less than the
// switch runs gets the switch's, never less; one asking for more gets it.
func TestGuardLeavesHeadroomBelowAnEstimatedFloor(t *testing.T) {
	g := newTestGuard(t, nil)
	low := cur
	low.HeadroomBytes = 37_936 // SONiC's 100G 5 m profile xoff
	a := ob(kA, low)
	a.MinHeadroomBytes, a.FloorEstimated = 44_141, true
	ecnOnly := low
	ecnOnly.KminBytes, ecnOnly.KmaxBytes = 500_000, 2_000_000
	p := step(t, g, 10*sec, []env.Observation{a}, []policy.Decision{dc(kA, ecnOnly, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindTune || p.Changes[0].New.HeadroomBytes != low.HeadroomBytes {
		t.Fatalf("want the ECN change alone, the headroom as the switch has it: %+v", p)
	}
	if len(p.Alarms) != 1 || p.Alarms[0].Rule != RuleHeadroom || !strings.Contains(p.Alarms[0].Msg, "estimated from the cable length and MTU") {
		t.Fatalf("alarms %+v", p.Alarms)
	}
	g.Result(p.Changes[0], Applied, p.Changes[0].New, 10*sec)
	a.Current = p.Changes[0].New
	less := a.Current
	less.HeadroomBytes = 20_000
	p = step(t, g, 100*sec, []env.Observation{a}, []policy.Decision{dc(kA, less, 0.9)})
	if len(p.Alarms) != 0 {
		t.Fatalf("the estimated floor is reported once: %+v", p.Alarms)
	}
	for _, c := range p.Changes {
		if c.New.HeadroomBytes != low.HeadroomBytes {
			t.Fatalf("asked for less than the switch runs under an estimated floor: want the switch's own, got %+v", c)
		}
	}
	more := a.Current
	more.HeadroomBytes = 60_000
	for i := int64(1); i <= 3; i++ { // past probation, in play
		m := a
		m.Metrics.MarkFrac = 0.1
		step(t, g, (100+i)*sec, []env.Observation{m}, nil)
	}
	p = step(t, g, 200*sec, []env.Observation{a}, []policy.Decision{dc(kA, more, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].New.HeadroomBytes != 60_000 {
		t.Fatalf("a change asking for more headroom: %+v", p)
	}
	// The switch's own floor (not estimated) is restored as before.
	a.FloorEstimated, a.Current = false, low
	if p := step(t, newTestGuard(t, nil), 300*sec, []env.Observation{a}, nil); len(p.Changes) != 1 || p.Changes[0].Kind != KindRepair || p.Changes[0].New.HeadroomBytes != 44_141 {
		t.Fatalf("a floor the switch exports: %+v", p)
	}
}

// A rollback of a raise restores the switch's own headroom, also when it
// is below a floor ecntune estimated (the estimate is no reason to keep
// the raise).
func TestGuardRollbackBelowAnEstimatedFloor(t *testing.T) {
	g := newTestGuard(t, nil)
	o := ob(kA, cur) // the vendor's 100 KB
	o.MinHeadroomBytes, o.FloorEstimated = 150_000, true
	more := cur
	more.HeadroomBytes = 200_000
	p := step(t, g, 10*sec, []env.Observation{o}, []policy.Decision{dc(kA, more, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].New.HeadroomBytes != 200_000 {
		t.Fatalf("a raise: %+v", p)
	}
	g.Result(p.Changes[0], Applied, p.Changes[0].New, 10*sec)
	o.Current = p.Changes[0].New
	o.Metrics.DropFrac = 0.1 // drops in every interval of the window, none before
	for i := range g.cfg.RollbackWindow {
		p = step(t, g, int64(11+i)*sec, []env.Observation{o}, nil)
	}
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindRollback || p.Changes[0].New != cur {
		t.Fatalf("want a rollback to the switch's own setting %+v, got %+v", cur, p)
	}
}

// Kmax at or above XOFF is brought below it (RepairXoffShare of XOFF, Kmin
// below that), whatever the policy wants; where no Kmax within the bounds
// is below XOFF, the alarm sounds and nothing is written.
func TestGuardRepairsKmaxAboveXoff(t *testing.T) {
	g := newTestGuard(t, nil)
	high := env.Setting{KminBytes: 3_000_000, KmaxBytes: 3_358_000, Pmax: 0.2, HeadroomBytes: 100_000}
	o := ob(kA, high)
	o.XoffBytes = 2_809_000
	p := step(t, g, 10*sec, []env.Observation{o}, []policy.Decision{dc(kA, high, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindRepair {
		t.Fatalf("want one repair, got %+v", p)
	}
	n := p.Changes[0].New
	// The least move: kmax under XOFF, kmin down in the same proportion
	// (the marking band keeps its shape), not to half of kmax.
	want := int64(2_809_000 * RepairXoffShare)
	if wantMin := int64(float64(want) * 3_000_000 / 3_358_000); n.KmaxBytes != want || n.KminBytes >= n.KmaxBytes || n.KminBytes != wantMin {
		t.Fatalf("repaired to %+v, want kmax %d and kmin %d", n, want, wantMin)
	}
	if len(p.Alarms) != 1 || p.Alarms[0].Rule != RuleOrder {
		t.Fatalf("alarms %+v", p.Alarms)
	}
	// No kmax within the bounds below XOFF: alarm only.
	g2 := newTestGuard(t, nil)
	o2 := ob(kA, cur)
	o2.XoffBytes = 10_000
	p = step(t, g2, 10*sec, []env.Observation{o2}, nil)
	if len(p.Changes) != 0 || len(p.Alarms) != 1 || !strings.Contains(p.Alarms[0].Msg, "no kmax within the bounds") {
		t.Fatalf("unrepairable: %+v", p)
	}
	// Another writer holds the queue: alarm, no repair.
	g3 := newTestGuard(t, nil)
	o3 := ob(kA, high)
	o3.XoffBytes = 2_809_000
	q := g3.queue(kA)
	q.current, q.yieldNs = high, 100*sec
	p = step(t, g3, 10*sec, []env.Observation{o3}, nil)
	if len(p.Changes) != 0 || len(p.Alarms) != 1 || !strings.Contains(p.Alarms[0].Msg, "another writer") {
		t.Fatalf("held by another writer: %+v", p)
	}
}

// Pmax bounds that hold no value at the switches' resolution are a
// configuration error; otherwise the planned Pmax is always within the
// bounds and a multiple of the step.
func TestGuardPmaxBoundsAndStep(t *testing.T) {
	c := testGuardConfig()
	c.Bounds[0].PmaxMin, c.Bounds[0].PmaxMax = 0.015, 0.018
	if _, err := NewGuard(c); err == nil || !strings.Contains(err.Error(), "pmax-step") {
		t.Fatalf("[0.015, 0.018] at step 0.01: err = %v", err)
	}
	rng := rand.New(rand.NewPCG(7, 9))
	for i := 0; i < 2000; i++ {
		lo := 0.005 + rng.Float64()*0.5
		hi := lo + rng.Float64()*0.4
		if hi > 1 {
			hi = 1
		}
		c := testGuardConfig()
		c.MaxStepRatio = 1000
		c.Bounds[0].PmaxMin, c.Bounds[0].PmaxMax = lo, hi
		g, err := NewGuard(c)
		if pmaxStepIn(lo, hi, c.PmaxStep) == 0 {
			if err == nil {
				t.Fatalf("[%g, %g]: accepted without a multiple of %g", lo, hi, c.PmaxStep)
			}
			continue
		}
		if err != nil {
			t.Fatalf("[%g, %g]: %v", lo, hi, err)
		}
		want := rng.Float64()
		p := step(t, g, 10*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, env.Setting{KminBytes: 300_000, KmaxBytes: 1_500_000, Pmax: want}, 0.9)})
		for _, ch := range p.Changes {
			pm := ch.New.Pmax
			if pm < lo-1e-9 || pm > hi+1e-9 || math.Abs(pm/c.PmaxStep-math.Round(pm/c.PmaxStep)) > 1e-6 {
				t.Fatalf("[%g, %g], wanted %g: planned pmax %g", lo, hi, want, pm)
			}
		}
	}
}

// Whatever the policy wants, a change the guard plans is inside the
// invariants: bounds, Kmin < Kmax < XOFF, headroom at or above the floor.
func TestGuardShapeProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for i := 0; i < 5000; i++ {
		g := newTestGuard(t, nil)
		c := env.Setting{KminBytes: 1 + rng.Int64N(3_000_000), Pmax: 0.01 + rng.Float64()*0.9, HeadroomBytes: 1 + rng.Int64N(200_000)}
		c.KmaxBytes = c.KminBytes + 1 + rng.Int64N(5_000_000)
		o := ob(kA, c)
		o.XoffBytes = 100_000 + rng.Int64N(6_000_000)
		o.MinHeadroomBytes = 50_000
		w := env.Setting{KminBytes: rng.Int64N(8_000_000), Pmax: rng.Float64(), HeadroomBytes: rng.Int64N(300_000)}
		w.KmaxBytes = w.KminBytes + 1 + rng.Int64N(8_000_000)
		p := step(t, g, 10*sec, []env.Observation{o}, []policy.Decision{dc(kA, w, 0.9)})
		b := g.cfg.BoundsFor(o.RateBps)
		for _, ch := range p.Changes {
			n := ch.New
			inBounds := n.KminBytes >= b.KminMin && n.KminBytes <= b.KminMax && n.KmaxBytes >= b.KmaxMin && n.KmaxBytes <= b.KmaxMax
			if ch.Kind == KindRepair {
				inBounds = n.KmaxBytes <= max(c.KmaxBytes, b.KmaxMax) // a repair only moves toward validity
			}
			if !inBounds || n.KminBytes >= n.KmaxBytes || n.KmaxBytes >= o.XoffBytes || n.HeadroomBytes < o.MinHeadroomBytes {
				t.Fatalf("current %+v xoff %d, wanted %+v: planned %s %+v (bounds %+v)", c, o.XoffBytes, w, ch.Kind, n, b)
			}
		}
	}
}

// After a switch restart (counters reset, setting back at the startup
// configuration) the startup setting is the baseline: a change made from
// it that fails its probation rolls back to it, not to the setting the
// switch had before it restarted; and the rollback passes the same rules
// as any change (here: Kmax below the PG's XOFF at the time).
func TestGuardRollbackAfterSwitchRestart(t *testing.T) {
	g := newTestGuard(t, nil)
	tuned := applyTune(t, g, env.Metrics{IntervalNs: sec, Util: 0.5})
	now := 11 * sec
	for i := 0; i < 4; i++ { // probation passes: tuned is the last good
		o := ob(kA, tuned)
		o.Metrics.MarkFrac = 0.1 // in play
		step(t, g, now, []env.Observation{o}, nil)
		now += sec
	}
	if lg, _ := g.LastGood(kA); lg != tuned {
		t.Fatalf("last good %+v, want the tuned %+v", lg, tuned)
	}
	// The switch restarts at its startup configuration.
	startup := env.Setting{KminBytes: 800_000, KmaxBytes: 2_154_000, Pmax: 0.1, HeadroomBytes: 100_000}
	o := ob(kA, startup)
	o.Valid, o.Metrics = false, env.Metrics{Reset: true}
	step(t, g, now, []env.Observation{o}, nil)
	now += sec
	if lg, _ := g.LastGood(kA); lg != startup {
		t.Fatalf("after the restart last good is %+v, want the startup setting %+v", lg, startup)
	}
	// Tune from the startup setting, then KPIs worsen.
	o = ob(kA, startup)
	step(t, g, now, []env.Observation{o}, nil)
	now += 10 * sec // past min-hold
	// headroom too: judged on drops (a change that only marks earlier is not)
	want := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 150_000}
	p := step(t, g, now, []env.Observation{o}, []policy.Decision{dc(kA, want, 0.9)})
	if len(p.Changes) != 1 {
		t.Fatalf("tune from the startup setting: %+v", p)
	}
	c := p.Changes[0]
	g.Result(c, Applied, c.New, now)
	o = ob(kA, c.New)
	o.Metrics.DropFrac = 0.05 // in every interval of the window, none before
	o.XoffBytes = 2_000_000   // XOFF fell below the startup Kmax meanwhile
	for range g.cfg.RollbackWindow {
		now += sec
		p = step(t, g, now, []env.Observation{o}, nil)
	}
	var rb *Change
	for i := range p.Changes {
		if p.Changes[i].Kind == KindRollback {
			rb = &p.Changes[i]
		}
	}
	if rb == nil {
		t.Fatalf("no rollback: %+v", p)
	}
	if rb.New.KminBytes != startup.KminBytes || rb.New.Pmax != startup.Pmax || rb.New.KmaxBytes != int64(float64(o.XoffBytes)*RepairXoffShare) {
		t.Fatalf("rollback to %+v, want the startup setting %+v with kmax below XOFF %d (never the pre-restart %+v)", rb.New, startup, o.XoffBytes, tuned)
	}
}

// A rollback to a setting whose Kmax is no longer below XOFF (XOFF moves
// with buffer use) is shaped below it, says so, and records the setting
// it returns to (Change.Wanted, kept in the audit log), so that an audit
// can tell it from a rollback to a stale setting.
func TestGuardRollbackShapedBelowXoff(t *testing.T) {
	tighter := cur
	tighter.KminBytes, tighter.KmaxBytes = 400_000, 1_000_000
	p := tightenThenFall(t, tighter, 1_200_000) // XOFF above the new kmax, below the old
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindRollback {
		t.Fatalf("want a rollback, got %+v", p)
	}
	c := p.Changes[0]
	if c.New.KmaxBytes != 1_080_000 || c.Wanted == nil || *c.Wanted != cur || !strings.Contains(c.Reason, "as allowed now: "+RuleOrder) {
		t.Fatalf("rollback %+v (wanted %v): want kmax below XOFF, the setting before the change as Wanted, the rule in the reason", c, c.Wanted)
	}
	// An unshaped rollback has no Wanted.
	p = tightenThenFall(t, tighter, 0)
	if len(p.Changes) != 1 || p.Changes[0].New != cur || p.Changes[0].Wanted != nil {
		t.Fatalf("plain rollback: %+v", p)
	}
}

// tightenThenFall tunes kA from cur to tighter after MinBaselineIntervals
// marking intervals at 90% of the link, then reports XOFF xoff (0:
// unknown) and 50% of the link for a window: a change that marks earlier
// is judged on throughput, and this fall rolls it back (RuleReward). It
// returns the plan of the window's last interval.
func tightenThenFall(t *testing.T, tighter env.Setting, xoff int64) Plan {
	t.Helper()
	g := newTestGuard(t, func(gc *GuardConfig) { gc.Reward = func(m env.Metrics) float64 { return m.Util } })
	o := ob(kA, cur)
	o.Metrics.Util, o.Metrics.MarkFrac = 0.9, 0.1
	now := int64(0)
	for range MinBaselineIntervals {
		now += sec
		step(t, g, now, []env.Observation{o}, nil)
	}
	now += sec
	p := step(t, g, now, []env.Observation{o}, []policy.Decision{dc(kA, tighter, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].New != tighter || p.Changes[0].Wanted != nil {
		t.Fatalf("a tune: %+v", p)
	}
	g.Result(p.Changes[0], Applied, tighter, now)
	o.Current, o.XoffBytes, o.Metrics.Util = tighter, xoff, 0.5
	for i := range g.cfg.RollbackWindow {
		now += sec
		p = step(t, g, now, []env.Observation{o}, nil)
		if i < g.cfg.RollbackWindow-1 && len(p.Changes) != 0 {
			t.Fatalf("rolled back before the window's end: %+v", p)
		}
	}
	if len(p.Alarms) != 1 || p.Alarms[0].Rule != RuleReward {
		t.Fatalf("alarms %+v, want the reward rule", p.Alarms)
	}
	return p
}

// A headroom the switch reports as 0 B on a lossless PG is below its floor
// and repaired like any other; a headroom the switch does not report (0:
// unknown) is left alone. Before, 0 was always taken as unknown: a Set of
// headroom 0 went unrepaired.
func TestGuardRepairsHeadroomZero(t *testing.T) {
	zero := cur
	zero.HeadroomBytes = 0
	for _, reported := range []bool{true, false} {
		g := newTestGuard(t, nil)
		o := ob(kA, zero)
		o.MinHeadroomBytes, o.HeadroomReported = 52_376, reported
		p := step(t, g, 10*sec, []env.Observation{o}, nil)
		switch {
		case reported && (len(p.Changes) != 1 || p.Changes[0].Kind != KindRepair || p.Changes[0].New.HeadroomBytes != 52_376):
			t.Fatalf("headroom 0 B reported: %+v", p)
		case !reported && len(p.Changes)+len(p.Alarms) != 0:
			t.Fatalf("headroom not reported: %+v", p)
		}
	}
}

// XOFF falling step by step as a PG's pool fills (incast400-longcable:
// 432 KB→121 KB) reaches the guard's own repairs: each repair of a
// setting the agent wrote widens the queue's XOFF margin (10%, 20%, 40%),
// so that a few repairs find a Kmax that holds, not one repair at every
// new low. Tunes keep the widened margin, and it narrows a step after
// XoffMemoryIntervals intervals in which XOFF did not reach the setting.
func TestGuardRepairsOfOwnRepairsWidenTheMargin(t *testing.T) {
	g := newTestGuard(t, nil)
	now := int64(0)
	var cur1 = cur // Kmax 1.6 MB
	obs := func(xoff int64) env.Observation {
		o := ob(kA, cur1)
		o.XoffBytes = xoff
		return o
	}
	var kmaxes []int64
	for _, xoff := range []int64{1_200_000, 1_000_000, 750_000, 600_000, 500_000, 480_000} {
		now += sec
		p := step(t, g, now, []env.Observation{obs(xoff)}, nil)
		for _, c := range p.Changes {
			if c.Kind != KindRepair {
				t.Fatalf("XOFF %d: a %s: %+v", xoff, c.Kind, c)
			}
			g.Result(c, Applied, c.New, now)
			cur1 = c.New
			kmaxes = append(kmaxes, c.New.KmaxBytes)
			t.Logf("XOFF %s: %s", units.FormatBytes(xoff), c.Reason)
		}
	}
	// 1.08 MB (10% under 1.2 MB), 800 KB (20% under 1 MB), 450 KB (40% under 750 KB)
	if want := []int64{1_080_000, 800_000, 450_000}; !slices.Equal(kmaxes, want) {
		t.Fatalf("repairs to kmax %v, want %v (before: one at each new low of XOFF, 1.08M, 900K, 675K, 540K, 450K)", kmaxes, want)
	}
	if m := g.Memory(kA); m.XoffWiden != MaxXoffWiden {
		t.Errorf("memory's XOFF widening %d, want %d", m.XoffWiden, MaxXoffWiden)
	}
	// a tune asking for a Kmax above the widened margin (under the 10%
	// one) is held under it
	hi := cur1
	hi.KminBytes, hi.KmaxBytes = 100_000, 400_000
	now += 10 * sec
	p := step(t, g, now, []env.Observation{obs(480_000)}, []policy.Decision{dc(kA, hi, 0.9)})
	if ceil := int64(480_000 * 0.6); len(p.Changes) != 1 || p.Changes[0].New.KmaxBytes > ceil {
		t.Errorf("tune to kmax 400KB under XOFF 480KB: %+v, want kmax at most %d", p, ceil)
	}
	for _, c := range p.Changes {
		g.Result(c, Applied, c.New, now)
		cur1 = c.New
	}
	// XOFF stays above the setting for XoffMemoryIntervals: a step narrower
	for i := 0; i < XoffMemoryIntervals; i++ {
		now += sec
		step(t, g, now, []env.Observation{obs(1_000_000)}, nil)
	}
	if w := g.queues[kA].xoffWiden; w != MaxXoffWiden-1 {
		t.Errorf("after %d calm intervals the widening is %d, want %d", XoffMemoryIntervals, w, MaxXoffWiden-1)
	}
}
