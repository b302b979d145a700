package agent

import (
	"fmt"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
)

// A Set whose answer timed out may still land: it is not audited as
// failed while the switch may yet take it (one took it 2 s after the
// agent's deadline, audited "failed"), its queue gets no other Set
// meanwhile, and once it has landed it is judged applied, with no alarm
// of another writer.
func TestLateSetIsNotFailed(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	r.sw.mu.Lock()
	r.sw.late, r.sw.setErr = true, fmt.Errorf("%w: rpc error: code = DeadlineExceeded", core.ErrSetOutcomeUnknown)
	r.sw.mu.Unlock()
	r.interval(t)
	sets := r.sw.setCount()
	if sets == 0 {
		t.Fatal("no Set to start from")
	}
	es, err := r.j.Entries("", 0)
	if err != nil || len(es) == 0 {
		t.Fatalf("entries %v, %v", es, err)
	}
	for _, e := range es {
		if e.State != core.StateIntent || e.LandByNs <= e.TimeNs {
			t.Fatalf("entry of a Set that timed out: state %s, land by %d (intent %d)", e.State, e.LandByNs, e.TimeNs)
		}
	}
	r.sw.mu.Lock()
	r.sw.setErr = nil
	r.sw.mu.Unlock()
	r.interval(t)
	r.interval(t)
	if n := r.sw.setCount(); n != sets {
		t.Fatalf("%d more Sets to queues whose Set may still land", n-sets)
	}
	r.sw.land()
	r.interval(t)
	es, _ = r.j.Entries("", 0)
	for _, e := range es {
		if e.State != core.StateReconciled {
			t.Fatalf("entry of a Set that landed late: %s (%s)", e.State, e.Error)
		}
	}
	if n := counterSum(r.a, "ecntune_agent_alarms_total"); n != 0 {
		t.Fatalf("%g alarms over the agent's own late Set", n)
	}
}

// A Set that never lands is judged not applied once it can no longer
// land (twice the set timeout after its intent), not before.
func TestSetThatNeverLandsJudgedAfterItsWindow(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	r.sw.mu.Lock()
	r.sw.late, r.sw.setErr = true, fmt.Errorf("%w: rpc error: code = Unavailable", core.ErrSetOutcomeUnknown)
	r.sw.mu.Unlock()
	r.interval(t)
	r.sw.mu.Lock()
	r.sw.setErr, r.sw.late, r.sw.lateSets = nil, false, nil
	r.sw.mu.Unlock()
	es, _ := r.j.Entries("", 0)
	window := time.Duration(es[0].LandByNs - es[0].TimeNs)
	for range int(window/time.Second) - 2 {
		r.interval(t)
	}
	if es, _ = r.j.Entries("", 0); es[0].State != core.StateIntent {
		t.Fatalf("judged %s before its Set could no longer land", es[0].State)
	}
	for range 4 {
		r.interval(t)
	}
	if es, _ = r.j.Entries("", 0); es[0].State != core.StateAbandoned {
		t.Fatalf("a Set that never landed, after its window: %s (%s)", es[0].State, es[0].Error)
	}
}
