package agent

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// TestApplyMixedTargetsNoRace: one batch of changes for a target with a
// switch (set in a goroutine) and one without (resolved in the caller's
// loop) collects both results. Under -race this fails if the loop appends
// to the results without the lock the goroutines take.
func TestApplyMixedTargetsNoRace(t *testing.T) {
	j := tempJournal(t)
	cfg := testConfig(config.ModeClosedLoop)
	cfg.Targets = append(cfg.Targets, config.Target{Name: "leaf1", Address: "127.0.0.1:2", AllPorts: true, Queues: []int{3}})
	sw := newFakeSwitch("leaf0", kA)
	a, err := New(Options{Config: cfg, Policy: &fixedPolicy{s: target, conf: 0.9}, Observer: &fakeObserver{}, Journal: j,
		Switches: []Switch{sw}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	noSwitch := env.QueueKey{Target: "leaf1", Port: "Ethernet0", Queue: 3}
	// Targets are visited in map order: enough rounds that the target with
	// a switch comes first in some of them.
	prev := cur
	for i := 0; i < 20; i++ {
		next := target
		next.KminBytes += int64(i + 1)
		a.apply(context.Background(), []core.Change{
			{Key: kA, Kind: core.KindTune, Old: prev, New: next, Reason: "test"},
			{Key: noSwitch, Kind: core.KindTune, Old: cur, New: next, Reason: "test"},
		}, false)
		prev = next
		if got := sw.get(kA); got != next {
			t.Fatalf("round %d: switch runs %+v, want %+v", i, got, next)
		}
	}
	es, err := j.Entries("", 0)
	if err != nil {
		t.Fatal(err)
	}
	var applied, failed int
	for _, e := range es {
		switch e.State {
		case core.StateApplied:
			applied++
		case core.StateFailed:
			failed++
		}
	}
	// Without a switch the change is not applied: resolved as failed.
	if applied != 20 || failed != 20 {
		t.Fatalf("%d applied, %d failed of %d entries; want 20 and 20", applied, failed, len(es))
	}
}
