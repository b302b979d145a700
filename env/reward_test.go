package env

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestRewardOrdering(t *testing.T) {
	w := DefaultRewardWeights()
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	base := Metrics{IntervalNs: 1_000_000, Util: 0.95, MarkFrac: 0.1, AvgQueueFrac: 0.2, MaxQueueFrac: 1}
	r := func(m Metrics) float64 { return Reward(m, w) }
	with := func(f func(*Metrics)) Metrics { m := base; f(&m); return m }

	// Exact value: 0.95 - 0.05*0.2 - 0.01*1 - 1*0.1*(1-0.95).
	if got := r(base); math.Abs(got-0.925) > 1e-12 {
		t.Fatalf("reward(base) = %g, want 0.925", got)
	}
	cases := []struct {
		name          string
		better, worse Metrics
	}{
		{"one drop is worse than none", base, with(func(m *Metrics) { m.DropFrac = 1e-7 })},
		{"more drops are worse", with(func(m *Metrics) { m.DropFrac = 1e-5 }), with(func(m *Metrics) { m.DropFrac = 1e-2 })},
		{"any pause is worse than none", base, with(func(m *Metrics) { m.PauseRxFrac = 1e-6 })},
		{"pause frames sent are punished", base, with(func(m *Metrics) { m.PauseTxFrac = 0.01 })},
		{"longer pause is worse", with(func(m *Metrics) { m.PauseRxFrac = 0.01 }), with(func(m *Metrics) { m.PauseRxFrac = 0.2 })},
		{"short queue beats long queue at the same util", base, with(func(m *Metrics) { m.AvgQueueFrac = 4; m.MaxQueueFrac = 8 })},
		{"full link with short queue beats a half-idle link with no queue", base, with(func(m *Metrics) { m.Util = 0.5; m.AvgQueueFrac = 0; m.MaxQueueFrac = 0 })},
		{"95% with 4 µs beats 100% with 40 µs", base, with(func(m *Metrics) { m.Util = 1; m.AvgQueueFrac = 2; m.MaxQueueFrac = 3 })},
		{"marking with spare capacity is worse than not marking", with(func(m *Metrics) { m.Util = 0.6; m.MarkFrac = 0 }), with(func(m *Metrics) { m.Util = 0.6; m.MarkFrac = 0.5 })},
		{"marking at full link costs nothing extra", with(func(m *Metrics) { m.Util = 1; m.MarkFrac = 0.5 }), with(func(m *Metrics) { m.Util = 0.99; m.MarkFrac = 0 })},
		{"a drop costs more than any throughput", with(func(m *Metrics) { m.Util = 0; m.AvgQueueFrac = 0; m.MaxQueueFrac = 0; m.MarkFrac = 0 }), with(func(m *Metrics) { m.Util = 1; m.DropFrac = 1e-9 })},
	}
	for _, c := range cases {
		if rb, rw := r(c.better), r(c.worse); !(rb > rw) {
			t.Errorf("%s: reward %.4f should exceed %.4f", c.name, rb, rw)
		}
	}
	// The delay term is the same for the same delay whatever the rate:
	// AvgQueueFrac is already rate-normalised, so check it via the Observer.
	for _, rate := range []float64{25e9, 400e9} {
		o := NewObserver(ObserverConfig{})
		tr := traffic{util: 0.9, avgRefs: 3, maxRefs: 5, kminAt100: 1, kmaxAt100: 2, pmax: 1}
		ob100 := observeAll(NewObserver(ObserverConfig{}), series(tr, 100e9, 1_000_000, 2))[0]
		ob := observeAll(o, series(tr, rate, 1_000_000, 2))[0]
		if a, b := r(ob.Metrics), r(ob100.Metrics); math.Abs(a-b) > 1e-6 {
			t.Errorf("reward at %g bps = %g, at 100G %g: same delay must cost the same", rate, a, b)
		}
		if want := 0.9 - 0.05*3 - 0.01*5; math.Abs(r(ob.Metrics)-want) > 1e-6 {
			t.Errorf("reward at %g bps = %g, want %g", rate, r(ob.Metrics), want)
		}
	}
	if got := r(Metrics{}); got != 0 {
		t.Fatalf("unmeasured interval reward = %g, want 0", got)
	}
	if got := r(Metrics{IntervalNs: 1, Util: math.NaN(), AvgQueueFrac: math.Inf(1), DropFrac: math.NaN()}); math.IsNaN(got) || math.IsInf(got, 0) {
		t.Fatalf("reward of garbage = %g, want finite", got)
	}
}

func TestRewardWeightsValidate(t *testing.T) {
	w := DefaultRewardWeights()
	w.Pause = -1
	if err := w.Validate(); err == nil || !contains(err.Error(), "pause") {
		t.Fatalf("negative pause weight: err = %v, want one naming pause", err)
	}
	w = DefaultRewardWeights()
	w.Delay = math.Inf(1)
	if err := w.Validate(); err == nil || !contains(err.Error(), "delay") {
		t.Fatalf("infinite delay weight: err = %v", err)
	}
}

// TestRewardWeightNames: every JSON name reaches its own field, and
// Validate refuses each weight by that name when it is negative.
func TestRewardWeightNames(t *testing.T) {
	names := RewardWeightNames()
	if len(names) != 14 || names[0] != "throughput" || names[len(names)-1] != "change" {
		t.Fatalf("names %v", names)
	}
	seen := map[RewardWeights]string{}
	for _, n := range names {
		var w RewardWeights
		dec := json.NewDecoder(strings.NewReader(`{"` + n + `": 2}`))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&w); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		key := w
		key.FabricThroughput = nil // a pointer: compare what it points at
		if w.FabricThroughput != nil {
			key.Throughput = -*w.FabricThroughput
		}
		if prev, ok := seen[key]; ok || key == (RewardWeights{}) {
			t.Fatalf("%s sets the same field as %q (or none)", n, prev)
		}
		seen[key] = n
		if err := json.Unmarshal([]byte(`{"`+n+`": -1}`), &w); err != nil {
			t.Fatal(err)
		}
		if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "weight "+n+" ") {
			t.Fatalf("negative %s: err = %v", n, err)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestRewardAtFabricThroughput(t *testing.T) {
	w := DefaultRewardWeights()
	m := Metrics{IntervalNs: 1_000_000, Util: 0.8, AvgQueueFrac: 1, MaxQueueFrac: 2}
	plain := Reward(m, w)
	// Unset, a fabric port scores as any other.
	for _, p := range []Peer{PeerUnknown, PeerHost, PeerSwitch} {
		if got := RewardAt(m, p, w); got != plain {
			t.Errorf("peer %q without fabric_throughput: %g, want %g", p, got, plain)
		}
	}
	zero := 0.0
	w.FabricThroughput = &zero
	if got, want := RewardAt(m, PeerSwitch, w), plain-0.8; math.Abs(got-want) > 1e-12 {
		t.Errorf("fabric port with fabric_throughput 0: %g, want %g (no throughput paid)", got, want)
	}
	for _, p := range []Peer{PeerUnknown, PeerHost} {
		if got := RewardAt(m, p, w); got != plain {
			t.Errorf("peer %q with fabric_throughput 0: %g, want %g (host ports keep throughput)", p, got, plain)
		}
	}
	bad := -1.0
	w.FabricThroughput = &bad
	if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "fabric_throughput") {
		t.Errorf("negative fabric_throughput: %v, want an error naming it", err)
	}
}

// WithoutQueueing leaves the throughput and over-mark terms and nothing of
// the queue, tail, pause and drop terms.
func TestWithoutQueueing(t *testing.T) {
	w := RewardWeights{Throughput: 1, OverMark: 0.5, Delay: 0.1, TailDelay: 0.02, Pause: 1, PauseEvent: 0.2, Drop: 1, DropEvent: 0.5}
	m := Metrics{IntervalNs: 1e6, Util: 0.6, MarkFrac: 0.4, AvgQueueFrac: 3, MaxQueueFrac: 8, PauseRxFrac: 0.1, PauseTxFrac: 0.2, DropFrac: 1e-3}
	if got, want := Reward(m.WithoutQueueing(), w), 0.6-0.5*0.4*0.4; math.Abs(got-want) > 1e-12 {
		t.Fatalf("throughput part %g, want %g", got, want)
	}
	if got := Reward(m, w) - Reward(m.WithoutQueueing(), w); !(got < -0.1*3-0.02*8-0.2-0.2) {
		t.Fatalf("queueing part %g lacks the queue, tail, pause and drop terms", got)
	}
}
