package env

import (
	"math"
	"testing"
)

// swObs is a measured queue of switch target with the given pause_tx and
// max_queue features, headroom 2x a 40 KB floor.
func swObs(target, port string, pauseTx, maxQ float32) Observation {
	f := make([]float32, NumFeatures)
	f[FeatValid], f[FeatPauseTx], f[FeatMaxQueue], f[FeatUtil] = 1, pauseTx, maxQ, 0.5
	f[HistoryLen*IntervalFeatures-IntervalFeatures+FeatPauseTx] = pauseTx // the oldest block too
	f[FeatHeadroom], f[FeatAlpha], f[FeatAlphaKnown], f[FeatPFCKnown] = 0.5, 0.5, 1, 1
	return Observation{Key: QueueKey{Target: target, Port: port, Queue: 3}, RateBps: 100e9, Valid: true, Features: f,
		Current: Setting{KminBytes: 400e3, KmaxBytes: 1.6e6, Pmax: 0.2, HeadroomBytes: 80_000}, MinHeadroomBytes: 40_000}
}

func TestSwitchGroupsAndFeatures(t *testing.T) {
	noFloor := swObs("leaf0", "Ethernet9", 1, 1)
	noFloor.MinHeadroomBytes = 0 // headroom floor unknown: in no group
	unmeasured := swObs("spine0", "Ethernet1", 0, 0)
	unmeasured.Valid = false
	obs := []Observation{swObs("leaf0", "Ethernet1", 0.2, 0.3), unmeasured, noFloor, swObs("leaf0", "Ethernet2", 0.6, 0.1)}
	gs := SwitchGroups(obs)
	if len(gs) != 2 || gs[0].Target != "leaf0" || gs[1].Target != "spine0" ||
		len(gs[0].Members) != 2 || gs[0].Members[0] != 0 || gs[0].Members[1] != 3 || len(gs[1].Members) != 1 {
		t.Fatalf("groups %+v, want leaf0 [0 3] then spine0 [1]", gs)
	}
	f := SwitchFeatures(obs, gs[0].Members, nil)
	near := func(i int, want float64) {
		t.Helper()
		if math.Abs(float64(f[i])-want) > 1e-6 {
			t.Fatalf("feature %d = %g, want %g (all: %v)", i, f[i], want, f)
		}
	}
	near(0, 1)                                // both measured
	near(1, 0.4)                              // mean pause_tx
	near(2, 0.6)                              // max pause_tx
	near(5, (0.2+0.2+0.6+0.6)/(2*HistoryLen)) // two of four blocks carry it
	near(7, 0.5)
	near(8, 0.3) // max of max_queue
	near(12, 0.5)
	near(13, 0.5)
	near(14, 0.5)
	near(15, 1)
	near(18, 1.0/8) // log2(2 members)/8
	if len(f) != NumSwitchFeatures {
		t.Fatalf("%d features, want %d", len(f), NumSwitchFeatures)
	}
	// A switch with no member measured reads only its size.
	g := SwitchFeatures(obs, gs[1].Members, make([]float32, 3))
	for i, v := range g {
		if v != 0 {
			t.Fatalf("unmeasured switch: feature %d = %g, want 0", i, v)
		}
	}
	for a, want := range map[int]float64{0: 0, 1: 1, 2: 1.25, 3: 1.5, 4: 2, 5: 0, -1: 0} {
		got, ok := SwitchHeadroomFactor(a)
		if got != want || ok != (want > 0) {
			t.Fatalf("action %d: factor %g %v, want %g", a, got, ok, want)
		}
	}
	if SwitchActions() != 5 {
		t.Fatalf("%d hdrm-v1 actions, want 5", SwitchActions())
	}
}

// hdrm-v2's joint action: the headroom choice varies fastest, then alpha;
// 0 in either head keeps that knob.
func TestSwitchDecision(t *testing.T) {
	h := SwitchActions()
	if got := SwitchHeads(HeadroomAlphaActionSpec); len(got) != 2 || got[0] != h || got[1] != 1+len(SwitchAlphas) {
		t.Fatalf("heads %v", got)
	}
	if SwitchHeads("hdrm-v9") != nil {
		t.Fatal("unknown spec has heads")
	}
	for a := 0; a < h*(1+len(SwitchAlphas)); a++ {
		c := SwitchDecision(HeadroomAlphaActionSpec, a)
		hk, ak := a%h, a/h
		if c.HeadroomOK != (hk > 0) || (hk > 0 && c.Factor != HeadroomFactors[hk-1]) {
			t.Fatalf("action %d: %+v", a, c)
		}
		if c.AlphaOK != (ak > 0) || (ak > 0 && c.Alpha != SwitchAlphas[ak-1]) {
			t.Fatalf("action %d: %+v", a, c)
		}
	}
	if c := SwitchDecision(HeadroomActionSpec, 2); !c.HeadroomOK || c.Factor != HeadroomFactors[1] || c.AlphaOK {
		t.Fatalf("hdrm-v1 action 2: %+v", c)
	}
}
