package loop

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/internal/simtest"
	"github.com/ecntune/ecntune/simenv"
)

// lockstepConfig is a closed loop of static:hpcc at 1 ms decisions from
// 1 ms counters (simulated time), built in Go: the configuration file's
// floor of 100 ms is for the wall clock.
func lockstepConfig() *config.Config {
	g := core.DefaultGuardConfig(time.Millisecond)
	return &config.Config{Mode: config.ModeClosedLoop, Policy: "static:hpcc", Interval: time.Millisecond,
		SampleInterval: time.Millisecond, Owner: "loop-test", Guardrails: g}
}

// change is what a run's audit entry says, without the fields that hold
// wall-clock or database facts.
type change struct {
	TimeNs   int64
	Key      string
	Kind     core.ChangeKind
	Old, New any
	State    core.AuditState
}

func changes(es []core.AuditEntry) []change {
	out := make([]change, len(es))
	for i, e := range es {
		out[i] = change{e.TimeNs, e.Key.String(), e.Kind, e.Old, e.New, e.State}
	}
	return out
}

// The deployed loop in lockstep: the agent tunes the fabric over gNMI at
// simulated intervals, and two runs of one seed make the same changes at
// the same simulated times and leave the same flows.
func TestLockstepRunIsDeterministic(t *testing.T) {
	sim := simtest.Star(simenv.ECN{KminBytes: 2_000_000, KmaxBytes: 2_800_000, Pmax: 0.01})
	sim.Duration = 12 * simenv.Millisecond
	run := func() Result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		r, err := Run(ctx, Options{Sim: sim, Agent: lockstepConfig()})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := run(), run()
	if a.Intervals != 12 || len(a.Flows) == 0 {
		t.Fatalf("run: %d intervals, %d flows", a.Intervals, len(a.Flows))
	}
	applied := 0
	for _, e := range a.Audit {
		if e.State == core.StateApplied {
			applied++
		}
		if e.TimeNs%int64(time.Millisecond) != 0 {
			t.Errorf("change at %d ns: not on the 1 ms simulated grid", e.TimeNs)
		}
	}
	if applied == 0 {
		t.Fatalf("the agent applied nothing: %+v", a.Audit)
	}
	if ca, cb := changes(a.Audit), changes(b.Audit); !reflect.DeepEqual(ca, cb) {
		t.Fatalf("two runs of one seed changed differently:\n%+v\n%+v", ca, cb)
	}
	if len(a.Flows) != len(b.Flows) {
		t.Fatalf("flows %d and %d", len(a.Flows), len(b.Flows))
	}
	for i := range a.Flows {
		if a.Flows[i] != b.Flows[i] {
			t.Fatalf("flow %d: %+v and %+v", i, a.Flows[i], b.Flows[i])
		}
	}
	t.Logf("%d intervals, %d audit entries (%d applied), %d flows", a.Intervals, len(a.Audit), applied, len(a.Flows))
}
