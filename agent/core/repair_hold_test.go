package core

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// settle reports change c as made at now and returns the queue's next
// observation: in shadow mode (Shadowed) o, the switch unchanged; in
// closed loop (Result Applied, read back as got) got, under the same XOFF.
func settle(g *Guard, shadow bool, o env.Observation, c Change, got env.Setting, now int64) env.Observation {
	if shadow {
		g.Shadowed(c, now)
		return o
	}
	g.Result(c, Applied, got, now)
	next := ob(kA, got)
	next.XoffBytes, next.Metrics = o.XoffBytes, o.Metrics
	return next
}

// The repair tests' queue runs repairHigh, whose Kmax is above its PG's XOFF of
// 2.809 MB; the policy advises repairWant, then repairOther.
var (
	repairHigh  = env.Setting{KminBytes: 3_000_000, KmaxBytes: 3_358_000, Pmax: 0.2, HeadroomBytes: 100_000}
	repairWant  = env.Setting{KminBytes: 600_000, KmaxBytes: 800_000, Pmax: 0.01, HeadroomBytes: 100_000}
	repairOther = env.Setting{KminBytes: 500_000, KmaxBytes: 700_000, Pmax: 0.01, HeadroomBytes: 100_000}
)

// aboveXoff is the observation of a queue running repairHigh.
func aboveXoff() env.Observation {
	o := ob(kA, repairHigh)
	o.XoffBytes = 2_809_000
	return o
}

// TestRepairStartsNoHold: a safety repair of a setting the agent never
// chose (the switch's Kmax above XOFF) does not make the model's own
// change wait min-hold: the next interval the model's advice is applied.
// A tune still holds the queue for min-hold. In shadow the same: the
// repair is the virtual setting and the advice follows it at once.
func TestRepairStartsNoHold(t *testing.T) {
	for _, shadow := range []bool{false, true} {
		g := newTestGuard(t, func(c *GuardConfig) { c.MaxStepRatio = 100 })
		o := aboveXoff()
		// unsure advice: the repair is the least safe move
		p := step(t, g, 10*sec, []env.Observation{o}, []policy.Decision{dc(kA, repairWant, 0)})
		if len(p.Changes) != 1 || p.Changes[0].Kind != KindRepair {
			t.Fatalf("shadow %v: repairWant one repair, got %+v", shadow, p)
		}
		repaired := p.Changes[0].New
		o = settle(g, shadow, o, p.Changes[0], repaired, 10*sec)
		p = step(t, g, 11*sec, []env.Observation{o}, []policy.Decision{dc(kA, repairWant, 0.9)})
		if len(p.Changes) != 1 || p.Changes[0].Kind != KindTune || !SameSetting(p.Changes[0].New, repairWant, 1e-9) {
			t.Fatalf("shadow %v: the interval after a repair: %+v, repairWant the model's tune", shadow, p)
		}
		o = settle(g, shadow, o, p.Changes[0], repairWant, 11*sec)
		p = step(t, g, 12*sec, []env.Observation{o}, []policy.Decision{dc(kA, repairOther, 0.9)})
		if len(p.Changes) != 0 {
			t.Fatalf("shadow %v: a second tune one interval after the first: %+v, repairWant it held", shadow, p)
		}
	}
}

// TestRepairGoesWhereThePolicyPoints: a queue that must be repaired (its
// Kmax above XOFF) while the policy is sure of a safe setting changes
// once, to that setting, rather than to the least safe move and, an
// interval later, to the policy's; that change is the agent's choice and
// holds the queue for min-hold. A policy setting above XOFF is brought
// under it with the repair's margin.
func TestRepairGoesWhereThePolicyPoints(t *testing.T) {
	for _, shadow := range []bool{false, true} {
		g := newTestGuard(t, func(c *GuardConfig) { c.MaxStepRatio = 2 })
		o := aboveXoff()
		p := step(t, g, 10*sec, []env.Observation{o}, []policy.Decision{dc(kA, repairWant, 0.9)})
		if len(p.Changes) != 1 || p.Changes[0].Kind != KindRepair || !p.Changes[0].FromPolicy || !SameSetting(p.Changes[0].New, repairWant, 1e-9) {
			t.Fatalf("shadow %v: repairWant one repair to the policy's setting, got %+v", shadow, p)
		}
		if len(p.Rejections) != 0 {
			t.Errorf("shadow %v: the decision the repair took is also rejected: %+v", shadow, p.Rejections)
		}
		o = settle(g, shadow, o, p.Changes[0], repairWant, 10*sec)
		p = step(t, g, 11*sec, []env.Observation{o}, []policy.Decision{dc(kA, repairOther, 0.9)})
		if len(p.Changes) != 0 {
			t.Fatalf("shadow %v: a tune one interval after the policy's repair: %+v, repairWant it held", shadow, p)
		}
	}
	// the policy asks for a Kmax above XOFF too: under it, with the margin
	g := newTestGuard(t, nil)
	o := aboveXoff()
	above := env.Setting{KminBytes: 1_000_000, KmaxBytes: 3_000_000, Pmax: 0.01, HeadroomBytes: 100_000}
	p := step(t, g, 10*sec, []env.Observation{o}, []policy.Decision{dc(kA, above, 0.9)})
	if len(p.Changes) != 1 || !p.Changes[0].FromPolicy || p.Changes[0].New.KmaxBytes > int64(2_809_000*RepairXoffShare) ||
		p.Changes[0].New.Pmax != 0.01 || p.Changes[0].New.KminBytes != 1_000_000 {
		t.Fatalf("policy above XOFF: %+v", p)
	}
}

// In approve mode (LeastRepairs) a repair never carries the policy's
// setting, which waits for an operator: it stays the least safe move.
func TestLeastRepairsInApproveMode(t *testing.T) {
	g := newTestGuard(t, func(c *GuardConfig) { c.LeastRepairs = true })
	o := aboveXoff()
	p := step(t, g, 10*sec, []env.Observation{o}, []policy.Decision{dc(kA, repairWant, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].FromPolicy || p.Changes[0].New.Pmax != repairHigh.Pmax || p.Changes[0].New.KmaxBytes != int64(2_809_000*RepairXoffShare) {
		t.Fatalf("repairWant the least repair, got %+v", p)
	}
}

// TestRepairTowardsPolicyOnProbation: a repair that goes where the policy
// points makes the least repair (the switch's setting, Kmax brought under
// XOFF) good at once and puts the policy's part beyond it on probation,
// as a tune's: drops after it roll the queue back to the least repair,
// not to the setting above XOFF. The reason names what the policy wanted
// and what was written.
func TestRepairTowardsPolicyOnProbation(t *testing.T) {
	g := newTestGuard(t, nil)
	now := int64(0)
	for i := 0; i < BaselineIntervals; i++ { // XOFF not yet known: no repair
		now += sec
		step(t, g, now, []env.Observation{ob(kA, repairHigh)}, []policy.Decision{dc(kA, repairHigh, 0.9)})
	}
	// the policy's part marks later (kmin up, pmax down): judged on drops
	above := env.Setting{KminBytes: 2_400_000, KmaxBytes: 3_000_000, Pmax: 0.01, HeadroomBytes: 100_000}
	now += sec
	p := step(t, g, now, []env.Observation{aboveXoff()}, []policy.Decision{dc(kA, above, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindRepair || !p.Changes[0].FromPolicy || p.Changes[0].Least == nil {
		t.Fatalf("want one repair towards the policy's setting, got %+v", p)
	}
	ch := p.Changes[0]
	least := *ch.Least
	if least.Pmax != repairHigh.Pmax || least.KmaxBytes != int64(2_809_000*RepairXoffShare) {
		t.Errorf("least repair %s: want the switch's pmax %s with kmax under XOFF", least.Describe(), env.FormatPmax(repairHigh.Pmax))
	}
	for _, s := range []string{"wanted " + above.Describe(), "written " + ch.New.Describe(), "on probation"} {
		if !strings.Contains(ch.Reason, s) {
			t.Errorf("reason %q does not say %q", ch.Reason, s)
		}
	}
	g.Result(ch, Applied, ch.New, now)
	if lg, _ := g.LastGood(kA); !SameSetting(lg, least, 1e-9) || !g.queues[kA].onProbation {
		t.Fatalf("after the repair: last good %s, on probation %v; want the least repair %s good and the policy's part on probation",
			lg.Describe(), g.queues[kA].onProbation, least.Describe())
	}
	if m := g.Memory(kA); m.Probation == nil || !SameSetting(m.Probation.From, least, 1e-9) {
		t.Errorf("the memory's probation %+v: want it from the least repair", m.Probation)
	}
	o := ob(kA, ch.New)
	o.XoffBytes = 2_809_000
	o.Metrics.DropFrac = 0.05 // in every interval of the window, none before
	for i := range g.cfg.RollbackWindow {
		now += sec
		p = step(t, g, now, []env.Observation{o}, []policy.Decision{dc(kA, ch.New, 0.9)})
		if i < g.cfg.RollbackWindow-1 && len(p.Changes) != 0 {
			t.Fatalf("rolled back before the window's end: %+v", p.Changes)
		}
	}
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindRollback || !SameSetting(p.Changes[0].New, least, 1e-9) {
		t.Fatalf("drops 0→5%% after the policy's part: %+v, want a rollback to the least repair %s", p.Changes, least.Describe())
	}
}
