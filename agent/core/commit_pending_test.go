package core

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// An open entry whose Set went as a confirmed commit is not judged while
// the commit may still be pending on the switch (before its RevertByNs):
// it is left as it is (Wait), while another entry of the same target is
// judged; the queue the core awaits (AwaitCommit) is held as a change in
// flight, its telemetry taken for nothing, until the entry is judged. A
// switch that runs the old setting after the revert-by never confirmed
// the commit.
func TestReconcileWaitsForAPendingCommit(t *testing.T) {
	c, err := New(Options{Guard: testGuardConfig(), Policy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c.AddTarget("leaf0", 0)
	next := env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000}
	es := []AuditEntry{
		{Seq: 1, Target: "leaf0", RevertByNs: 30 * sec, Change: Change{Key: kA, Kind: KindTune, Old: cur, New: next}, State: StateIntent},
		{Seq: 2, Target: "leaf0", Change: Change{Key: kB, Kind: KindTune, Old: cur, New: next}, State: StateIntent},
	}
	got := map[env.QueueKey]env.Setting{kA: next, kB: next}
	c.AwaitCommit(kA)
	res := c.Reconcile(es, got, 10*sec, 10*sec)
	if r := res[0]; !r.Wait || !r.Retry || r.State != StateIntent || r.Got != nil || !strings.Contains(r.Msg, "may still be pending") {
		t.Fatalf("entry with its commit pending: %+v", r)
	}
	if r := res[1]; r.Wait || r.State != StateReconciled {
		t.Fatalf("entry without a commit: %+v", r)
	}
	// kA is a change in flight: no decision, and the switch's revert of
	// the commit is no other writer's
	for i, s := range []env.Setting{next, cur, cur} {
		now := int64(11+i) * sec
		rd, err := c.Tick(Interval{NowNs: now, Observations: []env.Observation{ob(kA, s)}, Decisions: []policy.Decision{dc(kA, next, 0.9)}})
		if err != nil {
			t.Fatal(err)
		}
		if len(rd.Changes) != 0 || len(rd.Alarms) != 0 {
			t.Fatalf("interval %d while the commit may be pending: changes %+v, alarms %+v", i, rd.Changes, rd.Alarms)
		}
	}
	// a read asked before the revert-by may show the commit pending,
	// however late its answer lands: still no verdict
	res = c.Reconcile(es[:1], map[env.QueueKey]env.Setting{kA: next}, 29*sec, 32*sec)
	if r := res[0]; !r.Wait || r.State != StateIntent {
		t.Fatalf("a read asked before the revert-by, landing after it: %+v", r)
	}
	res = c.Reconcile(es[:1], map[env.QueueKey]env.Setting{kA: cur}, 31*sec, 31*sec)
	if r := res[0]; r.Wait || r.State != StateAbandoned || !strings.Contains(r.Msg, "not confirmed") {
		t.Fatalf("entry after its revert-by, the switch back on the old setting: %+v", r)
	}
	if m := c.Guard().Memory(kA); m.Expect == nil || *m.Expect != cur {
		t.Fatalf("the guard after the verdict: %+v, want it to expect %+v", m, cur)
	}
	rd, err := c.Tick(Interval{NowNs: 40 * sec, Observations: []env.Observation{ob(kA, cur)}, Decisions: []policy.Decision{dc(kA, next, 0.9)}})
	if err != nil || len(rd.Changes) != 1 {
		t.Fatalf("the queue is not decided on again after the verdict: %+v, %v", rd.Changes, err)
	}
}

// An open entry whose Set may still land (its writer killed, or its
// answer timed out: before LandByNs) is not judged on the old setting:
// a restarted agent called one "not applied", tuned the queue, and the
// late Set put it back. It is judged applied as soon as the switch runs
// it, and not applied only once it can no longer land; the queue is held
// as a change in flight meanwhile.
func TestReconcileWaitsForASetThatMayLand(t *testing.T) {
	c, err := New(Options{Guard: testGuardConfig(), Policy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c.AddTarget("leaf0", 0)
	next := env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000}
	e := AuditEntry{Seq: 1, Target: "leaf0", TimeNs: 9 * sec, LandByNs: 19 * sec, Change: Change{Key: kA, Kind: KindTune, Old: cur, New: next}, State: StateIntent}
	res := c.Reconcile([]AuditEntry{e}, map[env.QueueKey]env.Setting{kA: cur}, 10*sec, 10*sec)
	if r := res[0]; !r.Wait || !r.Retry || r.State != StateIntent || !strings.Contains(r.Msg, "may still land") {
		t.Fatalf("entry whose Set may still land, the switch on the old setting: %+v", r)
	}
	rd, err := c.Tick(Interval{NowNs: 11 * sec, Observations: []env.Observation{ob(kA, cur)}, Decisions: []policy.Decision{dc(kA, next, 0.9)}})
	if err != nil || len(rd.Changes) != 0 {
		t.Fatalf("a change to a queue whose Set may still land: %+v, %v", rd.Changes, err)
	}
	if r := c.Reconcile([]AuditEntry{e}, map[env.QueueKey]env.Setting{kA: next}, 12*sec, 12*sec)[0]; r.Wait || r.State != StateReconciled {
		t.Fatalf("the Set landed: %+v", r)
	}
	if r := c.Reconcile([]AuditEntry{e}, map[env.QueueKey]env.Setting{kA: cur}, 20*sec, 20*sec)[0]; r.Wait || r.State != StateAbandoned {
		t.Fatalf("past its window, the switch on the old setting: %+v", r)
	}
}
