package rl

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// asymBandit trains a PPO learner on a bandit whose reward is a hidden
// term z (standard deviation 3, unseen by the actor) plus 1 for the best
// action of the observation. When hidden, z rides along as the critic's
// extra input. It returns the learner and the last update's stats.
func asymBandit(t *testing.T, extra int) (*PPO, PPOStats) {
	t.Helper()
	const dim, k, agents = 8, 4, 256
	p, err := NewPPO(PPOConfig{
		Arch:  Arch{In: dim, Hidden: []int{64}, Out: k, Act: ReLU},
		Gamma: 0, Lambda: 0.95, LearningRate: 3e-3, Epochs: 4, MinibatchSize: 128,
		EntropyCoef: 0.003, MaxGradNorm: 1, Seed: learnSeed(31), CriticExtra: extra,
	})
	if err != nil {
		t.Fatal(err)
	}
	st := trainBanditWith(t, p, agents, 1, rand.New(rand.NewPCG(17, 3)),
		func(rng *rand.Rand) ([]float32, float32) {
			z := float32(3 * rng.NormFloat64())
			return append(banditObs(rng, dim), z)[:dim+extra], z
		},
		func(row []float32, z float32, a int) float32 {
			if a == banditBest(row, k) {
				return z + 1
			}
			return z
		})
	return p, st
}

// TestPPOAsymmetricCritic: a critic that sees the hidden term explains it
// (value loss a fraction of z's variance, which a critic reading the
// actor's inputs cannot do), the actor learns at least as well with it, and
// the actor never reads the extra input: its greedy actions take the
// actor's features alone.
func TestPPOAsymmetricCritic(t *testing.T) {
	const dim, k = 8, 4
	sym, sst := asymBandit(t, 0)
	asym, ast := asymBandit(t, 1)
	accSym := greedyAccuracy(t, func(o [][]float32) []int { return must(sym.Greedy(o)) }, dim, k, 12)
	accAsym := greedyAccuracy(t, func(o [][]float32) []int { return must(asym.Greedy(o)) }, dim, k, 12)
	t.Logf("value loss: symmetric %.3f, asymmetric %.3f; greedy optimal: %.3f, %.3f", sst.ValueLoss, ast.ValueLoss, accSym, accAsym)
	if sst.ValueLoss < 5 {
		t.Fatalf("symmetric critic value loss %.3f: it cannot know z (variance 9)", sst.ValueLoss)
	}
	if ast.ValueLoss > 1 {
		t.Fatalf("asymmetric critic value loss %.3f: it reads z and should explain it", ast.ValueLoss)
	}
	if accAsym < 0.9 || accAsym < accSym {
		t.Fatalf("asymmetric actor optimal %.3f of the time, symmetric %.3f", accAsym, accSym)
	}
	if got := asym.Config().RowDim(); got != dim+1 {
		t.Fatalf("row dim %d", got)
	}
	if asym.Policy().InDim() != dim || asym.Critic().InDim() != dim+1 {
		t.Fatalf("actor reads %d, critic %d", asym.Policy().InDim(), asym.Critic().InDim())
	}
	// Act wants whole rows; a row of the actor's width alone is named.
	if _, _, _, err := asym.Act([][]float32{make([]float32, dim)}, nil); err == nil || !strings.Contains(err.Error(), "want 9") {
		t.Fatalf("actor-width row to Act: %v", err)
	}
	// A rollout of the actor's width does not fit, with rows enough for a
	// minibatch: the width is what Update refuses.
	mb := asym.Config().MinibatchSize
	ro, _ := NewRollout(mb, 1, dim)
	narrow := make([][]float32, mb)
	for i := range narrow {
		narrow[i] = make([]float32, dim)
	}
	ones := func(v float32) []float32 {
		x := make([]float32, mb)
		for i := range x {
			x[i] = v
		}
		return x
	}
	dn := make([]bool, mb)
	if err := ro.Add(narrow, make([]int, mb), ones(-1), ones(0), ones(0), dn); err != nil {
		t.Fatal(err)
	}
	if err := ro.Finish(ones(0), 0, 0.95); err != nil {
		t.Fatal(err)
	}
	if _, err := asym.Update(ro); err == nil || !strings.Contains(err.Error(), "critic") {
		t.Fatalf("rollout without the critic's input: %v", err)
	}
	// The checkpoint keeps the critic's width.
	b, err := asym.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	back, err := RestorePPO(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Config().CriticExtra != 1 || back.Critic().InDim() != dim+1 {
		t.Fatalf("restored critic extra %d, width %d", back.Config().CriticExtra, back.Critic().InDim())
	}
	b2, _ := back.MarshalCheckpoint()
	if !bytes.Equal(b, b2) {
		t.Fatal("checkpoint round trip changed it")
	}
	if _, err := NewPPO(PPOConfig{Arch: Arch{In: dim, Hidden: []int{8}, Out: k, Act: ReLU}, CriticExtra: -1}); err == nil {
		t.Fatal("negative critic_extra accepted")
	}
}
