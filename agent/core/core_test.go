package core

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// In shadow mode the guard's alarms say that nothing is written: a stale
// target's "reverting to the safe preset" is what closed loop would do.
func TestShadowAlarmsSayNothingIsWritten(t *testing.T) {
	for _, shadow := range []bool{true, false} {
		c, err := New(Options{Guard: testGuardConfig(), Shadow: shadow, Policy: "test"})
		if err != nil {
			t.Fatal(err)
		}
		c.AddTarget("leaf0", 0)
		if _, err := c.Tick(Interval{NowNs: sec, Observations: []env.Observation{ob(kA, cur)}, Decisions: []policy.Decision{dc(kA, cur, 0.9)}}); err != nil {
			t.Fatal(err)
		}
		rd, err := c.Tick(Interval{NowNs: sec + int64(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		if len(rd.Alarms) == 0 {
			t.Fatalf("shadow %v: no alarm for a minute without telemetry", shadow)
		}
		for _, a := range rd.Alarms {
			if says := strings.HasSuffix(a.Msg, "(shadow mode: nothing is written)"); says != shadow {
				t.Errorf("shadow %v: alarm %q", shadow, a.Msg)
			}
		}
	}
}

// With a dwell of 2 a change goes through only when the policy has
// recommended it two intervals in a row; one that alternates never does.
func TestDwellKeepsAlternatingRecommendationsOut(t *testing.T) {
	g := newTestGuard(t, func(c *GuardConfig) { c.Dwell, c.MinHold = 2, 0 })
	a, b := cur, cur
	a.KmaxBytes, b.KmaxBytes = 2_000_000, 1_200_000
	now := 10 * sec
	for i, want := range []env.Setting{a, b, a, b, a, b} {
		p := step(t, g, now+int64(i)*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, want, 0.9)})
		if len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleDwell {
			t.Fatalf("interval %d, alternating: %+v", i, p)
		}
	}
	p := step(t, g, now+6*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, b, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].New.KmaxBytes != b.KmaxBytes {
		t.Fatalf("the second interval in a row of the same change: %+v", p)
	}
	if g2 := newTestGuard(t, nil); g2.cfg.Dwell != 1 {
		t.Fatalf("default dwell %d, want 1 (at once)", g2.cfg.Dwell)
	}
}

// With idle-util set, a queue that carried almost nothing holds and says
// it is idle; a busy one, or an idle one with marks, keeps the decision.
func TestIdleQueuesHold(t *testing.T) {
	gc := testGuardConfig()
	gc.IdleUtil = 0.01
	c, err := New(Options{Guard: gc, Shadow: true, Policy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	idle, busy, marked := ob(kA, cur), ob(kB, cur), ob(kC, cur)
	idle.Metrics.Util, busy.Metrics.Util = 0.001, 0.5
	marked.Metrics.Util, marked.Metrics.MarkFrac = 0.001, 0.2
	want := cur
	want.KmaxBytes = 2_000_000
	rd, err := c.Tick(Interval{NowNs: 10 * sec, Observations: []env.Observation{idle, busy, marked},
		Decisions: []policy.Decision{dc(kA, want, 0.9), dc(kB, want, 0.9), dc(kC, want, 0.9)}})
	if err != nil {
		t.Fatal(err)
	}
	r := rd.Recommendations
	if r[0].Recommended != cur || r[0].Held != policy.HoldIdle || !strings.Contains(r[0].Reason, "hold: idle") {
		t.Errorf("idle queue: %+v", r[0])
	}
	for _, x := range r[1:] {
		if x.Recommended != want || x.Held != policy.HoldNone {
			t.Errorf("%v (busy, or idle with marks): %+v", x.Key, x)
		}
	}
}

// A flap is a change back to a setting the queue left within the window;
// a change back after it, a failed one, or a new setting is none.
func TestFlaps(t *testing.T) {
	a, b, c := cur, cur, cur
	b.KmaxBytes, c.KmaxBytes = 2_000_000, 1_200_000
	e := func(tg string, ns int64, old, new env.Setting, st AuditState) AuditEntry {
		return AuditEntry{TimeNs: ns, Target: tg, Change: Change{Key: env.QueueKey{Target: tg, Port: "Ethernet0", Queue: 3}, Old: old, New: new}, State: st}
	}
	es := []AuditEntry{
		e("leaf0", 1*sec, a, b, StateApplied),
		e("leaf0", 3*sec, b, a, StateApplied),  // back to a, left 2 s ago: a flap
		e("leaf0", 5*sec, a, c, StateApplied),  // new
		e("leaf0", 20*sec, c, a, StateApplied), // back to a, left 15 s ago: outside the window
		e("leaf1", 1*sec, a, b, StateApplied),
		e("leaf1", 2*sec, b, a, StateFailed), // not applied
	}
	if got := Flaps(es, 10*sec); got["leaf0"] != 1 || got["leaf1"] != 0 || len(got) != 1 {
		t.Fatalf("flaps %v, want leaf0: 1", got)
	}
}

// Advice that persisted n intervals moves as far as n one-interval changes
// could, in one change, and a large move waits for it (up to 2·dwell
// intervals): with max-step 2 and dwell 3, Pmax 20% to 1% (20x, 5 steps)
// at the fifth interval, all at once; to 0.1% (200x) at the sixth, as far
// as 2^6 takes it; with dwell 1, to 10% at once.
func TestDwellEarnsItsStep(t *testing.T) {
	for _, c := range []struct {
		dwell, after int
		to, want     float64
	}{{1, 1, 0.001, 0.1}, {3, 5, 0.01, 0.01}, {3, 6, 0.001, 0.2 / 64}} {
		g := newTestGuard(t, func(gc *GuardConfig) {
			gc.Dwell, gc.MaxStepRatio, gc.PmaxStep = c.dwell, 2, 0
			gc.Bounds[0].PmaxMin = 1e-4
		})
		low := cur
		low.Pmax = c.to
		var p Plan
		for i := range c.after {
			p = step(t, g, int64(10+i)*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, low, 0.9)})
			if i < c.after-1 && (len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleDwell) {
				t.Fatalf("dwell %d, pmax %g, interval %d: %+v, want a dwell rejection", c.dwell, c.to, i+1, p)
			}
		}
		if len(p.Changes) != 1 || math.Abs(p.Changes[0].New.Pmax-c.want) > 1e-9 {
			t.Fatalf("dwell %d, pmax %g: %+v, want pmax %g", c.dwell, c.to, p, c.want)
		}
	}
}

// A recommendation is stated as the switch can hold it: a Pmax of 0.3%
// against a queue at 1% (the switches' 1% step) is no change, and the
// interval's summary does not count it as one.
func TestRecommendationOnTheSwitchStep(t *testing.T) {
	c, err := New(Options{Guard: testGuardConfig(), Shadow: true, Policy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c.AddTarget("leaf0", 0)
	at1 := cur
	at1.Pmax = 0.01
	want := at1
	want.Pmax = 0.003
	rd, err := c.Tick(Interval{NowNs: sec, Observations: []env.Observation{ob(kA, at1)}, Decisions: []policy.Decision{dc(kA, want, 0.9)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rd.Recommendations) != 1 || rd.Recommendations[0].Recommended.Pmax != 0.01 {
		t.Fatalf("recommendation %+v", rd.Recommendations)
	}
	if s := Summarize(rd.Recommendations, rd.Plan); s.Differ != 0 {
		t.Fatalf("summary counts %d changes", s.Differ)
	}
	// the reason says what is recommended on the step, and labels the
	// policy's own as what it wanted (it read "pmax 1%→0.3%" beside a
	// hold at 1%)
	d := dc(kA, want, 0.9)
	d.Reason = "pmax 1%→0.3%: marks too late"
	rd, err = c.Tick(Interval{NowNs: 2 * sec, Observations: []env.Observation{ob(kA, at1)}, Decisions: []policy.Decision{d}})
	if err != nil {
		t.Fatal(err)
	}
	if got := rd.Recommendations[0].Reason; got != "on the switch's 1% Pmax step: no change; wanted: pmax 1%→0.3%: marks too late" {
		t.Fatalf("reason of a Pmax put on the step: %q", got)
	}
	// a Pmax already on the step keeps its reason
	d.Setting.Pmax = 0.02
	d.Reason = "pmax 1%→2%"
	if rd, err = c.Tick(Interval{NowNs: 3 * sec, Observations: []env.Observation{ob(kA, at1)}, Decisions: []policy.Decision{d}}); err != nil || rd.Recommendations[0].Reason != "pmax 1%→2%" {
		t.Fatalf("reason of a Pmax on the step: %q, %v", rd.Recommendations[0].Reason, err)
	}
}

// An idle queue held is counted as idle, not as undecided (the interval
// log's undecided=86 of 160 were 82 idle queues).
func TestSummaryIdleIsNotUndecided(t *testing.T) {
	recs := []Recommendation{
		{Key: kA, Current: cur, Recommended: cur, Held: policy.HoldIdle},
		{Key: kB, Current: cur, Recommended: cur, Held: policy.HoldUndecided},
		{Key: kC, Current: cur, Recommended: cur},
	}
	if s := Summarize(recs, Plan{}); s.Idle != 1 || s.Undecided != 1 || s.Differ != 0 {
		t.Fatalf("summary %+v", s)
	}
}

// Two alpha-only steps of one queue (1/8 -> 1/2 -> 2) one interval apart
// are no flap: neither sets the queue back to a setting it left (the
// dashboard, /metrics and agent report counted one per queue).
func TestFlapsOfAlphaSteps(t *testing.T) {
	k := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	a1 := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 52_376, Alpha: 0.125}
	a2, a3 := a1, a1
	a2.Alpha, a3.Alpha = 0.5, 2
	s := int64(1e9)
	es := []AuditEntry{
		{Seq: 1, TimeNs: 1 * s, Target: k.Target, Change: Change{Key: k, Kind: KindTune, Old: a1, New: a2}, State: StateApplied},
		{Seq: 2, TimeNs: 2 * s, Target: k.Target, Change: Change{Key: k, Kind: KindTune, Old: a2, New: a3}, State: StateApplied},
	}
	if n := Flaps(es, 10*s)["leaf0"]; n != 0 {
		t.Fatalf("flaps = %d, want 0: alpha 1/8 -> 1/2 -> 2 never went back", n)
	}
	es = append(es, AuditEntry{Seq: 3, TimeNs: 3 * s, Target: k.Target, Change: Change{Key: k, Kind: KindRollback, Old: a3, New: a2}, State: StateApplied})
	if n := Flaps(es, 10*s)["leaf0"]; n != 1 {
		t.Fatalf("flaps = %d, want 1: alpha back to 1/2", n)
	}
}
