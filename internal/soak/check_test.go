package soak

import (
	"github.com/ecntune/ecntune/agent/core"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simswitch"
)

// Each check flags what it is for, and passes what is fine.
func TestCheckFlagsViolations(t *testing.T) {
	k := env.QueueKey{Target: "sw0", Port: "Ethernet1", Queue: 3}
	s := func(kmin int64) env.Setting { return env.Setting{KminBytes: kmin, KmaxBytes: 2 * kmin, Pmax: 0.1} }
	l := func(ts int64, why string, kmin, hr, floor int64) simswitch.SetLogEntry {
		return simswitch.SetLogEntry{TimeNs: ts, Why: why, Switch: "sw0", Port: "Ethernet1", Queue: 3,
			Kmin: kmin, Kmax: 2 * kmin, Pmax: 0.1, Headroom: hr, Floor: floor}
	}
	sec := int64(time.Second)
	e := func(seq uint64, ts int64, kind core.ChangeKind, old, new env.Setting) core.AuditEntry {
		return core.AuditEntry{Seq: seq, TimeNs: ts, ResultNs: ts + 1, Target: "sw0", Change: core.Change{Key: k, Kind: kind, Old: old, New: new}, State: core.StateApplied}
	}
	log := []simswitch.SetLogEntry{l(0, "start", 100, 60000, 50000), l(10*sec, "set", 200, 60000, 0), l(20*sec, "set", 100, 60000, 0)}
	good := []core.AuditEntry{e(1, 10*sec, core.KindTune, s(100), s(200)), e(2, 20*sec, core.KindRollback, s(200), s(100))}
	if r := Check(good, log, 5*time.Second, time.Second); r.Violations() != 0 || r.Tunes != 1 || r.Rollbacks != 1 || r.SwitchStarts != 1 {
		t.Fatalf("clean soak: %s %v %v %v", r, r.HoldViolations, r.BadRollbacks, r.BelowFloor)
	}
	// a tune 2 s after the previous change, min-hold 5 s
	hold := append(good, e(3, 22*sec, core.KindTune, s(100), s(150)))
	if r := Check(hold, log, 5*time.Second, time.Second); len(r.HoldViolations) != 1 || !strings.Contains(r.HoldViolations[0], "entry 3") {
		t.Fatalf("hold: %v", r.HoldViolations)
	}
	// a rollback to a setting of the switch's previous run
	restarted := append(log, l(30*sec, "start", 400, 60000, 50000))
	stale := append(good, e(3, 40*sec, core.KindRollback, s(400), s(200)))
	if r := Check(stale, restarted, 5*time.Second, time.Second); len(r.BadRollbacks) != 1 || r.SwitchStarts != 2 {
		t.Fatalf("stale rollback: %v (starts %d)", r.BadRollbacks, r.SwitchStarts)
	}
	// a rollback the guard shaped (a Kmax the switch never ran) to a
	// setting it ran since it started passes; shaped from a stale one, not
	shaped := func(seq uint64, ts int64, want env.Setting) core.AuditEntry {
		x := e(seq, ts, core.KindRollback, s(400), env.Setting{KminBytes: want.KminBytes, KmaxBytes: want.KmaxBytes - 1, Pmax: 0.1})
		x.Wanted = &want
		return x
	}
	if r := Check(append(good, shaped(3, 25*sec, s(200))), log, 5*time.Second, time.Second); len(r.BadRollbacks) != 0 {
		t.Fatalf("shaped rollback to a setting the switch ran: %v", r.BadRollbacks)
	}
	if r := Check(append(good, shaped(3, 40*sec, s(200))), restarted, 5*time.Second, time.Second); len(r.BadRollbacks) != 1 || !strings.Contains(r.BadRollbacks[0], "shaped from") {
		t.Fatalf("shaped rollback to a stale setting: %v", r.BadRollbacks)
	}
	// a tune computed from a setting the switch no longer ran (it
	// restarted at 400 after running 100), and a second change of the
	// queue in the same interval
	past := append(good, e(3, 40*sec, core.KindTune, s(100), s(150)))
	if r := Check(past, restarted, 5*time.Second, time.Second); len(r.PastSets) != 1 || !strings.Contains(r.PastSets[0], "entry 3") {
		t.Fatalf("past: %v", r.PastSets)
	}
	double := append(good, e(3, 20*sec+sec/2, core.KindTune, s(100), s(150)))
	if r := Check(double, log, 0, time.Second); len(r.DoubleChanges) != 1 || !strings.Contains(r.DoubleChanges[0], "entry 3") {
		t.Fatalf("double: %v", r.DoubleChanges)
	}
	// headroom set below the floor and left there
	low := append(log, simswitch.SetLogEntry{TimeNs: 25 * sec, Why: "set", Switch: "sw0", Port: "Ethernet1", Queue: 3, Kmin: 100, Kmax: 200, Pmax: 0.1, Headroom: 1})
	if r := Check(good, low, 5*time.Second, time.Second); len(r.BelowFloor) != 1 {
		t.Fatalf("below floor: %v", r.BelowFloor)
	}
}

// Steps flags a tune that moved a knob beyond the max step from what the
// switch ran (issue 38: kmin x5.8 and pmax x20 against a max step of 2),
// and passes one within it, or beyond it where the guard shaped it by the
// bounds, or lowered Kmax by the order of the knobs.
func TestStepsFlagsMovesBeyondTheMaxStep(t *testing.T) {
	k := env.QueueKey{Target: "sw0", Port: "Ethernet1", Queue: 3}
	set := func(kmin, kmax int64, pmax float64) env.Setting {
		return env.Setting{KminBytes: kmin, KmaxBytes: kmax, Pmax: pmax}
	}
	tune := func(old, new env.Setting, clamped ...string) core.AuditEntry {
		return core.AuditEntry{Seq: 7, TimeNs: 10, Target: "sw0", State: core.StateApplied,
			Change: core.Change{Key: k, Kind: core.KindTune, Old: old, New: new, Clamped: clamped}}
	}
	// the switch restarted at 400KB/1.6MB/20% before the tune computed on
	// 800KB/2.154MB/10%
	log := []simswitch.SetLogEntry{{TimeNs: 5, Why: "start", Switch: "sw0", Port: "Ethernet1", Queue: 3, Kmin: 400e3, Kmax: 1600e3, Pmax: 0.2}}
	for _, c := range []struct {
		name string
		e    core.AuditEntry
		bad  string
	}{
		{"within", tune(set(400e3, 1600e3, 0.2), set(800e3, 3200e3, 0.1)), ""},
		{"kmin x5.8, pmax /20", tune(set(400e3, 1600e3, 0.2), set(2320e3, 3200e3, 0.01)), "kmin"},
		{"from the switch's past", tune(set(800e3, 2154e3, 0.1), set(1600e3, 4000e3, 0.1)), "kmin"},
		{"bounds", tune(set(400e3, 1600e3, 0.2), set(2320e3, 3200e3, 0.2), core.RuleBounds), ""},
		{"kmax under XOFF", tune(set(400e3, 1600e3, 0.2), set(200e3, 500e3, 0.2), core.RuleOrder), ""},
		{"kmax down without a rule", tune(set(400e3, 1600e3, 0.2), set(200e3, 500e3, 0.2)), "kmax"},
		{"pmax down x20", tune(set(400e3, 1600e3, 0.2), set(400e3, 1600e3, 0.01), core.RuleOrder), "pmax"},
	} {
		got := Steps([]core.AuditEntry{c.e}, log, 2)
		switch {
		case c.bad == "" && len(got) != 0:
			t.Errorf("%s: flagged %v", c.name, got)
		case c.bad != "" && (len(got) != 1 || !strings.Contains(got[0], "moved "+c.bad)):
			t.Errorf("%s: want %s flagged, got %v", c.name, c.bad, got)
		}
	}
	rb := tune(set(400e3, 1600e3, 0.2), set(2320e3, 3200e3, 0.01))
	rb.Kind = core.KindRollback
	if got := Steps([]core.AuditEntry{rb}, log, 2); len(got) != 0 {
		t.Errorf("a rollback is not a step: %v", got)
	}
}
