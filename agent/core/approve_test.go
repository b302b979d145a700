package core

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
)

// Approve mode: tunes wait as pending, safety changes pass, an approval
// lets that very setting through once (naming its approver), a new
// proposal replaces the pending one, approvals expire, and approving a
// queue with nothing pending is an error that approves nothing.
func TestApprovalsGate(t *testing.T) {
	a := Approvals{TTL: 10 * sec}
	x, y := cur, cur
	x.Pmax, y.Pmax = 0.1, 0.05
	tune := func(k env.QueueKey, s env.Setting) Change { return Change{Key: k, Kind: KindTune, Old: cur, New: s} }
	rb := Change{Key: kB, Kind: KindRollback, Old: x, New: cur}
	apply, held := a.Gate([]Change{tune(kA, x), rb}, 1*sec)
	if len(apply) != 1 || apply[0].Kind != KindRollback || len(held) != 1 {
		t.Fatalf("apply %+v held %+v", apply, held)
	}
	if p := a.Pending(); len(p) != 1 || p[0].Key != kA || p[0].New != x || p[0].SinceNs != sec || p[0].Approved {
		t.Fatalf("pending %+v", p)
	}
	if _, err := a.Approve([]env.QueueKey{kA, kC}, false, "alice", 2*sec); err == nil || !strings.Contains(err.Error(), kC.String()) {
		t.Fatalf("approving a queue with nothing pending: %v", err)
	}
	if _, err := a.Approve([]env.QueueKey{kA}, false, "", 2*sec); err == nil {
		t.Fatal("an approval without by")
	}
	if p := a.Pending(); p[0].Approved {
		t.Fatal("a failed approval approved something")
	}
	if got, err := a.Approve(nil, true, "alice", 2*sec); err != nil || len(got) != 1 || !got[0].Approved || got[0].ApprovedBy != "alice" {
		t.Fatalf("approve all: %+v %v", got, err)
	}
	// a second approval of the same change (two operators at once; the
	// queue named twice) keeps the first approver, once
	if got, err := a.Approve([]env.QueueKey{kA, kA}, false, "carol", 2*sec+1); err != nil || len(got) != 1 || got[0].ApprovedBy != "alice" || got[0].ApprovedAt != 2*sec {
		t.Fatalf("second approval: %+v %v", got, err)
	}
	// the guard now proposes another setting: it waits; the approval of x stays
	apply, held = a.Gate([]Change{tune(kA, y)}, 3*sec)
	if len(apply) != 0 || len(held) != 1 || a.Pending()[0].SinceNs != 3*sec {
		t.Fatalf("another proposal: apply %+v held %+v pending %+v", apply, held, a.Pending())
	}
	// x again: applied, once, with its approver
	apply, _ = a.Gate([]Change{tune(kA, x)}, 4*sec)
	if len(apply) != 1 || apply[0].ApprovedBy != "alice" {
		t.Fatalf("approved change: %+v", apply)
	}
	if apply, _ = a.Gate([]Change{tune(kA, x)}, 5*sec); len(apply) != 0 {
		t.Fatalf("an approval used twice: %+v", apply)
	}
	// an approval expires after TTL
	a.Approve([]env.QueueKey{kA}, false, "bob", 5*sec)
	a.Gate(nil, 16*sec)
	if apply, _ = a.Gate([]Change{tune(kA, x)}, 17*sec); len(apply) != 0 {
		t.Fatalf("an expired approval applied: %+v", apply)
	}
}
