package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// Trimming a switch's audit in etcd keeps each queue's first change and the
// safety repairs: the baseline (the first change's Old) is known to any
// member after a failover however long the fleet ran (they were trimmed
// with the rest past AuditKeep).
func TestTrimAuditKeepsEachQueuesFirstChange(t *testing.T) {
	ep := startEtcd(t)
	a := join(t, ep, "a", 1)
	defer a.Close()
	waitUntil(t, 15*time.Second, "a owns leaf00", func() bool { return len(a.Owned()) == 1 })
	time.Sleep(time.Until(a.Owned()[0].WriteAt))
	tok := a.Owned()[0].Token
	kA := env.QueueKey{Target: "leaf00", Port: "Ethernet0", Queue: 3}
	kB := env.QueueKey{Target: "leaf00", Port: "Ethernet0", Queue: 4}
	base := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.05}
	entry := func(i int, k env.QueueKey, kind core.ChangeKind) core.AuditEntry {
		s := env.Setting{KminBytes: int64(500_000 + i), KmaxBytes: 1_600_000, Pmax: 0.05}
		return core.AuditEntry{Seq: uint64(i + 1), TimeNs: int64(i+1) * 1000, Target: "leaf00", Writer: "a", Token: tok,
			State: core.StateApplied, Change: core.Change{Key: k, Kind: kind, Old: s, New: s}}
	}
	first := entry(0, kA, core.KindTune)
	first.Old = base
	es := []core.AuditEntry{first, entry(1, kA, core.KindRepair), entry(2, kB, core.KindTune)}
	for i := 3; i < 2*AuditKeep+10; i++ {
		es = append(es, entry(i, kA, core.KindTune))
	}
	for _, e := range es {
		if err := a.Fence(context.Background(), "leaf00", tok, []core.AuditEntry{e}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadAudit(context.Background(), client(t, ep), "test", "leaf00")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > AuditKeep+3+10 {
		t.Fatalf("not trimmed: %d entries", len(got))
	}
	if len(got) < 3 || got[0].Seq != 1 || got[0].Old != base || got[1].Seq != 2 || got[2].Seq != 3 {
		t.Fatalf("%d entries kept, the oldest %+v", len(got), got[:min(3, len(got))])
	}
	if got[3].Seq < 100 {
		t.Fatalf("a later change of queue 3 kept: %+v", got[3])
	}
}

// A manual write's entries (agent rollback) reach the fleet's audit under
// the condition the rollback was checked against: no owner of the switch,
// or the same pause; once a member owns it, or the fleet was resumed,
// they are refused, so that the rollback sends nothing.
func TestRecordManualIsFencedByOwnerAndPause(t *testing.T) {
	ep := startEtcd(t)
	cli := client(t, ep)
	ctx := context.Background()
	k := env.QueueKey{Target: "leaf00", Port: "Ethernet0", Queue: 3}
	e := core.AuditEntry{Seq: 4, TimeNs: 1000, Target: "leaf00", Writer: "a", State: core.StateIntent, Change: core.Change{Key: k, Kind: core.KindManual}}
	_, unpaused, err := ReadManualFence(ctx, cli, "test")
	if err != nil || unpaused.PauseRev != 0 {
		t.Fatalf("fence of a fleet never paused: %+v, %v", unpaused, err)
	}
	if err := RecordManual(ctx, cli, "test", unpaused, "leaf00", []core.AuditEntry{e}, nil); err != nil {
		t.Fatalf("no owner: %v", err)
	}
	if got, err := ReadAudit(ctx, cli, "test", "leaf00"); err != nil || len(got) != 1 || got[0].Seq != 4 || got[0].Writer != "a" {
		t.Fatalf("the fleet's audit: %+v, %v", got, err)
	}
	if _, err := cli.Put(ctx, prefixOf("test")+"owner/leaf00", "b"); err != nil {
		t.Fatal(err)
	}
	e.State = core.StateApplied
	set := env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.01}
	mem := core.QueueMemory{Key: k, LastGood: set, Expect: &set, Changed: true}
	if err := RecordManual(ctx, cli, "test", unpaused, "leaf00", []core.AuditEntry{e}, []core.QueueMemory{mem}); !errors.Is(err, ErrManualFenced) {
		t.Fatalf("a member owns the switch: %v", err)
	}
	if err := SetPause(ctx, cli, "test", Pause{Paused: true, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	p, paused, err := ReadManualFence(ctx, cli, "test")
	if err != nil || !p.Paused || paused.PauseRev == 0 {
		t.Fatalf("fence of a paused fleet: %+v %+v, %v", p, paused, err)
	}
	if ms, err := ReadMemory(ctx, cli, "test", "leaf00"); err != nil || len(ms) != 0 {
		t.Fatalf("fenced, the memory was written all the same: %+v, %v", ms, err)
	}
	if err := RecordManual(ctx, cli, "test", paused, "leaf00", []core.AuditEntry{e}, []core.QueueMemory{mem}); err != nil {
		t.Fatalf("paused, owned: %v", err)
	}
	if got, _ := ReadAudit(ctx, cli, "test", "leaf00"); len(got) != 1 || got[0].State != core.StateApplied {
		t.Fatalf("the entry resolved under the pause: %+v", got)
	}
	if ms, err := ReadMemory(ctx, cli, "test", "leaf00"); err != nil || len(ms) != 1 || ms[0].Expect == nil || *ms[0].Expect != set || ms[0].Key != k {
		t.Fatalf("the guard's memory written with the result under the pause: %+v, %v", ms, err)
	}
	if err := SetPause(ctx, cli, "test", Pause{}); err != nil {
		t.Fatal(err)
	}
	if err := RecordManual(ctx, cli, "test", paused, "leaf00", []core.AuditEntry{e}, nil); !errors.Is(err, ErrManualFenced) {
		t.Fatalf("resumed since: %v", err)
	}
}
