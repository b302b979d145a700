package rl

import (
	"fmt"
	"math"
)

// Rollout collects Horizon steps of Agents parallel trajectories (one per
// queue, all of the same length) for PPO, and computes GAE(λ) advantages
// and returns when finished. Row (t, i) is step t of agent i.
type Rollout struct {
	agents, horizon, dim int

	obs   []float32 // [t][i][dim]
	act   []int32
	logp  []float32
	val   []float32
	rew   []float32
	done  []bool
	adv   []float32
	ret   []float32
	t     int
	done1 bool // advantages computed
}

// NewRollout makes an empty buffer.
func NewRollout(agents, horizon, dim int) (*Rollout, error) {
	switch {
	case agents < 1:
		return nil, fmt.Errorf("rl: rollout agents = %d: must be at least 1", agents)
	case horizon < 1:
		return nil, fmt.Errorf("rl: rollout horizon = %d: must be at least 1", horizon)
	case dim < 1 || dim > MaxLayerWidth:
		return nil, fmt.Errorf("rl: rollout observation dimension = %d: allowed 1..%d", dim, MaxLayerWidth)
	case agents*horizon > MaxReplayCapacity || agents*horizon*dim > maxReplayFloats:
		return nil, fmt.Errorf("rl: rollout %d agents × %d steps × %d features is too large (at most %d rows, %d floats)", agents, horizon, dim, MaxReplayCapacity, maxReplayFloats)
	}
	n := agents * horizon
	return &Rollout{
		agents: agents, horizon: horizon, dim: dim,
		obs: make([]float32, n*dim), act: make([]int32, n), logp: make([]float32, n),
		val: make([]float32, n), rew: make([]float32, n), done: make([]bool, n),
		adv: make([]float32, n), ret: make([]float32, n),
	}, nil
}

// Len is the number of rows collected so far (steps × agents).
func (r *Rollout) Len() int { return r.t * r.agents }

// Agents is the number of parallel trajectories.
func (r *Rollout) Agents() int { return r.agents }

// Horizon is the number of steps per trajectory.
func (r *Rollout) Horizon() int { return r.horizon }

// Dim is the observation dimension.
func (r *Rollout) Dim() int { return r.dim }

// Steps is the number of steps added so far.
func (r *Rollout) Steps() int { return r.t }

// Full reports whether Horizon steps have been added.
func (r *Rollout) Full() bool { return r.t == r.horizon }

// Reset empties the buffer for the next rollout, keeping its storage.
func (r *Rollout) Reset() { r.t, r.done1 = 0, false }

// Add appends one step of every agent: what it observed, the action it
// took with its log-probability and value estimate (from PPO.Act), the
// reward it got, and whether its episode ended with this step.
func (r *Rollout) Add(obs [][]float32, actions []int, logp, values, rewards []float32, dones []bool) error {
	if r.t >= r.horizon {
		return fmt.Errorf("rl: rollout is full (%d steps): call Update and Reset", r.horizon)
	}
	n := r.agents
	if len(obs) != n || len(actions) != n || len(logp) != n || len(values) != n || len(rewards) != n || len(dones) != n {
		return fmt.Errorf("rl: rollout step %d: got %d obs, %d actions, %d logp, %d values, %d rewards, %d dones: want %d each (one per agent)",
			r.t, len(obs), len(actions), len(logp), len(values), len(rewards), len(dones), n)
	}
	for i := 0; i < n; i++ {
		if len(obs[i]) != r.dim {
			return fmt.Errorf("rl: rollout step %d agent %d: observation has %d features, want %d", r.t, i, len(obs[i]), r.dim)
		}
		if actions[i] < 0 || actions[i] > math.MaxInt32 {
			return fmt.Errorf("rl: rollout step %d agent %d: action %d is negative or too large", r.t, i, actions[i])
		}
		if !finite32(rewards[i]) || !finite32(values[i]) || !finite32(logp[i]) || logp[i] > 0 {
			return fmt.Errorf("rl: rollout step %d agent %d: reward %v, value %v, logp %v: must be finite and logp <= 0", r.t, i, rewards[i], values[i], logp[i])
		}
		for _, v := range obs[i] {
			if !finite32(v) {
				return fmt.Errorf("rl: rollout step %d agent %d: observation holds %v: features must be finite", r.t, i, v)
			}
		}
	}
	base := r.t * n
	for i := 0; i < n; i++ {
		copy(r.obs[(base+i)*r.dim:(base+i+1)*r.dim], obs[i])
		r.act[base+i] = int32(actions[i])
		r.logp[base+i] = logp[i]
		r.val[base+i] = values[i]
		r.rew[base+i] = rewards[i]
		r.done[base+i] = dones[i]
	}
	r.t++
	r.done1 = false
	return nil
}

// Finish computes GAE(λ) advantages and discounted returns. lastValues
// are the value estimates of every agent's observation after the last
// step (ignored where that step ended the episode).
func (r *Rollout) Finish(lastValues []float32, gamma, lambda float64) error {
	if r.t == 0 {
		return fmt.Errorf("rl: rollout is empty: add steps before Finish")
	}
	if len(lastValues) != r.agents {
		return fmt.Errorf("rl: rollout Finish: %d last values, want %d (one per agent)", len(lastValues), r.agents)
	}
	if !(gamma >= 0 && gamma <= 1) || !(lambda >= 0 && lambda <= 1) {
		return fmt.Errorf("rl: rollout Finish: gamma %v, lambda %v: allowed [0, 1]", gamma, lambda)
	}
	for i, v := range lastValues {
		if !finite32(v) {
			return fmt.Errorf("rl: rollout Finish: last value of agent %d is %v: must be finite", i, v)
		}
	}
	n := r.agents
	for i := 0; i < n; i++ {
		var gae float64
		next := float64(lastValues[i])
		for t := r.t - 1; t >= 0; t-- {
			k := t*n + i
			nonTerm := 1.0
			if r.done[k] {
				nonTerm = 0
			}
			v := float64(r.val[k])
			delta := float64(r.rew[k]) + gamma*next*nonTerm - v
			gae = delta + gamma*lambda*nonTerm*gae
			r.adv[k] = float32(gae)
			r.ret[k] = float32(gae + v)
			next = v
		}
	}
	r.done1 = true
	return nil
}

// Advantages returns the computed advantages, row (t, i) at t*Agents()+i.
func (r *Rollout) Advantages() []float32 { return r.adv[:r.Len()] }

// Returns returns the computed returns (advantage + value).
func (r *Rollout) Returns() []float32 { return r.ret[:r.Len()] }

func finite32(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
