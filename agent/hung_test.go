package agent

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
)

// hungSwitch answers no Set and no Get until released (a switch stopped
// with SIGSTOP: its TCP connection stays up, its RPCs never answer).
type hungSwitch struct {
	*fakeSwitch
	release chan struct{}
}

func (h *hungSwitch) Apply(ctx context.Context, s map[env.QueueKey]env.Setting) error {
	select {
	case <-h.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.fakeSwitch.Apply(ctx, s)
}

func (h *hungSwitch) Read(ctx context.Context, keys []env.QueueKey) (map[env.QueueKey]env.Setting, error) {
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.fakeSwitch.Read(ctx, keys)
}

// One hung switch delays only itself: while its Set and reads hang (for up
// to the minute SetTimeout allows), the other switch's change is read
// before written, set, read back and journaled, and the intervals go on.
// Before, the interval waited for every target's Set: nothing moved until
// the hung one timed out.
func TestHungSwitchDelaysOnlyItself(t *testing.T) {
	kH := env.QueueKey{Target: "leaf1", Port: "Ethernet0", Queue: 3}
	healthy := newFakeSwitch("leaf0", kA)
	hung := &hungSwitch{fakeSwitch: newFakeSwitch("leaf1", kH), release: make(chan struct{})}
	cfg := testConfig(config.ModeClosedLoop)
	cfg.Interval = 20 * time.Millisecond
	cfg.Guardrails.StaleFreeze, cfg.Guardrails.StaleRevert = time.Hour, 2*time.Hour
	cfg.Targets = append(cfg.Targets, config.Target{Name: "leaf1", Address: "127.0.0.1:2", AllPorts: true, Queues: []int{3}})
	j, err := journal.OpenJournal(filepath.Join(t.TempDir(), "agent.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	a, err := New(Options{Config: cfg, Policy: &fixedPolicy{s: target, conf: 0.9}, Observer: &fakeObserver{}, Journal: j,
		Switches: []Switch{healthy, hung}, SetTimeout: time.Minute, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	feed := time.NewTicker(5 * time.Millisecond)
	defer feed.Stop()
	stop := func() {
		close(hung.release)
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	deadline := time.After(20 * time.Second)
	for {
		es, _ := j.Entries("leaf0", 0)
		ticks := testutilCounter(t, a, "ecntune_agent_intervals_total", "")
		if len(es) == 1 && es[0].State == core.StateApplied && ticks >= 10 {
			break
		}
		select {
		case <-deadline:
			stop()
			t.Fatalf("with one switch hung: %d intervals, leaf0's audit %+v", int(ticks), es)
		case <-feed.C:
			now := time.Now().UnixNano()
			for _, sw := range []*fakeSwitch{healthy, hung.fakeSwitch} {
				select {
				case sw.snaps <- sw.snapshot(now):
				default:
				}
			}
		}
	}
	if healthy.get(kA) != target {
		t.Fatalf("the healthy switch runs %+v", healthy.get(kA))
	}
	if busy := testutilCounter(t, a, "ecntune_agent_guardrail_rejections_total", RuleBusy); busy > 0 {
		t.Logf("%g changes waited for the hung switch", busy)
	}
	stop()
	// Released as the agent stops: its change is either made and
	// journaled (the read landed first) or not started at all.
	es, _ := j.Entries("leaf1", 0)
	switch {
	case len(es) == 0 && hung.get(kH) == cur:
	case len(es) == 1 && es[0].State == core.StateApplied && hung.get(kH) == target:
	default:
		t.Fatalf("leaf1's audit %+v, runs %+v", es, hung.get(kH))
	}
}

// No Set is computed on a switch's past: the switch restarted (back at its
// startup setting) after the agent's last sample of it, and the tune the
// policy asks for, computed from the setting before the restart, is not
// written; the startup setting becomes the queue's baseline, decided again
// from the next sample. Before, the tune was written, moving the switch by
// more than max-step from what it ran.
func TestNoSetComputedOnASwitchsPast(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA)
	r := newRig(t, config.ModeClosedLoop, false, "", sw)
	startup := env.Setting{KminBytes: 1_600_000, KmaxBytes: 6_400_000, Pmax: 0.2, HeadroomBytes: 100_000}
	r.clk.Add(time.Second)
	r.tns += sec
	r.a.Ingest(sw.snapshot(r.tns)) // the agent sees cur
	sw.mu.Lock()
	sw.set[kA] = startup // kill -9, restart: its startup configuration
	sw.mu.Unlock()
	if err := r.a.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := sw.get(kA); got != startup || sw.setCount() != 0 {
		t.Fatalf("switch runs %+v after %d Sets: a change computed from %+v was written", got, sw.setCount(), cur)
	}
	if es, _ := r.j.Entries("", 0); len(es) != 0 {
		t.Fatalf("audit %+v", es)
	}
	if lg, _ := r.a.Guard().LastGood(kA); lg != startup {
		t.Fatalf("baseline %+v, want the startup setting", lg)
	}
	if n := testutilCounter(t, r.a, "ecntune_agent_guardrail_rejections_total", "stale-setting"); n != 1 {
		t.Fatalf("%g stale-setting rejections counted", n)
	}
}

// A queue no switch reports any more is forgotten after ForgetAfter
// intervals (its recommendation and the guard's state, once no guardrail
// needs it); the queues still reported are kept.
func TestGoneQueuesAreForgotten(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA, kB)
	r := newRig(t, config.ModeShadow, false, "", sw)
	r.interval(t)
	sw.mu.Lock()
	delete(sw.set, kB) // the port is gone
	sw.mu.Unlock()
	for i := 0; i < 2*ForgetAfter; i++ {
		r.interval(t)
	}
	recs := r.a.Recommendations("")
	if len(recs) != 1 || recs[0].Key != kA {
		t.Fatalf("recommendations %+v: want %s alone", recs, kA)
	}
	if _, ok := r.a.Guard().LastGood(kB); ok {
		t.Fatal("the guard still keeps the gone queue")
	}
	if _, ok := r.a.Guard().LastGood(kA); !ok {
		t.Fatal("the guard forgot a queue still reported")
	}
}
