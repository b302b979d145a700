package rl

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// sameWeights reports whether a and b hold bit-identical weights.
func sameWeights(a, b *Net) bool {
	pa, pb := a.Params(), b.Params()
	if len(pa) != len(pb) {
		return false
	}
	for i := range pa {
		if !slices.Equal(pa[i], pb[i]) {
			return false
		}
	}
	return true
}

// rolloutOf fills a finished rollout of p with random rows and rewards.
func rolloutOf(t *testing.T, p *PPO, rng *rand.Rand, agents, horizon int) *Rollout {
	t.Helper()
	buf, err := p.NewRollout(agents, horizon)
	if err != nil {
		t.Fatal(err)
	}
	obs := make([][]float32, agents)
	rew := make([]float32, agents)
	dones := make([]bool, agents)
	for s := 0; s < horizon; s++ {
		for i := range obs {
			obs[i] = banditObs(rng, p.Config().Arch.In)
			rew[i] = float32(rng.Float64())
		}
		acts, logp, vals, err := p.Act(obs, rng)
		if err != nil {
			t.Fatal(err)
		}
		if err := buf.Add(obs, acts, logp, vals, rew, dones); err != nil {
			t.Fatal(err)
		}
	}
	if err := buf.Finish(make([]float32, agents), p.Config().Gamma, p.Config().Lambda); err != nil {
		t.Fatal(err)
	}
	return buf
}

func TestNewPPOFromStartsAtTheGivenActor(t *testing.T) {
	cfg := PPOConfig{Arch: Arch{In: 6, Hidden: []int{16, 16}, Out: 5, Act: Tanh}, MinibatchSize: 32, Seed: 3}
	// The policy to start from: another seed's actor, trained a little,
	// so that its weights are nothing NewPPO would draw.
	other := cfg
	other.Seed = 99
	trained, err := NewPPO(other)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	if _, err := trained.Update(rolloutOf(t, trained, rng, 16, 8)); err != nil {
		t.Fatal(err)
	}
	from := trained.Policy()
	p, err := NewPPOFrom(cfg, from)
	if err != nil {
		t.Fatal(err)
	}
	if !sameWeights(p.Policy(), from) || p.Policy() == from {
		t.Fatal("the actor is not a copy of the network started from")
	}
	fresh, _ := NewPPO(cfg)
	if !sameWeights(p.Critic(), fresh.Critic()) {
		t.Error("the critic is not the one NewPPO draws from the seed")
	}
	obs := make([][]float32, 64)
	for i := range obs {
		obs[i] = banditObs(rng, 6)
	}
	want, _ := from.GreedyJoint(obs, []int{5})
	got, err := p.Greedy(obs)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("greedy decisions before any update: %v, the model's %v (%v)", got, want, err)
	}
	// Updating the copy leaves the model started from alone.
	if _, err := p.Update(rolloutOf(t, p, rng, 16, 8)); err != nil {
		t.Fatal(err)
	}
	if sameWeights(p.Policy(), from) {
		t.Error("an update did not move the actor")
	}
	if !sameWeights(from, trained.Policy()) {
		t.Error("updating the fine-tuned copy wrote the original's weights")
	}
}

func TestNewFromRefusesAnotherArchitecture(t *testing.T) {
	cfg := PPOConfig{Arch: Arch{In: 6, Hidden: []int{16, 16}, Out: 5, Act: Tanh}, MinibatchSize: 32, Seed: 3}
	for _, a := range []Arch{
		{In: 7, Hidden: []int{16, 16}, Out: 5, Act: Tanh},
		{In: 6, Hidden: []int{16}, Out: 5, Act: Tanh},
		{In: 6, Hidden: []int{16, 16}, Out: 5, Act: ReLU},
		{In: 6, Hidden: []int{16, 16}, Out: 4, Act: Tanh},
	} {
		n, err := InitNet(a, rand.New(rand.NewPCG(1, 1)), 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewPPOFrom(cfg, n); !errors.Is(err, ErrArchMismatch) {
			t.Errorf("ppo from %s: %v, want ErrArchMismatch", ArchString(a), err)
		}
		d := DDQNConfig{Arch: cfg.Arch, Seed: 1}
		if _, err := NewDDQNFrom(d, n); !errors.Is(err, ErrArchMismatch) {
			t.Errorf("ddqn from %s: %v, want ErrArchMismatch", ArchString(a), err)
		}
	}
	if _, err := NewPPOFrom(cfg, nil); err == nil {
		t.Error("ppo from no network: no error")
	}
}

func TestNewDDQNFromStartsAtTheGivenNetwork(t *testing.T) {
	cfg := DDQNConfig{Arch: Arch{In: 6, Hidden: []int{16}, Out: 5, Act: ReLU}, Seed: 4}
	from, err := InitNet(cfg.Arch, rand.New(rand.NewPCG(7, 7)), 1)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDDQNFrom(cfg, from)
	if err != nil {
		t.Fatal(err)
	}
	if !sameWeights(d.Policy(), from) || !sameWeights(d.Target(), from) || d.Policy() == from {
		t.Fatal("online and target are not copies of the network started from")
	}
}

func TestUpdateCriticLeavesTheActor(t *testing.T) {
	cfg := PPOConfig{Arch: Arch{In: 6, Hidden: []int{16}, Out: 5, Act: Tanh}, MinibatchSize: 32, Seed: 5}
	p, err := NewPPO(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	actor, critic := p.Policy().Clone(), p.Critic().Clone()
	for range 3 {
		st, err := p.UpdateCritic(rolloutOf(t, p, rng, 16, 8))
		if err != nil {
			t.Fatal(err)
		}
		if st.Steps == 0 {
			t.Fatal("no gradient step")
		}
	}
	if !sameWeights(p.Policy(), actor) {
		t.Error("UpdateCritic moved the actor")
	}
	if sameWeights(p.Critic(), critic) {
		t.Error("UpdateCritic did not move the critic")
	}
	if _, err := p.Update(rolloutOf(t, p, rng, 16, 8)); err != nil {
		t.Fatal(err)
	}
	if sameWeights(p.Policy(), actor) {
		t.Error("an Update after UpdateCritic did not move the actor")
	}
}
