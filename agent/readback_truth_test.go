package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// headroomRefuser applies the ECN part of a Set and refuses the headroom.
type headroomRefuser struct{ *fakeSwitch }

func (h headroomRefuser) Apply(ctx context.Context, s map[env.QueueKey]env.Setting) error {
	ecn := map[env.QueueKey]env.Setting{}
	h.mu.Lock()
	for k, v := range s {
		v.HeadroomBytes = h.set[k].HeadroomBytes
		ecn[k] = v
	}
	h.mu.Unlock()
	if err := h.fakeSwitch.Apply(ctx, ecn); err != nil {
		return err
	}
	return &gnmipath.HeadroomError{Target: h.name, Paths: []string{"/headroom"}, Err: errors.New("value out of range")}
}

// An audit entry applied with a headroom the switch refused says so: the
// headroom asked for, that it was refused, and the one read back. Before,
// it read "applied" with the headroom asked for and nothing else.
func TestAuditSaysWhatTheSwitchRefused(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA)
	r := newRig(t, config.ModeClosedLoop, false, "", sw)
	r.a.switches["leaf0"] = headroomRefuser{sw}
	want := target
	want.HeadroomBytes = 1 << 40
	r.pol.s = want
	r.interval(t)
	es, _ := r.j.Entries("", 0)
	if len(es) != 1 || es[0].State != core.StateApplied || es[0].Got == nil || es[0].Got.HeadroomBytes != cur.HeadroomBytes ||
		!strings.Contains(es[0].Error, "refused") || !strings.Contains(es[0].Error, "100KB as read back") {
		t.Fatalf("audit %+v", es)
	}
}

// A switch going down answers a read with zeros: that is no setting. The
// read before a write defers the change (it is not taken as another
// writer's setting, nor as a baseline to restore later).
func TestZerosFromADyingSwitchAreNoSetting(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA)
	r := newRig(t, config.ModeClosedLoop, false, "", sw)
	r.clk.Add(1e9)
	r.tns += sec
	r.a.Ingest(sw.snapshot(r.tns))
	sw.mu.Lock()
	sw.set[kA] = env.Setting{}
	sw.mu.Unlock()
	if err := r.a.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sw.setCount() != 0 {
		t.Fatal("a Set after a read of zeros")
	}
	if lg, _ := r.a.Guard().LastGood(kA); lg != cur {
		t.Fatalf("last good %+v: zeros taken as a baseline", lg)
	}
	// and reconciling an open entry against zeros leaves it open
	c := r.a.core
	res := c.Reconcile([]core.AuditEntry{{Seq: 1, Target: "leaf0", Change: core.Change{Key: kA, Kind: core.KindTune, Old: cur, New: target}}},
		map[env.QueueKey]env.Setting{kA: {}}, r.tns, r.tns)
	if len(res) != 1 || !res[0].Retry {
		t.Fatalf("reconciled against zeros: %+v", res)
	}
}

// A lossless floor above the switch's whole buffer is not trusted: no
// repair towards it, one alarm for the state, not one per sample. Before,
// every PG was "repaired" towards it, 624 alarms in 15 s.
func TestFloorAboveTheBufferIsIgnored(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA)
	r := newRig(t, config.ModeClosedLoop, false, "", sw)
	for i := 0; i < 5; i++ {
		r.clk.Add(1e9)
		r.tns += sec
		s := sw.snapshot(r.tns)
		s.Queues[0].BufferBytes, s.Queues[0].MinHeadroomBytes, s.Queues[0].HeadroomReported = 1_000_000, 5_000_000_000, true
		r.a.Ingest(s)
		if err := r.a.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range func() []core.AuditEntry { es, _ := r.j.Entries("", 0); return es }() {
		if e.Kind == core.KindRepair {
			t.Fatalf("repaired towards an implausible floor: %+v", e)
		}
	}
	if n := testutilCounter(t, r.a, "ecntune_agent_alarms_total", "implausible-floor"); n != 1 {
		t.Fatalf("%g implausible-floor alarms, want 1", n)
	}
}
