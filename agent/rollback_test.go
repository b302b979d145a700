package agent

import (
	"context"
	"path/filepath"
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

// Every knob that changes is in the audit reason, whatever the policy's
// reason names.
func TestAuditReasonNamesEveryKnob(t *testing.T) {
	c := core.Change{Old: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 52_380},
		New:    env.Setting{KminBytes: 696_600, KmaxBytes: 774_000, Pmax: 0.01, HeadroomBytes: 60_000},
		Reason: "kmax 1.6MB→774KB: score lead 0.3"}
	// the applied change and the policy's wish, each labelled
	want := "applied: kmin 400KB→696.6KB, kmax 1.6MB→774KB, pmax 20%→1%, headroom 52.38KB→60KB; wanted: kmax 1.6MB→774KB: score lead 0.3"
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
	if got := core.AuditReason(c); !strings.HasPrefix(got, "applied: kmin 400KB→696.6KB") || !strings.Contains(got, "; wanted: kmin 400KB→900KB") {
		t.Errorf("clamped: %q", got)
	}
	// a rollback's reason is why, not a wish
	c.Kind, c.Reason = core.KindRollback, "rollback: reward fell 0.2"
	if got := core.AuditReason(c); !strings.HasPrefix(got, "applied: kmin") || !strings.HasSuffix(got, "; why: rollback: reward fell 0.2") {
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
	written, err := ApplyManual(context.Background(), j, sw, changes, "me", now)
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
	_, err = ApplyManual(context.Background(), j, sw, []core.Change{{Key: kA, Kind: core.KindManual, New: target}}, "me", now)
	if err == nil {
		t.Fatal("partial apply not reported")
	}
	es, _ = j.Entries("", 0)
	if es[1].State != core.StateMismatch {
		t.Fatalf("audit %+v", es[1])
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
