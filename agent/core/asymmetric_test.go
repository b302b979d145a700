package core

import (
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// TestTightenFastLoosenSlowly: with MinConfidenceTighten and MinHoldTighten
// at 0, advice to mark earlier goes through unsure and right after the
// last change; advice to mark later must be sure (MinConfidence), wait
// min-hold and persist DwellLoosen intervals in a row. In shadow mode the
// same rules decide what would have been set. Left at their defaults the
// two tighten knobs are MinConfidence and MinHold.
// asymSetting is a test queue's setting at Kmax kmax, Kmin 100 KB under it.
func asymSetting(kmax int64) env.Setting {
	return env.Setting{KminBytes: kmax - 100_000, KmaxBytes: kmax, Pmax: 0.01, HeadroomBytes: 100_000}
}

// asymRules are tighten fast (confidence 0, no hold), loosen slowly
// (confidence 0.3, minHold, 4 intervals in a row), no step limit.
func asymRules(minHold time.Duration) func(*GuardConfig) {
	return func(g *GuardConfig) {
		g.MaxStepRatio = 1000
		g.MinConfidence, g.MinConfidenceTighten = 0.3, 0
		g.MinHold, g.MinHoldTighten = minHold, 0
		g.DwellLoosen = 4
	}
}

func TestTightenFastLoosenSlowly(t *testing.T) {
	a, b, c, a2 := asymSetting(800_000), asymSetting(400_000), asymSetting(200_000), asymSetting(600_000)
	c.KminBytes = 150_000
	asym := asymRules(5 * time.Second)
	for _, shadow := range []bool{false, true} {
		g := newTestGuard(t, asym)
		o := ob(kA, a)
		o.Metrics.MarkFrac = 0.2 // the queue marks: the tight setting acts
		now := int64(10 * sec)
		run := func(want env.Setting, conf float64) Plan {
			t.Helper()
			p := step(t, g, now, []env.Observation{o}, []policy.Decision{dc(kA, want, conf)})
			if len(p.Changes) == 1 {
				o = settle(g, shadow, o, p.Changes[0], p.Changes[0].New, now)
			}
			now += sec
			return p
		}
		if p := run(b, 0.05); len(p.Changes) != 1 || !SameSetting(p.Changes[0].New, b, 1e-9) {
			t.Fatalf("shadow %v: unsure advice to mark earlier: %+v, want it applied", shadow, p)
		}
		for range 3 { // the change's probation
			run(b, 0.9)
		}
		if p := run(c, 0.05); len(p.Changes) != 1 || !SameSetting(p.Changes[0].New, c, 1e-9) {
			t.Fatalf("shadow %v: marking earlier again 4 s after the last change (min-hold 5 s): %+v, want it applied", shadow, p)
		}
		for range 3 {
			run(c, 0.9)
		}
		if p := run(a2, 0.1); len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleConfidence {
			t.Fatalf("shadow %v: unsure advice to mark later: %+v, want it refused for its confidence", shadow, p)
		}
		for i := 1; i < 4; i++ {
			p := run(a, 0.9)
			if len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleDwell ||
				!strings.Contains(p.Rejections[0].Reason, "marks later") {
				t.Fatalf("shadow %v: advice to mark later, %d of 4 intervals: %+v, want it waiting", shadow, i, p)
			}
		}
		if p := run(a, 0.9); len(p.Changes) != 1 || !SameSetting(p.Changes[0].New, a, 1e-9) {
			t.Fatalf("shadow %v: advice to mark later the 4th interval in a row: %+v, want it applied", shadow, p)
		}
	}

	// left at the defaults: unsure advice to mark earlier waits like any
	g := newTestGuard(t, func(g *GuardConfig) { g.MaxStepRatio, g.MinConfidence = 1000, 0.3 })
	if p := step(t, g, 10*sec, []env.Observation{ob(kA, a)}, []policy.Decision{dc(kA, b, 0.05)}); len(p.Changes) != 0 ||
		len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleConfidence {
		t.Fatalf("defaults: %+v, want the unsure advice refused", p)
	}
}

// A change of headroom or alpha is neither earlier nor later marking.
func TestMarksEarlier(t *testing.T) {
	a := env.Setting{KminBytes: 700_000, KmaxBytes: 800_000, Pmax: 0.01, HeadroomBytes: 100_000}
	for _, tc := range []struct {
		name string
		mod  func(*env.Setting)
		want bool
	}{
		{"lower kmax", func(s *env.Setting) { s.KmaxBytes, s.KminBytes = 400_000, 750_000 }, true},
		{"lower kmin", func(s *env.Setting) { s.KminBytes = 300_000 }, true},
		{"higher pmax", func(s *env.Setting) { s.Pmax = 0.2 }, true},
		{"higher kmax", func(s *env.Setting) { s.KmaxBytes, s.Pmax = 900_000, 1 }, false},
		{"lower pmax", func(s *env.Setting) { s.Pmax = 0.003 }, false},
		{"same", func(s *env.Setting) {}, false},
		{"lower kmax, more headroom", func(s *env.Setting) { s.KmaxBytes, s.HeadroomBytes = 750_000, 200_000 }, false},
		{"lower kmax, other alpha", func(s *env.Setting) { s.KmaxBytes, s.Alpha = 750_000, 0.5 }, false},
	} {
		s := a
		tc.mod(&s)
		if got := marksEarlier(s, a); got != tc.want {
			t.Errorf("%s: marksEarlier = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestKmaxPlannedUnderTheXoffFloor: with the switch's shared buffer known,
// the guard plans Kmax under where XOFF falls when the queue fills (X·B/(B+X),
// alpha at least X/B), so the XOFF of a full queue (the 800G star's: 13%
// under its idle value) needs no repair of the guard's own setting.
// Without the buffer, the lowest recent XOFF with the repair's margin.
func TestKmaxPlannedUnderTheXoffFloor(t *testing.T) {
	cur := env.Setting{KminBytes: 3_000_000, KmaxBytes: 4_000_000, Pmax: 0.01, HeadroomBytes: 100_000}
	want := env.Setting{KminBytes: 6_000_000, KmaxBytes: 7_000_000, Pmax: 0.01, HeadroomBytes: 100_000}
	var idle, buffer int64 = 7_653_000, 48_000_000
	for _, known := range []bool{true, false} {
		g := newTestGuard(t, func(c *GuardConfig) { c.MaxStepRatio, c.Bounds[0].KmaxMax = 1000, 48_000_000 })
		o := ob(kA, cur)
		o.XoffBytes = idle
		if known {
			o.BufferBytes = buffer
		}
		p := step(t, g, 10*sec, []env.Observation{o}, []policy.Decision{dc(kA, want, 0.9)})
		if len(p.Changes) != 1 {
			t.Fatalf("buffer known %v: %+v", known, p)
		}
		limit := int64(float64(idle) * RepairXoffShare)
		if known {
			limit = int64(float64(idle*buffer/(buffer+idle)) * RepairXoffShare)
		}
		got := p.Changes[0].New
		if got.KmaxBytes > limit || got.KmaxBytes < limit-1000 || got.KminBytes >= got.KmaxBytes {
			t.Fatalf("buffer known %v: planned %+v, want kmax %d", known, got, limit)
		}
		g.Result(p.Changes[0], Applied, got, 10*sec)
		full := ob(kA, got)
		full.XoffBytes, full.BufferBytes = idle*87/100, o.BufferBytes
		p = step(t, g, 11*sec, []env.Observation{full}, []policy.Decision{dc(kA, got, 0.9)})
		repaired := len(p.Changes) == 1 && p.Changes[0].Kind == KindRepair
		if repaired == known {
			t.Fatalf("buffer known %v: XOFF 13%% lower: %+v", known, p)
		}
	}
}

// What the loop would run is the change the guard plans, as it plans it
// (Pmax on the switches' step): a recommendation it lets through that
// changes nothing leaves the loop where it was (Would), not at the
// recommendation's own Pmax.
func TestWouldSetIsThePlannedChange(t *testing.T) {
	cur := env.Setting{KminBytes: 25_000, KmaxBytes: 100_000, Pmax: 0.2}
	rec := env.Setting{KminBytes: 80_775, KmaxBytes: 89_750, Pmax: 0.003}
	run := rec
	run.Pmax = 0.01
	recs := []Recommendation{{Key: kA, Current: cur, Recommended: rec}}
	verdicts(recs, Plan{Changes: []Change{{Key: kA, Kind: KindTune, Old: cur, New: run}}})
	if !recs[0].Changes || recs[0].Allowed == nil || recs[0].WouldSet() != run {
		t.Fatalf("planned change: %+v, would set %+v, want %+v", recs[0], recs[0].WouldSet(), run)
	}
	next := []Recommendation{{Key: kA, Current: cur, Recommended: rec, Would: &run}}
	verdicts(next, Plan{})
	if next[0].Changes || next[0].WouldSet() != run {
		t.Fatalf("nothing planned: would set %+v, want %+v", next[0].WouldSet(), run)
	}
	if idle := (Recommendation{Key: kA, Current: cur, Recommended: rec}); idle.WouldSet() != cur {
		t.Fatalf("nothing planned, nothing run before: %+v", idle.WouldSet())
	}
}

// The lowest XOFF is remembered XoffMemoryIntervals, not 8: a dip as
// several queues fill keeps Kmax under it long after.
func TestXoffDipRemembered(t *testing.T) {
	cur := env.Setting{KminBytes: 3_000_000, KmaxBytes: 4_000_000, Pmax: 0.01, HeadroomBytes: 100_000}
	want := env.Setting{KminBytes: 6_000_000, KmaxBytes: 7_000_000, Pmax: 0.01, HeadroomBytes: 100_000}
	g := newTestGuard(t, func(c *GuardConfig) { c.MaxStepRatio, c.Bounds[0].KmaxMax = 1000, 48_000_000 })
	at := func(xoff int64) env.Observation {
		o := ob(kA, cur)
		o.XoffBytes = xoff
		return o
	}
	step(t, g, sec, []env.Observation{at(6_000_000)}, nil)
	for i := 2; i < XoffMemoryIntervals; i++ {
		step(t, g, int64(i)*sec, []env.Observation{at(7_653_000)}, nil)
	}
	p := step(t, g, XoffMemoryIntervals*sec, []env.Observation{at(7_653_000)}, []policy.Decision{dc(kA, want, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].New.KmaxBytes > 6_000_000*RepairXoffShare {
		t.Fatalf("%d intervals after XOFF dipped to 6 MB: %+v", XoffMemoryIntervals-1, p)
	}
}

// Loosening slowly is for undoing the loop's own tightening: advice to mark
// later than the operator's setting (or than the loop's own loosening) needs
// only dwell; after the loop marked earlier it needs dwell-loosen intervals
// of advice in a row in which the tight setting acts (an idle interval, or
// one whose queue stays under the tight Kmin, breaks the row), and a
// restart remembers which it is.
func TestLoosenSlowlyOnlyAfterOwnTightening(t *testing.T) {
	a, b, a3 := asymSetting(800_000), asymSetting(400_000), asymSetting(1_000_000)
	asym := asymRules(0)
	for _, shadow := range []bool{false, true} {
		g := newTestGuard(t, asym)
		o := ob(kA, b)
		o.Metrics.MarkFrac = 0.2 // in play: each probation's window passes in 3 intervals
		now := int64(10 * sec)
		run := func(d policy.Decision) Plan {
			t.Helper()
			p := step(t, g, now, []env.Observation{o}, []policy.Decision{d})
			if len(p.Changes) == 1 {
				o = settle(g, shadow, o, p.Changes[0], p.Changes[0].New, now)
			}
			now += sec
			return p
		}
		if p := run(dc(kA, a, 0.9)); len(p.Changes) != 1 || !SameSetting(p.Changes[0].New, a, 1e-9) {
			t.Fatalf("shadow %v: advice to mark later than the operator's setting: %+v, want it applied at once", shadow, p)
		}
		for range 3 {
			run(dc(kA, a, 0.9))
		}
		if p := run(dc(kA, a3, 0.9)); len(p.Changes) != 1 || !SameSetting(p.Changes[0].New, a3, 1e-9) {
			t.Fatalf("shadow %v: advice to mark later still, after the loop's loosening: %+v, want it applied at once", shadow, p)
		}
		for range 3 {
			run(dc(kA, a3, 0.9))
		}
		if p := run(dc(kA, b, 0.05)); len(p.Changes) != 1 {
			t.Fatalf("shadow %v: advice to mark earlier: %+v, want it applied", shadow, p)
		}
		for range 3 {
			run(dc(kA, b, 0.9))
		}
		if !shadow {
			// a restart: the guard's memory says the loop tightened last
			m := g.Memory(kA)
			g = newTestGuard(t, asym)
			g.Restore(m)
			o = ob(kA, b)
		}
		// the tight setting acts (the queue marks) in every interval but
		// an idle one and a quiet one (the queue stays under its Kmin)
		o.Metrics.MarkFrac = 0.2
		busy := o
		quiet := dc(kA, a, 0.9)
		quiet.Reason = "quiet"
		idle := policy.Decision{Key: kA, Setting: b, Action: env.ActionHold, Held: policy.HoldIdle}
		for i, d := range []policy.Decision{dc(kA, a, 0.9), dc(kA, a, 0.9), dc(kA, a, 0.9), idle, dc(kA, a, 0.9), dc(kA, a, 0.9), dc(kA, a, 0.9), quiet, dc(kA, a, 0.9), dc(kA, a, 0.9), dc(kA, a, 0.9)} {
			o = busy
			if d.Reason == "quiet" {
				o.Metrics.MarkFrac, o.Metrics.MaxDelayNs = 0, 10_000 // 125 KB at 100 Gb/s, under Kmin 400 KB
			}
			if p := run(d); len(p.Changes) != 0 {
				t.Fatalf("shadow %v: advice to undo the loop's tightening, interval %d: %+v, want it waiting", shadow, i, p)
			}
		}
		o = busy
		if p := run(dc(kA, a, 0.9)); len(p.Changes) != 1 || !SameSetting(p.Changes[0].New, a, 1e-9) {
			t.Fatalf("shadow %v: the 4th interval of advice to mark later since a quiet one: %+v, want it applied", shadow, p)
		}
	}
}

// In shadow mode the policy sees the switch's setting: its hold, and an idle
// queue's, keep what the loop would run (the virtual setting), not a change
// back to the switch's setting that shadow would count as a would-change.
func TestShadowHoldKeepsWhatTheLoopWouldRun(t *testing.T) {
	real := env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2, HeadroomBytes: 100_000}
	looser := env.Setting{KminBytes: 700_000, KmaxBytes: 800_000, Pmax: 0.01, HeadroomBytes: 100_000}
	g := newTestGuard(t, func(g *GuardConfig) { g.MaxStepRatio, g.MinConfidence, g.MinHold = 1000, 0.1, 0 })
	o := ob(kA, real)
	now := int64(10 * sec)
	p := step(t, g, now, []env.Observation{o}, []policy.Decision{dc(kA, looser, 0.9)})
	if len(p.Changes) != 1 {
		t.Fatalf("advice to mark later: %+v, want a would-change", p)
	}
	g.Shadowed(p.Changes[0], now)
	hold := policy.Decision{Key: kA, Setting: real, Action: env.ActionHold, Confidence: 0.5, Reason: "hold"}
	idle := policy.Decision{Key: kA, Setting: real, Action: env.ActionHold, Held: policy.HoldIdle, Reason: "idle"}
	for i, d := range []policy.Decision{hold, idle, hold} {
		now += 10 * sec
		if p := step(t, g, now, []env.Observation{o}, []policy.Decision{d}); len(p.Changes) != 0 || len(p.Rejections) != 0 {
			t.Fatalf("decision %d (%s) in shadow mode: %+v, want nothing planned", i, d.Reason, p)
		}
		if w, ok := g.Would(kA); !ok || !SameSetting(w, looser, 1e-9) {
			t.Fatalf("decision %d (%s): would run %+v (%v), want %+v", i, d.Reason, w, ok, looser)
		}
	}
	// advice of the switch's setting that is not a hold is a change like any
	now += 10 * sec
	if p := step(t, g, now, []env.Observation{o}, []policy.Decision{dc(kA, real, 0.9)}); len(p.Changes) != 1 {
		t.Fatalf("advice to go back to the switch's setting: %+v, want a would-change", p)
	}
}
