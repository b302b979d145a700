package rl

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/cputime"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy/builtin"
)

// cpuTimer reports CPU nanoseconds per operation (and per observation when
// perOp > 0) as extra benchmark metrics.
type cpuTimer struct{ start int64 }

func startCPU(b *testing.B) *cpuTimer {
	b.ResetTimer()
	return &cpuTimer{start: cputime.Process().Nanoseconds()}
}

func (c *cpuTimer) report(b *testing.B, perOp int) {
	cpu := float64(cputime.Process().Nanoseconds()-c.start) / float64(b.N)
	if c.start == 0 || cpu <= 0 {
		return
	}
	b.ReportMetric(cpu, "cpu-ns/op")
	if perOp > 0 {
		b.ReportMetric(cpu/float64(perOp), "cpu-ns/obs")
	}
}

// benchNet is a network the benchmarks time: an embedded model's.
type benchNet struct {
	name string
	net  *Net
}

// shippedNets are the embedded models' networks (policy/builtin): the
// shapes that ship, read from the models themselves (44 features for the
// built-in model, 45 for the preference one, 57 for the 400G one; 83
// actions, act-v2), so that the benchmarks time what decides.
func shippedNets(tb testing.TB) []benchNet {
	tb.Helper()
	var nets []benchNet
	for _, get := range []func() (models.Model, error){builtin.Model, builtin.PreferenceModel, builtin.HighRateModel} {
		m, err := get()
		if err != nil {
			tb.Fatal(err)
		}
		net, err := UnmarshalNet(m.Weights)
		if err != nil {
			tb.Fatalf("%s: %v", m.Name, err)
		}
		nets = append(nets, benchNet{m.Name, net})
	}
	return nets
}

// shippedShape is the built-in model's input and output width, and its
// activation: the shape of the training benchmarks.
func shippedShape(tb testing.TB) Arch {
	return shippedNets(tb)[0].net.Arch()
}

// TestBenchmarksTimeShippedShapes: the decision and inference benchmarks
// time networks of the shapes the embedded models have, as their specs
// give them (they timed 48 features and 20 actions, against the 44 or 57
// features and 83 actions that ship).
func TestBenchmarksTimeShippedShapes(t *testing.T) {
	nets := shippedNets(t)
	if len(nets) != 3 {
		t.Fatalf("%d networks", len(nets))
	}
	for _, get := range []func() (models.Model, error){builtin.Model, builtin.PreferenceModel, builtin.HighRateModel} {
		m, err := get()
		if err != nil {
			t.Fatal(err)
		}
		in := env.ObsSpecFeatures(m.ObsSpec)
		if m.Hyper[models.HyperPreferenceScale] != "" {
			in++ // the preference P is an input
		}
		out := env.ActionSpecLen(m.ActSpec)
		if !slices.ContainsFunc(nets, func(b benchNet) bool {
			a := b.net.Arch()
			return b.name == m.Name && a.In == in && a.Out == out
		}) {
			t.Errorf("%s (%s/%s: %d features, %d actions) is not among the benchmarked networks", m.Name, m.ObsSpec, m.ActSpec, in, out)
		}
	}
	if a := shippedShape(t); a.In != env.ObsSpecFeatures("obs-v3") || a.Out != env.ActionSpecLen("act-v2") {
		t.Errorf("training benchmarks' shape %+v", a)
	}
}

// benchInference times the forward pass of an embedded model's network on
// n observations, or of a network of its shape with other hidden layers.
func benchInference(b *testing.B, n int, hidden []int) {
	for _, s := range shippedNets(b) {
		b.Run(s.name, func(b *testing.B) {
			net, arch := s.net, s.net.Arch()
			if !slices.Equal(hidden, arch.Hidden) {
				var err error
				arch.Hidden = hidden
				if net, err = InitNet(arch, rand.New(rand.NewPCG(1, 1)), 1); err != nil {
					b.Fatal(err)
				}
			}
			obs := randObs(rand.New(rand.NewPCG(2, 2)), n, arch.In)
			out := make([]float32, n*arch.Out)
			b.ReportAllocs()
			c := startCPU(b)
			for i := 0; i < b.N; i++ {
				if err := net.ForwardInto(out, obs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/obs")
			c.report(b, n)
		})
	}
}

func BenchmarkInference1k64x64(b *testing.B)    { benchInference(b, 1000, []int{64, 64}) }
func BenchmarkInference10k64x64(b *testing.B)   { benchInference(b, 10000, []int{64, 64}) }
func BenchmarkInference10k128x128(b *testing.B) { benchInference(b, 10000, []int{128, 128}) }

// BenchmarkDecide10k times each embedded model's decisions (actions and
// confidences) on 10,000 random observations of its width.
func BenchmarkDecide10k(b *testing.B) {
	for _, s := range shippedNets(b) {
		b.Run(s.name, func(b *testing.B) {
			obs := randObs(rand.New(rand.NewPCG(2, 2)), 10000, s.net.InDim())
			b.ReportAllocs()
			c := startCPU(b)
			for i := 0; i < b.N; i++ {
				if _, _, err := s.net.Decide(obs, 0.1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/obs")
			c.report(b, 10000)
		})
	}
}

func benchDDQN(b *testing.B, bs int) {
	shape := shippedShape(b)
	d, err := NewDDQN(DDQNConfig{Arch: Arch{In: shape.In, Hidden: []int{64, 64}, Out: shape.Out, Act: ReLU}, Gamma: 0.9, BatchSize: bs, ReplayCapacity: 4096, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 4096; i++ {
		o := banditObs(rng, shape.In)
		if err := d.Store(Transition{Obs: o, Next: o, Action: rng.IntN(shape.Out), Reward: float32(rng.Float64())}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	c := startCPU(b)
	for i := 0; i < b.N; i++ {
		if _, err := d.Train(); err != nil {
			b.Fatal(err)
		}
	}
	c.report(b, 0)
}

func BenchmarkDDQNTrainStep64(b *testing.B)  { benchDDQN(b, 64) }
func BenchmarkDDQNTrainStep256(b *testing.B) { benchDDQN(b, 256) }

// BenchmarkPPOUpdate: one Update on a rollout of 256 agents × 16 steps
// (4096 rows), 4 epochs of minibatches of 256: 64 gradient steps.
func BenchmarkPPOUpdate(b *testing.B) {
	shape := shippedShape(b)
	p, err := NewPPO(PPOConfig{Arch: Arch{In: shape.In, Hidden: []int{64, 64}, Out: shape.Out, Act: Tanh}, Epochs: 4, MinibatchSize: 256, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	const agents, horizon = 256, 16
	buf, _ := p.NewRollout(agents, horizon)
	rng := rand.New(rand.NewPCG(3, 3))
	rew := make([]float32, agents)
	dones := make([]bool, agents)
	for s := 0; s < horizon; s++ {
		obs := randObs(rng, agents, shape.In)
		acts, logp, vals, err := p.Act(obs, rng)
		if err != nil {
			b.Fatal(err)
		}
		for i := range rew {
			rew[i] = float32(rng.NormFloat64())
		}
		if err := buf.Add(obs, acts, logp, vals, rew, dones); err != nil {
			b.Fatal(err)
		}
	}
	if err := buf.Finish(make([]float32, agents), 0.99, 0.95); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	c := startCPU(b)
	for i := 0; i < b.N; i++ {
		if _, err := p.Update(buf); err != nil {
			b.Fatal(err)
		}
	}
	c.report(b, 0)
}
