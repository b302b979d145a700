package core

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
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
	if _, err := a.Approve([]env.QueueKey{kA, kC}, false, "alice", nil, 2*sec); err == nil || !strings.Contains(err.Error(), kC.String()) {
		t.Fatalf("approving a queue with nothing pending: %v", err)
	}
	if _, err := a.Approve([]env.QueueKey{kA}, false, "", nil, 2*sec); err == nil {
		t.Fatal("an approval without by")
	}
	if p := a.Pending(); p[0].Approved {
		t.Fatal("a failed approval approved something")
	}
	if got, err := a.Approve(nil, true, "alice", nil, 2*sec); err != nil || len(got) != 1 || !got[0].Approved || got[0].ApprovedBy != "alice" {
		t.Fatalf("approve all: %+v %v", got, err)
	}
	// a second approval of the same change (two operators at once; the
	// queue named twice) keeps the first approver, once
	if got, err := a.Approve([]env.QueueKey{kA, kA}, false, "carol", nil, 2*sec+1); err != nil || len(got) != 1 || got[0].ApprovedBy != "alice" || got[0].ApprovedAt != 2*sec {
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
	a.Approve([]env.QueueKey{kA}, false, "bob", nil, 5*sec)
	a.Gate(nil, 16*sec)
	if apply, _ = a.Gate([]Change{tune(kA, x)}, 17*sec); len(apply) != 0 {
		t.Fatalf("an expired approval applied: %+v", apply)
	}
}

// An approval that names the plans reviewed approves those very changes:
// if the guard's proposal for a queue changed since (or, with all, the
// pending set is not the one reviewed), nothing is approved and the error
// says what is pending now.
func TestApprovalsBindToTheReviewedPlan(t *testing.T) {
	a := Approvals{TTL: 10 * sec}
	b, c := cur, cur
	b.Pmax, c.Pmax = 0.1, 0.4
	tune := func(k env.QueueKey, s env.Setting) Change { return Change{Key: k, Kind: KindTune, Old: cur, New: s} }
	a.Gate([]Change{tune(kA, b), tune(kB, b)}, 1*sec)
	seen := a.Pending()
	if len(seen) != 2 || seen[0].Plan == "" || seen[0].Plan == seen[1].Plan || seen[0].Plan != PlanID(kA, b) {
		t.Fatalf("plans: %+v", seen)
	}
	// the same proposal keeps its plan ID from one interval to the next
	a.Gate([]Change{tune(kA, b), tune(kB, b)}, 2*sec)
	if p := a.Pending(); p[0].Plan != seen[0].Plan {
		t.Fatalf("plan ID moved: %s then %s", seen[0].Plan, p[0].Plan)
	}
	// kA's proposal changes after the operator reviewed it
	a.Gate([]Change{tune(kA, c), tune(kB, b)}, 3*sec)
	_, err := a.Approve([]env.QueueKey{kA}, false, "alice", []string{seen[0].Plan}, 4*sec)
	if err == nil || !strings.Contains(err.Error(), kA.String()+" now proposes") || !strings.Contains(err.Error(), "nothing approved") {
		t.Fatalf("approval of a changed proposal: %v", err)
	}
	_, err = a.Approve(nil, true, "alice", []string{seen[0].Plan, seen[1].Plan}, 4*sec)
	if err == nil || !strings.Contains(err.Error(), kA.String()) {
		t.Fatalf("approval of all with one changed: %v", err)
	}
	for _, p := range a.Pending() {
		if p.Approved {
			t.Fatalf("a refused approval approved %s", p.Key)
		}
	}
	if apply, _ := a.Gate([]Change{tune(kA, c), tune(kB, b)}, 5*sec); len(apply) != 0 {
		t.Fatalf("applied after refused approvals: %+v", apply)
	}
	// kB's reviewed plan is still pending: approved, and applied
	got, err := a.Approve([]env.QueueKey{kB}, false, "alice", []string{strings.ToUpper(seen[1].Plan)}, 6*sec)
	if err != nil || len(got) != 1 || got[0].Key != kB {
		t.Fatalf("approval of the reviewed plan: %+v %v", got, err)
	}
	if apply, _ := a.Gate([]Change{tune(kA, c), tune(kB, b)}, 7*sec); len(apply) != 1 || apply[0].Key != kB || apply[0].ApprovedBy != "alice" {
		t.Fatalf("reviewed plan not applied: %+v", apply)
	}
	// a plan given for a queue that was not named is refused too
	now := a.Pending()
	if _, err := a.Approve([]env.QueueKey{kA}, false, "bob", []string{now[0].Plan, "deadbeef"}, 8*sec); err == nil || !strings.Contains(err.Error(), "deadbeef") {
		t.Fatalf("unknown plan: %v", err)
	}
}

// Approve mode with a change budget of 1: the tunes held for approval
// spend none of it, so every queue's tune is listed as pending, and the
// one the operator approves (here the less sure one) is applied at the
// next interval, within the budget, while the other waits.
func TestApprovalsHeldTunesSpendNoBudget(t *testing.T) {
	gc := testGuardConfig()
	gc.ChangeBudget, gc.LeastRepairs = 1, true
	c, err := New(Options{Guard: gc, Policy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c.AddTarget("leaf0", 0)
	ap := Approvals{TTL: 10 * sec}
	wantA, wantB := cur, cur
	wantA.KmaxBytes, wantB.KmaxBytes = 2_000_000, 1_200_000
	now := int64(0)
	tick := func() (apply []Change, rej []Rejection) {
		now += sec
		rd, err := c.Tick(Interval{NowNs: now, Observations: []env.Observation{ob(kA, cur), ob(kB, cur)},
			Decisions: []policy.Decision{dc(kA, wantA, 0.9), dc(kB, wantB, 0.6)},
			Held:      func(ch Change) bool { return ap.Holds(ch, now) }})
		if err != nil {
			t.Fatal(err)
		}
		apply, held := ap.Gate(rd.Changes, now)
		for _, h := range held {
			c.Hold(h)
		}
		return apply, rd.Rejections
	}
	if apply, rej := tick(); len(apply) != 0 || len(rej) != 0 || len(ap.Pending()) != 2 {
		t.Fatalf("apply %+v, rejections %+v, pending %+v: want both tunes pending, none refused for the budget", apply, rej, ap.Pending())
	}
	if _, err := ap.Approve([]env.QueueKey{kB}, false, "alice", nil, now); err != nil {
		t.Fatal(err)
	}
	apply, rej := tick()
	if len(apply) != 1 || apply[0].Key != kB || apply[0].ApprovedBy != "alice" {
		t.Fatalf("after kB's approval: apply %+v, rejections %+v; want kB's tune applied", apply, rej)
	}
	if p := ap.Pending(); len(p) != 1 || p[0].Key != kA {
		t.Errorf("pending %+v, want kA's tune still waiting", p)
	}
}

// A proposal whose confidence hovers at the bar is made one interval and
// not the next: the plan listed can be approved while the guard made it
// within TTL, pending this interval or not (alone, and with all and the
// reviewed plans), and it is applied when the guard proposes it again; a
// queue whose proposal changed since is refused, naming the new one, and
// one not proposed for longer than TTL has nothing to approve.
func TestApprovalsOfAProposalThatSkipsAnInterval(t *testing.T) {
	a := Approvals{TTL: 10 * sec}
	b, c := cur, cur
	b.Pmax, c.Pmax = 0.1, 0.4
	tune := func(k env.QueueKey, s env.Setting) Change { return Change{Key: k, Kind: KindTune, Old: cur, New: s} }
	a.Gate([]Change{tune(kA, b), tune(kB, b), tune(kC, b)}, 1*sec)
	seen := a.Pending() // what 'agent pending' listed
	// the next interval, only kC's confidence clears the bar
	a.Gate([]Change{tune(kC, b)}, 2*sec)
	got, err := a.Approve([]env.QueueKey{kA}, false, "alice", []string{seen[0].Plan}, 3*sec)
	if err != nil || len(got) != 1 || got[0].Key != kA || got[0].Plan != seen[0].Plan || got[0].SinceNs != sec {
		t.Fatalf("approval of a plan proposed an interval ago: %+v %v", got, err)
	}
	got, err = a.Approve(nil, true, "bob", []string{seen[1].Plan, seen[2].Plan}, 3*sec)
	if err != nil || len(got) != 2 || got[0].Key != kB || got[1].Key != kC {
		t.Fatalf("approval of all the reviewed plans, one not made this interval: %+v %v", got, err)
	}
	// the guard proposes them again: applied, with their approvers
	apply, held := a.Gate([]Change{tune(kA, b), tune(kB, b), tune(kC, b)}, 4*sec)
	if len(apply) != 3 || len(held) != 0 || apply[0].ApprovedBy != "alice" || apply[1].ApprovedBy != "bob" {
		t.Fatalf("approved plans proposed again: apply %+v held %+v", apply, held)
	}
	// kA proposes c, then nothing: b's plan is refused, naming c
	a.Gate([]Change{tune(kA, c)}, 5*sec)
	a.Gate(nil, 6*sec)
	_, err = a.Approve([]env.QueueKey{kA}, false, "alice", []string{seen[0].Plan}, 6*sec)
	if err == nil || !strings.Contains(err.Error(), kA.String()+" now proposes "+c.Describe()) || !strings.Contains(err.Error(), PlanID(kA, c)) {
		t.Fatalf("approval of a plan since changed: %v", err)
	}
	// past TTL since the guard last proposed it, nothing is pending
	a.Gate(nil, 16*sec)
	if _, err = a.Approve([]env.QueueKey{kA}, false, "alice", nil, 16*sec); err == nil || !strings.Contains(err.Error(), "nothing pending for "+kA.String()) {
		t.Fatalf("approval of a proposal older than TTL: %v", err)
	}
	// with no TTL, what is pending this interval can be approved, and
	// only that
	z := Approvals{}
	z.Gate([]Change{tune(kA, b)}, 1*sec)
	if got, err := z.Approve([]env.QueueKey{kA}, false, "alice", nil, 1*sec+1); err != nil || len(got) != 1 {
		t.Fatalf("no TTL, approval of what is pending: %+v %v", got, err)
	}
	z.Gate([]Change{tune(kB, b)}, 2*sec)
	z.Gate(nil, 3*sec)
	if _, err := z.Approve([]env.QueueKey{kB}, false, "alice", nil, 3*sec); err == nil || !strings.Contains(err.Error(), "proposed no change there this interval") {
		t.Fatalf("no TTL, approval of what was pending an interval ago: %v", err)
	}
	// a paused loop withdraws its proposals
	a.Gate([]Change{tune(kB, c)}, 17*sec)
	a.Withdraw(18 * sec)
	if _, err = a.Approve([]env.QueueKey{kB}, false, "alice", nil, 19*sec); err == nil {
		t.Fatal("approval of a proposal withdrawn by a pause")
	}
}
