package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/core"
)

// Alpha survives the audit log (bbolt, JSON) and the baseline undo
// restores it.
func TestAuditAlphaRoundTrip(t *testing.T) {
	j := tempJournal(t)
	changed := curA
	changed.Alpha = 0.5
	written, err := j.Intent([]core.AuditEntry{{TimeNs: 10 * sec, Target: "leaf0", Change: core.Change{Key: kA, Kind: core.KindTune, Old: curA, New: changed}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Resolve(written[0].Seq, core.StateApplied, &changed, "", 11*sec); err != nil {
		t.Fatal(err)
	}
	es, err := j.Entries("", 0)
	if err != nil || len(es) != 1 {
		t.Fatalf("%v %+v", err, es)
	}
	if es[0].Old != curA || es[0].New != changed || es[0].Got == nil || *es[0].Got != changed {
		t.Fatalf("audit entry %+v (got %+v)", es[0], es[0].Got)
	}
	if r := core.AuditReason(core.Change{Old: curA, New: changed}); !strings.Contains(r, "alpha 1/8→1/2") {
		t.Fatalf("audit reason %q", r)
	}
	base := UndoPlan(es, "leaf0", UndoBaseline)
	if len(base) != 1 || base[0].New != curA || base[0].Old != changed {
		t.Fatalf("baseline %+v", base)
	}
	// only alpha differs: still something to undo
	if last := UndoPlan(es, "leaf0", 0); len(last) != 1 || last[0].New.Alpha != 0.125 {
		t.Fatalf("undo %+v", last)
	}
}

// A manual Set whose read-back differs in alpha says so.
func TestApplyManualReadBackNamesAlpha(t *testing.T) {
	j := tempJournal(t)
	sw := newFakeSwitch("leaf0", kA)
	sw.set[kA] = curA
	sw.ignore = true
	want := curA
	want.Alpha = 0.5
	now := func() time.Time { return time.Unix(100, 0) }
	_, _, err := ApplyManual(context.Background(), j, sw, []core.Change{{Key: kA, Kind: core.KindManual, Old: curA, New: want}}, "me", now)
	if err == nil || !strings.Contains(err.Error(), "alpha 1/2→1/8") {
		t.Fatalf("ApplyManual: %v, want a read-back error naming alpha 1/2→1/8", err)
	}
}
