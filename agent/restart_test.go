package agent

import (
	"testing"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// restartRig starts a second agent on r's database and switch, as a
// process would after kill -9: nothing but what the database holds
// carries over (the first agent's journal is closed first, as the kernel
// releases its lock).
func restartRig(t *testing.T, r *rig) *rig {
	t.Helper()
	r.j.Close()
	r2 := newRig(t, config.ModeClosedLoop, false, r.db, r.sw)
	r2.clk.t, r2.tns = r.clk.Now(), r.tns
	return r2
}

// Min-hold survives a restart: a queue changed just before a crash is not
// changed again by the restarted agent until the hold time has passed.
func TestRestartKeepsMinHold(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	r.interval(t) // cur -> target on both queues
	if got := r.sw.get(kA); got != target {
		t.Fatalf("first change not applied: %+v", got)
	}
	next := env.Setting{KminBytes: 600_000, KmaxBytes: 2_400_000, Pmax: 0.2, HeadroomBytes: 100_000}
	r2 := restartRig(t, r)
	r2.pol.s = next
	// Let the probation window pass (clean intervals), still within min-hold (5 s).
	for i := 0; i < 3; i++ {
		r2.interval(t)
		if got := r2.sw.get(kA); got != target {
			t.Fatalf("restarted agent changed %s %d s after the last change (min-hold 5 s): %+v", kA, i+1, got)
		}
	}
	for i := 0; i < 4; i++ {
		r2.interval(t)
	}
	if got := r2.sw.get(kA); got != next {
		t.Fatalf("after min-hold the restarted agent should apply %+v, switch runs %+v", next, got)
	}
}

// A change made just before a crash is still on probation after the
// restart, and rolled back when its KPIs worsen then.
func TestRestartKeepsProbation(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	r.interval(t) // cur -> target, on probation
	r2 := restartRig(t, r)
	// drops in every interval of the window (3), none before the change
	r2.obs.metrics[kA] = env.Metrics{IntervalNs: sec, Util: 0.5, DropFrac: 0.05}
	for range testGuardConfig().RollbackWindow {
		r2.interval(t)
	}
	r2.interval(t) // the rollback's read-back
	if got := r2.sw.get(kA); got != cur {
		t.Fatalf("the restarted agent did not roll back %s: switch runs %+v, want %+v", kA, got, cur)
	}
	es, _ := r2.j.Entries("leaf0", 0)
	rolled := false
	for _, e := range es {
		rolled = rolled || (e.Kind == core.KindRollback && e.Key == kA && e.State == core.StateApplied)
	}
	if !rolled {
		t.Fatalf("no applied rollback in the audit log: %+v", es)
	}
}
