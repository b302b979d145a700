package rl

import (
	"math/rand/v2"
	"testing"

	"github.com/ecntune/ecntune/internal/cputime"
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

// Production-like shapes: ~48 features, 20 actions.
const benchDim, benchActions = 48, 20

func benchInference(b *testing.B, n int, hidden []int) {
	net, err := InitNet(Arch{In: benchDim, Hidden: hidden, Out: benchActions, Act: ReLU}, rand.New(rand.NewPCG(1, 1)), 1)
	if err != nil {
		b.Fatal(err)
	}
	obs := randObs(rand.New(rand.NewPCG(2, 2)), n, benchDim)
	out := make([]float32, n*benchActions)
	b.ReportAllocs()
	c := startCPU(b)
	for i := 0; i < b.N; i++ {
		if err := net.ForwardInto(out, obs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/obs")
	c.report(b, n)
}

func BenchmarkInference1k64x64(b *testing.B)    { benchInference(b, 1000, []int{64, 64}) }
func BenchmarkInference10k64x64(b *testing.B)   { benchInference(b, 10000, []int{64, 64}) }
func BenchmarkInference10k128x128(b *testing.B) { benchInference(b, 10000, []int{128, 128}) }

func BenchmarkDecide10k(b *testing.B) {
	net, _ := InitNet(Arch{In: benchDim, Hidden: []int{64, 64}, Out: benchActions, Act: ReLU}, rand.New(rand.NewPCG(1, 1)), 1)
	net.Kind = OutputQ
	obs := randObs(rand.New(rand.NewPCG(2, 2)), 10000, benchDim)
	b.ReportAllocs()
	c := startCPU(b)
	for i := 0; i < b.N; i++ {
		if _, _, err := net.Decide(obs, 0.1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/obs")
	c.report(b, 10000)
}

func benchDDQN(b *testing.B, bs int) {
	d, err := NewDDQN(DDQNConfig{Arch: Arch{In: benchDim, Hidden: []int{64, 64}, Out: benchActions, Act: ReLU}, Gamma: 0.9, BatchSize: bs, ReplayCapacity: 4096, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 4096; i++ {
		o := banditObs(rng, benchDim)
		if err := d.Store(Transition{Obs: o, Next: o, Action: rng.IntN(benchActions), Reward: float32(rng.Float64())}); err != nil {
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
	p, err := NewPPO(PPOConfig{Arch: Arch{In: benchDim, Hidden: []int{64, 64}, Out: benchActions, Act: Tanh}, Epochs: 4, MinibatchSize: 256, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	const agents, horizon = 256, 16
	buf, _ := p.NewRollout(agents, horizon)
	rng := rand.New(rand.NewPCG(3, 3))
	rew := make([]float32, agents)
	dones := make([]bool, agents)
	for s := 0; s < horizon; s++ {
		obs := randObs(rng, agents, benchDim)
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
