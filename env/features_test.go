package env

import "testing"

func TestTelemetryNames(t *testing.T) {
	if got := (TelPFCFrames | TelPausedTime).String(); got != "PFC frames, PFC paused time" {
		t.Fatalf("String = %q", got)
	}
	if len(AllTelemetry.Names()) != numTelemetry {
		t.Fatalf("AllTelemetry has %d names, want %d", len(AllTelemetry.Names()), numTelemetry)
	}
	if !AllTelemetry.Has(TelPortSpeed|TelMarkedPkts) || Telemetry(0).Has(TelXoff) {
		t.Fatal("Has is wrong")
	}
	if Telemetry(0).String() != "" {
		t.Fatal("empty set must render empty")
	}
}

// A missing feature is marked, not read as zero congestion, and what can
// stand in for it does.
func TestObserverMissingTelemetry(t *testing.T) {
	k := QueueKey{Target: "s", Port: "p", Queue: 3}
	q := func(ts int64, tx, marked uint64, missing Telemetry) Snapshot {
		s := QueueSample{Key: k, RateBps: 100e9, TxPkts: tx / 1000, TxBytes: tx, MarkedPkts: marked / 1000, MarkedBytes: marked,
			MaxQueueBytes: 500_000, AvgQueueBytes: 100_000, PauseRx: 10, PauseTx: 5, PausedNs: 1000,
			Setting: Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.1}}
		missing.Mask(&s)
		return Snapshot{Target: "s", TimeNs: ts, Queues: []QueueSample{s}}
	}
	for _, c := range []struct {
		name    string
		missing Telemetry
		flags   [4]float32 // marks, qlen, pfc, paused known
		avg     float64    // AvgQueueFrac
	}{
		{"all", 0, [4]float32{1, 1, 1, 1}, 100_000 / 250_000.0},
		{"openconfig", DeviceTelemetry["openconfig"], [4]float32{1, 1, 0, 0}, 100_000 / 250_000.0},
		{"arista-eos", DeviceTelemetry["arista-eos"], [4]float32{1, 0, 1, 1}, 0},
		{"sonic", DeviceTelemetry["sonic"], [4]float32{1, 1, 1, 1}, 500_000 / 250_000.0},
	} {
		o := NewObserver(ObserverConfig{})
		o.Observe(q(0, 0, 0, c.missing))
		ob := o.Observe(q(1_000_000, 10_000_000, 1_000_000, c.missing))[0]
		got := [4]float32{ob.Features[FeatMarksKnown], ob.Features[FeatQlenKnown], ob.Features[FeatPFCKnown], ob.Features[FeatPausedKnown]}
		if got != c.flags || ob.Missing != c.missing {
			t.Fatalf("%s: flags %v missing %q", c.name, got, ob.Missing)
		}
		if d := ob.Metrics.AvgQueueFrac - c.avg; d > 1e-9 || d < -1e-9 {
			t.Fatalf("%s: avg queue %g ref, want %g (the max stands in for a missing average)", c.name, ob.Metrics.AvgQueueFrac, c.avg)
		}
		if ob.Metrics.MarkFrac == 0 {
			t.Fatalf("%s: marks lost", c.name)
		}
	}
	if Decidable(DeviceTelemetry["arista-eos"]) != true || Decidable(TelMarkedPkts|TelMarkedBytes|TelMaxQueue|TelAvgQueue|TelCurQueue|TelPFCFrames) {
		t.Fatal("Decidable is wrong")
	}
}
