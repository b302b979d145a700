package rl

import (
	"errors"
	"fmt"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
)

// ErrArchMismatch: a network given to start training from does not have
// the architecture the learner's configuration asks for.
var ErrArchMismatch = errors.New("architecture differs")

// NewPPOFrom is NewPPO starting from the actor's weights of a trained
// policy (fine-tuning): actor must have cfg.Arch exactly, and is copied,
// so its decisions before any update are actor's. The critic, which a
// stored model does not keep, is the one NewPPO draws from cfg.Seed:
// UpdateCritic fits it before the actor learns from its advantages.
func NewPPOFrom(cfg PPOConfig, actor *Net) (*PPO, error) {
	cfg.setDefaults()
	cfg.Arch = cfg.Arch.Clone()
	cfg.CriticHidden = append([]int(nil), cfg.CriticHidden...)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := sameArch("ppo", cfg.Arch, actor); err != nil {
		return nil, err
	}
	return initPPO(cfg, actor)
}

// NewDDQNFrom is NewDDQN starting from a trained Q-network's weights:
// online must have cfg.Arch exactly; the online and target networks both
// start as copies of it.
func NewDDQNFrom(cfg DDQNConfig, online *Net) (*DDQN, error) {
	cfg.setDefaults()
	cfg.Arch = cfg.Arch.Clone()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := sameArch("ddqn", cfg.Arch, online); err != nil {
		return nil, err
	}
	src := rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)
	on := online.Clone()
	on.Kind = OutputQ
	return newDDQN(cfg, on, on.Clone(), src)
}

// sameArch says how n differs from the architecture want.
func sameArch(algo string, want Arch, n *Net) error {
	if n == nil {
		return fmt.Errorf("%s: no network to start from", algo)
	}
	if got := n.Arch(); !got.Equal(want) {
		return fmt.Errorf("%s: the network to start from is %s, the configuration %s: %w", algo, ArchString(got), ArchString(want), ErrArchMismatch)
	}
	return nil
}

// ArchString writes an architecture as "44 → 64 → 64 → 83, tanh".
func ArchString(a Arch) string {
	s := fmt.Sprint(a.In)
	for _, h := range a.Hidden {
		s += fmt.Sprintf(" → %d", h)
	}
	return fmt.Sprintf("%s → %d, %s", s, a.Out, a.Act)
}

// UpdateCritic is Update for the critic alone: the same epochs and
// minibatches, in which the actor's gradients are zero, so the actor's
// weights stay as they are (Adam moves no weight whose gradients have
// all been zero). Fine-tuning a trained actor with a fresh critic starts
// with a few of these, so that the first advantages the actor learns from
// are not the noise of an untrained critic.
func (p *PPO) UpdateCritic(buf *Rollout) (PPOStats, error) {
	p.criticOnly = true
	defer func() { p.criticOnly = false }()
	return p.Update(buf)
}

// zeroGrads sets the gradients of nodes to zero.
func zeroGrads(nodes G.Nodes) error {
	for _, nd := range nodes {
		gv, err := nd.Grad()
		if err != nil {
			return fmt.Errorf("rl: gradient of %s: %w", nd.Name(), err)
		}
		d, ok := gv.Data().([]float32)
		if !ok {
			return fmt.Errorf("rl: gradient of %s is %T, want []float32", nd.Name(), gv.Data())
		}
		clear(d)
	}
	return nil
}
