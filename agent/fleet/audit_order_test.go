package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// skewed are a queue's first change, B -> X by member a (its clock right,
// at noon), and then changes of member b, whose clock is 2 minutes behind,
// a second apart from a second after a's: b's first ones are stamped
// before a's.
func skewed(n int) (B env.Setting, a core.AuditEntry, bs []core.AuditEntry) {
	k := env.QueueKey{Target: "leaf00", Port: "Ethernet0", Queue: 3}
	B = env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2}
	X := env.Setting{KminBytes: 200_000, KmaxBytes: 800_000, Pmax: 0.2}
	noon := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	a = core.AuditEntry{Seq: 1, TimeNs: noon.UnixNano(), Target: k.Target, Writer: "a", Token: 10, State: core.StateApplied,
		Change: core.Change{Key: k, Kind: core.KindTune, Old: B, New: X}}
	prev := X
	for i := 1; i <= n; i++ {
		next := env.Setting{KminBytes: 200_000 + int64(i)*1000, KmaxBytes: 800_000, Pmax: 0.2}
		bs = append(bs, core.AuditEntry{Seq: uint64(i), TimeNs: noon.Add(time.Duration(i)*time.Second - 2*time.Minute).UnixNano(), Target: k.Target,
			Writer: "b", Token: 20, State: core.StateApplied, Change: core.Change{Key: k, Kind: core.KindTune, Old: prev, New: next}})
		prev = next
	}
	return B, a, bs
}

// putAudit writes es into the fleet's audit, each in a transaction of its
// own (as each write's Fence is).
func putAudit(t *testing.T, n *Node, es ...core.AuditEntry) {
	t.Helper()
	for _, e := range es {
		ops, err := n.auditOps([]core.AuditEntry{e})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.cli.Txn(context.Background()).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// A switch's audit in etcd is in the order etcd recorded it, whatever the
// clocks of the members that wrote it: b's change after a's comes after
// it, though b's clock stamped it earlier. Before, it came first (the key
// began with the writer's time): a rollback to the baseline restored X,
// a plain one undid a's change, and a new owner took a resolved entry for
// the queue's newest.
func TestFleetAuditInEtcdsOrderNotTheClocks(t *testing.T) {
	ep := startEtcd(t)
	n := join(t, ep, "a", 1)
	defer n.Close()
	_, ea, bs := skewed(1)
	putAudit(t, n, ea, bs[0])
	check := func(what string, got []core.AuditEntry) {
		t.Helper()
		if len(got) != 2 || got[0].Writer != "a" || got[1].Writer != "b" || got[0].Rev <= 0 || got[1].Rev <= got[0].Rev {
			t.Errorf("%s: want a's entry, then b's, with growing etcd revisions; got %+v", what, got)
		}
	}
	es, err := n.Audit(context.Background(), "leaf00")
	if err != nil {
		t.Fatal(err)
	}
	check("Audit", es)
	st, err := n.States(context.Background(), []string{"leaf00"})
	if err != nil {
		t.Fatal(err)
	}
	check("States", st["leaf00"].Audit)
}

// Trimming keeps the queue's first change, which holds its baseline,
// whatever the clock of the member that made it: before, b's first entry
// (stamped before a's by b's clock) was kept as the first and a's, with
// the baseline B, deleted.
func TestTrimKeepsTheBaselineUnderClockSkew(t *testing.T) {
	ep := startEtcd(t)
	n := join(t, ep, "a", 1)
	defer n.Close()
	B, ea, bs := skewed(2*AuditKeep + 40)
	putAudit(t, n, ea)
	for len(bs) > 0 { // 100 a transaction, to be quick
		k := min(len(bs), 100)
		ops, err := n.auditOps(bs[:k])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.cli.Txn(context.Background()).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
		bs = bs[k:]
	}
	if err := n.trimAudit(context.Background(), "leaf00"); err != nil {
		t.Fatal(err)
	}
	es, err := n.Audit(context.Background(), "leaf00")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) > AuditKeep+1 {
		t.Errorf("%d entries after the trim, want about %d", len(es), AuditKeep)
	}
	for _, e := range es {
		if e.Writer == "a" && e.Old == B {
			return
		}
	}
	t.Errorf("the trim deleted the queue's first change (a's, from the baseline %v): %d entries left", B, len(es))
}
