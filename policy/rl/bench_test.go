package rl

import (
	"math/rand/v2"
	"testing"
)

func benchDDQN(b *testing.B, bs int) {
	const dim, k = 48, 20
	d, err := NewDDQN(DDQNConfig{Arch: Arch{In: dim, Hidden: []int{64, 64}, Out: k, Act: ReLU}, Gamma: 0.9, BatchSize: bs, ReplayCapacity: 4096, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 4096; i++ {
		o := banditObs(rng, dim)
		if err := d.Store(Transition{Obs: o, Next: o, Action: rng.IntN(k), Reward: float32(rng.Float64())}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := d.Train(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDDQNTrainStep64(b *testing.B)  { benchDDQN(b, 64) }
func BenchmarkDDQNTrainStep256(b *testing.B) { benchDDQN(b, 256) }
