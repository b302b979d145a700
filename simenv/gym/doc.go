// Package gym is a Gymnasium-style multi-agent environment over simenv: one agent per controlled egress queue, all sharing one policy.
// Call New(cfg, Options{}), then Reset(seed) and Step(actions), one catalogue action per queue in Keys order, until done.
//
// Every step applies the actions as ECN settings (and, through
// StepSettings, headroom), runs the simulation for one control interval Δ
// of simulated time, and reads every controlled switch once. Observations
// and rewards come only from the counters a switch exports, turned into an
// env.Snapshot by simenv/export and normalised by the same env.Observer a
// production agent uses; StepInfo carries ground truth (flow slowdowns,
// run totals) for evaluation, which a policy must not read.
//
// Determinism: Reset(seed) rebuilds the simulation with that seed, so the
// same Config, Options, seed and actions give the same observations,
// rewards and StepInfo. Δ defaults to DefaultIntervalFor(Duration); an episode ends at Config.Duration or when
// the fabric is idle with no traffic to come. An Env is not safe for
// concurrent use; separate Envs share nothing and may run in parallel.
package gym
