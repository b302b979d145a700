// Package rl is the learning behind ecntune's learned policies: an MLP trained by double DQN or PPO.
// Train with NewDDQN or NewPPO; ship its Policy() Net (MarshalBinary, UnmarshalNet) and call Decide.
//
// The multi-layer perceptron (policy/nn's Net, aliased here) is trained as
// a gorgonia graph and evaluated by nn's plain-Go inference path, which the
// runtime links without gorgonia; double DQN learns from a replay buffer, PPO
// with GAE from a multi-agent rollout buffer (one agent per controlled
// queue, sharing the weights). Deployable policies and full training
// checkpoints have binary encodings, and a confidence helper turns the
// network's outputs into a decision confidence in [0, 1].
//
// Everything here is deterministic for a fixed seed and does no I/O and
// reads no clock: randomness comes from seeded sources the caller passes
// in or that a trainer owns and serialises with its checkpoint.
package rl
