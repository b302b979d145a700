package rl_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/ecntune/ecntune/train/rl"
)

// One shared policy for many queues: each interval every queue contributes
// a transition; the learner trains on the replay buffer; the deployable
// network is serialised and used for batched greedy decisions with a
// confidence.
func ExampleDDQN() {
	d, err := rl.NewDDQN(rl.DDQNConfig{
		Arch:  rl.Arch{In: 4, Hidden: []int{32}, Out: 3, Act: rl.ReLU},
		Gamma: 0.9, BatchSize: 32, TrainEvery: 8, Seed: 1,
	})
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	queues := make([][]float32, 16)
	for interval := 0; interval < 50; interval++ {
		for i := range queues {
			queues[i] = []float32{rng.Float32(), rng.Float32(), rng.Float32(), 1}
		}
		acts, err := d.Act(queues, d.Epsilon(), rng)
		if err != nil {
			panic(err)
		}
		ts := make([]rl.Transition, len(queues))
		for i, o := range queues {
			ts[i] = rl.Transition{Obs: o, Action: acts[i], Reward: o[acts[i]], Next: o, Done: true}
		}
		if _, _, err := d.Observe(ts); err != nil {
			panic(err)
		}
	}
	blob, _ := d.Policy().MarshalBinary()
	net, err := rl.UnmarshalNet(blob)
	if err != nil {
		panic(err)
	}
	actions, conf, err := net.Decide(queues, 0.05)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(actions), len(conf), net.Kind)
	// Output: 16 16 q-values
}
