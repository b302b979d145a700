package core

import (
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// A rollback and a tune of the same queue never share a plan: the interval
// that rolls a change back lets no decision of that queue through, and the
// queue is pending from that moment (no revert or repair of it either).
func TestOneChangePerQueuePerPlan(t *testing.T) {
	g := newTestGuard(t, func(gc *GuardConfig) { gc.MinHold = 0 })
	to := cur
	to.KminBytes, to.KmaxBytes, to.Pmax = 500_000, 2_000_000, 0.1 // marks later
	now := int64(sec)
	step(t, g, now, []env.Observation{ob(kA, cur)}, nil)
	now += sec
	p := step(t, g, now, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, to, 0.9)})
	if len(p.Changes) != 1 {
		t.Fatalf("no change: %+v", p)
	}
	g.Result(p.Changes[0], Applied, to, now)
	o := ob(kA, to)
	o.Metrics.DropFrac = 0.01 // drops in every interval, none before: a rollback at the window's end
	for range g.cfg.RollbackWindow - 1 {
		now += sec
		if p := step(t, g, now, []env.Observation{o}, nil); len(p.Changes) != 0 {
			t.Fatalf("rolled back before the window's end: %+v", p.Changes)
		}
	}
	now += sec
	further := to
	further.KminBytes, further.KmaxBytes, further.Pmax = 600_000, 2_400_000, 0.05
	p = step(t, g, now, []env.Observation{o}, []policy.Decision{dc(kA, further, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindRollback {
		t.Fatalf("want the rollback alone, got %+v", p.Changes)
	}
	if len(p.Rejections) != 1 || p.Rejections[0].Rule != RulePending {
		t.Fatalf("the tune in the rollback's interval is not refused as pending: %+v", p.Rejections)
	}
	g.Result(p.Changes[0], Applied, cur, now)

	// A change judged harmful is not pushed further: from the setting
	// rolled back to, a tune that moves every knob the harmful change
	// moved at least as far the same way is refused for retry-after.
	now += sec
	p = step(t, g, now, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, further, 0.9)})
	if len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleRetry {
		t.Fatalf("a move beyond the rolled-back one went through: %+v", p)
	}
	// the other way is free
	back := cur
	back.KminBytes, back.KmaxBytes = 300_000, 1_300_000
	if p := step(t, g, now+sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, back, 0.9)}); len(p.Changes) != 1 {
		t.Fatalf("a move the other way refused: %+v", p)
	}
}
