package twin

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ecntune/ecntune/env"
)

func sample(t int64, port string, peer env.Peer, m env.Metrics) Sample {
	m.IntervalNs = 1000
	return Sample{TimeNs: t, Key: env.QueueKey{Target: "sw", Port: port, Queue: 3}, RateBps: 100e9, Peer: peer, Metrics: m}
}

func TestCompute(t *testing.T) {
	var ss []Sample
	for i := range 10 {
		ti := int64(i)
		// host port a: util 0.1..1.0, marks a fifth of its bytes; b: idle.
		ss = append(ss, sample(ti, "a", env.PeerHost, env.Metrics{Util: float64(i+1) / 10, MarkFrac: 0.2, MaxQueueFrac: float64(i), Incast: 0.9}))
		ss = append(ss, sample(ti, "b", env.PeerUnknown, env.Metrics{}))
		ss = append(ss, sample(ti, "up", env.PeerSwitch, env.Metrics{Util: 0.5, PauseRxFrac: 0.1}))
	}
	ss = append(ss, Sample{Key: env.QueueKey{Port: "a"}, Peer: env.PeerHost, Metrics: env.Metrics{Util: 1}}) // not measured
	st := Compute(ss)
	h, f := st[RoleHost], st[RoleFabric]
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %g, want %g", name, got, want)
		}
	}
	near("host util_mean", h["util_mean"], 0.275)
	near("host util_p50", h["util_p50"], 0.05)      // half the samples are the idle port's
	near("host mark", h["mark"], 0.2)               // byte-weighted: the idle port marks nothing
	near("host maxq_top", h["maxq_top"], 4.5)       // the deepest port each interval: 0..9
	near("host incast_frac", h["incast_frac"], 0.5) // a's intervals
	near("fabric util_p90", f["util_p90"], 0.5)
	near("fabric pause_rx", f["pause_rx"], 0.1)
	near("fabric util_cv", f["util_cv"], 0)
	if got := Loss(st, st, nil, 1); got != 0 {
		t.Errorf("Loss against itself = %g", got)
	}
	other := Compute(ss[:0:0])
	if l := Loss(st, other, Noise(ss), 1); !(l > 1) {
		t.Errorf("Loss against nothing = %g, want large", l)
	}
	errs := Errors(st, Stats{RoleHost: {"util_mean": 0.55}})
	near("error of util_mean at twice", errs[RoleHost]["util_mean"], 1)
	near("error of a missing pause_rx", errs[RoleFabric]["pause_rx"], -1)
}

func TestSegment(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	mk := func(levels ...float64) Timeline {
		var ss []Sample
		for i, u := range levels {
			for p := range 4 {
				v := math.Max(0, u+0.05*rng.NormFloat64())
				ss = append(ss, sample(int64(i), string(rune('a'+p)), env.PeerHost, env.Metrics{Util: v, MaxQueueFrac: 2 * v}))
			}
		}
		return NewTimeline(ss)
	}
	flat := make([]float64, 40)
	for i := range flat {
		flat[i] = 0.4
	}
	if ws := mk(flat...).Segment(3); len(ws) != 1 {
		t.Errorf("steady traffic split into %v", ws)
	}
	shift := append(append([]float64(nil), flat[:25]...), flat[:15]...)
	for i := 25; i < 40; i++ {
		shift[i] = 0.7
	}
	ws := mk(shift...).Segment(3)
	if len(ws) != 2 || ws[0].To < 24 || ws[0].To > 26 {
		t.Errorf("a shift at 25 split into %v", ws)
	}
	// A burst of one interval is no change of traffic, and does not move
	// where one is placed: a shift at 20 of 60 intervals and a spike of
	// marks and watermarks at 40 (placed by the means, the split went to
	// 29, the last at which the medians still differed enough).
	var ss []Sample
	for i := range 60 {
		u := 0.3
		if i >= 20 {
			u = 0.45
		}
		for p := range 4 {
			v := math.Max(0, u+0.05*rng.NormFloat64())
			m := env.Metrics{Util: v, MaxQueueFrac: 2 * v}
			if i == 40 {
				m.MaxQueueFrac, m.MarkFrac = 3, 0.5
			}
			ss = append(ss, sample(int64(i), string(rune('a'+p)), env.PeerHost, m))
		}
	}
	if ws := NewTimeline(ss).Segment(3); len(ws) != 2 || ws[0].To < 19 || ws[0].To > 21 {
		t.Errorf("a shift at 20 and a burst at 40 split into %v", ws)
	}
}

// The loss of the true workload is about 1 whatever the number of runs a
// candidate's statistics pool: an observation and a candidate of the same
// traffic differ by the noise of one run and that of the pooled runs.
// (With √2 for both, as before, two pooled runs scored 0.75.)
func TestLossOfTheTruthIsAboutOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	const sigma, trials = 0.1, 4000
	noise := Stats{RoleHost: {}}
	for _, d := range statDefs {
		noise[RoleHost][d.Name] = sigma * d.Scale * 20 // well above the floor of a tenth of the scale
	}
	draw := func() Stats {
		st := Stats{RoleHost: {}}
		for _, d := range statDefs {
			st[RoleHost][d.Name] = 10*d.Scale + noise[RoleHost][d.Name]*rng.NormFloat64()
		}
		return st
	}
	for _, runs := range []int{1, 2, 4} {
		sum := 0.0
		for range trials {
			obs, sim := draw(), Stats{RoleHost: {}}
			for k := range runs {
				for name, v := range draw()[RoleHost] {
					sim[RoleHost][name] += (v - sim[RoleHost][name]) / float64(k+1)
				}
			}
			sum += Loss(obs, sim, noise, runs)
		}
		if got := sum / trials; math.Abs(got-1) > 0.05 {
			t.Errorf("the true workload's mean loss over %d pooled runs = %.3f, want about 1", runs, got)
		}
	}
}
