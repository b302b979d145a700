package rl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// ddqnRun drives a DDQN through rounds of a deterministic contextual
// bandit with data from its own seed.
func ddqnRun(t *testing.T, d *DDQN, dataSeed uint64, from, rounds int) {
	t.Helper()
	const agents = 16
	dim, k := d.Config().Arch.In, d.Config().Arch.Out
	obs := make([][]float32, agents)
	ts := make([]Transition, agents)
	for r := from; r < from+rounds; r++ {
		rng := rand.New(rand.NewPCG(dataSeed, uint64(r)))
		for i := range obs {
			obs[i] = banditObs(rng, dim)
		}
		acts := must(d.Act(obs, 0.3, rng))
		for i := range obs {
			ts[i] = Transition{Obs: obs[i], Action: acts[i] % k, Reward: obs[i][acts[i]%k], Next: banditObs(rng, dim), Done: i%3 == 0}
		}
		if _, _, err := d.Observe(ts); err != nil {
			t.Fatal(err)
		}
	}
}

func smallDDQN(t *testing.T, seed uint64) *DDQN {
	t.Helper()
	d, err := NewDDQN(DDQNConfig{Arch: Arch{In: 6, Hidden: []int{24}, Out: 3, Act: ReLU}, Gamma: 0.8,
		BatchSize: 32, ReplayCapacity: 300, TrainEvery: 8, TargetSync: 7, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// mustBytes unwraps an encoder's result; an error fails the test (by
// panicking, which the test runner reports with the stack).
func mustBytes(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestDDQNDeterministic(t *testing.T) {
	a, b, c := smallDDQN(t, 42), smallDDQN(t, 42), smallDDQN(t, 43)
	ddqnRun(t, a, 1, 0, 40)
	ddqnRun(t, b, 1, 0, 40)
	ddqnRun(t, c, 1, 0, 40)
	if a.Updates() == 0 {
		t.Fatal("no training happened")
	}
	pa := mustBytes(a.Policy().MarshalBinary())
	pb := mustBytes(b.Policy().MarshalBinary())
	pc := mustBytes(c.Policy().MarshalBinary())
	if !bytes.Equal(pa, pb) {
		t.Fatal("same seed, same calls: policies differ")
	}
	if bytes.Equal(pa, pc) {
		t.Fatal("different seeds gave identical policies")
	}
	ca := mustBytes(a.MarshalCheckpoint(true))
	cb := mustBytes(b.MarshalCheckpoint(true))
	if !bytes.Equal(ca, cb) {
		t.Fatal("same seed, same calls: checkpoints differ")
	}
}

func TestDDQNCheckpointResumesExactly(t *testing.T) {
	full := smallDDQN(t, 9)
	ddqnRun(t, full, 5, 0, 60)

	first := smallDDQN(t, 9)
	ddqnRun(t, first, 5, 0, 25)
	ck := mustBytes(first.MarshalCheckpoint(true))
	resumed, err := RestoreDDQN(ck)
	if err != nil {
		t.Fatal(err)
	}
	if again := mustBytes(resumed.MarshalCheckpoint(true)); !bytes.Equal(again, ck) {
		t.Fatal("restore then re-checkpoint changed the bytes")
	}
	ddqnRun(t, resumed, 5, 25, 35)
	if resumed.Steps() != full.Steps() || resumed.Updates() != full.Updates() {
		t.Fatalf("counters after resume: steps %d updates %d, uninterrupted %d %d", resumed.Steps(), resumed.Updates(), full.Steps(), full.Updates())
	}
	if !resumed.Policy().Equal(full.Policy()) || !resumed.Target().Equal(full.Target()) {
		t.Fatal("resumed run diverged from the uninterrupted run")
	}
	if a, b := mustBytes(resumed.MarshalCheckpoint(true)), mustBytes(full.MarshalCheckpoint(true)); !bytes.Equal(a, b) {
		t.Fatal("final checkpoints of resumed and uninterrupted runs differ")
	}

	// Without the replay buffer the run resumes with an empty buffer.
	lite, err := RestoreDDQN(mustBytes(first.MarshalCheckpoint(false)))
	if err != nil {
		t.Fatal(err)
	}
	if lite.Replay().Len() != 0 || !lite.Policy().Equal(first.Policy()) || lite.Updates() != first.Updates() {
		t.Fatalf("replay-less restore: replay %d, same policy %v", lite.Replay().Len(), lite.Policy().Equal(first.Policy()))
	}
}

func TestCheckpointCorrupt(t *testing.T) {
	d := smallDDQN(t, 3)
	ddqnRun(t, d, 2, 0, 10)
	ck := mustBytes(d.MarshalCheckpoint(true))
	for i := 0; i < len(ck); i += 7 {
		c := append([]byte(nil), ck...)
		c[i] ^= 0x01
		if _, err := RestoreDDQN(c); err == nil {
			t.Fatalf("bit flip at byte %d of %d: no error", i, len(ck))
		}
	}
	for l := 0; l < len(ck); l += 13 {
		if _, err := RestoreDDQN(ck[:l]); err == nil {
			t.Fatalf("truncated to %d bytes: no error", l)
		}
	}
	// Resealed after cutting the tail: the checksum passes, decoding must
	// still fail cleanly.
	for _, cut := range []int{1, 9, 100, 1000} {
		c := append([]byte(nil), ck[:len(ck)-4-cut]...)
		c = binary.LittleEndian.AppendUint32(c, crc32.ChecksumIEEE(c))
		if _, err := RestoreDDQN(c); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("resealed checkpoint short by %d bytes: err = %v, want ErrCorrupt", cut, err)
		}
	}
	p, err := NewPPO(PPOConfig{Arch: Arch{In: 4, Hidden: []int{8}, Out: 3, Act: Tanh}, MinibatchSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	pk := mustBytes(p.MarshalCheckpoint())
	if _, err := RestoreDDQN(pk); err == nil {
		t.Fatal("a PPO checkpoint restored as DDQN")
	}
	if _, err := RestorePPO(ck); err == nil {
		t.Fatal("a DDQN checkpoint restored as PPO")
	}
	if _, err := RestorePPO(pk); err != nil {
		t.Fatalf("fresh PPO checkpoint: %v", err)
	}
}

// ppoRun drives PPO through iterations of a contextual bandit with
// per-iteration data seeds, so a resumed run sees the same data.
func ppoRun(t *testing.T, p *PPO, dataSeed uint64, from, iters int) PPOStats {
	t.Helper()
	const agents, horizon = 8, 6
	dim, k := p.Config().Arch.In, p.Config().Arch.Out
	buf, err := p.NewRollout(agents, horizon)
	if err != nil {
		t.Fatal(err)
	}
	var st PPOStats
	obs := make([][]float32, agents)
	rew := make([]float32, agents)
	dones := make([]bool, agents)
	for it := from; it < from+iters; it++ {
		rng := rand.New(rand.NewPCG(dataSeed, uint64(it)))
		buf.Reset()
		for s := 0; s < horizon; s++ {
			for i := range obs {
				obs[i] = banditObs(rng, dim)
				dones[i] = (s+i)%4 == 0
			}
			acts, logp, vals, err := p.Act(obs, rng)
			if err != nil {
				t.Fatal(err)
			}
			for i := range obs {
				rew[i] = obs[i][acts[i]%k]
			}
			if err := buf.Add(obs, acts, logp, vals, rew, dones); err != nil {
				t.Fatal(err)
			}
		}
		if err := buf.Finish(must(p.Values(obs)), p.Config().Gamma, p.Config().Lambda); err != nil {
			t.Fatal(err)
		}
		if st, err = p.Update(buf); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func smallPPO(t *testing.T, seed uint64) *PPO {
	t.Helper()
	p, err := NewPPO(PPOConfig{Arch: Arch{In: 5, Hidden: []int{16}, Out: 3, Act: Tanh}, CriticHidden: []int{12},
		Gamma: 0.9, LearningRate: 3e-3, Epochs: 3, MinibatchSize: 16, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPPODeterministicAndResumes(t *testing.T) {
	a, b, c := smallPPO(t, 8), smallPPO(t, 8), smallPPO(t, 80)
	ppoRun(t, a, 3, 0, 12)
	ppoRun(t, b, 3, 0, 12)
	ppoRun(t, c, 3, 0, 12)
	pa, pb, pc := mustBytes(a.Policy().MarshalBinary()), mustBytes(b.Policy().MarshalBinary()), mustBytes(c.Policy().MarshalBinary())
	if !bytes.Equal(pa, pb) || !bytes.Equal(mustBytes(a.MarshalCheckpoint()), mustBytes(b.MarshalCheckpoint())) {
		t.Fatal("same seed, same calls: PPO states differ")
	}
	if bytes.Equal(pa, pc) {
		t.Fatal("different seeds gave identical PPO policies")
	}
	// 3 epochs × floor(48 rows / 16) minibatches per update.
	if a.Steps() != 12*3*3 || a.Updates() != 12 {
		t.Fatalf("steps %d updates %d, want 108 and 12", a.Steps(), a.Updates())
	}

	half := smallPPO(t, 8)
	ppoRun(t, half, 3, 0, 5)
	r, err := RestorePPO(mustBytes(half.MarshalCheckpoint()))
	if err != nil {
		t.Fatal(err)
	}
	ppoRun(t, r, 3, 5, 7)
	if !r.Policy().Equal(a.Policy()) || !r.Critic().Equal(a.Critic()) {
		t.Fatal("resumed PPO diverged from the uninterrupted run")
	}
	if !bytes.Equal(mustBytes(r.MarshalCheckpoint()), mustBytes(a.MarshalCheckpoint())) {
		t.Fatal("final PPO checkpoints of resumed and uninterrupted runs differ")
	}
}

// TestDeterministicWithParallelGemm repeats the determinism check at a
// batch size where gonum splits the graph's matrix products across
// goroutines (4+ blocks of 64 rows).
func TestDeterministicWithParallelGemm(t *testing.T) {
	run := func() []byte {
		d, err := NewDDQN(DDQNConfig{Arch: Arch{In: 48, Hidden: []int{128, 128}, Out: 20, Act: ReLU}, Gamma: 0.9,
			BatchSize: 256, ReplayCapacity: 1024, TargetSync: 5, Seed: 77})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(5, 5))
		for i := 0; i < 1024; i++ {
			o := banditObs(rng, 48)
			if err := d.Store(Transition{Obs: o, Next: banditObs(rng, 48), Action: rng.IntN(20), Reward: float32(rng.NormFloat64())}); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 12; i++ {
			if _, err := d.Train(); err != nil {
				t.Fatal(err)
			}
		}
		return mustBytes(d.MarshalCheckpoint(false))
	}
	if a, b := run(), run(); !bytes.Equal(a, b) {
		t.Fatal("two identical runs with batch 256 gave different checkpoints")
	}
}
