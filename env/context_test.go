package env

import (
	"math"
	"testing"
)

// leafSnapshot is a leaf of three 100G host ports and one 100G uplink
// (3:1), 12 MB of shared buffer, at time t: each host port sent tx bytes
// in total, the uplink 3·tx, and every queue marked a tenth of it.
func leafSnapshot(t int64, tx uint64, peers bool) Snapshot {
	s := Snapshot{Target: "leaf0", TimeNs: t}
	for i, p := range []string{"Ethernet0", "Ethernet1", "Ethernet2", "Ethernet48"} {
		q := QueueSample{Key: QueueKey{Port: p, Queue: 3}, RateBps: 100e9, BufferBytes: 12_000_000,
			Setting: Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.01}, TxBytes: tx, TxPkts: tx / 1000,
			MarkedBytes: tx / 10, MarkedPkts: tx / 10_000}
		if i == 3 {
			q.TxBytes, q.TxPkts, q.MarkedBytes, q.MarkedPkts = 3*tx, 3*tx/1000, 3*tx/10, 3*tx/10_000
		}
		if peers {
			q.Peer = PeerHost
			if i == 3 {
				q.Peer = PeerSwitch
			}
		}
		s.Queues = append(s.Queues, q)
	}
	return s
}

// TestFabricFeatures checks obs-v5's fabric features against figures
// worked by hand: the rate, the buffer per port in reference BDPs, the
// leaf's oversubscription from its ports' peers and speeds, and the
// switch's context over its measured queues.
func TestFabricFeatures(t *testing.T) {
	o := NewObserver(ObserverConfig{})
	first := o.Observe(leafSnapshot(1e9, 0, true))
	f := first[0].Features
	near := func(name string, got float32, want float64) {
		t.Helper()
		if math.Abs(float64(got)-want) > 1e-5 {
			t.Errorf("%s = %.5f, want %.5f", name, got, want)
		}
	}
	// 100G: log2(100/12.5)/6 = 0.5; 12 MB over 4 ports = 3 MB = 12 ref of
	// 250 KB: log2(12)/6; 300G of hosts over 100G of uplink: log2(3)/2.
	near("rate", f[FeatRate], 0.5)
	near("buf_port", f[FeatBufPort], math.Log2(12)/6)
	near("buf_known", f[FeatBufKnown], 1)
	near("oversub", f[FeatOversub], math.Log2(3)/2)
	near("oversub_known", f[FeatOversubKnown], 1)
	near("sw_util (first sample: nothing measured)", f[FeatSwUtil], 0)

	// 1 ms later: each host port sent 2.5 MB (20% of 100G), the uplink
	// 7.5 MB (60%); every queue marked 10%.
	obs := o.Observe(leafSnapshot(1e9+1e6, 2_500_000, true))
	for _, ob := range obs {
		near(ob.Key.Port+" sw_util", ob.Features[FeatSwUtil], (0.2*3+0.6)/4)
		near(ob.Key.Port+" sw_mark", ob.Features[FeatSwMark], 0.1)
		near(ob.Key.Port+" sw_max_queue", ob.Features[FeatSwMaxQueue], 0)
	}

	// Without peers the oversubscription is not measured.
	o = NewObserver(ObserverConfig{})
	g := o.Observe(leafSnapshot(1e9, 0, false))[0].Features
	near("oversub, no peers", g[FeatOversub], 0)
	near("oversub_known, no peers", g[FeatOversubKnown], 0)

	// 800G is the top of the rate scale; an unknown buffer reads 0, 0.
	s := leafSnapshot(1e9, 0, true)
	for i := range s.Queues {
		s.Queues[i].RateBps, s.Queues[i].BufferBytes = 800e9, 0
	}
	h := NewObserver(ObserverConfig{}).Observe(s)[0].Features
	near("rate at 800G", h[FeatRate], 1)
	near("buf_port unknown", h[FeatBufPort], 0)
	near("buf_known unknown", h[FeatBufKnown], 0)
}
