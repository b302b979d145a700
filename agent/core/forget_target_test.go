package core

import (
	"testing"
	"time"
)

// A target given up (its switch went to another fleet member) leaves the
// guard: no watchdog revert for a switch the agent no longer hears, and
// its queues forgotten, those of other targets kept.
func TestForgetTargetStopsItsWatchdog(t *testing.T) {
	g := newTestGuard(t, nil)
	now := int64(0)
	g.Adopt(kA, cur, cur, now)
	g.Adopt(kC, cur, cur, now)
	g.Seen("leaf0", now)
	g.Seen("leaf1", now)
	g.ForgetTarget("leaf0")
	if _, ok := g.LastGood(kA); ok {
		t.Error("leaf0's queue still kept")
	}
	if _, ok := g.LastGood(kC); !ok {
		t.Error("leaf1's queue forgotten")
	}
	later := now + int64(time.Minute) // past StaleRevert for both
	plan, err := g.Step(StepInput{NowNs: later})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range plan.Frozen {
		if f == "leaf0" {
			t.Errorf("leaf0 frozen after it was given up: %v", plan.Frozen)
		}
	}
	for _, c := range plan.Changes {
		if c.Key.Target == "leaf0" {
			t.Errorf("a change for leaf0 after it was given up: %+v", c)
		}
	}
	if len(plan.Frozen) != 1 {
		t.Errorf("frozen %v, want leaf1 only", plan.Frozen)
	}
}
