package core

import (
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// Telemetry that lost an update (it keeps showing the setting before the
// agent's Set) is not another writer once a read shows the switch runs
// what the agent set: nothing is written, the "another writer" hold is
// lifted, the change is judged again (its probation, which the false
// verdict ended, resumes), the stale view is not taken as the setting,
// and when the telemetry catches up a harmful change is rolled back.
func TestStaleTelemetryIsNotAnotherWriter(t *testing.T) {
	g := newTestGuard(t, func(gc *GuardConfig) { gc.MinHold = 0 })
	c := &Core{guard: g}
	to := cur
	to.KminBytes, to.KmaxBytes = 300_000, 1_200_000
	now := int64(sec)
	step(t, g, now, []env.Observation{ob(kA, cur)}, nil)
	now += sec
	p := step(t, g, now, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, to, 0.9)})
	g.Result(p.Changes[0], Applied, to, now)
	// two samples still showing the old setting: taken for another writer
	for i := 0; i < 2; i++ {
		now += sec
		p = step(t, g, now, []env.Observation{ob(kA, cur)}, nil)
	}
	if len(p.Alarms) != 1 || p.Alarms[0].Rule != RuleExternal {
		t.Fatalf("want the other-writer alarm, got %+v", p)
	}
	// a change computed from the stale view meets the switch's truth
	stale := Change{Key: kA, Kind: KindTune, Old: cur, New: to}
	g.queue(kA).pending = true
	if _, v := c.Confirm(stale, to, true, now); v != WriteStaleTelemetry {
		t.Fatalf("verdict %v", v)
	}
	q := g.queue(kA)
	if !q.onProbation || q.yieldNs != 0 || q.current != to {
		t.Fatalf("after the read: probation %v, yield %d, current %+v", q.onProbation, q.yieldNs, q.current)
	}
	// the stale view again: no alarm, the setting stays the read one
	now += sec
	if p := step(t, g, now, []env.Observation{ob(kA, cur)}, nil); len(p.Alarms)+len(p.Changes) != 0 || g.queue(kA).current != to {
		t.Fatalf("stale sample after the read: %+v", p)
	}
	// telemetry catches up, with drops: the change is rolled back
	now += sec
	o := ob(kA, to)
	o.Metrics.DropFrac = 0.01
	p = step(t, g, now, []env.Observation{o}, nil)
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindRollback || p.Changes[0].New != cur {
		t.Fatalf("want a rollback to %+v, got %+v", cur, p)
	}
}
