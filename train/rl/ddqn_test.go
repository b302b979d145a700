package rl

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// banditObs draws a context of dim features in [-1, 1].
func banditObs(rng *rand.Rand, dim int) []float32 {
	o := make([]float32, dim)
	for j := range o {
		o[j] = float32(2*rng.Float64() - 1)
	}
	return o
}

// banditBest is the known optimum of the contextual bandit: the action
// whose feature is largest (reward of action a is obs[a]).
func banditBest(o []float32, k int) int { return Argmax(o[:k]) }

func greedyAccuracy(t *testing.T, act func([][]float32) []int, dim, k int, seed uint64) float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	obs := make([][]float32, 2000)
	for i := range obs {
		obs[i] = banditObs(rng, dim)
	}
	acts := act(obs)
	ok := 0
	for i, o := range obs {
		if acts[i] == banditBest(o, k) {
			ok++
		}
	}
	return float64(ok) / float64(len(obs))
}

func TestDDQNContextualBandit(t *testing.T) {
	const dim, k, agents = 8, 4, 32
	d, err := NewDDQN(DDQNConfig{
		Arch:  Arch{In: dim, Hidden: []int{64}, Out: k, Act: ReLU},
		Gamma: 0, LearningRate: 3e-3, BatchSize: 64, ReplayCapacity: 20000,
		TrainEvery: agents, TargetSync: 100, EpsStart: 1, EpsEnd: 0.1, EpsDecaySteps: 20000, Seed: learnSeed(7),
	})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	before := greedyAccuracy(t, func(o [][]float32) []int { return must(d.Act(o, 0, nil)) }, dim, k, 11)
	obs := make([][]float32, agents)
	ts := make([]Transition, agents)
	for round := 0; round < 2500; round++ {
		for i := range obs {
			obs[i] = banditObs(rng, dim)
		}
		acts := must(d.Act(obs, d.Epsilon(), rng))
		for i := range obs {
			ts[i] = Transition{Obs: obs[i], Action: acts[i], Reward: obs[i][acts[i]], Next: obs[i], Done: true}
		}
		if _, _, err := d.Observe(ts); err != nil {
			t.Fatal(err)
		}
	}
	after := greedyAccuracy(t, func(o [][]float32) []int { return must(d.Act(o, 0, nil)) }, dim, k, 11)
	t.Logf("bandit greedy optimal fraction: before %.3f after %.3f (%d updates)", before, after, d.Updates())
	if after < 0.95 {
		t.Fatalf("DDQN bandit: %.3f of greedy actions optimal, want >= 0.95", after)
	}
	// The first round (32 transitions) is below the warm-up of one batch
	// (64); from the second on, each round of 32 owes one step.
	if d.Updates() != 2499 || d.Steps() != 2500*agents {
		t.Fatalf("updates = %d, steps = %d: want 2499 and %d", d.Updates(), d.Steps(), 2500*agents)
	}
}

// chain is a corridor of n states; 0 and n-1 are terminal. Moving into 0
// pays leftReward, into n-1 pays 1, every other step pays 0. Action 0
// moves left, 1 right. Observations are one-hot.
type chain struct {
	n          int
	leftReward float32
}

func (c chain) obs(s int) []float32 { o := make([]float32, c.n); o[s] = 1; return o }

func (c chain) step(s, a int) (next int, r float32, done bool) {
	next = s + 1
	if a == 0 {
		next = s - 1
	}
	switch next {
	case 0:
		return next, c.leftReward, true
	case c.n - 1:
		return next, 1, true
	}
	return next, 0, false
}

// optimal solves the chain by value iteration and returns the greedy
// action of every non-terminal state.
func (c chain) optimal(gamma float64) []int {
	v := make([]float64, c.n)
	q := func(s, a int) float64 {
		nx, r, done := c.step(s, a)
		if done {
			return float64(r)
		}
		return float64(r) + gamma*v[nx]
	}
	for it := 0; it < 200; it++ {
		for s := 1; s < c.n-1; s++ {
			v[s] = max(q(s, 0), q(s, 1))
		}
	}
	pol := make([]int, c.n-2)
	for s := 1; s < c.n-1; s++ {
		if q(s, 1) > q(s, 0) {
			pol[s-1] = 1
		}
	}
	return pol
}

func TestChainOptimaDependOnGamma(t *testing.T) {
	c := chain{n: 7, leftReward: 0.3}
	lo, hi := c.optimal(0.5), c.optimal(0.9)
	same := true
	for i := range lo {
		same = same && lo[i] == hi[i]
	}
	if same {
		t.Fatalf("chain optima equal for gamma 0.5 and 0.9 (%v): the MDP does not test the discount", lo)
	}
}

func TestDDQNChainMDP(t *testing.T) {
	c := chain{n: 7, leftReward: 0.3}
	for _, gamma := range []float64{0.5, 0.9} {
		want := c.optimal(gamma)
		d, err := NewDDQN(DDQNConfig{
			Arch:  Arch{In: c.n, Hidden: []int{32, 32}, Out: 2, Act: ReLU},
			Gamma: gamma, LearningRate: 1e-3, BatchSize: 64, ReplayCapacity: 10000,
			TrainEvery: 16, TargetSync: 50, EpsStart: 1, EpsEnd: 0.2, EpsDecaySteps: 10000, Seed: learnSeed(5),
		})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(8, 9))
		const agents = 16
		state := make([]int, agents)
		for i := range state {
			state[i] = 1 + rng.IntN(c.n-2)
		}
		obs := make([][]float32, agents)
		ts := make([]Transition, agents)
		for round := 0; round < 2500; round++ {
			for i, s := range state {
				obs[i] = c.obs(s)
			}
			acts := must(d.Act(obs, d.Epsilon(), rng))
			for i, s := range state {
				nx, r, done := c.step(s, acts[i])
				ts[i] = Transition{Obs: obs[i], Action: acts[i], Reward: r, Next: c.obs(nx), Done: done}
				if done {
					nx = 1 + rng.IntN(c.n-2)
				}
				state[i] = nx
			}
			if _, _, err := d.Observe(ts); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]int, c.n-2)
		for s := 1; s < c.n-1; s++ {
			got[s-1] = must(d.Act([][]float32{c.obs(s)}, 0, nil))[0]
		}
		t.Logf("gamma %.2f: optimal %v learned %v, Q(1)=%v", gamma, want, got, must(d.QValues([][]float32{c.obs(1)}))[0])
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("gamma %.2f: learned greedy policy %v, optimal %v", gamma, got, want)
			}
		}
	}
}

// learnSeed returns def, or def plus ECNTUNE_RL_SEED_OFFSET when set: the
// learning tests can then be swept over seeds to check they do not pass
// by luck of one seed.
func learnSeed(def uint64) uint64 {
	if s := os.Getenv("ECNTUNE_RL_SEED_OFFSET"); s != "" {
		off, err := strconv.ParseUint(s, 10, 64)
		if err == nil {
			return def + off
		}
	}
	return def
}
