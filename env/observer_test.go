package env

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// traffic describes steady per-interval behaviour independent of rate and Δ.
type traffic struct {
	util      float64 // fraction of link capacity sent
	mark      float64 // fraction of tx bytes marked
	avgRefs   float64 // average queue in reference BDPs
	maxRefs   float64 // peak queue in reference BDPs
	pausedFr  float64 // fraction of the interval paused
	pausesPS  float64 // PFC frames sent per second
	dropFrac  float64 // dropped / (tx + dropped)
	kminAt100 int64
	kmaxAt100 int64
	pmax      float64
}

// series builds n+1 snapshots of one queue carrying tr at rate, every dtNs.
func series(tr traffic, rate float64, dtNs int64, n int) []Snapshot {
	ref := rate / 8 * DefaultRefRTT.Seconds()
	dt := float64(dtNs) * 1e-9
	var s QueueSample
	s.Key = QueueKey{Target: "sw", Port: "Ethernet0", Queue: 3}
	s.RateBps = rate
	s.Setting = Setting{KminBytes: int64(math.Round(float64(tr.kminAt100) * rate / 100e9)),
		KmaxBytes: int64(math.Round(float64(tr.kmaxAt100) * rate / 100e9)), Pmax: tr.pmax}
	s.XoffBytes = int64(math.Round(4 * ref))
	out := make([]Snapshot, 0, n+1)
	t := int64(1_000_000_000)
	for i := 0; i <= n; i++ {
		if i > 0 {
			tx := tr.util * rate / 8 * dt
			s.TxBytes += uint64(math.Round(tx))
			s.TxPkts += uint64(math.Round(tx / 1000))
			s.MarkedBytes += uint64(math.Round(tx * tr.mark))
			s.MarkedPkts += uint64(math.Round(tx * tr.mark / 1000))
			if tr.dropFrac > 0 {
				d := tx * tr.dropFrac / (1 - tr.dropFrac)
				s.DropBytes += uint64(math.Round(d))
				s.DropPkts += uint64(math.Round(d / 1000))
			}
			s.PausedNs += uint64(math.Round(tr.pausedFr * float64(dtNs)))
			s.PauseTx += uint64(math.Round(tr.pausesPS * dt))
			s.AvgQueueBytes = tr.avgRefs * ref
			s.MaxQueueBytes = int64(math.Round(tr.maxRefs * ref))
			s.CurQueueBytes = int64(math.Round(tr.avgRefs * ref))
			t += dtNs
		}
		out = append(out, Snapshot{Target: "sw", TimeNs: t, Queues: []QueueSample{s}})
	}
	return out
}

func observeAll(o *Observer, snaps []Snapshot) []Observation {
	var last []Observation
	for _, s := range snaps {
		last = o.Observe(s)
	}
	return last
}

func TestMetricsNumbers(t *testing.T) {
	tr := traffic{util: 0.8, mark: 0.25, avgRefs: 0.5, maxRefs: 3, pausedFr: 0.1, pausesPS: 20000,
		dropFrac: 0.01, kminAt100: 100_000, kmaxAt100: 1_000_000, pmax: 0.1}
	o := NewObserver(ObserverConfig{})
	snaps := series(tr, 100e9, 1_000_000, 2)
	first := o.Observe(snaps[0])[0]
	if first.Valid || first.Metrics.IntervalNs != 0 || first.Problem == "" || first.Metrics.Reset {
		t.Fatalf("first sample: valid=%v interval=%d problem=%q reset=%v", first.Valid, first.Metrics.IntervalNs, first.Problem, first.Metrics.Reset)
	}
	ob := o.Observe(snaps[1])[0]
	m := ob.Metrics
	if !ob.Valid || m.IntervalNs != 1_000_000 {
		t.Fatalf("valid=%v interval=%d, want true 1000000", ob.Valid, m.IntervalNs)
	}
	near := func(name string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %.6g, want %.6g", name, got, want)
		}
	}
	near("util", m.Util, 0.8, 1e-6)
	near("mark", m.MarkFrac, 0.25, 1e-6)
	near("avg queue", m.AvgQueueFrac, 0.5, 1e-9)
	near("max queue", m.MaxQueueFrac, 3, 1e-6)
	near("avg delay ns", m.AvgDelayNs, 10_000, 1e-3) // 0.5 ref = 10 µs at RefRTT 20 µs
	near("max delay ns", m.MaxDelayNs, 60_000, 1)
	near("pause rx", m.PauseRxFrac, 0.1, 1e-9)
	near("pause tx", m.PauseTxFrac, 0.2, 1e-9) // 20 frames in 1 ms, 10 µs each
	near("drop", m.DropFrac, 0.01, 1e-6)
	// peakiness (3-0.5)/3.25, times min(1, 3/2) = 0.769; pause tx 0.2 is lower
	near("incast", m.Incast, 2.5/3.25, 1e-6)

	f := ob.Features
	if len(f) != NumFeatures {
		t.Fatalf("len(features) = %d, want %d", len(f), NumFeatures)
	}
	near("f util", float64(f[FeatUtil]), 0.8, 1e-6)
	near("f avg queue", float64(f[FeatAvgQueue]), math.Log2(1.5)/7, 1e-6)
	near("f max queue", float64(f[FeatMaxQueue]), 2.0/7, 1e-6)
	near("f drop", float64(f[FeatDrop]), math.Log10(101)/math.Log10(10001), 1e-6)
	near("f kmin", float64(f[FeatKmin]), math.Log2(100_000.0/250_000)/8, 1e-6)
	near("f kmax", float64(f[FeatKmax]), math.Log2(4)/8, 1e-6)
	near("f pmax", float64(f[FeatPmax]), 0.5, 1e-6)
	near("f kmax/xoff", float64(f[FeatKmaxOverXoff]), 0, 1e-6) // kmax 1 MB = 4 ref = xoff
	near("f xoff known", float64(f[FeatXoffKnown]), 1, 0)
	near("f valid", float64(f[FeatValid]), 1, 0)
	for i := IntervalFeatures; i < HistoryLen*IntervalFeatures; i++ {
		if f[i] != 0 {
			t.Fatalf("feature %d (%s) = %g, want 0: only one interval measured", i, FeatureNames()[i], f[i])
		}
	}
}

func TestHistoryOrder(t *testing.T) {
	o := NewObserver(ObserverConfig{})
	s := QueueSample{Key: QueueKey{Port: "Ethernet1", Queue: 3}, RateBps: 100e9}
	now := int64(0)
	// interval k (1..6) carries utilisation k/10.
	o.Observe(Snapshot{Target: "a", TimeNs: now, Queues: []QueueSample{s}})
	var ob Observation
	for k := 1; k <= 6; k++ {
		now += 1_000_000
		s.TxBytes += uint64(float64(k) / 10 * 100e9 / 8 * 1e-3)
		ob = o.Observe(Snapshot{Target: "a", TimeNs: now, Queues: []QueueSample{s}})[0]
	}
	if ob.Key.Target != "a" {
		t.Fatalf("key target = %q, want the snapshot's \"a\"", ob.Key.Target)
	}
	for b := 0; b < HistoryLen; b++ {
		want := float64(6-b) / 10
		if got := float64(ob.Features[b*IntervalFeatures+FeatUtil]); math.Abs(got-want) > 1e-6 {
			t.Errorf("history block %d util = %g, want %g", b, got, want)
		}
	}
}

// A restarted observer seeded with the counters a previous run saw last
// (QueueSample.Counters, Seed) takes a first sample below them as a counter reset,
// naming the counter; a first sample at or above them is a first sample.
func TestSeededFirstSampleReset(t *testing.T) {
	tr := traffic{util: 0.5, mark: 0.1, avgRefs: 1, maxRefs: 2, kminAt100: 50_000, kmaxAt100: 500_000, pmax: 0.2}
	snaps := series(tr, 100e9, 1_000_000, 6)
	before := NewObserver(ObserverConfig{})
	observeAll(before, snaps[:4])
	k := snaps[0].Queues[0].Key
	saved := map[QueueKey]QueueCounters{k: snaps[3].Queues[0].Counters()}
	if c := saved[k]; c.TxBytes != snaps[3].Queues[0].TxBytes || c.MarkedPkts != snaps[3].Queues[0].MarkedPkts || c.PausedNs != snaps[3].Queues[0].PausedNs {
		t.Fatalf("counters of the last sample: %+v, want tx_bytes %d", c, snaps[3].Queues[0].TxBytes)
	}

	// the switch kept running: its counters went on
	o := NewObserver(ObserverConfig{})
	o.Seed(k, saved[k])
	if ob := o.Observe(snaps[5])[0]; ob.Valid || ob.Metrics.Reset || ob.Problem != "first sample of this queue" {
		t.Fatalf("counters above the seed: valid=%v reset=%v problem=%q, want a first sample", ob.Valid, ob.Metrics.Reset, ob.Problem)
	}
	if ob := o.Observe(snaps[6])[0]; !ob.Valid || math.Abs(ob.Metrics.Util-0.5) > 1e-9 {
		t.Fatalf("second sample: valid=%v util=%g, want true 0.5", ob.Valid, ob.Metrics.Util)
	}

	// the switch restarted: its counters began again
	o = NewObserver(ObserverConfig{})
	o.Seed(k, saved[k])
	if o.Len() != 1 {
		t.Errorf("seeded observer holds %d queues, want 1", o.Len())
	}
	re := snaps[2]
	re.TimeNs = snaps[6].TimeNs
	ob := o.Observe(re)[0]
	if ob.Valid || !ob.Metrics.Reset || !strings.HasPrefix(ob.Problem, ResetSinceLastRun+": tx_pkts went back from") {
		t.Fatalf("counters below the seed: valid=%v reset=%v problem=%q, want a reset naming tx_pkts", ob.Valid, ob.Metrics.Reset, ob.Problem)
	}
	next := snaps[3]
	next.TimeNs = re.TimeNs + 1_000_000
	if ob := o.Observe(next)[0]; !ob.Valid || ob.Metrics.Reset || math.Abs(ob.Metrics.Util-0.5) > 1e-9 {
		t.Fatalf("after the reset: valid=%v reset=%v util=%g, want measured from the reset sample", ob.Valid, ob.Metrics.Reset, ob.Metrics.Util)
	}

	// a seed never overrides a queue already sampled
	o.Seed(k, saved[k])
	after := snaps[4]
	after.TimeNs = next.TimeNs + 1_000_000
	if ob := o.Observe(after)[0]; !ob.Valid || ob.Metrics.Reset {
		t.Fatalf("seed over a sampled queue: valid=%v reset=%v problem=%q, want measured from the last sample", ob.Valid, ob.Metrics.Reset, ob.Problem)
	}
}

func TestCounterReset(t *testing.T) {
	o := NewObserver(ObserverConfig{})
	tr := traffic{util: 0.5, avgRefs: 1, maxRefs: 2, kminAt100: 50_000, kmaxAt100: 500_000, pmax: 0.2}
	snaps := series(tr, 100e9, 1_000_000, 3)
	observeAll(o, snaps[:3])
	// The switch reboots: counters restart near zero.
	re := snaps[3]
	re.Queues = append([]QueueSample(nil), re.Queues...)
	re.Queues[0].TxBytes = 1000
	re.Queues[0].TxPkts = 1
	ob := o.Observe(re)[0]
	if ob.Valid || !ob.Metrics.Reset || !strings.Contains(ob.Problem, "tx_pkts") {
		t.Fatalf("after counter reset: valid=%v reset=%v problem=%q", ob.Valid, ob.Metrics.Reset, ob.Problem)
	}
	if ob.Metrics.Util != 0 || ob.Features[FeatValid] != 0 || ob.Features[FeatUtil] != 0 {
		t.Fatalf("reset interval must carry no rates: util=%g features=%v", ob.Metrics.Util, ob.Features[:IntervalFeatures])
	}
	if r := Reward(ob.Metrics, DefaultRewardWeights()); r != 0 {
		t.Fatalf("reward of a reset interval = %g, want 0", r)
	}
	// Re-based: the next interval is measured from the reset sample.
	next := re
	next.TimeNs += 1_000_000
	next.Queues = append([]QueueSample(nil), re.Queues...)
	next.Queues[0].TxBytes = 1000 + 6_250_000 // 50% of 100G for 1 ms
	next.Queues[0].TxPkts = 2
	ob = o.Observe(next)[0]
	if !ob.Valid || math.Abs(ob.Metrics.Util-0.5) > 1e-9 {
		t.Fatalf("after re-base: valid=%v util=%g, want true 0.5", ob.Valid, ob.Metrics.Util)
	}
	if ob.Features[IntervalFeatures+FeatUtil] != 0 {
		t.Fatalf("history before the reset must be gone, block 1 util = %g", ob.Features[IntervalFeatures+FeatUtil])
	}

	// A timestamp going back is a reset too, whatever the counters say.
	back := next
	back.TimeNs -= 5
	back.Queues = append([]QueueSample(nil), next.Queues...)
	back.Queues[0].TxBytes += 10
	ob = o.Observe(back)[0]
	if ob.Valid || !ob.Metrics.Reset || !strings.Contains(ob.Problem, "timestamp") {
		t.Fatalf("timestamp back: valid=%v reset=%v problem=%q", ob.Valid, ob.Metrics.Reset, ob.Problem)
	}
}

func TestIdempotentResend(t *testing.T) {
	o := NewObserver(ObserverConfig{})
	tr := traffic{util: 0.9, mark: 0.1, avgRefs: 2, maxRefs: 5, kminAt100: 50_000, kmaxAt100: 500_000, pmax: 0.2}
	snaps := series(tr, 100e9, 1_000_000, 3)
	a := observeAll(o, snaps[:3])
	b := o.Observe(snaps[2]) // re-sent after a gNMI reconnect
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("re-sent snapshot changed the observation:\n%+v\n%+v", a, b)
	}
	c := o.Observe(snaps[3])[0]
	if !c.Valid || c.Metrics.IntervalNs != 1_000_000 {
		t.Fatalf("interval after a re-send = %d ns valid=%v, want 1000000 true", c.Metrics.IntervalNs, c.Valid)
	}
	if got := c.Features[2*IntervalFeatures+FeatUtil]; got == 0 {
		t.Fatalf("re-send must not add an interval; block 2 should hold the first interval, util %g", got)
	}
	if got := c.Features[3*IntervalFeatures+FeatUtil]; got != 0 {
		t.Fatalf("only 3 intervals measured, block 3 util = %g", got)
	}
}

func TestForget(t *testing.T) {
	o := NewObserver(ObserverConfig{})
	tr := traffic{util: 0.5, kminAt100: 50_000, kmaxAt100: 500_000, pmax: 0.2}
	snaps := series(tr, 100e9, 1_000_000, 2)
	observeAll(o, snaps[:2])
	other := snaps[0]
	other.Target = "other"
	other.Queues = append([]QueueSample(nil), other.Queues...)
	other.Queues[0].Key.Target = "other"
	o.Observe(other)
	if o.Len() != 2 {
		t.Fatalf("observer holds %d queues, want 2", o.Len())
	}
	o.Forget("sw")
	if o.Len() != 1 {
		t.Fatalf("after Forget: %d queues, want 1", o.Len())
	}
	if ob := o.Observe(snaps[2])[0]; ob.Valid || ob.Metrics.Reset {
		t.Fatalf("forgotten queue must start afresh: valid=%v reset=%v", ob.Valid, ob.Metrics.Reset)
	}
}

// TestRateAndIntervalInvariance: every feature but the rate itself
// (obs-v5's FeatRate) reads the same traffic the same at any rate and Δ.
func TestRateAndIntervalInvariance(t *testing.T) {
	tr := traffic{util: 0.73, mark: 0.31, avgRefs: 1.7, maxRefs: 6.2, pausedFr: 0.04, pausesPS: 3000,
		dropFrac: 0.002, kminAt100: 80_000, kmaxAt100: 1_200_000, pmax: 0.05}
	type run struct {
		rate float64
		dtNs int64
	}
	runs := []run{{100e9, 1_000_000}, {25e9, 1_000_000}, {400e9, 1_000_000}, {25e9, 1_000_000_000}, {400e9, 1_000_000_000}, {100e9, 50_000_000}}
	var ref []float32
	for _, r := range runs {
		o := NewObserver(ObserverConfig{})
		ob := observeAll(o, series(tr, r.rate, r.dtNs, 5))[0]
		if !ob.Valid {
			t.Fatalf("%g bps, Δ %d ns: not valid: %s", r.rate, r.dtNs, ob.Problem)
		}
		if ref == nil {
			ref = ob.Features
			continue
		}
		for i := range ref {
			if i == FeatRate {
				continue
			}
			if math.Abs(float64(ob.Features[i]-ref[i])) > 2e-4 {
				t.Errorf("%g bps, Δ %d ns: feature %d (%s) = %.5f, at 100G/1ms %.5f",
					r.rate, r.dtNs, i, FeatureNames()[i], ob.Features[i], ref[i])
			}
		}
	}
	if ref[FeatUtil] < 0.72 || ref[FeatUtil] > 0.74 {
		t.Fatalf("util feature %g, want 0.73", ref[FeatUtil])
	}
}

func TestFeaturesFiniteAndInRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	o := NewObserver(ObserverConfig{})
	const queues = 8
	samples := make([]QueueSample, queues)
	rates := []float64{10e9, 25e9, 100e9, 400e9, 800e9, 0, -1, math.NaN(), math.Inf(1)}
	wild := func() uint64 {
		switch rng.IntN(6) {
		case 0:
			return 0
		case 1:
			return math.MaxUint64 - uint64(rng.IntN(10))
		default:
			return uint64(rng.Int64N(1 << 40))
		}
	}
	for i := range samples {
		samples[i].Key = QueueKey{Target: "r", Port: fmt.Sprintf("Ethernet%d", i), Queue: 3}
		samples[i].RateBps = rates[i%5]
	}
	now := int64(0)
	for round := 0; round < 400; round++ {
		now += rng.Int64N(3_000_000_000) - 100_000_000 // sometimes backwards
		for i := range samples {
			s := &samples[i]
			if rng.IntN(10) == 0 {
				s.RateBps = rates[rng.IntN(len(rates))]
			}
			grow := func(c *uint64) {
				if rng.IntN(30) == 0 {
					*c = wild()
				} else {
					*c += uint64(rng.Int64N(1 << 34))
				}
			}
			for _, c := range []*uint64{&s.TxPkts, &s.TxBytes, &s.MarkedPkts, &s.MarkedBytes, &s.DropPkts, &s.DropBytes, &s.PauseTx, &s.PauseRx, &s.PausedNs} {
				grow(c)
			}
			s.CurQueueBytes = rng.Int64N(1<<36) - 1000
			s.MaxQueueBytes = rng.Int64N(1<<36) - 1000
			s.AvgQueueBytes = []float64{rng.Float64() * 1e9, -5, math.NaN(), math.Inf(1), 0}[rng.IntN(5)]
			s.Setting = Setting{KminBytes: rng.Int64N(1<<34) - 10, KmaxBytes: rng.Int64N(1 << 36),
				Pmax: []float64{rng.Float64(), 0, -1, math.NaN(), 1}[rng.IntN(5)]}
			s.XoffBytes = rng.Int64N(1<<30) - 100
		}
		for _, ob := range o.Observe(Snapshot{Target: "r", TimeNs: now, Queues: samples}) {
			if len(ob.Features) != NumFeatures {
				t.Fatalf("len(features) = %d", len(ob.Features))
			}
			for i, v := range ob.Features {
				lo := float32(0)
				if i == FeatKmin || i == FeatKmax || i == FeatKmaxOverXoff {
					lo = -1
				}
				if math.IsNaN(float64(v)) || v < lo || v > 1 {
					t.Fatalf("round %d %s: feature %d (%s) = %g outside [%g, 1]", round, ob.Key, i, FeatureNames()[i], v, lo)
				}
			}
			m := ob.Metrics
			for name, v := range map[string]float64{"util": m.Util, "mark": m.MarkFrac, "avgq": m.AvgQueueFrac, "maxq": m.MaxQueueFrac,
				"pauserx": m.PauseRxFrac, "pausetx": m.PauseTxFrac, "drop": m.DropFrac, "incast": m.Incast, "avgdelay": m.AvgDelayNs, "maxdelay": m.MaxDelayNs} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("round %d %s: metric %s = %g (must be finite and >= 0)", round, ob.Key, name, v)
				}
			}
			if ob.Valid != (m.IntervalNs > 0) {
				t.Fatalf("valid=%v but interval %d", ob.Valid, m.IntervalNs)
			}
			if r := Reward(m, DefaultRewardWeights()); math.IsNaN(r) || math.IsInf(r, 0) || r > 1 {
				t.Fatalf("reward %g out of range", r)
			}
		}
	}
	if len(FeatureNames()) != NumFeatures {
		t.Fatalf("FeatureNames has %d names, want %d", len(FeatureNames()), NumFeatures)
	}
}

func BenchmarkObserve10kQueues(b *testing.B) {
	const n = 10_000
	snap := Snapshot{Target: "leaf0", Queues: make([]QueueSample, n)}
	for i := range snap.Queues {
		snap.Queues[i] = QueueSample{Key: QueueKey{Target: "leaf0", Port: fmt.Sprintf("Ethernet%d", i/2), Queue: 3 + i%2},
			RateBps: 100e9, Setting: Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}, XoffBytes: 2_000_000}
	}
	o := NewObserver(ObserverConfig{})
	b.ReportAllocs()
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		snap.TimeNs += 1_000_000
		for i := range snap.Queues {
			q := &snap.Queues[i]
			q.TxBytes += 9_000_000
			q.TxPkts += 9000
			q.MarkedBytes += 100_000
			q.AvgQueueBytes = float64(i % 300_000)
			q.MaxQueueBytes = int64(i%300_000) * 3
		}
		o.Observe(snap)
	}
}

func TestPeerFeatures(t *testing.T) {
	tr := traffic{util: 0.5, mark: 0.1, avgRefs: 1, maxRefs: 2, kminAt100: 400_000, kmaxAt100: 1_600_000, pmax: 0.2}
	for _, c := range []struct {
		peer            Peer
		fabric, knownFl float32
	}{{PeerSwitch, 1, 1}, {PeerHost, 0, 1}, {PeerUnknown, 0, 0}} {
		snaps := series(tr, 100e9, 1_000_000, 2)
		for i := range snaps {
			snaps[i].Queues[0].Peer = c.peer
		}
		ob := observeAll(NewObserver(ObserverConfig{}), snaps)[0]
		if ob.Peer != c.peer || ob.Features[FeatFabric] != c.fabric || ob.Features[FeatPeerKnown] != c.knownFl {
			t.Errorf("peer %q: observation peer %q, fabric %g, peer_known %g; want %q, %g, %g", c.peer, ob.Peer,
				ob.Features[FeatFabric], ob.Features[FeatPeerKnown], c.peer, c.fabric, c.knownFl)
		}
	}
	if n := FeatureNames(); len(n) != NumFeatures || n[FeatFabric] != "fabric" || n[FeatPeerKnown] != "peer_known" {
		t.Fatalf("feature names %v do not match the layout", n[HistoryLen*IntervalFeatures:])
	}
}

// Transmitted bytes no link could carry in the interval (a counter that
// jumped, or was read as zero in between; a speed below the link's) are
// malformed counters, not traffic: the interval is left out, saying so
// (the agent acted on "util 12035900%"), and the next is measured from
// this sample. Timestamp jitter a little above the line rate is kept.
func TestImpossibleCountersLeftOut(t *testing.T) {
	o := NewObserver(ObserverConfig{})
	tr := traffic{util: 0.5, avgRefs: 1, maxRefs: 2, kminAt100: 50_000, kmaxAt100: 500_000, pmax: 0.2}
	snaps := series(tr, 100e9, 1_000_000, 4)
	observeAll(o, snaps[:3])
	jump := snaps[3]
	jump.Queues = append([]QueueSample(nil), jump.Queues...)
	jump.Queues[0].TxBytes = snaps[2].Queues[0].TxBytes + 1000*12_500_000 // 1000 times 100G for 1 ms
	ob := o.Observe(jump)[0]
	if ob.Valid || ob.Metrics.Util != 0 || !strings.Contains(ob.Problem, "malformed counters") || !strings.Contains(ob.Problem, "100000%") ||
		!strings.Contains(ob.Problem, "100Gbps") {
		t.Fatalf("impossible interval: valid=%v util=%g problem=%q", ob.Valid, ob.Metrics.Util, ob.Problem)
	}
	next := snaps[4]
	next.Queues = append([]QueueSample(nil), next.Queues...)
	next.Queues[0].TxBytes = jump.Queues[0].TxBytes + 6_250_000
	if ob = o.Observe(next)[0]; !ob.Valid || math.Abs(ob.Metrics.Util-0.5) > 1e-9 {
		t.Fatalf("after it: valid=%v util=%g problem=%q", ob.Valid, ob.Metrics.Util, ob.Problem)
	}
	fast := next
	fast.TimeNs += 1_000_000
	fast.Queues = append([]QueueSample(nil), next.Queues...)
	fast.Queues[0].TxBytes += 12_500_000 * 13 / 10 // 130%: a sample taken late
	if ob = o.Observe(fast)[0]; !ob.Valid || math.Abs(ob.Metrics.Util-1.3) > 1e-9 {
		t.Fatalf("jitter: valid=%v util=%g problem=%q", ob.Valid, ob.Metrics.Util, ob.Problem)
	}
}
