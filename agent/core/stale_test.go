package core

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
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
	to.KminBytes, to.KmaxBytes = 500_000, 2_000_000 // marks later: judged on drops
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
	// telemetry catches up, with drops in every interval of the window,
	// none before: the change is rolled back
	o := ob(kA, to)
	o.Metrics.DropFrac = 0.01
	for range g.cfg.RollbackWindow {
		now += sec
		p = step(t, g, now, []env.Observation{o}, nil)
	}
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindRollback || p.Changes[0].New != cur {
		t.Fatalf("want a rollback to %+v, got %+v", cur, p)
	}
}

// A revert to the safe preset the agent could not send (held: its target
// busy with another flight, a confirmed commit pending; or failed) is
// planned again at the next interval, as is the revert of a queue whose
// change was in flight when the telemetry went stale; the alarm is said
// once. Before, the first plan was the only one: a held revert was never
// sent, and a queue in flight never reverted.
func TestStaleRevertIsPlannedUntilSent(t *testing.T) {
	g := newTestGuard(t, nil)
	g.AddTarget("leaf0", 0)
	step(t, g, 1*sec, []env.Observation{ob(kA, cur), ob(kB, cur)}, nil)
	g.Seen("leaf0", 1*sec)
	g.queue(kB).pending = true // kB's change is in flight as the telemetry stops
	p := step(t, g, 32*sec, nil, nil)
	if len(p.Changes) != 1 || p.Changes[0].Key != kA || p.Changes[0].Kind != KindRevert {
		t.Fatalf("first revert: %+v", p.Changes)
	}
	if n := countRule(p.Alarms, RuleRevert); n != 1 {
		t.Fatalf("revert alarms %d, want 1: %+v", n, p.Alarms)
	}
	safe := p.Changes[0].New
	g.Discard(p.Changes[0])                                                                // held: not sent
	g.Result(Change{Key: kB, Kind: KindTune, Old: cur, New: cur}, NotApplied, cur, 32*sec) // kB's flight lands
	p = step(t, g, 33*sec, nil, nil)
	if len(p.Changes) != 2 || p.Changes[0].Kind != KindRevert || p.Changes[1].Kind != KindRevert {
		t.Fatalf("the held revert and kB's are planned again: %+v", p.Changes)
	}
	if n := countRule(p.Alarms, RuleRevert); n != 0 {
		t.Fatalf("the revert alarm said again: %+v", p.Alarms)
	}
	for _, c := range p.Changes {
		g.Result(c, Applied, safe, 33*sec)
	}
	if p = step(t, g, 34*sec, nil, nil); len(p.Changes) != 0 {
		t.Fatalf("reverted queues planned again: %+v", p.Changes)
	}
}

func countRule(as []Alarm, rule string) int {
	n := 0
	for _, a := range as {
		if a.Rule == rule {
			n++
		}
	}
	return n
}

// In shadow mode the revert a stale target would get is said once: the
// queue would then run the safe preset, and is not planned again.
func TestShadowStaleRevertSaidOnce(t *testing.T) {
	c, err := New(Options{Guard: testGuardConfig(), Policy: "test", Shadow: true})
	if err != nil {
		t.Fatal(err)
	}
	c.AddTarget("leaf0", 0)
	if _, err := c.Tick(Interval{NowNs: 1 * sec, Observations: []env.Observation{ob(kA, cur)}}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for s := int64(32); s < 40; s++ {
		rd, err := c.Tick(Interval{NowNs: s * sec})
		if err != nil {
			t.Fatal(err)
		}
		n += len(rd.Changes)
	}
	if n != 1 {
		t.Fatalf("shadow planned %d reverts over 8 stale intervals, want 1", n)
	}
}

// The stale-telemetry revert is shaped as every write is: the safe preset
// (sonic-default, Kmax 2.097 MB at 100G) on a PG whose XOFF is 1.5 MB goes
// under the XOFF margin, within the bounds, and once telemetry resumes the
// guard has nothing of its own revert to repair.
func TestStaleRevertKeepsTheXoffMargin(t *testing.T) {
	g := newTestGuard(t, nil)
	g.AddTarget("leaf0", 0)
	s := env.Setting{KminBytes: 400_000, KmaxBytes: 1_200_000, Pmax: 0.05, HeadroomBytes: 100_000}
	o := ob(kA, s)
	o.XoffBytes = 1_500_000
	step(t, g, 0, []env.Observation{o}, nil)
	p := step(t, g, 31*sec, nil, nil) // no telemetry for 31 s: revert
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindRevert {
		t.Fatalf("want one revert, got %+v", p)
	}
	c := p.Changes[0]
	if margin := int64(float64(o.XoffBytes) * RepairXoffShare); c.New.KmaxBytes > margin || c.New.KminBytes >= c.New.KmaxBytes {
		t.Fatalf("revert to %s: want Kmax at most %s (XOFF %s with the margin), Kmin below it",
			c.New.Describe(), units.FormatBytes(margin), units.FormatBytes(o.XoffBytes))
	}
	if c.Wanted == nil || c.Wanted.KmaxBytes <= c.New.KmaxBytes || !strings.Contains(c.Reason, "as allowed") {
		t.Errorf("revert %+v: want the preset as Wanted and the reason saying it was shaped", c)
	}
	g.Result(c, Applied, c.New, 31*sec)
	o.Current = c.New
	for now := 32 * sec; now <= 34*sec; now += sec {
		p = step(t, g, now, []env.Observation{o}, nil)
		for _, ch := range p.Changes {
			t.Errorf("telemetry resumed: %s %s → %s: %s", ch.Kind, ch.Old.Describe(), ch.New.Describe(), ch.Reason)
		}
	}
}
