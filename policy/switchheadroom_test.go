package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/train/rl"
)

// pausedFloorNet is a switch-level headroom network that sets the floor
// (action 1) when a member sent PFC frames (pause_tx_max) and keeps the
// headroom otherwise.
func pausedFloorNet(t *testing.T) *rl.Net {
	t.Helper()
	n, err := rl.NewNet(rl.Arch{In: env.NumSwitchFeatures, Out: env.SwitchActions(), Act: rl.Tanh})
	if err != nil {
		t.Fatal(err)
	}
	n.Kind = rl.OutputLogits
	ly := &n.Layers[0]
	ly.B[0] = 1
	ly.W[2*ly.Out+1] = 10
	return n
}

func TestSwitchHeadroom(t *testing.T) {
	w, err := pausedFloorNet(t).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]models.Model{
		"hdrm": {Name: "hdrm", ID: 1, Version: 1, ObsSpec: env.SwitchSpecVersion, ActSpec: env.HeadroomActionSpec, Weights: w,
			Hyper: map[string]string{"interval": "200µs"}},
		"ecn": {Name: "ecn", ID: 2, Version: 1, ObsSpec: env.SpecVersion, ActSpec: env.ActionSpecVersion, Weights: w},
	}
	r := Resolver{Models: func(ref string) (models.Model, error) {
		if m, ok := stored[ref]; ok {
			return m, nil
		}
		return models.Model{}, models.ErrNotFound
	}}
	p, err := r.Lookup("static:hpcc+headroom=model:hdrm")
	if err != nil {
		t.Fatal(err)
	}
	cur := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 112_000}
	q := func(target, port string, pauseTx float32, floor int64) env.Observation {
		o := validObs(100e9, cur)
		o.Key = env.QueueKey{Target: target, Port: port, Queue: 3}
		o.Features[env.FeatPauseTx] = pauseTx
		o.MinHeadroomBytes = floor
		return o
	}
	obs := []env.Observation{
		q("leaf0", "Ethernet1", 0.5, 40_000), // leaf0 pauses: every member PG to its own floor
		q("leaf1", "Ethernet1", 0, 40_000),   // leaf1 does not: kept
		q("leaf0", "Ethernet2", 0, 30_000),
		q("leaf0", "Ethernet3", 0.5, 0), // floor unknown: not a member, kept
	}
	ds := p.Decide(obs)
	for i, want := range []int64{40_000, 112_000, 30_000, 112_000} {
		if ds[i].Setting.HeadroomBytes != want {
			t.Fatalf("queue %d (%s): headroom %d, want %d (%s)", i, obs[i].Key, ds[i].Setting.HeadroomBytes, want, ds[i].Reason)
		}
	}
	if !strings.Contains(ds[2].Reason, "headroom 30KB (1 × the lossless floor 30KB; switch-level model model:hdrm over 2 PGs") ||
		strings.Contains(ds[1].Reason, "headroom") || p.Name() != "static:hpcc+headroom=model:hdrm" {
		t.Fatalf("reasons %q / %q, name %q", ds[2].Reason, ds[1].Reason, p.Name())
	}
	// Not measured: the switch keeps its headroom whatever it last showed.
	stale := q("leaf0", "Ethernet1", 0.5, 40_000)
	stale.Valid = false
	if d := p.Decide([]env.Observation{stale})[0]; d.Setting.HeadroomBytes != 112_000 {
		t.Fatalf("unmeasured switch: headroom %d, want 112000 kept", d.Setting.HeadroomBytes)
	}
	// Counters over 1 s: outside 20µs-2ms, the intervals the model was
	// validated for (an order of magnitude either side of 200 µs).
	slow := q("leaf0", "Ethernet1", 0.5, 40_000)
	slow.Metrics.IntervalNs = 1e9
	if d := p.Decide([]env.Observation{slow})[0]; d.Setting.HeadroomBytes != 112_000 || !strings.Contains(d.Reason, "headroom kept: counters over 1s, outside") {
		t.Fatalf("1 s counters: %+v", d)
	}
	for _, c := range []struct{ spec, want string }{
		{"static:hpcc+headroom=model:ecn", "switch-level headroom model"}, // an ECN model as headroom model
		{"model:hdrm", "is a switch-level headroom model"},                // and the other way round
		{"static:hpcc+headroom=model:", "no model name"},
	} {
		if _, err := r.Lookup(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: err = %v, want %q", c.spec, err, c.want)
		}
	}
	if _, err := r.Lookup("static:hpcc+headroom=model:absent"); !errors.Is(err, models.ErrNotFound) {
		t.Fatalf("absent model: err = %v", err)
	}
	if _, err := (Resolver{}).Lookup("static:hpcc+headroom=model:hdrm"); err == nil || !strings.Contains(err.Error(), "no model registry") {
		t.Fatalf("no model source: err = %v", err)
	}
	wrong, _ := rl.NewNet(rl.Arch{In: env.NumSwitchFeatures, Out: 3, Act: rl.Tanh})
	if _, err := NewSwitchHeadroom(p, "x", "model:w", wrong); err == nil || !strings.Contains(err.Error(), "19→3") {
		t.Fatalf("a 3-action network: err = %v", err)
	}
}

// A headroom-and-alpha model (hdrm-v2): one decision per switch sets both
// knobs of every member PG; a member whose alpha the switch does not show
// keeps it; a network of the wrong width for the spec is refused.
func TestSwitchHeadroomAlpha(t *testing.T) {
	heads := env.SwitchHeads(env.HeadroomAlphaActionSpec)
	n, err := rl.NewNet(rl.Arch{In: env.NumSwitchFeatures, Out: heads[0] + heads[1], Act: rl.Tanh})
	if err != nil {
		t.Fatal(err)
	}
	n.Kind = rl.OutputLogits
	n.Layers[0].B[1] = 5                                            // headroom: the floor
	n.Layers[0].B[heads[0]+1+slices.Index(env.SwitchAlphas, 2)] = 5 // alpha 2
	w, err := n.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	m := models.Model{Name: "ha", ID: 1, Version: 1, ObsSpec: env.SwitchSpecVersion, ActSpec: env.HeadroomAlphaActionSpec, Weights: w}
	p, err := SwitchHeadroomFromModel(mustLookup(t, "static:hpcc"), "static:hpcc+headroom=model:ha", "model:ha", m)
	if err != nil {
		t.Fatal(err)
	}
	cur := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 112_000, Alpha: 0.125}
	a, b := validObs(100e9, cur), validObs(100e9, cur)
	a.Key, b.Key = env.QueueKey{Target: "leaf0", Port: "Ethernet1", Queue: 3}, env.QueueKey{Target: "leaf0", Port: "Ethernet2", Queue: 3}
	a.MinHeadroomBytes, b.MinHeadroomBytes = 40_000, 30_000
	b.Current.Alpha = 0 // not shown by the switch
	ds := p.Decide([]env.Observation{a, b})
	if ds[0].Setting.HeadroomBytes != 40_000 || ds[0].Setting.Alpha != 2 || !strings.Contains(ds[0].Reason, "; alpha 2 (switch-level model model:ha over 2 PGs") ||
		!strings.Contains(ds[0].Reason, "; headroom 40KB (1 × the lossless floor 40KB; switch-level model model:ha") || !strings.HasPrefix(ds[0].Reason, "preset hpcc") {
		t.Fatalf("member with alpha: %+v", ds[0])
	}
	if ds[1].Setting.HeadroomBytes != 30_000 || ds[1].Setting.Alpha != 0 || strings.Contains(ds[1].Reason, "alpha 2") {
		t.Fatalf("member without alpha: %+v", ds[1])
	}
	m.ActSpec = env.HeadroomActionSpec // 11 outputs where hdrm-v1 has 5
	if _, err := SwitchHeadroomFromModel(mustLookup(t, "static:hpcc"), "x", "model:ha", m); err == nil || !strings.Contains(err.Error(), "want 19 features (sw-v1) → 5 outputs (hdrm-v1)") {
		t.Fatalf("wrong width: %v", err)
	}
}

func mustLookup(t *testing.T, spec string) Policy {
	t.Helper()
	p, err := Lookup(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
