package fleet

import (
	"context"
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
