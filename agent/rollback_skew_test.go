package agent

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
)

// skewedChanges: member a (its clock right) made a queue's first change,
// B -> X, at noon; the switch failed over to b, whose clock is 2 minutes
// behind, and b changed X -> Y a minute later, stamped 11:59. Their Revs
// are the etcd revisions the fleet's audit recorded them at (ReadAudit).
func skewedChanges() (B, X, Y env.Setting, ea, eb core.AuditEntry) {
	k := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	B = env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2}
	X = env.Setting{KminBytes: 200_000, KmaxBytes: 800_000, Pmax: 0.2}
	Y = env.Setting{KminBytes: 300_000, KmaxBytes: 900_000, Pmax: 0.2}
	noon := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ea = core.AuditEntry{Seq: 1, TimeNs: noon.UnixNano(), Target: "leaf0", Writer: "a", Token: 10, Rev: 100, State: core.StateApplied,
		Change: core.Change{Key: k, Kind: core.KindTune, Old: B, New: X}}
	eb = core.AuditEntry{Seq: 1, TimeNs: noon.Add(time.Minute - 2*time.Minute).UnixNano(), Target: "leaf0", Writer: "b", Token: 20, Rev: 200,
		State: core.StateApplied, Change: core.Change{Key: k, Kind: core.KindTune, Old: X, New: Y}}
	return
}

// A fleet's rollback plans from the order etcd recorded the changes in,
// not the members' clocks: --to baseline restores B and a plain rollback
// undoes b's change. Before, b's change sorted first (stamped 11:59):
// --to baseline planned nothing (the queue left on Y without a word) and a
// plain rollback undid a's change, X -> B, while the switch ran Y.
func TestFleetRollbackUnderClockSkew(t *testing.T) {
	B, X, Y, ea, eb := skewedChanges()
	local := ea // member a's own log holds its change, without a revision
	local.Rev = 0
	for _, tc := range []struct {
		name  string
		local []core.AuditEntry
	}{{"the fleet's audit alone", nil}, {"with a's own log", []core.AuditEntry{local}}} {
		es := MergeFleetAudit(tc.local, []core.AuditEntry{ea, eb})
		if base := UndoPlan(es, "leaf0", UndoBaseline); len(base) != 1 || base[0].Old != Y || base[0].New != B {
			t.Errorf("%s: --to baseline: want Y -> B, got %+v", tc.name, base)
		}
		if plain := UndoPlan(es, "leaf0", 0); len(plain) != 1 || plain[0].Old != Y || plain[0].New != X {
			t.Errorf("%s: plain: want Y -> X (undo b's change, the last), got %+v", tc.name, plain)
		}
	}
}

// An entry of this member's log that the fleet's audit no longer holds
// (trimmed) keeps its place after the entry before it in the log, or
// goes by its time where the fleet's holds none of the log's; entries
// with no revision at all are in time order, as before.
func TestMergeFleetAuditPlacesLocalEntriesTheFleetLacks(t *testing.T) {
	_, _, _, ea, eb := skewedChanges()
	// a's own later change, trimmed from etcd, stamped after b's change
	// by a's clock but made before it
	la := ea
	la.Seq, la.Rev, la.TimeNs = 2, 0, ea.TimeNs+int64(10*time.Second)
	la.Key.Queue = 4
	mine := ea
	mine.Rev = 0
	es := MergeFleetAudit([]core.AuditEntry{mine, la}, []core.AuditEntry{ea, eb})
	if len(es) != 3 || es[0].Writer != "a" || es[0].Seq != 1 || es[1].Seq != 2 || es[2].Writer != "b" {
		t.Errorf("want a's 1, a's 2, b's 1; got %+v", es)
	}
	// the fleet's audit holding none of this log's entries: by time
	later := la
	later.TimeNs = eb.TimeNs + int64(time.Second)
	if es := MergeFleetAudit([]core.AuditEntry{later}, []core.AuditEntry{ea, eb}); len(es) != 3 || es[2].Seq != 2 || es[2].Writer != "a" {
		t.Errorf("a local entry stamped after the fleet's: want it last, got %+v", es)
	}
	x, y := ea, eb
	x.Rev, y.Rev = 0, 0
	if es := MergeFleetAudit([]core.AuditEntry{x}, []core.AuditEntry{y}); len(es) != 2 || es[0].Writer != "b" {
		t.Errorf("without revisions: want time order (b's first), got %+v", es)
	}
}

// A new owner takes over the change b left open (b's clock 2 minutes
// behind a's) though a's older, resolved entry of the queue is stamped
// later: the newest per queue is by the order etcd recorded them. Before,
// given in key order (time first), a's resolved entry was taken for the
// newest and b's open change was never reconciled, and stayed open in
// etcd for good.
func TestTakeOverFindsAnOpenEntryUnderClockSkew(t *testing.T) {
	j, err := journal.OpenJournal(filepath.Join(t.TempDir(), "a.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	a := &Agent{}
	a.o.Journal = j
	_, _, _, ea, eb := skewedChanges()
	eb.State = core.StateIntent
	open, err := a.openToTake([]core.AuditEntry{eb, ea}) // the keys' order: b's stamp first
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0].Writer != "b" || open[0].New != eb.New {
		t.Errorf("want b's open change taken over, got %+v", open)
	}
}
