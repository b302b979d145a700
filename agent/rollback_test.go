package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
)

func TestUndoPlan(t *testing.T) {
	s1 := env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2}
	s2 := env.Setting{KminBytes: 600_000, KmaxBytes: 2_400_000, Pmax: 0.2}
	es := []core.AuditEntry{
		{Seq: 1, TimeNs: 10 * sec, Target: "leaf0", Change: core.Change{Key: kA, Old: cur, New: s1}, State: core.StateApplied},
		{Seq: 2, TimeNs: 20 * sec, Target: "leaf0", Change: core.Change{Key: kA, Old: s1, New: s2}, State: core.StateApplied},
		{Seq: 3, TimeNs: 25 * sec, Target: "leaf0", Change: core.Change{Key: kB, Old: cur, New: s1}, State: core.StateFailed},
		{Seq: 4, TimeNs: 30 * sec, Target: "leaf0", Change: core.Change{Key: kB, Old: cur, New: s2}, State: core.StateReconciled},
		{Seq: 5, TimeNs: 30 * sec, Target: "leaf1", Change: core.Change{Key: kC, Old: cur, New: s2}, State: core.StateApplied},
	}
	last := UndoPlan(es, "leaf0", 0)
	if len(last) != 2 || last[0].Key != kA || last[0].New != s1 || last[0].Old != s2 || last[1].Key != kB || last[1].New != cur {
		t.Fatalf("undo last: %+v", last)
	}
	to := UndoPlan(es, "leaf0", 15*sec)
	if len(to) != 2 || to[0].New != s1 || to[1].New != cur {
		t.Fatalf("undo to 15 s: %+v", to)
	}
	to = UndoPlan(es, "leaf0", 5*sec)
	if len(to) != 2 || to[0].New != cur || to[0].Kind != core.KindManual {
		t.Fatalf("undo to 5 s: %+v", to)
	}
	if to = UndoPlan(es, "leaf0", 40*sec); len(to) != 0 {
		t.Fatalf("nothing after 40 s, got %+v", to)
	}
	base := UndoPlan(es, "leaf0", UndoBaseline)
	if len(base) != 2 || base[0].New != cur || base[1].New != cur || base[0].Reason[:28] != "back to the baseline: the se" {
		t.Fatalf("baseline: %+v", base)
	}
	// Run twice, a plain rollback does not undo its own undo.
	es = append(es, core.AuditEntry{Seq: 6, TimeNs: 40 * sec, Target: "leaf0", Change: core.Change{Key: kA, Kind: core.KindManual, Old: s2, New: s1}, State: core.StateApplied},
		core.AuditEntry{Seq: 7, TimeNs: 40 * sec, Target: "leaf0", Change: core.Change{Key: kB, Kind: core.KindManual, Old: s2, New: cur}, State: core.StateApplied})
	if again := UndoPlan(es, "leaf0", 0); len(again) != 0 {
		t.Fatalf("second plain rollback: %+v", again)
	}
	// The baseline is still reachable after manual rollbacks.
	if base = UndoPlan(es, "leaf0", UndoBaseline); len(base) != 1 || base[0].Key != kA || base[0].Old != s1 || base[0].New != cur {
		t.Fatalf("baseline after rollbacks: %+v", base)
	}
	// After --to baseline, a plain rollback does not put the agent's
	// first change back either (it undid kA's s1->s2 and would have set s1).
	es = append(es, core.AuditEntry{Seq: 8, TimeNs: 50 * sec, Target: "leaf0", Change: core.Change{Key: kA, Kind: core.KindManual, Old: s1, New: cur}, State: core.StateApplied})
	if again := UndoPlan(es, "leaf0", 0); len(again) != 0 {
		t.Fatalf("plain rollback after baseline: %+v", again)
	}
	// A change the agent makes after the rollbacks is undone as usual.
	es = append(es, core.AuditEntry{Seq: 9, TimeNs: 60 * sec, Target: "leaf0", Change: core.Change{Key: kB, Kind: core.KindTune, Old: cur, New: s2}, State: core.StateApplied})
	if last = UndoPlan(es, "leaf0", 0); len(last) != 1 || last[0].Key != kB || last[0].Old != s2 || last[0].New != cur {
		t.Fatalf("undo the agent's change after rollbacks: %+v", last)
	}
}

// A safety repair is never undone: a plain rollback whose queue's last
// change is a repair leaves it (it backs out, as the guard's rollback
// does), and a restore from before a repair keeps headroom at
// the floor and Kmax under XOFF as the repair set them.
func TestUndoPlanKeepsSafetyRepairs(t *testing.T) {
	unsafe := env.Setting{KminBytes: 1_000_000, KmaxBytes: 9_000_000, Pmax: 0.05, HeadroomBytes: 20_000}
	fixed := env.Setting{KminBytes: 1_000_000, KmaxBytes: 4_500_000, Pmax: 0.05, HeadroomBytes: 56_016}
	repair := core.AuditEntry{Seq: 1, TimeNs: 10 * sec, Target: "leaf0", State: core.StateApplied,
		Change: core.Change{Key: kA, Kind: core.KindRepair, Old: unsafe, New: fixed, Reason: "safety repair: headroom below the floor; kmax not below XOFF"}}
	es := []core.AuditEntry{repair}
	if plan := UndoPlan(es, "leaf0", 0); len(plan) != 0 {
		t.Fatalf("a plain rollback undid a safety repair: %+v", plan)
	}
	for _, to := range []int64{UndoBaseline, 5 * sec} {
		if plan := UndoPlan(es, "leaf0", to); len(plan) != 0 {
			t.Fatalf("rollback to %d undid a safety repair: %+v", to, plan)
		}
	}
	// A tune after the repair: undone, back to the repaired setting.
	tuned := env.Setting{KminBytes: 800_000, KmaxBytes: 3_000_000, Pmax: 0.1, HeadroomBytes: 56_016}
	es = append(es, core.AuditEntry{Seq: 2, TimeNs: 20 * sec, Target: "leaf0", State: core.StateApplied,
		Change: core.Change{Key: kA, Kind: core.KindTune, Old: fixed, New: tuned}})
	if plan := UndoPlan(es, "leaf0", 0); len(plan) != 1 || plan[0].New != fixed {
		t.Fatalf("undo of the tune after a repair: %+v", plan)
	}
	// Back to the baseline (before the repair): the unsafe knobs are not
	// written back, the others are.
	base := UndoPlan(es, "leaf0", UndoBaseline)
	if len(base) != 1 || base[0].New.HeadroomBytes != fixed.HeadroomBytes || base[0].New.KmaxBytes != fixed.KmaxBytes ||
		base[0].New.Pmax != unsafe.Pmax || !strings.Contains(base[0].Reason, "keeping the safety repair of audit entry 1") {
		t.Fatalf("baseline across a repair: %+v", base)
	}
	// A tune, then a repair of it (XOFF fell): a plain rollback leaves
	// the repaired queue (undoing the tune would keep Kmax under XOFF
	// and Kmin under Kmax: the repaired setting itself).
	before := env.Setting{KminBytes: 2_000_000, KmaxBytes: 6_000_000, Pmax: 0.2, HeadroomBytes: 56_016}
	high := env.Setting{KminBytes: 2_500_000, KmaxBytes: 7_000_000, Pmax: 0.2, HeadroomBytes: 56_016}
	lowered := env.Setting{KminBytes: 1_000_000, KmaxBytes: 3_000_000, Pmax: 0.2, HeadroomBytes: 56_016}
	es = []core.AuditEntry{
		{Seq: 1, TimeNs: 10 * sec, Target: "leaf0", State: core.StateApplied, Change: core.Change{Key: kB, Kind: core.KindTune, Old: before, New: high}},
		{Seq: 2, TimeNs: 20 * sec, Target: "leaf0", State: core.StateApplied, Change: core.Change{Key: kB, Kind: core.KindRepair, Old: high, New: lowered}},
	}
	plan := UndoPlan(es, "leaf0", 0)
	if len(plan) != 0 {
		// before, bounded by the repair, is the repaired setting itself
		t.Fatalf("undo of a repaired tune: %+v", plan)
	}
}

// A queue whose last change backs out (the guard's rollback, read-back or
// revert, a safety repair) is left alone by a plain rollback, as by one
// after a manual rollback: undoing it would write back the setting the
// guard had just judged harmful. A step forward after it is undone as
// usual.
func TestUndoPlanLeavesWhatTheGuardBackedOut(t *testing.T) {
	x := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 52_376, Alpha: 0.5}
	y := env.Setting{KminBytes: 4_000_000, KmaxBytes: 8_000_000, Pmax: 0.05, HeadroomBytes: 52_376, Alpha: 2}
	for _, k := range []core.ChangeKind{core.KindRollback, core.KindReadBack, core.KindRevert, core.KindRepair} {
		for _, tune := range []core.ChangeKind{core.KindTune, core.KindFallback} {
			es := []core.AuditEntry{
				{Seq: 1, TimeNs: 10 * sec, Target: "leaf0", Change: core.Change{Key: kA, Kind: tune, Old: x, New: y}, State: core.StateApplied},
				{Seq: 2, TimeNs: 20 * sec, Target: "leaf0", Change: core.Change{Key: kA, Kind: k, Old: y, New: x, Reason: string(k) + ": pause fraction up"}, State: core.StateApplied},
			}
			if plan := UndoPlan(es, "leaf0", 0); len(plan) != 0 {
				t.Errorf("%s then %s: a plain rollback writes %+v -> %+v (%s); want the queue left alone", tune, k, plan[0].Old, plan[0].New, plan[0].Reason)
			}
			// --to and baseline still go back before the tune
			if plan := UndoPlan(es, "leaf0", UndoBaseline); k != core.KindRepair && len(plan) != 0 {
				t.Errorf("%s then %s: baseline writes %+v, want nothing (the queue runs x already)", tune, k, plan)
			}
			// the agent's next step forward is undone: back to x
			es = append(es, core.AuditEntry{Seq: 3, TimeNs: 30 * sec, Target: "leaf0", Change: core.Change{Key: kA, Kind: tune, Old: x, New: y}, State: core.StateApplied})
			if plan := UndoPlan(es, "leaf0", 0); len(plan) != 1 || plan[0].Old != y || plan[0].New != x || !strings.Contains(plan[0].Reason, "undo audit entry 3") {
				t.Errorf("%s, %s, %s: plain rollback %+v, want entry 3 undone (y -> x)", tune, k, tune, plan)
			}
		}
	}
}

// Every knob that changes is in the audit reason, whatever the policy's
// reason names.
func TestAuditReasonNamesEveryKnob(t *testing.T) {
	c := core.Change{Old: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 52_380},
		New:    env.Setting{KminBytes: 696_600, KmaxBytes: 774_000, Pmax: 0.01, HeadroomBytes: 60_000},
		Reason: "kmax 1.6MB→774KB: score lead 0.3"}
	// the applied change and the policy's wish, each labelled
	want := "change: kmin 400KB→696.6KB, kmax 1.6MB→774KB, pmax 20%→1%, headroom 52.38KB→60KB; wanted: kmax 1.6MB→774KB: score lead 0.3"
	if got := core.AuditReason(c); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	c.Reason = "kmin 400KB→696.6KB, kmax 1.6MB→774KB, pmax 20%→1%, headroom 52.38KB→60KB: probability lead 0.5"
	if got := core.AuditReason(c); got != c.Reason {
		t.Errorf("a reason that already names every knob is kept: %q", got)
	}
	// a wish the guard clamped, that starts like the change applied
	c.Reason = "kmin 400KB→900KB, kmax 1.6MB→774KB: score lead 0.3"
	c.Kind = core.KindTune
	if got := core.AuditReason(c); !strings.HasPrefix(got, "change: kmin 400KB→696.6KB") || !strings.Contains(got, "; wanted: kmin 400KB→900KB") {
		t.Errorf("clamped: %q", got)
	}
	// a rollback's reason is why, not a wish
	c.Kind, c.Reason = core.KindRollback, "rollback: reward fell 0.2"
	if got := core.AuditReason(c); !strings.HasPrefix(got, "change: kmin") || !strings.HasSuffix(got, "; why: rollback: reward fell 0.2") {
		t.Errorf("rollback: %q", got)
	}
	// Knobs that move by less than the digits shown are still named,
	// exactly; a queue that does not change says so.
	c = core.Change{Old: env.Setting{KminBytes: 3_482_571, KmaxBytes: 4_000_000, Pmax: 0.0100001, HeadroomBytes: 60_000},
		New: env.Setting{KminBytes: 3_482_900, KmaxBytes: 4_000_000, Pmax: 0.0100002, HeadroomBytes: 60_001}}
	if got, want := core.AuditReason(c), "kmin 3482571B→3482900B, pmax 1.00001%→1.00002%, headroom 60000B→60001B"; got != want {
		t.Errorf("small moves: got %q, want %q", got, want)
	}
	if got := core.AuditReason(core.Change{Old: c.Old, New: c.Old}); got != "no change" {
		t.Errorf("no move: %q", got)
	}
}

func TestApplyManual(t *testing.T) {
	j := tempJournal(t)
	sw := newFakeSwitch("leaf0", kA, kB)
	sw.set[kA] = target
	changes := []core.Change{
		{Key: kA, Kind: core.KindManual, Old: target, New: cur, Reason: "undo"},
		{Key: kB, Kind: core.KindManual, Old: target, New: cur, Reason: "undo"}, // already there
	}
	now := func() time.Time { return time.Unix(100, 0) }
	written, _, err := ApplyManual(context.Background(), j, sw, changes, "me", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 1 || written[0].Key != kA || written[0].State != core.StateApplied || sw.get(kA) != cur {
		t.Fatalf("written %+v, switch %+v", written, sw.get(kA))
	}
	es, _ := j.Entries("", 0)
	if len(es) != 1 || es[0].Old != target || es[0].Owner != "me" || es[0].State != core.StateApplied {
		t.Fatalf("audit %+v", es)
	}
	sw.partial = true
	_, _, err = ApplyManual(context.Background(), j, sw, []core.Change{{Key: kA, Kind: core.KindManual, New: target}}, "me", now)
	if err == nil {
		t.Fatal("partial apply not reported")
	}
	es, _ = j.Entries("", 0)
	if es[1].State != core.StateMismatch {
		t.Fatalf("audit %+v", es[1])
	}
}

// An undo computed from the setting the agent left (Old) is not written
// where the switch runs another (it restarted at its startup setting, or
// another writer set one): it would overwrite that setting with one the
// agent had before, a half-tuned one on a fabric back at its defaults.
// It is returned as skipped, with what the queue runs. Old unset (a
// forced rollback) writes it all the same.
func TestApplyManualLeavesMovedQueues(t *testing.T) {
	j := tempJournal(t)
	sw := newFakeSwitch("leaf0", kA, kB)
	half := env.Setting{KminBytes: 696_600, KmaxBytes: 774_000, Pmax: 0.02, HeadroomBytes: 100_000}
	tuned := env.Setting{KminBytes: 696_600, KmaxBytes: 774_000, Pmax: 0.01, HeadroomBytes: 100_000}
	sw.set[kA], sw.set[kB] = cur, tuned // kA restarted at its default; kB runs what the agent left
	now := func() time.Time { return time.Unix(100, 0) }
	plan := []core.Change{
		{Key: kA, Kind: core.KindManual, Old: tuned, New: half, Reason: "undo audit entry 35 (tune)"},
		{Key: kB, Kind: core.KindManual, Old: tuned, New: half, Reason: "undo audit entry 36 (tune)"},
	}
	written, skipped, err := ApplyManual(context.Background(), j, sw, plan, "me", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 1 || written[0].Key != kB || sw.get(kB) != half || sw.get(kA) != cur {
		t.Fatalf("written %+v; switch runs %v on A, %v on B", written, sw.get(kA), sw.get(kB))
	}
	if len(skipped) != 1 || skipped[0].Key != kA || skipped[0].Old != cur || skipped[0].New != half {
		t.Fatalf("skipped %+v", skipped)
	}
	if es, _ := j.Entries("", 0); len(es) != 1 || es[0].Key != kB {
		t.Fatalf("audit %+v: a skipped queue is not journaled", es)
	}
	plan[0].Old = env.Setting{}
	if written, skipped, err = ApplyManual(context.Background(), j, sw, plan[:1], "me", now); err != nil || len(written) != 1 || len(skipped) != 0 || sw.get(kA) != half {
		t.Fatalf("forced: written %+v, skipped %+v, %v; switch runs %v", written, skipped, err, sw.get(kA))
	}
}

// A probation rollback is not written when the switch no longer runs the
// setting being rolled back from (it restarted between two telemetry
// samples, back at its startup configuration): that would write a setting
// of its previous life. What it runs becomes the new baseline.
func TestRollbackSkippedWhenSwitchChangedUnderUs(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA)
	r := newRig(t, config.ModeClosedLoop, false, filepath.Join(t.TempDir(), "agent.db"), sw)
	startup := env.Setting{KminBytes: 2_000_000, KmaxBytes: 2_800_000, Pmax: 0.01}
	sw.set[kA] = startup // the switch restarted: neither the change nor what preceded it
	rb := core.Change{Key: kA, Kind: core.KindRollback, Old: target, New: cur, Reason: "probation"}
	r.a.apply(context.Background(), []core.Change{rb}, false)
	if got := sw.get(kA); got != startup {
		t.Fatalf("switch runs %+v: the rollback wrote a setting of its previous run", got)
	}
	if es, _ := r.j.Entries("", 0); len(es) != 0 {
		t.Fatalf("audit entries %+v", es)
	}
	// and when the switch does run what is being rolled back from, it is
	sw.set[kA] = target
	r.a.apply(context.Background(), []core.Change{rb}, false)
	if got := sw.get(kA); got != cur {
		t.Fatalf("switch runs %+v, want the rollback's %+v", got, cur)
	}
}

// tempJournal opens a journal in the test's temporary folder, closed when
// the test ends.
func tempJournal(t *testing.T) *journal.Journal {
	t.Helper()
	j, err := journal.OpenJournal(filepath.Join(t.TempDir(), "a.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// lostAnswer applies the Set; its answer is lost (a client timeout).
type lostAnswer struct{ *fakeSwitch }

func (l lostAnswer) Apply(ctx context.Context, s map[env.QueueKey]env.Setting) error {
	if err := l.fakeSwitch.Apply(ctx, s); err != nil {
		return err
	}
	return context.DeadlineExceeded
}

// refusing takes nothing and says so.
type refusing struct{ *fakeSwitch }

func (refusing) Apply(context.Context, map[env.QueueKey]env.Setting) error {
	return errors.New("rpc error: code = InvalidArgument")
}

// ApplyManual reads back after a failed Set, as the loop does: the audit
// says what the switch runs (before, every entry was "failed" on any Set
// error, and the command printed "intent").
func TestApplyManualReadsBackAfterAFailedSet(t *testing.T) {
	now := func() time.Time { return time.Unix(100, 0) }
	restore := cur
	restore.HeadroomBytes = 200_000
	for _, c := range []struct {
		name  string
		sw    func(*fakeSwitch) Switch
		New   env.Setting
		state core.AuditState
		msg   string
		runs  env.Setting
	}{
		{"headroom refused: the ECN change stands", func(f *fakeSwitch) Switch { return headroomRefuser{f} }, restore, core.StateApplied, "headroom 200KB refused", env.Setting{}},
		{"answer lost, change taken", func(f *fakeSwitch) Switch { return lostAnswer{f} }, cur, core.StateApplied, "", cur},
		{"refused", func(f *fakeSwitch) Switch { return refusing{f} }, cur, core.StateFailed, "InvalidArgument", target},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := tempJournal(t)
			f := newFakeSwitch("leaf0", kA)
			f.set[kA] = target
			written, _, err := ApplyManual(context.Background(), j, c.sw(f), []core.Change{{Key: kA, Kind: core.KindManual, New: c.New}}, "me", now)
			es, _ := j.Entries("", 0)
			if len(written) != 1 || len(es) != 1 {
				t.Fatalf("written %+v, audit %+v, err %v", written, es, err)
			}
			if es[0].State != c.state || written[0].State != c.state || !strings.Contains(es[0].Error, c.msg) {
				t.Fatalf("audit %s (%q), the command prints %s; want %s saying %q; switch runs %+v", es[0].State, es[0].Error, written[0].State, c.state, c.msg, f.get(kA))
			}
			if (err == nil) != (c.state == core.StateApplied) {
				t.Fatalf("err %v for %s", err, c.state)
			}
			if es[0].Got == nil || (c.runs != env.Setting{} && *es[0].Got != c.runs) {
				t.Fatalf("audit's read-back %+v, want %+v", es[0].Got, c.runs)
			}
		})
	}
}

// An agent stopped (or killed) after its Set reached the switch and before
// the result was journaled leaves its entry open; `agent rollback` judges
// it by what the switch runs first (ReconcileOpen), so the plan undoes it
// (before, an open entry was not in any plan: "nothing to undo").
func TestRollbackUndoesAChangeLeftOpen(t *testing.T) {
	now := func() time.Time { return time.Unix(100, 0) }
	for _, to := range []int64{0, UndoBaseline, 5 * sec} {
		j := tempJournal(t)
		sw := newFakeSwitch("leaf0", kA, kB)
		w, err := j.Intent([]core.AuditEntry{
			{TimeNs: 10 * sec, Target: "leaf0", Change: core.Change{Key: kA, Kind: core.KindTune, Old: cur, New: target}},
			{TimeNs: 10 * sec, Target: "leaf0", Change: core.Change{Key: kB, Kind: core.KindTune, Old: cur, New: target}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.Apply(context.Background(), map[env.QueueKey]env.Setting{kA: target}); err != nil { // kA's Set went out; kB's did not
			t.Fatal(err)
		}
		es, _ := j.Entries("leaf0", 0)
		if plan := UndoPlan(es, "leaf0", to); len(plan) != 0 {
			t.Fatalf("to %d: a plan from open entries, unjudged: %+v", to, plan)
		}
		// a dry run judges and records nothing
		res, err := ReconcileOpen(context.Background(), j, sw, now, true)
		if err != nil || len(res) != 2 {
			t.Fatalf("dry run: %+v, %v", res, err)
		}
		if es, _ := j.Entries("leaf0", 0); es[0].State != core.StateIntent {
			t.Fatalf("a dry run resolved %+v", es[0])
		}
		res, err = ReconcileOpen(context.Background(), j, sw, now, false)
		if err != nil || len(res) != 2 {
			t.Fatalf("%+v, %v", res, err)
		}
		es, _ = j.Entries("leaf0", 0)
		if es[0].Seq != w[0].Seq || es[0].State != core.StateReconciled || es[1].State != core.StateAbandoned {
			t.Fatalf("entries after reconcile: %+v", es)
		}
		plan := UndoPlan(es, "leaf0", to)
		if len(plan) != 1 || plan[0].Key != kA || plan[0].New != cur {
			t.Fatalf("to %d: plan %+v; want kA back to %+v", to, plan, cur)
		}
	}
}

// timedOut is a switch whose Set answers nothing in time (nor applies yet).
type timedOut struct{ *fakeSwitch }

func (timedOut) Apply(context.Context, map[env.QueueKey]env.Setting) error {
	return fmt.Errorf("%w: rpc error: code = DeadlineExceeded", core.ErrSetOutcomeUnknown)
}

// A manual Set that timed out may still land: its entry stays open with
// the time it may land by, and the agent's next start judges it after
// that, not at once (it was judged "abandoned" at once, the late Set then
// landing unaudited).
func TestApplyManualTimedOutSetMayLand(t *testing.T) {
	now := func() time.Time { return time.Unix(100, 0) }
	j := tempJournal(t)
	f := newFakeSwitch("leaf0", kA)
	f.set[kA] = target
	_, _, err := ApplyManual(context.Background(), j, timedOut{f}, []core.Change{{Key: kA, Kind: core.KindManual, New: cur}}, "me", now)
	es, _ := j.Entries("", 0)
	if err == nil || len(es) != 1 || es[0].State != core.StateIntent || es[0].LandByNs <= es[0].TimeNs || !strings.Contains(err.Error(), "may still land") {
		t.Fatalf("err %v, audit %+v", err, es)
	}
	if r := core.ReconcileOpen(es, map[env.QueueKey]env.Setting{kA: target}, es[0].TimeNs+int64(time.Second)); !r[0].Wait {
		t.Fatalf("judged at once: %+v", r[0])
	}
}

// After agent rollback, the agent's next start does not take the
// operator's change for another writer's (an external-writer alarm and a
// yield on every queue rolled back), and holds the queue from it.
func TestAgentAfterManualRollbackSeesNoOtherWriter(t *testing.T) {
	db := filepath.Join(t.TempDir(), "agent.db")
	r := newRig(t, config.ModeClosedLoop, false, db, nil)
	r.interval(t)
	r.clk.Add(10 * time.Second)
	r.interval(t)
	if r.sw.get(kA) != target {
		t.Fatalf("the loop did not set kA: %+v", r.sw.get(kA))
	}
	r.j.Close()
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	back := r.sw.get(kA)
	back.KminBytes, back.KmaxBytes = 300_000, 1_200_000
	if _, _, err := ApplyManual(context.Background(), j, r.sw, []core.Change{{Key: kA, Kind: core.KindManual, Old: target, New: back}}, "ops", r.clk.Now); err != nil {
		t.Fatal(err)
	}
	j.Close()
	r2 := newRig(t, config.ModeClosedLoop, false, db, r.sw)
	r2.clk.t = r.clk.Now()
	r2.tns = r.tns
	sets := r.sw.setCount()
	for range 3 {
		r2.interval(t)
	}
	if n := testutilCounter(t, r2.a, "ecntune_agent_alarms_total", core.RuleExternal); n != 0 {
		t.Fatalf("%v external-writer alarms after the operator's rollback", n)
	}
	if n := r.sw.setCount() - sets; n != 0 {
		t.Fatalf("%d Sets within the hold of the operator's rollback", n)
	}
}

// At start, a target the configuration no longer lists whose queues the
// agent changed (its guard memory says so) is named: its queues keep the
// agent's settings, which a restart passed over in silence.
func TestStartNamesTargetsLeftBehind(t *testing.T) {
	db := filepath.Join(t.TempDir(), "agent.db")
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	gone := env.QueueKey{Target: "spine9", Port: "Ethernet0", Queue: 3}
	if err := j.PutGuardMemory([]core.QueueMemory{{Key: gone, Changed: true, LastGood: cur}, {Key: kA, Changed: true, LastGood: cur}}); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	cfg := testConfig(config.ModeClosedLoop)
	if _, err := New(Options{Config: cfg, Policy: &fixedPolicy{s: target, conf: 0.9}, Model: "fixed@1", Observer: &fakeObserver{metrics: map[env.QueueKey]env.Metrics{}},
		Journal: j, Switches: []Switch{newFakeSwitch("leaf0", kA, kB)}, Logger: slog.New(slog.NewTextHandler(&log, nil))}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if !strings.Contains(log.String(), "no longer lists keeps the agent's settings") || !strings.Contains(log.String(), "target=spine9 queues=1") || strings.Contains(log.String(), "target=leaf0") {
		t.Fatalf("start log:\n%s", log.String())
	}
}

// A switch restarted at its startup settings beside a kept agent db (the
// demo's fresh simulator, Options.Restarted) runs its defaults as the new
// baseline: no external-writer alarm, no yield, and the loop tunes it
// again (every queue read as another writer's, yielding for a minute).
func TestRestartedSwitchIsNotAnotherWriter(t *testing.T) {
	for _, restarted := range []bool{false, true} {
		db := filepath.Join(t.TempDir(), "agent.db")
		r := newRig(t, config.ModeClosedLoop, false, db, nil)
		r.interval(t)
		if r.sw.get(kA) != target {
			t.Fatalf("the loop did not set kA: %+v", r.sw.get(kA))
		}
		r.j.Close()
		fresh := newFakeSwitch("leaf0", kA, kB) // at its defaults
		opts := func(o *Options) {
			if restarted {
				o.Restarted = []string{"leaf0"}
			}
		}
		r2 := newRigOpts(t, config.ModeClosedLoop, false, db, fresh, nil, opts)
		r2.clk.t, r2.tns = r.clk.Now().Add(time.Hour), r.tns
		for range 4 {
			r2.interval(t)
		}
		n := testutilCounter(t, r2.a, "ecntune_agent_alarms_total", core.RuleExternal)
		if restarted && (n != 0 || fresh.get(kA) != target) {
			t.Errorf("restarted switch: %v external-writer alarms, kA runs %+v (want %+v tuned again)", n, fresh.get(kA), target)
		}
		if !restarted && n == 0 {
			t.Errorf("a switch not said restarted, running another setting than the agent set: no external-writer alarm")
		}
	}
}

// In a fleet a manual change's entries go to the fleet's audit, as the
// loop's do: the intent before the Set, the result after, named by the
// member; when the fleet's audit does not take the intent (fenced: a
// member took the switch), nothing is sent and the entry fails saying so.
func TestApplyManualSharedWithTheFleet(t *testing.T) {
	j := tempJournal(t)
	sw := newFakeSwitch("leaf0", kA)
	sw.set[kA] = target
	now := func() time.Time { return time.Unix(100, 0) }
	var put [][]core.AuditEntry
	var putMems [][]core.QueueMemory
	// the fleet's memory of the queue: its last owner widened the XOFF
	// margin twice and expects what it set (target)
	fleetMem := core.QueueMemory{Key: kA, LastGood: target, Expect: &target, XoffWiden: 2, Tightened: true}
	share := &ManualShare{Member: "a", Put: func(_ context.Context, tg string, es []core.AuditEntry, mems []core.QueueMemory) error {
		if tg != "leaf0" {
			t.Errorf("put to %s", tg)
		}
		put = append(put, slices.Clone(es))
		putMems = append(putMems, slices.Clone(mems))
		return nil
	}, Memory: func(_ context.Context, tg string) ([]core.QueueMemory, error) {
		return []core.QueueMemory{fleetMem}, nil
	}}
	written, _, err := ApplyManualShared(context.Background(), j, sw, []core.Change{{Key: kA, Kind: core.KindManual, Old: target, New: cur}}, "me", now, share)
	if err != nil || len(written) != 1 || sw.get(kA) != cur {
		t.Fatalf("written %+v, %v", written, err)
	}
	if len(put) != 2 || put[0][0].State != core.StateIntent || put[1][0].State != core.StateApplied ||
		put[0][0].Writer != "a" || put[1][0].Seq != written[0].Seq || put[1][0].ResultNs == 0 {
		t.Fatalf("the fleet's audit got %+v", put)
	}
	if es, _ := j.Entries("", 0); es[0].Writer != "a" {
		t.Fatalf("this member's log names writer %q, want a (counted once beside the fleet's)", es[0].Writer)
	}
	// the fleet's memory goes with the result: the switch's next owner
	// expects what the rollback left (not another writer's change), and
	// what its owners kept (the widened margin) stays
	if len(putMems) != 2 || putMems[0] != nil || len(putMems[1]) != 1 {
		t.Fatalf("memories put with the intents and the results: %+v", putMems)
	}
	if m := putMems[1][0]; m.Expect == nil || *m.Expect != cur || m.LastGood != cur || m.XoffWiden != 2 || !m.Changed || m.LastChangeNs != now().UnixNano() {
		t.Fatalf("the fleet's memory after the rollback: %+v, want expect and last good %+v, xoff-widen 2 kept", m, cur)
	}
	share.Memory = func(context.Context, string) ([]core.QueueMemory, error) { return nil, errors.New("etcd: no answer") }
	before := len(put)
	if written, _, err := ApplyManualShared(context.Background(), j, sw, []core.Change{{Key: kA, Kind: core.KindManual, Old: cur, New: target}}, "me", now, share); err == nil ||
		len(written) != 0 || sw.get(kA) != cur || len(put) != before || !strings.Contains(err.Error(), "nothing sent: the fleet's guard memory") {
		t.Fatalf("fleet memory unread: written %+v, err %v, switch %+v, puts %d -> %d", written, err, sw.get(kA), before, len(put))
	}
	share.Memory = nil
	share.Put = func(context.Context, string, []core.AuditEntry, []core.QueueMemory) error {
		return errors.New("fenced: a member owns leaf0")
	}
	written, _, err = ApplyManualShared(context.Background(), j, sw, []core.Change{{Key: kA, Kind: core.KindManual, Old: cur, New: target}}, "me", now, share)
	if err == nil || sw.get(kA) != cur || len(written) != 1 || written[0].State != core.StateFailed || !strings.Contains(written[0].Error, "not sent: the fleet's audit did not take its intent: fenced") {
		t.Fatalf("fenced: %+v, %v, switch %+v", written, err, sw.get(kA))
	}
}
