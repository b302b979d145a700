package train

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/train/rl"
)

func newLearner(c Config) (learner, error) {
	if c.Algo == AlgoPPO {
		var p *rl.PPO
		var err error
		if c.Init != nil {
			p, err = rl.NewPPOFrom(ppoConfig(c), c.Init)
		} else {
			p, err = rl.NewPPO(ppoConfig(c))
		}
		if err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
		return &ppoLearner{p: p, gamma: c.Gamma, lambda: p.Config().Lambda, warm: c.CriticWarmUp}, nil
	}
	var d *rl.DDQN
	var err error
	if c.Init != nil {
		d, err = rl.NewDDQNFrom(ddqnConfig(c), c.Init)
	} else {
		d, err = rl.NewDDQN(ddqnConfig(c))
	}
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	return &ddqnLearner{d: d}, nil
}

func restoreLearner(c Config, blob []byte) (learner, error) {
	if c.Algo == AlgoPPO {
		var h struct{ Rows uint64 }
		if len(blob) < 8 {
			return nil, fmt.Errorf("ppo state is %d bytes: truncated", len(blob))
		}
		h.Rows = binary.BigEndian.Uint64(blob)
		p, err := rl.RestorePPO(blob[8:])
		if err != nil {
			return nil, err
		}
		return &ppoLearner{p: p, rows: h.Rows, gamma: c.Gamma, lambda: p.Config().Lambda, warm: c.CriticWarmUp}, nil
	}
	d, err := rl.RestoreDDQN(blob)
	if err != nil {
		return nil, err
	}
	return &ddqnLearner{d: d}, nil
}

// ddqnLearner: epsilon-greedy rollouts, transitions stored and trained on
// in episode order.
type ddqnLearner struct{ d *rl.DDQN }

func (l *ddqnLearner) actorFor(eps float64) actor {
	return &ddqnActor{net: l.d.Policy(), eps: eps}
}

func (l *ddqnLearner) learn(outs []episodeOut) (float64, float64, error) {
	var sum float64
	var n int
	for _, o := range outs {
		loss, steps, err := l.d.Observe(o.trans)
		if err != nil {
			return 0, 0, err
		}
		sum += loss * float64(steps)
		n += steps
	}
	if n == 0 {
		return 0, 0, nil
	}
	return sum / float64(n), 0, nil
}

func (l *ddqnLearner) net() *rl.Net    { return l.d.Policy() }
func (l *ddqnLearner) steps() uint64   { return l.d.Steps() }
func (l *ddqnLearner) updates() uint64 { return l.d.Updates() }
func (l *ddqnLearner) marshal() ([]byte, error) {
	return l.d.MarshalCheckpoint(true)
}

type ddqnActor struct {
	net *rl.Net
	eps float64
	rng *rand.Rand
	q   []float32
}

func (a *ddqnActor) seed(s uint64) { a.rng = rand.New(rand.NewPCG(s, 0xda3e39cb94b95bdb)) }

func (a *ddqnActor) act(obs []env.Observation, feats [][]float32) ([]int, []float32, []float32, error) {
	k := a.net.OutDim()
	if cap(a.q) < len(feats)*k {
		a.q = make([]float32, len(feats)*k)
	}
	q := a.q[:len(feats)*k]
	if err := a.net.ForwardInto(q, feats); err != nil {
		return nil, nil, nil, err
	}
	acts := make([]int, len(obs))
	for i := range obs {
		switch {
		case !obs[i].Valid:
			acts[i] = env.ActionHold
		case a.eps > 0 && a.rng.Float64() < a.eps:
			acts[i] = a.rng.IntN(k)
		default:
			acts[i] = rl.Argmax(q[i*k : (i+1)*k])
		}
	}
	return acts, nil, nil, nil
}

func (a *ddqnActor) value([][]float32) ([]float32, error) { return nil, nil }

// ppoLearner: one rollout per episode (its queues are the agents), updated
// in episode order.
type ppoLearner struct {
	p             *rl.PPO
	rows          uint64
	gamma, lambda float64
	warm          int // episodes before this one update the critic alone
}

func (l *ppoLearner) actorFor(float64) actor { return &ppoActor{p: l.p} }

func (l *ppoLearner) learn(outs []episodeOut) (float64, float64, error) {
	var sum, ent float64
	var n int
	for _, o := range outs {
		if len(o.obs) == 0 {
			continue
		}
		ro, err := l.p.NewRollout(len(o.obs[0]), len(o.obs))
		if err != nil {
			return 0, 0, err
		}
		for t := range o.obs {
			if err := ro.Add(o.obs[t], o.actions[t], o.logp[t], o.values[t], o.rewards[t], o.dones[t]); err != nil {
				return 0, 0, err
			}
		}
		if err := ro.Finish(o.last, l.gamma, l.lambda); err != nil {
			return 0, 0, err
		}
		l.rows += uint64(ro.Len())
		if ro.Len() < l.p.Config().MinibatchSize {
			continue // too short to update on
		}
		update := l.p.Update
		if o.ep < l.warm {
			update = l.p.UpdateCritic
		}
		st, err := update(ro)
		if err != nil {
			return 0, 0, err
		}
		sum += st.PolicyLoss
		ent += st.Entropy
		n++
	}
	if n == 0 {
		return 0, 0, nil
	}
	return sum / float64(n), ent / float64(n), nil
}

func (l *ppoLearner) net() *rl.Net    { return l.p.Policy() }
func (l *ppoLearner) steps() uint64   { return l.rows }
func (l *ppoLearner) updates() uint64 { return l.p.Steps() }
func (l *ppoLearner) marshal() ([]byte, error) {
	b, err := l.p.MarshalCheckpoint()
	if err != nil {
		return nil, err
	}
	return append(binary.BigEndian.AppendUint64(nil, l.rows), b...), nil
}

type ppoActor struct {
	p   *rl.PPO
	rng *rand.Rand
}

func (a *ppoActor) seed(s uint64) { a.rng = rand.New(rand.NewPCG(s, 0xda3e39cb94b95bdb)) }

func (a *ppoActor) act(_ []env.Observation, feats [][]float32) ([]int, []float32, []float32, error) {
	return a.p.Act(feats, a.rng)
}

func (a *ppoActor) value(feats [][]float32) ([]float32, error) { return a.p.Values(feats) }

// ckptHeader is the trainer's part of a checkpoint; the learner's own
// checkpoint follows it.
type ckptHeader struct {
	Version     int    `json:"version"`
	Fingerprint string `json:"fingerprint"`
	// Settings are what the fingerprint reads, in words
	// (Config.fingerprintParts; absent in checkpoints made before).
	Settings map[string]string `json:"settings,omitempty"`
	Round    int               `json:"round"`
	Episodes int               `json:"episodes"`
	Curve    []Round           `json:"curve"`
	// Selected is the best snapshot Hooks.Select has judged so far, its
	// weights with it, so that a resumed run keeps choosing among all of
	// its snapshots.
	Selected *Selection `json:"selected,omitempty"`
	// SelectedWeights are Selected's network (nn.Net.MarshalBinary).
	SelectedWeights []byte `json:"selected_weights,omitempty"`
}

// encodeState is u32 header length | header JSON | learner checkpoint.
func encodeState(h ckptHeader, blob []byte) ([]byte, error) {
	j, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("train: checkpoint header: %w", err)
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(len(j)))
	out = append(out, j...)
	return append(out, blob...), nil
}

func decodeState(b []byte) (ckptHeader, []byte, error) {
	var h ckptHeader
	if len(b) < 4 {
		return h, nil, fmt.Errorf("state is %d bytes: truncated", len(b))
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return h, nil, fmt.Errorf("header length %d is beyond the %d bytes of state", n, len(b)-4)
	}
	if err := json.Unmarshal(b[4:4+n], &h); err != nil {
		return h, nil, fmt.Errorf("header: %w", err)
	}
	if h.Version != 1 {
		return h, nil, fmt.Errorf("state format version %d: this build reads version 1", h.Version)
	}
	return h, b[4+n:], nil
}
