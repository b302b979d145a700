package core

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// TestUnsureTighteningOnlyWhileSettling: with TightenUnsureFor 3, advice to
// mark earlier goes through unsure in a queue's first 3 busy intervals; a
// queue busy longer tightens only on MinConfidence, whatever its setting;
// an idle row of 3 intervals starts its traffic over (in shadow mode too),
// and idle intervals do not count as busy ones. A restarted guard
// remembers that a queue has settled, and with the rule off ignores it.
func TestUnsureTighteningOnlyWhileSettling(t *testing.T) {
	a, b, c := asymSetting(800_000), asymSetting(400_000), asymSetting(200_000)
	rules := asymRules(0)
	for _, shadow := range []bool{false, true} {
		g := newTestGuard(t, func(g *GuardConfig) { rules(g); g.TightenUnsureFor = 3 })
		o := ob(kA, a)
		o.Metrics.MarkFrac = 0.2 // in play: the probation's window passes in 3 intervals
		now := int64(10 * sec)
		run := func(want env.Setting, conf float64, idle bool) Plan {
			t.Helper()
			d := dc(kA, want, conf)
			if idle {
				d.Setting, d.Held = o.Current, policy.HoldIdle
			}
			p := step(t, g, now, []env.Observation{o}, []policy.Decision{d})
			if len(p.Changes) == 1 {
				o = settle(g, shadow, o, p.Changes[0], p.Changes[0].New, now)
			}
			now += sec
			return p
		}
		run(a, 0.9, true) // idle intervals are not busy ones
		run(a, 0.9, true)
		if p := run(b, 0.05, false); len(p.Changes) != 1 || !SameSetting(p.Changes[0].New, b, 1e-9) {
			t.Fatalf("shadow %v: unsure advice to mark earlier in the queue's first busy interval: %+v, want it applied", shadow, p)
		}
		for range 3 { // its probation; the queue has been busy 4 intervals after it
			run(b, 0.9, false)
		}
		if p := run(c, 0.05, false); len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleConfidence ||
			!strings.Contains(p.Rejections[0].Reason, "settled") {
			t.Fatalf("shadow %v: unsure advice to mark earlier in the queue's 5th busy interval: %+v, want it refused for its confidence", shadow, p)
		}
		if m := g.Memory(kA); !m.Settled {
			t.Fatalf("shadow %v: memory of a settled queue: %+v, want settled", shadow, m)
		} else if !shadow {
			g2 := newTestGuard(t, func(g *GuardConfig) { rules(g); g.TightenUnsureFor = 3 })
			g2.Restore(m)
			if p := step(t, g2, now, []env.Observation{o}, []policy.Decision{dc(kA, c, 0.05)}); len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleConfidence {
				t.Fatalf("unsure advice to mark earlier in a settled queue after a restart: %+v, want it refused", p)
			}
			// restarted with the rule off: the memory of settling binds nothing
			g3 := newTestGuard(t, rules)
			g3.Restore(m)
			if p := step(t, g3, now, []env.Observation{o}, []policy.Decision{dc(kA, c, 0.05)}); len(p.Changes) != 1 {
				t.Fatalf("unsure advice to mark earlier, restarted with tighten-unsure-for 0: %+v, want it applied", p)
			}
		}
		if p := run(c, 0.5, false); len(p.Changes) != 1 || !SameSetting(p.Changes[0].New, c, 1e-9) {
			t.Fatalf("shadow %v: sure advice to mark earlier in a settled queue: %+v, want it applied", shadow, p)
		}
		for range 3 {
			run(c, 0.9, false)
		}
		tighter := asymSetting(150_000)
		tighter.KminBytes = 100_000
		run(c, 0.9, true) // two idle intervals do not start the traffic over
		run(c, 0.9, true)
		if p := run(tighter, 0.05, false); len(p.Changes) != 0 {
			t.Fatalf("shadow %v: unsure advice after 2 idle intervals: %+v, want it refused", shadow, p)
		}
		for range 3 {
			run(c, 0.9, true)
		}
		if p := run(tighter, 0.05, false); len(p.Changes) != 1 || !SameSetting(p.Changes[0].New, tighter, 1e-9) {
			t.Fatalf("shadow %v: unsure advice to mark earlier as traffic starts again after 3 idle intervals: %+v, want it applied", shadow, p)
		}
	}
}
