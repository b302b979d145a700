package rl

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// DDQNConfig configures double DQN (van Hasselt et al., 2016): the online
// network picks the next action, the target network values it.
type DDQNConfig struct {
	// Arch is the Q-network: In observation features, Out actions.
	Arch Arch `json:"arch" yaml:"arch"`
	// Gamma is the discount, in [0, 1).
	Gamma float64 `json:"gamma" yaml:"gamma"`
	// LearningRate of Adam (default 1e-3).
	LearningRate float64 `json:"learning_rate" yaml:"learning_rate"`
	// BatchSize of a gradient step (default 64).
	BatchSize int `json:"batch_size" yaml:"batch_size"`
	// ReplayCapacity is the ring size in transitions (default 100,000).
	ReplayCapacity int `json:"replay_capacity" yaml:"replay_capacity"`
	// WarmUp is the number of stored transitions before Observe trains
	// (default BatchSize).
	WarmUp int `json:"warm_up" yaml:"warm_up"`
	// TrainEvery is the number of stored transitions per gradient step
	// taken by Observe (default 1).
	TrainEvery int `json:"train_every" yaml:"train_every"`
	// TargetSync copies the online weights into the target network every
	// TargetSync gradient steps (default 500) unless Tau > 0.
	TargetSync int `json:"target_sync" yaml:"target_sync"`
	// Tau > 0 selects Polyak averaging after every gradient step instead:
	// target = (1-Tau)·target + Tau·online. Allowed (0, 1].
	Tau float64 `json:"tau" yaml:"tau"`
	// HuberDelta is the Huber loss threshold (default 1).
	HuberDelta float64 `json:"huber_delta" yaml:"huber_delta"`
	// MaxGradNorm clips the global gradient norm (default 10; negative
	// disables clipping).
	MaxGradNorm float64 `json:"max_grad_norm" yaml:"max_grad_norm"`
	// EpsStart, EpsEnd and EpsDecaySteps define the linear epsilon
	// schedule over stored transitions, returned by Epsilon (defaults 1,
	// 0.05, 10,000).
	EpsStart      float64 `json:"eps_start" yaml:"eps_start"`
	EpsEnd        float64 `json:"eps_end" yaml:"eps_end"`
	EpsDecaySteps int     `json:"eps_decay_steps" yaml:"eps_decay_steps"`
	// Seed seeds weight initialisation and replay sampling.
	Seed uint64 `json:"seed" yaml:"seed"`
}

func (c *DDQNConfig) setDefaults() {
	if c.LearningRate == 0 {
		c.LearningRate = 1e-3
	}
	if c.BatchSize == 0 {
		c.BatchSize = 64
	}
	if c.ReplayCapacity == 0 {
		c.ReplayCapacity = 100_000
	}
	if c.WarmUp == 0 {
		c.WarmUp = c.BatchSize
	}
	if c.TrainEvery == 0 {
		c.TrainEvery = 1
	}
	if c.TargetSync == 0 {
		c.TargetSync = 500
	}
	if c.HuberDelta == 0 {
		c.HuberDelta = 1
	}
	if c.MaxGradNorm == 0 {
		c.MaxGradNorm = 10
	}
	if c.EpsStart == 0 && c.EpsEnd == 0 {
		c.EpsStart, c.EpsEnd = 1, 0.05
	}
	if c.EpsDecaySteps == 0 {
		c.EpsDecaySteps = 10_000
	}
}

// Validate checks every field, naming the one at fault.
func (c DDQNConfig) Validate() error {
	if err := c.Arch.Validate(); err != nil {
		return fmt.Errorf("ddqn: %w", err)
	}
	switch {
	case !(c.Gamma >= 0 && c.Gamma < 1):
		return fmt.Errorf("ddqn: gamma = %v: allowed [0, 1)", c.Gamma)
	case !(c.LearningRate > 0 && c.LearningRate <= 1):
		return fmt.Errorf("ddqn: learning_rate = %v: allowed (0, 1]", c.LearningRate)
	case c.BatchSize < 1 || c.BatchSize > 1<<16:
		return fmt.Errorf("ddqn: batch_size = %d: allowed 1..65536", c.BatchSize)
	case c.ReplayCapacity < c.BatchSize || c.ReplayCapacity > MaxReplayCapacity:
		return fmt.Errorf("ddqn: replay_capacity = %d: allowed batch_size (%d)..%d", c.ReplayCapacity, c.BatchSize, MaxReplayCapacity)
	case c.WarmUp < 1 || c.WarmUp > c.ReplayCapacity:
		return fmt.Errorf("ddqn: warm_up = %d: allowed 1..replay_capacity (%d)", c.WarmUp, c.ReplayCapacity)
	case c.TrainEvery < 1:
		return fmt.Errorf("ddqn: train_every = %d: must be at least 1", c.TrainEvery)
	case c.TargetSync < 1:
		return fmt.Errorf("ddqn: target_sync = %d: must be at least 1", c.TargetSync)
	case !(c.Tau >= 0 && c.Tau <= 1):
		return fmt.Errorf("ddqn: tau = %v: allowed 0 (hard sync) or (0, 1]", c.Tau)
	case !(c.HuberDelta > 0) || math.IsInf(c.HuberDelta, 0):
		return fmt.Errorf("ddqn: huber_delta = %v: must be positive and finite", c.HuberDelta)
	case math.IsNaN(c.MaxGradNorm) || math.IsInf(c.MaxGradNorm, 0):
		return fmt.Errorf("ddqn: max_grad_norm = %v: must be finite", c.MaxGradNorm)
	case !(c.EpsStart >= 0 && c.EpsStart <= 1) || !(c.EpsEnd >= 0 && c.EpsEnd <= 1):
		return fmt.Errorf("ddqn: eps_start = %v, eps_end = %v: allowed [0, 1]", c.EpsStart, c.EpsEnd)
	case c.EpsDecaySteps < 1:
		return fmt.Errorf("ddqn: eps_decay_steps = %d: must be at least 1", c.EpsDecaySteps)
	}
	return nil
}

// DDQN is a double deep Q-learner with experience replay. It is not safe
// for concurrent use; Policy returns a net that is.
type DDQN struct {
	cfg    DDQNConfig
	online *Net
	target *Net
	replay *Replay
	src    *rand.PCG
	rng    *rand.Rand

	steps   uint64 // transitions stored
	updates uint64 // gradient steps taken
	owed    int    // transitions stored since the last Observe-driven step

	g      *G.ExprGraph
	gn     *gnet
	vm     G.VM
	solver *G.AdamSolver
	x, a   *G.Node
	y      *G.Node
	lossV  G.Value

	batch        Batch
	xBuf, aBuf   []float32
	yBuf         []float32
	qOn, qTgt    []float32
	xT, aT, yT   *tensor.Dense
	lastGradNorm float64
}

// NewDDQN builds the networks and the training graph. Online weights come
// from cfg.Seed; the target starts as a copy.
func NewDDQN(cfg DDQNConfig) (*DDQN, error) {
	cfg.setDefaults()
	cfg.Arch = cfg.Arch.Clone()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	src := rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)
	rng := rand.New(src)
	online, err := InitNet(cfg.Arch, rng, 1)
	if err != nil {
		return nil, err
	}
	online.Kind = OutputQ
	return newDDQN(cfg, online, online.Clone(), src)
}

func newDDQN(cfg DDQNConfig, online, target *Net, src *rand.PCG) (*DDQN, error) {
	replay, err := NewReplay(cfg.ReplayCapacity, cfg.Arch.In)
	if err != nil {
		return nil, fmt.Errorf("ddqn: %w", err)
	}
	d := &DDQN{cfg: cfg, online: online, target: target, replay: replay, src: src, rng: rand.New(src)}
	if err := d.build(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *DDQN) build() error {
	bs, in, k := d.cfg.BatchSize, d.cfg.Arch.In, d.cfg.Arch.Out
	d.g = G.NewGraph()
	d.gn = newGNet(d.g, d.online, "q")
	d.x = G.NewMatrix(d.g, tensor.Float32, G.WithShape(bs, in), G.WithName("x"))
	d.a = G.NewMatrix(d.g, tensor.Float32, G.WithShape(bs, k), G.WithName("action_onehot"))
	d.y = G.NewVector(d.g, tensor.Float32, G.WithShape(bs), G.WithName("target"))
	q, err := d.gn.forward(d.x)
	if err != nil {
		return err
	}
	loss, err := huberQLoss(q, d.a, d.y, d.cfg.HuberDelta)
	if err != nil {
		return err
	}
	G.Read(loss, &d.lossV)
	if _, err := G.Grad(loss, d.gn.nodes...); err != nil {
		return fmt.Errorf("ddqn: gradient graph: %w", err)
	}
	d.vm = G.NewTapeMachine(d.g, G.BindDualValues(d.gn.nodes...))
	d.solver = G.NewAdamSolver(G.WithLearnRate(d.cfg.LearningRate))
	d.xBuf = make([]float32, bs*in)
	d.aBuf = make([]float32, bs*k)
	d.yBuf = make([]float32, bs)
	d.qOn = make([]float32, bs*k)
	d.qTgt = make([]float32, bs*k)
	d.xT, d.aT, d.yT = denseOf(d.xBuf, bs, in), denseOf(d.aBuf, bs, k), denseOf(d.yBuf, bs)
	return nil
}

// huberQLoss is mean Huber(Q(s,a) - y). Huber is written as
// ½d² − ½·relu(|d|−δ)², which equals ½d² for |d| ≤ δ and δ(|d| − ½δ)
// beyond, with gradient clip(d, −δ, δ).
func huberQLoss(q, onehot, y *G.Node, delta float64) (*G.Node, error) {
	var err error
	wrap := func(step string) error { return fmt.Errorf("ddqn: loss graph (%s): %w", step, err) }
	var sel, qsa, diff, ad, over, r, sq1, sq2, h, loss *G.Node
	if sel, err = G.HadamardProd(q, onehot); err != nil {
		return nil, wrap("select")
	}
	if qsa, err = G.Sum(sel, 1); err != nil {
		return nil, wrap("sum")
	}
	if diff, err = G.Sub(qsa, y); err != nil {
		return nil, wrap("td error")
	}
	if ad, err = G.Abs(diff); err != nil {
		return nil, wrap("abs")
	}
	if over, err = G.Sub(ad, c32(delta)); err != nil {
		return nil, wrap("excess")
	}
	if r, err = G.Rectify(over); err != nil {
		return nil, wrap("relu")
	}
	if sq1, err = G.Square(diff); err != nil {
		return nil, wrap("square")
	}
	if sq2, err = G.Square(r); err != nil {
		return nil, wrap("square excess")
	}
	if h, err = G.Sub(sq1, sq2); err != nil {
		return nil, wrap("huber")
	}
	if h, err = G.Mul(h, c32(0.5)); err != nil {
		return nil, wrap("half")
	}
	if loss, err = G.Mean(h); err != nil {
		return nil, wrap("mean")
	}
	return loss, nil
}

// Config returns the configuration with defaults filled in.
func (d *DDQN) Config() DDQNConfig { c := d.cfg; c.Arch = c.Arch.Clone(); return c }

// Policy returns the online network for decisions. It is updated in place
// by Train; Clone it for a frozen copy.
func (d *DDQN) Policy() *Net { return d.online }

// Target returns the target network.
func (d *DDQN) Target() *Net { return d.target }

// Replay exposes the replay buffer.
func (d *DDQN) Replay() *Replay { return d.replay }

// Steps is the number of transitions stored.
func (d *DDQN) Steps() uint64 { return d.steps }

// Updates is the number of gradient steps taken.
func (d *DDQN) Updates() uint64 { return d.updates }

// LastGradNorm is the global gradient norm of the last step before
// clipping.
func (d *DDQN) LastGradNorm() float64 { return d.lastGradNorm }

// Epsilon is the exploration rate of the linear schedule at the current
// step count.
func (d *DDQN) Epsilon() float64 {
	f := float64(d.steps) / float64(d.cfg.EpsDecaySteps)
	if f >= 1 {
		return d.cfg.EpsEnd
	}
	return d.cfg.EpsStart + f*(d.cfg.EpsEnd-d.cfg.EpsStart)
}

// QValues evaluates the online network: one row of Q-values per
// observation.
func (d *DDQN) QValues(obs [][]float32) ([][]float32, error) { return d.online.Forward(obs) }

// Act picks an action per observation: uniformly random with probability
// eps (drawn from rng; a nil rng means greedy), greedy on the online
// Q-values otherwise.
func (d *DDQN) Act(obs [][]float32, eps float64, rng *rand.Rand) ([]int, error) {
	q := make([]float32, len(obs)*d.cfg.Arch.Out)
	if err := d.online.ForwardInto(q, obs); err != nil {
		return nil, fmt.Errorf("ddqn: act: %w", err)
	}
	acts := make([]int, len(obs))
	k := d.cfg.Arch.Out
	for i := range acts {
		if eps > 0 && rng != nil && rng.Float64() < eps {
			acts[i] = rng.IntN(k)
			continue
		}
		acts[i] = Argmax(q[i*k : (i+1)*k])
	}
	return acts, nil
}

// Store adds one transition to the replay buffer and counts a step.
func (d *DDQN) Store(t Transition) error {
	if err := d.replay.check(t, d.cfg.Arch.Out); err != nil {
		return fmt.Errorf("ddqn: %w", err)
	}
	d.replay.put(t)
	d.steps++
	d.owed++
	return nil
}

// StoreBatch stores transitions in order; it stops at the first invalid
// one, naming its index.
func (d *DDQN) StoreBatch(ts []Transition) error {
	for i, t := range ts {
		if err := d.Store(t); err != nil {
			return fmt.Errorf("transition %d: %w", i, err)
		}
	}
	return nil
}

// Observe stores transitions and takes the gradient steps they are owed:
// one per TrainEvery stored transitions once WarmUp transitions are in
// the buffer. It returns the mean loss of the steps taken and how many.
func (d *DDQN) Observe(ts []Transition) (loss float64, steps int, err error) {
	if err := d.StoreBatch(ts); err != nil {
		return 0, 0, err
	}
	if d.replay.Len() < d.cfg.WarmUp {
		d.owed = 0
		return 0, 0, nil
	}
	var sum float64
	for d.owed >= d.cfg.TrainEvery {
		d.owed -= d.cfg.TrainEvery
		l, err := d.Train()
		if err != nil {
			return 0, steps, err
		}
		sum += l
		steps++
	}
	if steps > 0 {
		loss = sum / float64(steps)
	}
	return loss, steps, nil
}

// Train takes one gradient step on a batch sampled uniformly from the
// replay buffer and returns its Huber loss (before the step).
func (d *DDQN) Train() (float64, error) {
	bs, in, k := d.cfg.BatchSize, d.cfg.Arch.In, d.cfg.Arch.Out
	if err := d.replay.Sample(bs, d.rng, &d.batch); err != nil {
		return 0, fmt.Errorf("ddqn: train: %w", err)
	}
	b := &d.batch
	if err := d.online.ForwardFlat(d.qOn, b.Next, bs); err != nil {
		return 0, err
	}
	if err := d.target.ForwardFlat(d.qTgt, b.Next, bs); err != nil {
		return 0, err
	}
	copy(d.xBuf, b.Obs[:bs*in])
	clear(d.aBuf)
	for i := 0; i < bs; i++ {
		d.aBuf[i*k+b.Action[i]] = 1
	}
	doubleQTargets(d.yBuf, b.Reward, b.Done, d.qOn, d.qTgt, k, d.cfg.Gamma)
	if err := G.Let(d.x, d.xT); err != nil {
		return 0, fmt.Errorf("ddqn: feed x: %w", err)
	}
	if err := G.Let(d.a, d.aT); err != nil {
		return 0, fmt.Errorf("ddqn: feed actions: %w", err)
	}
	if err := G.Let(d.y, d.yT); err != nil {
		return 0, fmt.Errorf("ddqn: feed targets: %w", err)
	}
	defer d.vm.Reset()
	if err := d.vm.RunAll(); err != nil {
		return 0, fmt.Errorf("ddqn: forward/backward: %w", err)
	}
	loss := scalarOf(d.lossV)
	norm, err := clipGradNorm(d.gn.nodes, d.cfg.MaxGradNorm)
	d.lastGradNorm = norm
	if err != nil {
		return loss, fmt.Errorf("ddqn: update %d: %w", d.updates, err)
	}
	if err := d.solver.Step(G.NodesToValueGrads(d.gn.nodes)); err != nil {
		return loss, fmt.Errorf("ddqn: adam step: %w", err)
	}
	d.gn.pull()
	d.updates++
	if d.cfg.Tau > 0 {
		_ = d.target.SoftUpdate(d.online, d.cfg.Tau) // same architecture, tau validated
	} else if d.updates%uint64(d.cfg.TargetSync) == 0 {
		_ = d.target.CopyFrom(d.online) // same architecture
	}
	return loss, nil
}

// doubleQTargets writes the double-DQN regression target of each of the
// len(dst) transitions into dst: y = reward, plus, unless done,
// gamma·qTarget[a*] where a* = argmax qOnline (the online network picks
// the next action, the target network values it). qOnline and qTarget are
// the two networks' action values on the next observations, k per row.
func doubleQTargets(dst, reward []float32, done []bool, qOnline, qTarget []float32, k int, gamma float64) {
	for i := range dst {
		y := float64(reward[i])
		if !done[i] {
			best := Argmax(qOnline[i*k : (i+1)*k])
			y += gamma * float64(qTarget[i*k+best])
		}
		dst[i] = float32(y)
	}
}

// SyncTarget copies the online weights into the target network now.
func (d *DDQN) SyncTarget() { _ = d.target.CopyFrom(d.online) } // same architecture
