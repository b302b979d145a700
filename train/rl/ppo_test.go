package rl

import (
	"math/rand/v2"
	"testing"
)

func TestPPOContextualBandit(t *testing.T) {
	const dim, k = 8, 4
	p, err := NewPPO(PPOConfig{
		Arch:  Arch{In: dim, Hidden: []int{64}, Out: k, Act: ReLU},
		Gamma: 0, Lambda: 0.95, LearningRate: 3e-3, Epochs: 4, MinibatchSize: 128,
		EntropyCoef: 0.003, MaxGradNorm: 1, Seed: learnSeed(21),
	})
	if err != nil {
		t.Fatal(err)
	}
	before := greedyAccuracy(t, func(o [][]float32) []int { return must(p.Greedy(o)) }, dim, k, 12)
	// Reward 1 for the best action, 0 otherwise: the signal is as strong
	// near ties as far from them.
	st := trainBandit(t, p, dim, func(o []float32, a int) float32 {
		if a == banditBest(o, k) {
			return 1
		}
		return 0
	})
	after := greedyAccuracy(t, func(o [][]float32) []int { return must(p.Greedy(o)) }, dim, k, 12)
	t.Logf("PPO bandit greedy optimal fraction: before %.3f after %.3f; last stats %+v", before, after, st)
	if after < 0.95 {
		t.Fatalf("PPO bandit: %.3f of greedy actions optimal, want >= 0.95", after)
	}
}

func TestPPOChainMDP(t *testing.T) {
	c := chain{n: 7, leftReward: 0.3}
	for _, gamma := range []float64{0.5, 0.9} {
		want := c.optimal(gamma)
		p, err := NewPPO(PPOConfig{
			Arch:  Arch{In: c.n, Hidden: []int{32}, Out: 2, Act: Tanh},
			Gamma: gamma, Lambda: 0.95, LearningRate: 3e-3, Epochs: 4, MinibatchSize: 128,
			EntropyCoef: 0.01, MaxGradNorm: 1, Seed: learnSeed(4),
		})
		if err != nil {
			t.Fatal(err)
		}
		const agents, horizon = 32, 16
		buf, _ := p.NewRollout(agents, horizon)
		rng := rand.New(rand.NewPCG(8, 1))
		state := make([]int, agents)
		for i := range state {
			state[i] = 1 + rng.IntN(c.n-2)
		}
		obs := make([][]float32, agents)
		rew := make([]float32, agents)
		dones := make([]bool, agents)
		for it := 0; it < 150; it++ {
			buf.Reset()
			for s := 0; s < horizon; s++ {
				for i, st := range state {
					obs[i] = c.obs(st)
				}
				acts, logp, vals, err := p.Act(obs, rng)
				if err != nil {
					t.Fatal(err)
				}
				for i, st := range state {
					nx, r, done := c.step(st, acts[i])
					rew[i], dones[i] = r, done
					if done {
						nx = 1 + rng.IntN(c.n-2)
					}
					state[i] = nx
				}
				if err := buf.Add(obs, acts, logp, vals, rew, dones); err != nil {
					t.Fatal(err)
				}
			}
			for i, st := range state {
				obs[i] = c.obs(st)
			}
			if err := buf.Finish(must(p.Values(obs)), gamma, 0.95); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Update(buf); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]int, c.n-2)
		for s := 1; s < c.n-1; s++ {
			got[s-1] = must(p.Greedy([][]float32{c.obs(s)}))[0]
		}
		t.Logf("gamma %.2f: optimal %v learned %v, probs(1)=%v", gamma, want, got, must(p.Probs([][]float32{c.obs(1)}))[0])
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("gamma %.2f: learned greedy policy %v, optimal %v", gamma, got, want)
			}
		}
	}
}

// TestPPOTwoHeads: a factorised policy learns two independent choices at
// once: head 0 picks the largest of features 0..3, head 1 the largest of
// features 4..6; the reward is the number of heads right (0, 1, 2), so
// each head must be credited for its own part of the joint action.
func TestPPOTwoHeads(t *testing.T) {
	const dim = 8
	heads := []int{4, 3}
	p, err := NewPPO(PPOConfig{
		Arch:  Arch{In: dim, Hidden: []int{64}, Out: 7, Act: ReLU},
		Gamma: 0, Lambda: 0.95, LearningRate: 3e-3, Epochs: 4, MinibatchSize: 128,
		EntropyCoef: 0.003, MaxGradNorm: 1, Seed: learnSeed(23), Heads: heads,
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Config().JointActions() != 12 {
		t.Fatalf("joint actions %d, want 12", p.Config().JointActions())
	}
	best := func(o []float32) (int, int) { return Argmax(o[:4]), Argmax(o[4:7]) }
	accuracy := func() (float64, float64) {
		rng := rand.New(rand.NewPCG(12, 99))
		obs := make([][]float32, 2000)
		for i := range obs {
			obs[i] = banditObs(rng, dim)
		}
		acts := must(p.Greedy(obs))
		var a0, a1 int
		for i, o := range obs {
			b0, b1 := best(o)
			if acts[i]%4 == b0 {
				a0++
			}
			if acts[i]/4 == b1 {
				a1++
			}
		}
		return float64(a0) / 2000, float64(a1) / 2000
	}
	trainBandit(t, p, dim, func(o []float32, a int) float32 {
		if a < 0 || a >= 12 {
			t.Fatalf("joint action %d outside 0..11", a)
		}
		b0, b1 := best(o)
		var r float32
		if a%4 == b0 {
			r++
		}
		if a/4 == b1 {
			r++
		}
		return r
	})
	a0, a1 := accuracy()
	t.Logf("two heads: greedy optimal fraction %.3f and %.3f", a0, a1)
	if a0 < 0.9 || a1 < 0.9 {
		t.Fatalf("two heads: %.3f and %.3f of greedy choices optimal, want >= 0.9 each", a0, a1)
	}
	probs := must(p.Probs([][]float32{banditObs(rand.New(rand.NewPCG(7, 8)), dim)}))[0]
	var s0, s1 float64
	for j, v := range probs {
		if j < 4 {
			s0 += float64(v)
		} else {
			s1 += float64(v)
		}
	}
	if s0 < 0.999 || s0 > 1.001 || s1 < 0.999 || s1 > 1.001 {
		t.Fatalf("per-head probabilities sum to %g and %g, want 1 each", s0, s1)
	}
	for _, bad := range [][]int{{4, 4}, {0, 7}, {8}} {
		c := p.Config()
		c.Heads = bad
		if _, err := NewPPO(c); err == nil {
			t.Fatalf("heads %v accepted for 7 outputs", bad)
		}
	}
}

// trainBandit trains p for 150 updates on a contextual bandit: 64 agents,
// 8 steps a rollout, each step a fresh random observation per agent and
// the reward reward(observation, joint action).
func trainBandit(t *testing.T, p *PPO, dim int, reward func(o []float32, a int) float32) PPOStats {
	t.Helper()
	return trainBanditWith(t, p, 64, 8, rand.New(rand.NewPCG(5, 6)),
		func(rng *rand.Rand) ([]float32, float32) { return banditObs(rng, dim), 0 },
		func(o []float32, _ float32, a int) float32 { return reward(o, a) })
}

// trainBanditWith trains p for 150 updates on a bandit of agents agents
// and horizon steps a rollout: draw gives each agent's row and a value
// the learner does not see, reward scores the joint action with both.
func trainBanditWith(t *testing.T, p *PPO, agents, horizon int, rng *rand.Rand,
	draw func(*rand.Rand) ([]float32, float32), reward func(row []float32, hidden float32, a int) float32) PPOStats {
	t.Helper()
	buf, err := p.NewRollout(agents, horizon)
	if err != nil {
		t.Fatal(err)
	}
	obs := make([][]float32, agents)
	hidden := make([]float32, agents)
	rew := make([]float32, agents)
	dones := make([]bool, agents)
	for i := range dones {
		dones[i] = true
	}
	var st PPOStats
	for it := 0; it < 150; it++ {
		buf.Reset()
		for s := 0; s < horizon; s++ {
			for i := range obs {
				obs[i], hidden[i] = draw(rng)
			}
			acts, logp, vals, err := p.Act(obs, rng)
			if err != nil {
				t.Fatal(err)
			}
			for i := range obs {
				rew[i] = reward(obs[i], hidden[i], acts[i])
			}
			if err := buf.Add(obs, acts, logp, vals, rew, dones); err != nil {
				t.Fatal(err)
			}
		}
		if err := buf.Finish(make([]float32, agents), p.Config().Gamma, p.Config().Lambda); err != nil {
			t.Fatal(err)
		}
		if st, err = p.Update(buf); err != nil {
			t.Fatal(err)
		}
	}
	return st
}
