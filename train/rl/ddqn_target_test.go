package rl

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDoubleQTargets checks the double-DQN targets on hand-made Q rows.
// Every value is exact in binary, so the targets are compared exactly.
// The rows are chosen so that plain DQN (argmax or max of the target row)
// and "online picks and values" give other numbers than double DQN.
func TestDoubleQTargets(t *testing.T) {
	nan := float32(math.NaN())
	for _, c := range []struct {
		name          string
		k             int
		gamma         float64
		reward        []float32
		done          []bool
		qOnline, qTgt []float32
		want          []float32
	}{{
		// online picks action 1, the target values it at 3 (plain DQN: 10).
		name: "online and target argmax differ", k: 3, gamma: 0.5,
		reward: []float32{0.5}, done: []bool{false},
		qOnline: []float32{1, 5, 2}, qTgt: []float32{10, 3, -4},
		want: []float32{0.5 + 0.5*3},
	}, {
		name: "done cuts the bootstrap", k: 3, gamma: 0.5,
		reward: []float32{-1.25}, done: []bool{true},
		qOnline: []float32{1, 5, 2}, qTgt: []float32{10, 3, -4},
		want: []float32{-1.25},
	}, {
		name: "gamma 0 is the reward", k: 2, gamma: 0,
		reward: []float32{2}, done: []bool{false},
		qOnline: []float32{0, 1}, qTgt: []float32{8, 16},
		want: []float32{2},
	}, {
		// the target value may be below the target row's max and negative.
		name: "negative values", k: 3, gamma: 0.75,
		reward: []float32{1}, done: []bool{false},
		qOnline: []float32{-5, -1, -3}, qTgt: []float32{0, -2, 9},
		want: []float32{1 + 0.75*-2},
	}, {
		name: "online ties go to the first action", k: 3, gamma: 0.5,
		reward: []float32{0}, done: []bool{false},
		qOnline: []float32{2, 2, 1}, qTgt: []float32{-3, 7, 0},
		want: []float32{0.5 * -3},
	}, {
		name: "NaN in the online row never wins", k: 3, gamma: 0.5,
		reward: []float32{0}, done: []bool{false},
		qOnline: []float32{nan, 1, 0}, qTgt: []float32{4, 6, 8},
		want: []float32{0.5 * 6},
	}, {
		name: "one action", k: 1, gamma: 0.25,
		reward: []float32{1, 3}, done: []bool{false, true},
		qOnline: []float32{-7, 100}, qTgt: []float32{4, 100},
		want: []float32{1 + 0.25*4, 3},
	}, {
		// each row reads its own k values: a wrong stride or offset picks
		// another row's numbers.
		name: "batch rows", k: 2, gamma: 0.5,
		reward: []float32{1, 2, 3, 4}, done: []bool{false, true, false, false},
		qOnline: []float32{0, 1, 9, 0, 5, 4, 0, 2},
		qTgt:    []float32{16, 8, 32, 64, 2, 12, 6, 20},
		want:    []float32{1 + 0.5*8, 2, 3 + 0.5*2, 4 + 0.5*20},
	}} {
		t.Run(c.name, func(t *testing.T) {
			got := make([]float32, len(c.reward))
			doubleQTargets(got, c.reward, c.done, c.qOnline, c.qTgt, c.k, c.gamma)
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("row %d: target %v, want %v (all %v, want %v)", i, got[i], c.want[i], got, c.want)
				}
			}
		})
	}
}

// TestDDQNTrainTargetsAreDoubleQ checks that Train feeds the loss the
// double-DQN targets of the sampled batch: the next action is picked by the
// online network and valued by the target network, both as they were
// before the step. The target network starts from other weights than the
// online one, so the two disagree on the next action in many rows.
func TestDDQNTrainTargetsAreDoubleQ(t *testing.T) {
	const in, k, bs = 4, 5, 32
	cfg := DDQNConfig{Arch: Arch{In: in, Hidden: []int{16}, Out: k, Act: ReLU}, Gamma: 0.9, BatchSize: bs, Seed: 3}
	d, err := NewDDQN(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Seed = 4
	other, err := NewDDQN(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_ = d.target.CopyFrom(other.online)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 200 {
		tr := Transition{Obs: banditObs(rng, in), Action: rng.IntN(k), Reward: float32(rng.NormFloat64()),
			Next: banditObs(rng, in), Done: i%4 == 0}
		if err := d.Store(tr); err != nil {
			t.Fatal(err)
		}
	}
	online, target := d.online.Clone(), d.target.Clone()
	if _, err := d.Train(); err != nil {
		t.Fatal(err)
	}
	b := &d.batch
	qOn, qTgt := make([]float32, bs*k), make([]float32, bs*k)
	if err := online.ForwardFlat(qOn, b.Next, bs); err != nil {
		t.Fatal(err)
	}
	if err := target.ForwardFlat(qTgt, b.Next, bs); err != nil {
		t.Fatal(err)
	}
	disagree := 0
	for i := range bs {
		want := b.Reward[i]
		if !b.Done[i] {
			on, tg := qOn[i*k:(i+1)*k], qTgt[i*k:(i+1)*k]
			a := Argmax(on)
			want = float32(float64(b.Reward[i]) + cfg.Gamma*float64(tg[a]))
			if Argmax(tg) != a && tg[Argmax(tg)] != tg[a] {
				disagree++
			}
		}
		if d.yBuf[i] != want {
			t.Errorf("row %d (done %v): target %v, want %v", i, b.Done[i], d.yBuf[i], want)
		}
	}
	if disagree == 0 {
		t.Fatal("no sampled row where the online and target networks pick different next actions: the test proves nothing")
	}
}
