package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
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
	// a third queue of the switch appears: its change goes out (the
	// open entries' reads held the whole target busy), while the two
	// queues whose Set may still land get none, past their min-hold too
	kC := env.QueueKey{Target: "leaf0", Port: "Ethernet9", Queue: 3}
	r.sw.mu.Lock()
	r.sw.setErr, r.sw.late = nil, false
	r.sw.set[kC] = cur
	r.sw.mu.Unlock()
	for range 7 {
		r.interval(t)
	}
	if got := r.sw.setting(kC); got != target {
		t.Fatalf("the third queue runs %+v: its change held behind the open entries' reads", got)
	}
	if n := r.sw.setCount(); n != sets+1 {
		t.Fatalf("%d more Sets, want 1 (the third queue's): queues whose Set may still land were written", n-sets)
	}
	r.sw.land()
	for range 4 { // past the window: read and judged
		r.interval(t)
	}
	es, _ = r.j.Entries("", 0)
	for _, e := range es {
		if e.Key != kC && e.State != core.StateReconciled {
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

// A switch that cannot be read before a write defers the changes: said
// once per batch and then at most once a minute with the count, not once
// per queue per interval (372 warnings in 18 s for 20 queues).
func TestDeferredChangesSaidOnceAMinute(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	var logs bytes.Buffer
	r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.sw.mu.Lock()
	r.sw.readErr = errors.New("connection refused")
	r.sw.mu.Unlock()
	for range 30 {
		r.interval(t)
	}
	if n := strings.Count(logs.String(), "changes deferred"); n != 1 {
		t.Fatalf("%d lines of deferred changes in 30 intervals:\n%s", n, logs.String())
	}
	if r.sw.setCount() != 0 {
		t.Fatal("a Set to a switch that could not be read first")
	}
	for range 40 {
		r.interval(t)
	}
	if n := strings.Count(logs.String(), "changes deferred"); n != 2 {
		t.Fatalf("%d lines of deferred changes in 70 intervals (a minute and more):\n%s", n, logs.String())
	}
}

// Telemetry that missed the agent's own change (a stall lost the ON_CHANGE
// update) looks like another writer's doing: the agent reads the switch
// before it believes it, and, the switch running its own setting, lifts
// the yield (it yielded a minute on every such queue, 20 false alarms
// after a 40 s stall).
func TestExternalWriterAlarmReadBeforeBelieved(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	var logs bytes.Buffer
	r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.interval(t)
	if r.sw.setCount() == 0 {
		t.Fatal("no change to start from")
	}
	for range 4 {
		r.clk.Add(time.Second)
		r.tns += sec
		snap := r.sw.snapshot(r.tns)
		for i := range snap.Queues {
			snap.Queues[i].Setting = cur // what the switch ran before the change
		}
		r.a.Ingest(snap)
		if err := r.a.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	r.a.waitIO(context.Background(), 0)
	if n := counterSum(r.a, "ecntune_agent_alarms_total"); n == 0 || !strings.Contains(logs.String(), "queue changed by another writer") {
		t.Fatalf("no another-writer alarm to verify (%g alarms):\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "not another writer after all") {
		t.Fatalf("the alarm was not checked against the switch:\n%s", logs.String())
	}
	if m := r.a.Guard().Memory(kA); m.YieldNs > r.clk.Now().UnixNano() {
		t.Fatalf("queue still yielded to another writer until %v", time.Unix(0, m.YieldNs))
	}
}

// setting is what the fake switch runs on queue k.
func (f *fakeSwitch) setting(k env.QueueKey) env.Setting {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.set[k]
}

// A target's set-timeout (60 s by default under sonic-gnmi, whose config
// updater takes that long) bounds its Sets' landing window in place of
// the agent's.
func TestTargetSetTimeoutBoundsItsWindow(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	tc := r.a.targets["leaf0"]
	tc.SetTimeout = 20 * time.Second
	r.a.targets["leaf0"] = tc
	r.sw.mu.Lock()
	r.sw.late, r.sw.setErr = true, fmt.Errorf("%w: rpc error: code = DeadlineExceeded", core.ErrSetOutcomeUnknown)
	r.sw.mu.Unlock()
	r.interval(t)
	es, err := r.j.Entries("", 0)
	if err != nil || len(es) == 0 {
		t.Fatalf("entries %v, %v", es, err)
	}
	if w := time.Duration(es[0].LandByNs - es[0].TimeNs); w != 40*time.Second {
		t.Fatalf("landing window %v, want twice the target's 20 s", w)
	}
}
