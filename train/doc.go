// Package train is the training loop of ecntune's learned policies: DDQN or PPO on simulated episodes.
// Call Run with a Config and Hooks; Result.Net is the trained network, Result.Curve the learning curve.
//
// It trains over gym.Env episodes with parameter sharing (one agent per
// controlled queue), domain randomisation of the scenarios, episodes run
// in parallel, a deterministic merge, periodic checkpoints for exact
// resume, and a learning curve.
//
// Determinism: a run is a function of its Config (seed and worker count
// included). Episodes are grouped in rounds of Workers episodes; every
// episode of a round acts with the weights as they stood at the start of
// the round and draws its scenario, perturbation and simulator seed from
// its own RNG, seeded by (Seed, episode index). Worker results are merged
// in episode order, so the learner sees the same data in the same order
// however the goroutines were scheduled. With Hooks.Store a run saves
// checkpoints and, run again with the same configuration, resumes from
// the last one and ends with the weights of an uninterrupted run. The
// package reads no clock: a wall-clock budget comes in as the Stop hook.
package train
