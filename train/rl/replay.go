package rl

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Transition is one step of one agent: it saw Obs, took Action, got
// Reward and then saw Next. Done marks a terminal step (no bootstrap from
// Next).
type Transition struct {
	Obs    []float32
	Action int
	Reward float32
	Next   []float32
	Done   bool
}

// Replay is a fixed-capacity ring of transitions with uniform sampling.
// Once full, each new transition overwrites the oldest. Storage is
// contiguous, so a buffer of a million transitions is a handful of
// allocations.
type Replay struct {
	dim, cap   int
	obs, next  []float32
	act        []int32
	rew        []float32
	done       []bool
	head, size int
	added      uint64
}

// Batch is a sample of transitions laid out flat for training: row i of
// Obs is Obs[i*Dim:(i+1)*Dim].
type Batch struct {
	Dim    int
	Obs    []float32
	Next   []float32
	Action []int
	Reward []float32
	Done   []bool
}

// Len is the number of rows.
func (b *Batch) Len() int { return len(b.Action) }

func (b *Batch) resize(n, dim int) {
	b.Dim = dim
	if cap(b.Obs) < n*dim {
		b.Obs = make([]float32, n*dim)
		b.Next = make([]float32, n*dim)
	}
	b.Obs, b.Next = b.Obs[:n*dim], b.Next[:n*dim]
	if cap(b.Action) < n {
		b.Action = make([]int, n)
		b.Reward = make([]float32, n)
		b.Done = make([]bool, n)
	}
	b.Action, b.Reward, b.Done = b.Action[:n], b.Reward[:n], b.Done[:n]
}

// MaxReplayCapacity bounds a replay buffer (and what a checkpoint may ask
// a decoder to allocate).
const MaxReplayCapacity = 1 << 24

// maxReplayFloats bounds capacity × dimension (per observation array).
const maxReplayFloats = 1 << 26

// NewReplay makes an empty buffer for observations of dim features.
func NewReplay(capacity, dim int) (*Replay, error) {
	if capacity < 1 || capacity > MaxReplayCapacity {
		return nil, fmt.Errorf("rl: replay capacity %d: allowed 1..%d", capacity, MaxReplayCapacity)
	}
	if dim < 1 || dim > MaxLayerWidth {
		return nil, fmt.Errorf("rl: replay observation dimension %d: allowed 1..%d", dim, MaxLayerWidth)
	}
	if capacity*dim > maxReplayFloats {
		return nil, fmt.Errorf("rl: replay capacity %d × dimension %d = %d floats: allowed at most %d", capacity, dim, capacity*dim, maxReplayFloats)
	}
	return &Replay{
		dim: dim, cap: capacity,
		obs: make([]float32, capacity*dim), next: make([]float32, capacity*dim),
		act: make([]int32, capacity), rew: make([]float32, capacity), done: make([]bool, capacity),
	}, nil
}

// Len is the number of stored transitions.
func (r *Replay) Len() int { return r.size }

// Cap is the capacity.
func (r *Replay) Cap() int { return r.cap }

// Dim is the observation dimension.
func (r *Replay) Dim() int { return r.dim }

// Added counts every transition ever added, including overwritten ones.
func (r *Replay) Added() uint64 { return r.added }

// check validates a transition against the buffer's dimension and an
// action count (0 skips the action check).
func (r *Replay) check(t Transition, nActions int) error {
	if len(t.Obs) != r.dim {
		return fmt.Errorf("rl: transition obs has %d features: want %d", len(t.Obs), r.dim)
	}
	if len(t.Next) != r.dim {
		return fmt.Errorf("rl: transition next has %d features: want %d", len(t.Next), r.dim)
	}
	if t.Action < 0 || (nActions > 0 && t.Action >= nActions) || t.Action > math.MaxInt32 {
		return fmt.Errorf("rl: transition action %d: allowed 0..%d", t.Action, nActions-1)
	}
	if math.IsNaN(float64(t.Reward)) || math.IsInf(float64(t.Reward), 0) {
		return fmt.Errorf("rl: transition reward is %v: must be finite", t.Reward)
	}
	for _, v := range t.Obs {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("rl: transition obs holds %v: features must be finite", v)
		}
	}
	for _, v := range t.Next {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("rl: transition next holds %v: features must be finite", v)
		}
	}
	return nil
}

// Add stores a transition (copying its slices).
func (r *Replay) Add(t Transition) error {
	if err := r.check(t, 0); err != nil {
		return err
	}
	r.put(t)
	return nil
}

func (r *Replay) put(t Transition) {
	i := r.head
	copy(r.obs[i*r.dim:(i+1)*r.dim], t.Obs)
	copy(r.next[i*r.dim:(i+1)*r.dim], t.Next)
	r.act[i] = int32(t.Action)
	r.rew[i] = t.Reward
	r.done[i] = t.Done
	r.head = (r.head + 1) % r.cap
	if r.size < r.cap {
		r.size++
	}
	r.added++
}

// At returns the i-th oldest stored transition (slices are copies).
func (r *Replay) At(i int) (Transition, error) {
	if i < 0 || i >= r.size {
		return Transition{}, fmt.Errorf("rl: replay index %d: allowed 0..%d", i, r.size-1)
	}
	j := (r.head - r.size + i + r.cap) % r.cap
	return Transition{
		Obs:    append([]float32(nil), r.obs[j*r.dim:(j+1)*r.dim]...),
		Next:   append([]float32(nil), r.next[j*r.dim:(j+1)*r.dim]...),
		Action: int(r.act[j]),
		Reward: r.rew[j],
		Done:   r.done[j],
	}, nil
}

// Sample draws n transitions uniformly with replacement into b (reusing
// its storage).
func (r *Replay) Sample(n int, rng *rand.Rand, b *Batch) error {
	if r.size == 0 {
		return fmt.Errorf("rl: replay is empty: store transitions before sampling")
	}
	if n < 1 {
		return fmt.Errorf("rl: sample size %d: must be at least 1", n)
	}
	if rng == nil {
		return fmt.Errorf("rl: sample: rng is nil: a seeded source is required")
	}
	b.resize(n, r.dim)
	for k := 0; k < n; k++ {
		j := rng.IntN(r.size)
		copy(b.Obs[k*r.dim:(k+1)*r.dim], r.obs[j*r.dim:(j+1)*r.dim])
		copy(b.Next[k*r.dim:(k+1)*r.dim], r.next[j*r.dim:(j+1)*r.dim])
		b.Action[k] = int(r.act[j])
		b.Reward[k] = r.rew[j]
		b.Done[k] = r.done[j]
	}
	return nil
}
