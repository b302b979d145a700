package policy

import (
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
)

var qk = env.QueueKey{Target: "leaf0", Port: "Ethernet4", Queue: 3}

// notInPlay, when set, leaves drive's queues without a peak.
var notInPlay bool

// drive runs p for steps intervals on one queue whose interval metrics are
// land(setting) (with a peak above every Kmin unless land gives one); it
// returns the decisions.
func drive(p Policy, start env.Setting, rate float64, steps int, land func(env.Setting) env.Metrics) []Decision {
	cur := start
	var out []Decision
	for i := 0; i < steps; i++ {
		m := land(cur)
		m.IntervalNs = 1_000_000
		if m.MaxDelayNs == 0 && !notInPlay {
			m.MaxDelayNs = 1e6 // a 1 ms peak: every Kmin is reached, ECN is in play
		}
		d := p.Decide([]env.Observation{{Key: qk, RateBps: rate, Current: cur, Metrics: m, Valid: true}})[0]
		out = append(out, d)
		cur = d.Setting
	}
	return out
}

// gridLandscape pays 0.9 at grid point (6, 1, 0) and 0.02 less per grid
// step away along any axis.
func gridLandscape(rate float64) func(env.Setting) env.Metrics {
	c := env.DefaultCatalogue()
	return func(s env.Setting) env.Metrics {
		i, j, l, _ := c.Grid(c.Nearest(s, rate))
		d := math.Abs(float64(i-6)) + math.Abs(float64(j-1)) + math.Abs(float64(l-0))
		return env.Metrics{Util: 0.9 - 0.02*d}
	}
}

func TestAdaptiveClimbsGridLandscape(t *testing.T) {
	c := env.DefaultCatalogue()
	for _, rate := range []float64{25e9, 100e9, 400e9} {
		a := NewAdaptive(AdaptiveConfig{})
		start := c.Setting(c.Absolute(0, 0, 0), rate, env.Setting{HeadroomBytes: 77})
		ds := drive(a, start, rate, 200, gridLandscape(rate))
		held, ok := a.Held(qk)
		if !ok {
			t.Fatal("no state for the queue")
		}
		if i, j, l, _ := c.Grid(c.Nearest(held, rate)); i != 6 || j != 1 || l != 0 {
			t.Fatalf("%g bps: held %+v = grid (%d,%d,%d), want the optimum (6,1,0)", rate, held, i, j, l)
		}
		want := c.Setting(c.Absolute(6, 1, 0), rate, env.Setting{})
		if held.KmaxBytes != want.KmaxBytes || held.KminBytes != want.KminBytes || held.Pmax != want.Pmax {
			t.Fatalf("%g bps: held %+v, want %+v", rate, held, want)
		}
		// Once converged it holds: the last decisions probe at most now
		// and then, and every decision keeps the headroom.
		probes := 0
		for _, d := range ds[150:] {
			if d.Action != env.ActionHold && d.Action != -1 {
				probes++
			}
		}
		if probes > 8 {
			t.Fatalf("%g bps: %d probes in the last 50 intervals after convergence", rate, probes)
		}
		for _, d := range ds {
			if d.Setting.HeadroomBytes != 77 || d.Setting.KminBytes > d.Setting.KmaxBytes {
				t.Fatalf("decision %+v: headroom lost or kmin > kmax", d)
			}
		}
	}
}

func TestAdaptiveRealisticKmax(t *testing.T) {
	// Utilisation grows with Kmax and saturates; the queue grows with it.
	const rate = 100e9
	ref := rate / 8 * env.DefaultRefRTT.Seconds()
	land := func(s env.Setting) env.Metrics {
		k := float64(s.KmaxBytes)
		return env.Metrics{Util: 1 - math.Exp(-k/400e3), AvgQueueFrac: 0.5 * k / ref, MaxQueueFrac: k / ref}
	}
	c := env.DefaultCatalogue()
	w := env.DefaultRewardWeights()
	// Brute force: the best Kmax level with the start's kmin ratio and pmax.
	best, bestR := -1, math.Inf(-1)
	for i := range c.KmaxLevels() {
		if r := env.Reward(func() env.Metrics {
			m := land(c.Setting(c.Absolute(i, 0, 1), rate, env.Setting{}))
			m.IntervalNs = 1
			return m
		}(), w); r > bestR {
			best, bestR = i, r
		}
	}
	if best != 10 { // 1.292 MB: 1 - e^-3.23 - 1.4e-7 * 1.292e6 = 0.779
		t.Fatalf("landscape optimum at level %d, want 10 (1.292MB)", best)
	}
	a := NewAdaptive(AdaptiveConfig{})
	start := env.Setting{KminBytes: 50_000, KmaxBytes: 100_000, Pmax: 0.01} // grid (0, 0, 1)
	ds := drive(a, start, rate, 120, land)
	held, _ := a.Held(qk)
	if held.KmaxBytes != c.KmaxLevels()[best] {
		t.Fatalf("held kmax %d, want the best level %d (reward %.4f)", held.KmaxBytes, c.KmaxLevels()[best], bestR)
	}
	// Reasons an engineer can read: a kept raise names the gain.
	var kept, back bool
	for _, d := range ds {
		kept = kept || (strings.HasPrefix(d.Reason, "kmax ") && strings.Contains(d.Reason, "after last raise; probing kmax"))
		back = back || strings.Contains(d.Reason, "stepping back")
	}
	if !kept || !back {
		t.Fatalf("reasons lack a kept raise (%v) or a step back (%v)", kept, back)
	}
}

func TestAdaptiveStepsBackFromWorse(t *testing.T) {
	// Every move is worse: after a probe the policy returns to the start.
	start := env.Setting{KminBytes: 387_000, KmaxBytes: 774_000, Pmax: 0.01}
	land := func(s env.Setting) env.Metrics {
		if s == start {
			return env.Metrics{Util: 0.9}
		}
		return env.Metrics{Util: 0.5}
	}
	a := NewAdaptive(AdaptiveConfig{Settle: 1, ProbeEvery: 5})
	ds := drive(a, start, 100e9, 40, land)
	if ds[0].Setting == start || ds[0].Confidence != 0.6 || !strings.Contains(ds[0].Reason, "probing kmax 774KB→1MB") {
		t.Fatalf("first decision %+v, want a kmax raise probe", ds[0])
	}
	if ds[1].Setting != start || !strings.Contains(ds[1].Reason, "kmax 1MB→774KB: reward -0.400 after last raise (") {
		t.Fatalf("second decision %+v, want a step back", ds[1])
	}
	// Every probe is followed by a return; the queue spends most of the
	// time at start, and after a full round of the axes it waits.
	away := 0
	for i, d := range ds {
		if d.Setting != start {
			away++
			if i+1 < len(ds) && ds[i+1].Setting != start {
				t.Fatalf("decisions %d and %d both away from the start", i, i+1)
			}
		}
	}
	// A round is 4 probes (Kmax both ways; Kmin ratio and Pmax have two
	// levels each, so from here one way each), each followed by a step
	// back, then at least 5 intervals of waiting.
	var rounds [][]string
	last := -100
	for i, d := range ds {
		if d.Setting == start {
			continue
		}
		if i-last > 2 {
			if len(rounds) > 0 && i-last < 7 {
				t.Fatalf("interval %d: a new round %d intervals after the last probe, want a wait of at least 5", i, i-last-1)
			}
			rounds = append(rounds, nil)
		}
		last = i
		_, move, _ := strings.Cut(d.Reason, "probing ")
		rounds[len(rounds)-1] = append(rounds[len(rounds)-1], move)
	}
	want := []string{"kmax 774KB→1MB", "kmax 774KB→599KB", "kmin 387KB→696.6KB", "pmax 1%→0.3%"}
	if len(rounds) < 3 {
		t.Fatalf("%d rounds of probes in 40 intervals, want at least 3: %v", len(rounds), rounds)
	}
	for r, moves := range rounds[:len(rounds)-1] {
		got := append([]string(nil), moves...)
		sort.Strings(got)
		w := append([]string(nil), want...)
		sort.Strings(w)
		if strings.Join(got, ",") != strings.Join(w, ",") {
			t.Fatalf("round %d probed %v, want each of %v once", r, moves, want)
		}
	}
	if away < 12 || away > 13 {
		t.Fatalf("%d probes in 40 intervals, want 12-13", away)
	}
	held, _ := a.Held(qk)
	if held != start {
		t.Fatalf("held %+v, want the start %+v", held, start)
	}
}

func TestAdaptiveDeterministicAndHolds(t *testing.T) {
	land := gridLandscape(100e9)
	start := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	d1 := drive(NewAdaptive(AdaptiveConfig{}), start, 100e9, 80, land)
	d2 := drive(NewAdaptive(AdaptiveConfig{}), start, 100e9, 80, land)
	if !reflect.DeepEqual(d1, d2) {
		t.Fatal("same inputs, different decisions")
	}

	a := NewAdaptive(AdaptiveConfig{})
	cur := env.Setting{KminBytes: 1, KmaxBytes: 2, Pmax: 0.5}
	ds := a.Decide([]env.Observation{
		{Key: qk, RateBps: 100e9, Current: cur, Valid: false, Problem: "counter reset: tx_bytes went back"},
		{Key: env.QueueKey{Target: "x"}, RateBps: math.NaN(), Current: cur, Valid: true, Metrics: env.Metrics{IntervalNs: 1}},
	})
	if ds[0].Setting != cur || !strings.Contains(ds[0].Reason, "counter reset") || ds[1].Setting != cur || ds[1].Confidence != 0 {
		t.Fatalf("invalid observations must hold: %+v", ds)
	}

	// A change from outside (e.g. an operator) restarts the search there.
	a = NewAdaptive(AdaptiveConfig{Settle: 1})
	dd := drive(a, start, 100e9, 1, land)
	other := env.Setting{KminBytes: 50_000, KmaxBytes: 500_000, Pmax: 0.05}
	if dd[0].Setting == start {
		t.Fatalf("settle 1: first decision should probe, got %+v", dd[0])
	}
	d := a.Decide([]env.Observation{{Key: qk, RateBps: 100e9, Current: other, Valid: true, Metrics: env.Metrics{IntervalNs: 1, Util: 0.5, MaxDelayNs: 1e6}}})[0]
	if d.Setting != other || !strings.Contains(d.Reason, "changed outside") {
		t.Fatalf("outside change: %+v", d)
	}
	if h, _ := a.Held(qk); h != other {
		t.Fatalf("held %+v after outside change, want %+v", h, other)
	}
	// Idle intervals say nothing about the setting: they are not counted.
	b := NewAdaptive(AdaptiveConfig{Settle: 1})
	idle := env.Observation{Key: qk, RateBps: 100e9, Current: start, Valid: true, Metrics: env.Metrics{IntervalNs: 1, Util: 0.01}}
	busy := idle
	busy.Metrics.Util, busy.Metrics.MaxDelayNs = 0.7, 1e6
	for i := 0; i < 3; i++ {
		if d := b.Decide([]env.Observation{idle})[0]; d.Setting != start || !strings.HasPrefix(d.Reason, "idle (util 0.010)") {
			t.Fatalf("idle interval %d: %+v, want a hold", i, d)
		}
	}
	if d := b.Decide([]env.Observation{busy})[0]; d.Setting == start || !strings.Contains(d.Reason, "baseline reward 0.700") {
		t.Fatalf("first busy interval: %+v, want a probe judged on 0.700 alone", d)
	}
	a.Forget("leaf0")
	if _, ok := a.Held(qk); ok {
		t.Fatal("Forget kept the queue")
	}
}

func BenchmarkAdaptiveDecide10kQueues(b *testing.B) {
	const n = 10_000
	obs := make([]env.Observation, n)
	for i := range obs {
		obs[i] = env.Observation{Key: env.QueueKey{Target: "leaf0", Port: "Ethernet" + strings.Repeat("x", i%7), Queue: i},
			RateBps: 100e9, Current: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}, Valid: true,
			Metrics: env.Metrics{IntervalNs: 1_000_000, Util: 0.8, AvgQueueFrac: 1}}
	}
	a := NewAdaptive(AdaptiveConfig{})
	b.ReportAllocs()
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		ds := a.Decide(obs)
		for i := range obs {
			obs[i].Current = ds[i].Setting
			obs[i].Metrics.Util = 0.5 + 0.4*float64((it+i)%5)/5
		}
	}
}

// The search never probes Kmax past env.KmaxXoffShare of the PG's XOFF,
// even where the landscape pays more further up: that is where the guard
// would have to repair it.
func TestAdaptiveNeverProbesIntoXoff(t *testing.T) {
	c := env.DefaultCatalogue()
	const rate = 100e9
	start := c.Setting(c.Absolute(0, 0, 0), rate, env.Setting{})
	xoff := start.KmaxBytes * 4
	limit := int64(float64(xoff) * env.KmaxXoffShare)
	a := NewAdaptive(AdaptiveConfig{})
	cur := start
	sawUp := false
	for i := 0; i < 300; i++ {
		m := env.Metrics{IntervalNs: 1_000_000, Util: 0.5 + float64(cur.KmaxBytes)/1e9, MarkFrac: 0.01} // deeper Kmax pays more
		d := a.Decide([]env.Observation{{Key: qk, RateBps: rate, Current: cur, Metrics: m, Valid: true, XoffBytes: xoff}})[0]
		if d.Setting.KmaxBytes > limit {
			t.Fatalf("interval %d: Kmax %d probed past %g of XOFF %d (%d): %s", i, d.Setting.KmaxBytes, env.KmaxXoffShare, xoff, limit, d.Reason)
		}
		sawUp = sawUp || d.Setting.KmaxBytes > start.KmaxBytes
		cur = d.Setting
	}
	if !sawUp {
		t.Fatal("the search never raised Kmax: this test checks nothing")
	}
}

// A queue that neither marks nor reaches either Kmin is not probed: no
// ECN setting acts on it, and the reward moves with the traffic alone;
// once its queue reaches Kmin, the search starts.
func TestAdaptiveProbesOnlyWhereECNIsInPlay(t *testing.T) {
	start := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	a := NewAdaptive(AdaptiveConfig{})
	o := env.Observation{Key: qk, RateBps: 100e9, Current: start, Valid: true,
		Metrics: env.Metrics{IntervalNs: 1_000_000, Util: 0.6, MaxDelayNs: 8}} // a 100 B peak
	for i := 0; i < 30; i++ {
		o.Metrics.Util = 0.3 + 0.5*float64(i%3)/2 // noisy traffic
		if d := a.Decide([]env.Observation{o})[0]; d.Setting != start {
			t.Fatalf("interval %d: %+v, want a hold", i, d)
		} else if i > 2 && !strings.Contains(d.Reason, "ECN not in play") {
			t.Fatalf("interval %d: reason %q", i, d.Reason)
		}
	}
	o.Metrics.MaxDelayNs = 64_000 // an 800 KB peak: above Kmin
	probed := false
	for i := 0; i < 3 && !probed; i++ {
		probed = a.Decide([]env.Observation{o})[0].Setting != start
	}
	if !probed {
		t.Fatal("no probe once the queue reached Kmin")
	}
}

// A probe moves one knob: probing Kmax from a setting off the catalogue's
// grid (Pmax 20%, Kmin 400 KB) keeps its Pmax and Kmin.
func TestAdaptiveProbesOneKnob(t *testing.T) {
	start := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	ds := drive(NewAdaptive(AdaptiveConfig{}), start, 100e9, 2, func(env.Setting) env.Metrics { return env.Metrics{Util: 0.8} })
	d := ds[1]
	if d.Setting.KmaxBytes == start.KmaxBytes || d.Setting.Pmax != start.Pmax || d.Setting.KminBytes != start.KminBytes {
		t.Fatalf("probe %+v from %+v: want only kmax moved", d.Setting, start)
	}
}

// Every knob a decision of the adaptive policy moves is named in its
// reason, from and to: a Kmax probe that drags Kmin along, and the step
// back from it, name both.
func TestAdaptiveReasonNamesEveryKnob(t *testing.T) {
	c := env.DefaultCatalogue()
	start := env.Setting{KminBytes: 700_000, KmaxBytes: 800_000, Pmax: 0.2}
	cur, moves := start, 0
	for _, land := range []func(env.Setting) env.Metrics{gridLandscape(100e9), func(env.Setting) env.Metrics { return env.Metrics{Util: 0.8} }} {
		cur = start
		a := NewAdaptive(AdaptiveConfig{Catalogue: c})
		for _, d := range drive(a, start, 100e9, 300, land) {
			if d.Setting.KminBytes != cur.KminBytes || d.Setting.KmaxBytes != cur.KmaxBytes || d.Setting.Pmax != cur.Pmax {
				moves++
				for _, part := range strings.Split(env.DescribeChange(cur, d.Setting), ", ") {
					if !strings.Contains(d.Reason, part) {
						t.Errorf("move %s: reason %q does not name %q", env.DescribeChange(cur, d.Setting), d.Reason, part)
					}
				}
			}
			cur = d.Setting
		}
	}
	if moves == 0 {
		t.Fatal("the adaptive policy never moved")
	}
}
