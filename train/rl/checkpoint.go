package rl

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/ecntune/ecntune/policy/nn"
)

// Checkpoint (full training state), version 1:
//
//	magic "ECNRLCKP" | u16 version | u8 algorithm (1 DDQN, 2 PPO) |
//	config as JSON (length-prefixed) | networks as policy blobs
//	(length-prefixed: DDQN online, target; PPO actor, critic) |
//	u64 counters | RNG state (length-prefixed PCG encoding) |
//	u8 has-moments + Adam state | DDQN only: u8 has-replay + replay |
//	u32 crc
//
// Adam state: u64 step count | u32 parameters | per parameter u8 present
// (then f32 means and f32 variances of the parameter's size).
// Replay: u32 capacity | u32 dim | u32 size | u32 head | u64 added |
// size slots (obs, next, i32 action, f32 reward, u8 done) in storage order.
const (
	ckptMagic   = "ECNRLCKP"
	ckptVersion = 1
	algoDDQN    = 1
	algoPPO     = 2
)

func encodeNet(e *nn.Enc, n *Net) {
	b, _ := n.MarshalBinary()
	e.Bytes(b)
}

func decodeNetBlob(d *nn.Dec, field string) *Net {
	b := d.Bytes(field)
	if d.Err() != nil {
		return nil
	}
	n, err := UnmarshalNet(b)
	if err != nil {
		d.Fail("%s: %v", field, err)
		return nil
	}
	return n
}

func encodeRNG(e *nn.Enc, src *rand.PCG) error {
	b, err := src.MarshalBinary()
	if err != nil {
		return fmt.Errorf("rl: checkpoint rng: %w", err)
	}
	e.Bytes(b)
	return nil
}

func decodeRNG(d *nn.Dec) *rand.PCG {
	b := d.Bytes("rng")
	if d.Err() != nil {
		return nil
	}
	src := &rand.PCG{}
	if err := src.UnmarshalBinary(b); err != nil {
		d.Fail("rng state: %v", err)
		return nil
	}
	return src
}

func paramSizes(nodes G.Nodes) []int {
	s := make([]int, len(nodes))
	for i, n := range nodes {
		s[i] = n.Shape().TotalSize()
	}
	return s
}

// encodeAdam writes the solver's moments, or a 0 flag when this gorgonia
// version hides them.
func encodeAdam(e *nn.Enc, s *G.AdamSolver, nodes G.Nodes) error {
	st, err := adamExport(s, paramSizes(nodes))
	if err == errAdamLayout {
		e.U8(0)
		return nil
	}
	if err != nil {
		return err
	}
	e.U8(1)
	e.U64(uint64(st.iter))
	e.U32(uint32(len(st.means)))
	for i := range st.means {
		if st.means[i] == nil {
			e.U8(0)
			continue
		}
		e.U8(1)
		e.F32s(st.means[i])
		e.F32s(st.vars[i])
	}
	return nil
}

func decodeAdam(d *nn.Dec, nodes G.Nodes) *adamState {
	if has := d.U8(); d.Err() != nil || has == 0 {
		return nil
	}
	st := &adamState{}
	it := d.U64()
	if d.Err() == nil && it > 1<<62 {
		d.Fail("adam step count %d out of range", it)
	}
	st.iter = int(it)
	np := d.Count("adam parameters", len(nodes))
	if d.Err() == nil && np != len(nodes) {
		d.Fail("adam state has %d parameters, the model %d", np, len(nodes))
	}
	if d.Err() != nil {
		return nil
	}
	st.means = make([][]float32, np)
	st.vars = make([][]float32, np)
	for i, n := range nodes {
		if d.U8() == 0 {
			continue
		}
		sz := n.Shape().TotalSize()
		if d.Err() == nil && d.Left() < 8*sz {
			d.Fail("truncated adam moments of %s", n.Name())
		}
		if d.Err() != nil {
			return nil
		}
		st.means[i] = make([]float32, sz)
		st.vars[i] = make([]float32, sz)
		d.F32s(st.means[i])
		d.F32s(st.vars[i])
	}
	return st
}

func encodeReplay(e *nn.Enc, r *Replay) {
	e.U32(uint32(r.cap))
	e.U32(uint32(r.dim))
	e.U32(uint32(r.size))
	e.U32(uint32(r.head))
	e.U64(r.added)
	for i := 0; i < r.size; i++ {
		e.F32s(r.obs[i*r.dim : (i+1)*r.dim])
		e.F32s(r.next[i*r.dim : (i+1)*r.dim])
		e.U32(uint32(r.act[i]))
		e.U32(math.Float32bits(r.rew[i]))
		if r.done[i] {
			e.U8(1)
		} else {
			e.U8(0)
		}
	}
}

func decodeReplay(d *nn.Dec, into *Replay, nActions int) {
	capacity := d.Count("replay capacity", MaxReplayCapacity)
	dim := d.Count("replay dim", MaxLayerWidth)
	size := d.Count("replay size", capacity)
	head := d.Count("replay head", capacity)
	added := d.U64()
	if d.Err() != nil {
		return
	}
	if capacity != into.cap || dim != into.dim {
		d.Fail("replay is %d × %d, the configuration says %d × %d", capacity, dim, into.cap, into.dim)
		return
	}
	if head >= capacity || (size < capacity && head != size) || added < uint64(size) {
		d.Fail("replay head %d, size %d, added %d are inconsistent", head, size, added)
		return
	}
	if need := size * (8*dim + 9); d.Left() < need {
		d.Fail("truncated replay (need %d bytes, %d left)", need, d.Left())
		return
	}
	for i := 0; i < size; i++ {
		d.F32s(into.obs[i*dim : (i+1)*dim])
		d.F32s(into.next[i*dim : (i+1)*dim])
		a := d.U32()
		if d.Err() == nil && int64(a) >= int64(nActions) {
			d.Fail("replay slot %d: action %d, allowed 0..%d", i, a, nActions-1)
			return
		}
		into.act[i] = int32(a)
		into.rew[i] = math.Float32frombits(d.U32())
		into.done[i] = d.U8() != 0
	}
	into.size, into.head, into.added = size, head, added
}

// MarshalCheckpoint encodes everything needed to resume training exactly:
// configuration, online and target weights, Adam moments, counters, the
// sampling RNG's position and, if includeReplay, the replay buffer
// (without it, a resumed run refills the buffer and warms up again).
func (d *DDQN) MarshalCheckpoint(includeReplay bool) ([]byte, error) {
	cfg, err := json.Marshal(d.cfg)
	if err != nil {
		return nil, fmt.Errorf("ddqn: checkpoint config: %w", err)
	}
	e := &nn.Enc{}
	e.B = append(e.B, ckptMagic...)
	e.U16(ckptVersion)
	e.U8(algoDDQN)
	e.Bytes(cfg)
	encodeNet(e, d.online)
	encodeNet(e, d.target)
	e.U64(d.steps)
	e.U64(d.updates)
	e.U64(uint64(d.owed))
	if err := encodeRNG(e, d.src); err != nil {
		return nil, err
	}
	if err := encodeAdam(e, d.solver, d.gn.nodes); err != nil {
		return nil, fmt.Errorf("ddqn: checkpoint: %w", err)
	}
	if includeReplay {
		e.U8(1)
		encodeReplay(e, d.replay)
	} else {
		e.U8(0)
	}
	return e.Seal(), nil
}

func openCheckpoint(data []byte, algo uint8, name string) (*nn.Dec, []byte, error) {
	d, err := nn.Open(name+" checkpoint", data, ckptMagic)
	if err != nil {
		return nil, nil, err
	}
	if v := d.U16(); d.Err() == nil && v != ckptVersion {
		return nil, nil, fmt.Errorf("rl: %s checkpoint format version %d: this build reads version %d", name, v, ckptVersion)
	}
	if a := d.U8(); d.Err() == nil && a != algo {
		return nil, nil, fmt.Errorf("rl: %s checkpoint holds algorithm %d, want %d (%s): %w", name, a, algo, name, ErrCorrupt)
	}
	cfg := d.Bytes("config")
	return d, cfg, d.Err()
}

// RestoreDDQN rebuilds a learner from MarshalCheckpoint's bytes.
func RestoreDDQN(data []byte) (*DDQN, error) {
	d, cfgJSON, err := openCheckpoint(data, algoDDQN, "ddqn")
	if err != nil {
		return nil, err
	}
	var cfg DDQNConfig
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		return nil, fmt.Errorf("rl: ddqn checkpoint config: %v: %w", err, ErrCorrupt)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rl: ddqn checkpoint config: %w", err)
	}
	online := decodeNetBlob(d, "online network")
	target := decodeNetBlob(d, "target network")
	if d.Err() != nil {
		return nil, d.Err()
	}
	if !online.Arch().Equal(cfg.Arch) || !target.Arch().Equal(cfg.Arch) {
		return nil, fmt.Errorf("rl: ddqn checkpoint: network architectures do not match the configuration: %w", ErrCorrupt)
	}
	steps, updates, owed := d.U64(), d.U64(), d.U64()
	src := decodeRNG(d)
	if d.Err() != nil {
		return nil, d.Err()
	}
	if owed > uint64(cfg.TrainEvery)+steps {
		d.Fail("owed steps %d inconsistent with train_every %d", owed, cfg.TrainEvery)
		return nil, d.Err()
	}
	online.Kind, target.Kind = OutputQ, OutputQ
	l, err := newDDQN(cfg, online, target, src)
	if err != nil {
		return nil, err
	}
	st := decodeAdam(d, l.gn.nodes)
	if has := d.U8(); d.Err() == nil && has != 0 {
		decodeReplay(d, l.replay, cfg.Arch.Out)
	}
	if err := d.End(); err != nil {
		return nil, err
	}
	if st != nil {
		if err := adamImport(l.solver, st, l.gn.nodes); err != nil {
			return nil, err
		}
	}
	l.steps, l.updates, l.owed = steps, updates, int(owed)
	return l, nil
}

// MarshalCheckpoint encodes everything needed to resume training exactly
// at a rollout boundary: configuration, actor and critic weights, Adam
// moments, counters and the shuffling RNG's position.
func (p *PPO) MarshalCheckpoint() ([]byte, error) {
	cfg, err := json.Marshal(p.cfg)
	if err != nil {
		return nil, fmt.Errorf("ppo: checkpoint config: %w", err)
	}
	e := &nn.Enc{}
	e.B = append(e.B, ckptMagic...)
	e.U16(ckptVersion)
	e.U8(algoPPO)
	e.Bytes(cfg)
	encodeNet(e, p.actor)
	encodeNet(e, p.critic)
	e.U64(p.updates)
	e.U64(p.steps)
	if err := encodeRNG(e, p.src); err != nil {
		return nil, err
	}
	if err := encodeAdam(e, p.solver, p.params); err != nil {
		return nil, fmt.Errorf("ppo: checkpoint: %w", err)
	}
	return e.Seal(), nil
}

// RestorePPO rebuilds a learner from MarshalCheckpoint's bytes.
func RestorePPO(data []byte) (*PPO, error) {
	d, cfgJSON, err := openCheckpoint(data, algoPPO, "ppo")
	if err != nil {
		return nil, err
	}
	var cfg PPOConfig
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		return nil, fmt.Errorf("rl: ppo checkpoint config: %v: %w", err, ErrCorrupt)
	}
	if cfg.CriticHidden == nil {
		cfg.CriticHidden = []int{}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rl: ppo checkpoint config: %w", err)
	}
	actor := decodeNetBlob(d, "actor network")
	critic := decodeNetBlob(d, "critic network")
	if d.Err() != nil {
		return nil, d.Err()
	}
	if !actor.Arch().Equal(cfg.Arch) || !critic.Arch().Equal(cfg.criticArch()) {
		return nil, fmt.Errorf("rl: ppo checkpoint: network architectures do not match the configuration: %w", ErrCorrupt)
	}
	updates, steps := d.U64(), d.U64()
	src := decodeRNG(d)
	if d.Err() != nil {
		return nil, d.Err()
	}
	actor.Kind, critic.Kind = OutputLogits, OutputValue
	p, err := newPPO(cfg, actor, critic, src)
	if err != nil {
		return nil, err
	}
	st := decodeAdam(d, p.params)
	if err := d.End(); err != nil {
		return nil, err
	}
	if st != nil {
		if err := adamImport(p.solver, st, p.params); err != nil {
			return nil, err
		}
	}
	p.updates, p.steps = updates, steps
	return p, nil
}
