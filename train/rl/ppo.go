package rl

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// PPOConfig configures proximal policy optimisation (Schulman et al.,
// 2017) with a clipped surrogate, separate actor and critic networks and
// GAE(λ) advantages.
type PPOConfig struct {
	// Arch is the actor: In features, Out actions. The critic has the same
	// input, activation and CriticHidden layers (default Arch.Hidden) and
	// one output.
	Arch         Arch  `json:"arch" yaml:"arch"`
	CriticHidden []int `json:"critic_hidden" yaml:"critic_hidden"`
	// Gamma and Lambda of GAE (defaults 0.99 and 0.95).
	Gamma  float64 `json:"gamma" yaml:"gamma"`
	Lambda float64 `json:"lambda" yaml:"lambda"`
	// ClipRange ε of the ratio (default 0.2).
	ClipRange float64 `json:"clip_range" yaml:"clip_range"`
	// ValueCoef weighs the squared-error value loss (default 0.5).
	ValueCoef float64 `json:"value_coef" yaml:"value_coef"`
	// EntropyCoef weighs the entropy bonus (default 0.01; negative means 0).
	EntropyCoef float64 `json:"entropy_coef" yaml:"entropy_coef"`
	// LearningRate of Adam (default 3e-4).
	LearningRate float64 `json:"learning_rate" yaml:"learning_rate"`
	// Epochs over the rollout per Update (default 4).
	Epochs int `json:"epochs" yaml:"epochs"`
	// MinibatchSize rows per gradient step (default 256). Each epoch
	// shuffles the rollout and takes floor(rows / MinibatchSize) steps.
	MinibatchSize int `json:"minibatch_size" yaml:"minibatch_size"`
	// MaxGradNorm clips the global gradient norm (default 0.5; negative
	// disables).
	MaxGradNorm float64 `json:"max_grad_norm" yaml:"max_grad_norm"`
	// TargetKL > 0 stops an Update early once an epoch's mean approximate
	// KL divergence exceeds it.
	TargetKL float64 `json:"target_kl" yaml:"target_kl"`
	// RawAdvantages disables per-rollout advantage normalisation.
	RawAdvantages bool `json:"raw_advantages" yaml:"raw_advantages"`
	// Seed seeds initialisation and minibatch shuffling.
	Seed uint64 `json:"seed" yaml:"seed"`
	// Heads factorises the policy into independent choices: the actor's
	// outputs are cut into consecutive groups of these sizes (summing to
	// Arch.Out), each a softmax of its own, and an action is the joint
	// index Σ choice_h · Π_{g<h} Heads[g] (the first head varies fastest).
	// Its log-probability is the sum of the heads', its entropy too. Nil:
	// one head over every output.
	Heads []int `json:"heads,omitempty" yaml:"heads"`
	// CriticExtra > 0 makes an asymmetric actor-critic: the critic reads
	// CriticExtra more inputs after the actor's Arch.In, information that
	// exists in training only (the simulator's ground truth). Rows given
	// to Act, Values and a Rollout then hold Arch.In + CriticExtra values,
	// of which the actor reads the first Arch.In; Greedy and Probs take
	// the actor's Arch.In alone.
	CriticExtra int `json:"critic_extra,omitempty" yaml:"critic_extra"`
}

// RowDim is the width of a row of Act, Values and a Rollout: the actor's
// inputs, then the critic's extra ones.
func (c PPOConfig) RowDim() int { return c.Arch.In + c.CriticExtra }

// heads returns the head sizes (one head of Arch.Out when Heads is nil).
func (c PPOConfig) heads() []int {
	if len(c.Heads) == 0 {
		return []int{c.Arch.Out}
	}
	return c.Heads
}

// JointActions is the number of joint actions: the product of the heads.
func (c PPOConfig) JointActions() int {
	n := 1
	for _, h := range c.heads() {
		n *= h
	}
	return n
}

// splitJoint writes the choice of every head of joint action a to dst.
func splitJoint(dst []int, heads []int, a int) {
	for h, n := range heads {
		dst[h] = a % n
		a /= n
	}
}

func (c *PPOConfig) setDefaults() {
	if c.CriticHidden == nil {
		c.CriticHidden = append([]int(nil), c.Arch.Hidden...)
	}
	if c.Gamma == 0 {
		c.Gamma = 0.99
	}
	if c.Lambda == 0 {
		c.Lambda = 0.95
	}
	if c.ClipRange == 0 {
		c.ClipRange = 0.2
	}
	if c.ValueCoef == 0 {
		c.ValueCoef = 0.5
	}
	if c.EntropyCoef == 0 {
		c.EntropyCoef = 0.01
	} else if c.EntropyCoef < 0 {
		c.EntropyCoef = 0
	}
	if c.LearningRate == 0 {
		c.LearningRate = 3e-4
	}
	if c.Epochs == 0 {
		c.Epochs = 4
	}
	if c.MinibatchSize == 0 {
		c.MinibatchSize = 256
	}
	if c.MaxGradNorm == 0 {
		c.MaxGradNorm = 0.5
	}
}

func (c PPOConfig) criticArch() Arch {
	return Arch{In: c.RowDim(), Hidden: append([]int(nil), c.CriticHidden...), Out: 1, Act: c.Arch.Act}
}

// Validate checks every field, naming the one at fault.
func (c PPOConfig) Validate() error {
	if err := c.Arch.Validate(); err != nil {
		return fmt.Errorf("ppo: actor %w", err)
	}
	if c.Arch.Out < 2 {
		return fmt.Errorf("ppo: arch.out = %d: a policy needs at least 2 actions", c.Arch.Out)
	}
	if c.CriticExtra < 0 {
		return fmt.Errorf("ppo: critic_extra = %d: must be >= 0", c.CriticExtra)
	}
	if err := c.criticArch().Validate(); err != nil {
		return fmt.Errorf("ppo: critic %w", err)
	}
	switch {
	case !(c.Gamma >= 0 && c.Gamma <= 1):
		return fmt.Errorf("ppo: gamma = %v: allowed [0, 1]", c.Gamma)
	case !(c.Lambda >= 0 && c.Lambda <= 1):
		return fmt.Errorf("ppo: lambda = %v: allowed [0, 1]", c.Lambda)
	case !(c.ClipRange > 0 && c.ClipRange < 1):
		return fmt.Errorf("ppo: clip_range = %v: allowed (0, 1)", c.ClipRange)
	case !(c.ValueCoef >= 0) || math.IsInf(c.ValueCoef, 0):
		return fmt.Errorf("ppo: value_coef = %v: must be finite and >= 0", c.ValueCoef)
	case !(c.EntropyCoef >= 0) || math.IsInf(c.EntropyCoef, 0):
		return fmt.Errorf("ppo: entropy_coef = %v: must be finite", c.EntropyCoef)
	case !(c.LearningRate > 0 && c.LearningRate <= 1):
		return fmt.Errorf("ppo: learning_rate = %v: allowed (0, 1]", c.LearningRate)
	case c.Epochs < 1 || c.Epochs > 1000:
		return fmt.Errorf("ppo: epochs = %d: allowed 1..1000", c.Epochs)
	case c.MinibatchSize < 1 || c.MinibatchSize > 1<<16:
		return fmt.Errorf("ppo: minibatch_size = %d: allowed 1..65536", c.MinibatchSize)
	case math.IsNaN(c.MaxGradNorm) || math.IsInf(c.MaxGradNorm, 0):
		return fmt.Errorf("ppo: max_grad_norm = %v: must be finite", c.MaxGradNorm)
	case !(c.TargetKL >= 0) || math.IsInf(c.TargetKL, 0):
		return fmt.Errorf("ppo: target_kl = %v: must be finite and >= 0", c.TargetKL)
	}
	if len(c.Heads) > 0 {
		sum, joint := 0, 1
		for i, h := range c.Heads {
			if h < 1 || h > c.Arch.Out {
				return fmt.Errorf("ppo: heads[%d] = %d: allowed 1..arch.out (%d)", i, h, c.Arch.Out)
			}
			sum += h
			joint *= h
			if joint > 1<<24 {
				return fmt.Errorf("ppo: heads %v: more than %d joint actions", c.Heads, 1<<24)
			}
		}
		if sum != c.Arch.Out {
			return fmt.Errorf("ppo: heads %v sum to %d: must sum to arch.out (%d)", c.Heads, sum, c.Arch.Out)
		}
	}
	return nil
}

// PPOStats summarises one Update (means over its minibatch steps).
type PPOStats struct {
	PolicyLoss   float64 // clipped surrogate loss
	ValueLoss    float64 // mean squared error of the critic
	Entropy      float64 // mean policy entropy (nats)
	ApproxKL     float64 // mean (old logp − new logp) on sampled actions
	ClipFrac     float64 // fraction of rows whose ratio left [1−ε, 1+ε]
	GradNorm     float64 // mean global gradient norm before clipping
	Steps        int     // gradient steps taken
	Epochs       int     // epochs completed
	StoppedEarly bool    // TargetKL stopped the update
}

// PPO is a clipped-surrogate actor-critic learner. It is not safe for
// concurrent use; Policy returns a net that is.
type PPO struct {
	cfg     PPOConfig
	actor   *Net
	critic  *Net
	src     *rand.PCG
	rng     *rand.Rand
	updates uint64 // Update calls completed
	steps   uint64 // gradient steps taken
	// criticOnly, during UpdateCritic, keeps the actor's gradients out
	// of the step.
	criticOnly bool

	g             *G.ExprGraph
	ga, gc        *gnet
	params        G.Nodes
	vm            G.VM
	solver        *G.AdamSolver
	x, xc, a, olp *G.Node // xc: the critic's rows (CriticExtra > 0; else x)
	adv, ret      *G.Node
	plV, vlV, enV G.Value
	logpV, ratioV G.Value

	xBuf, xcBuf, aBuf, olpBuf, advBuf, retBuf []float32
	xT, xcT, aT, olpT, advT, retT             *tensor.Dense
	perm                                      []int
	normAdv                                   []float32
}

// NewPPO builds actor, critic and the training graph from cfg.Seed.
func NewPPO(cfg PPOConfig) (*PPO, error) {
	cfg.setDefaults()
	cfg.Arch = cfg.Arch.Clone()
	cfg.CriticHidden = append([]int(nil), cfg.CriticHidden...)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return initPPO(cfg, nil)
}

// initPPO draws the actor and critic from cfg.Seed (cfg has its defaults
// and is valid); a non-nil from then replaces the actor drawn (the
// critic is the one NewPPO would give).
func initPPO(cfg PPOConfig, from *Net) (*PPO, error) {
	src := rand.NewPCG(cfg.Seed, 0x5851f42d4c957f2d)
	rng := rand.New(src)
	actor, err := InitNet(cfg.Arch, rng, 0.01)
	if err != nil {
		return nil, err
	}
	critic, err := InitNet(cfg.criticArch(), rng, 1)
	if err != nil {
		return nil, err
	}
	if from != nil {
		actor = from.Clone()
	}
	actor.Kind, critic.Kind = OutputLogits, OutputValue
	return newPPO(cfg, actor, critic, src)
}

func newPPO(cfg PPOConfig, actor, critic *Net, src *rand.PCG) (*PPO, error) {
	p := &PPO{cfg: cfg, actor: actor, critic: critic, src: src, rng: rand.New(src)}
	if err := p.build(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *PPO) build() error {
	mb, in, k := p.cfg.MinibatchSize, p.cfg.Arch.In, p.cfg.Arch.Out
	p.g = G.NewGraph()
	p.ga = newGNet(p.g, p.actor, "pi")
	p.gc = newGNet(p.g, p.critic, "v")
	p.params = append(append(G.Nodes{}, p.ga.nodes...), p.gc.nodes...)
	p.x = G.NewMatrix(p.g, tensor.Float32, G.WithShape(mb, in), G.WithName("x"))
	p.xc = p.x
	if p.cfg.CriticExtra > 0 {
		p.xc = G.NewMatrix(p.g, tensor.Float32, G.WithShape(mb, p.cfg.RowDim()), G.WithName("x_critic"))
	}
	p.a = G.NewMatrix(p.g, tensor.Float32, G.WithShape(mb, k), G.WithName("action_onehot"))
	p.olp = G.NewVector(p.g, tensor.Float32, G.WithShape(mb), G.WithName("old_logp"))
	p.adv = G.NewVector(p.g, tensor.Float32, G.WithShape(mb), G.WithName("advantage"))
	p.ret = G.NewVector(p.g, tensor.Float32, G.WithShape(mb), G.WithName("return"))
	loss, err := p.lossGraph()
	if err != nil {
		return fmt.Errorf("ppo: loss graph: %w", err)
	}
	if _, err := G.Grad(loss, p.params...); err != nil {
		return fmt.Errorf("ppo: gradient graph: %w", err)
	}
	p.vm = G.NewTapeMachine(p.g, G.BindDualValues(p.params...))
	p.solver = G.NewAdamSolver(G.WithLearnRate(p.cfg.LearningRate))
	p.xBuf = make([]float32, mb*in)
	p.aBuf = make([]float32, mb*k)
	p.olpBuf = make([]float32, mb)
	p.advBuf = make([]float32, mb)
	p.retBuf = make([]float32, mb)
	p.xT, p.aT = denseOf(p.xBuf, mb, in), denseOf(p.aBuf, mb, k)
	if p.cfg.CriticExtra > 0 {
		p.xcBuf = make([]float32, mb*p.cfg.RowDim())
		p.xcT = denseOf(p.xcBuf, mb, p.cfg.RowDim())
	}
	p.olpT, p.advT, p.retT = denseOf(p.olpBuf, mb), denseOf(p.advBuf, mb), denseOf(p.retBuf, mb)
	return nil
}

// lossGraph builds policy loss + c_v·value loss − c_e·entropy.
func (p *PPO) lossGraph() (*G.Node, error) {
	// do threads graph construction, keeping the first error.
	var err error
	do := func(n *G.Node, e error) *G.Node {
		if err == nil && e != nil {
			err = e
		}
		return n
	}
	eps := p.cfg.ClipRange
	logits := do(p.ga.forward(p.x))
	if err != nil {
		return nil, err
	}
	// Stable log-softmax: shift rows by their max (the shift has zero
	// gradient through the log-softmax, whatever Max reports).
	logSM := func(logits *G.Node) *G.Node {
		m := do(G.Max(logits, 1))
		sh := do(G.BroadcastSub(logits, m, nil, []byte{1}))
		lse := do(G.Log(do(G.Sum(do(G.Exp(sh)), 1))))
		return do(G.BroadcastSub(sh, lse, nil, []byte{1}))
	}
	entropy := func(lsm *G.Node) *G.Node {
		return do(G.Neg(do(G.Mean(do(G.Sum(do(G.HadamardProd(do(G.Exp(lsm)), lsm)), 1))))))
	}
	var logp, ent *G.Node
	if heads := p.cfg.heads(); len(heads) == 1 {
		lsm := logSM(logits)
		logp = do(G.Sum(do(G.HadamardProd(lsm, p.a)), 1))
		ent = entropy(lsm)
	} else {
		// Each head is a softmax over its own columns; the joint
		// action's log-probability and the entropy are sums over heads.
		off := 0
		for _, n := range heads {
			cols := G.S(off, off+n)
			lsm := logSM(do(G.Slice(logits, nil, cols)))
			lp := do(G.Sum(do(G.HadamardProd(lsm, do(G.Slice(p.a, nil, cols)))), 1))
			e := entropy(lsm)
			if logp == nil {
				logp, ent = lp, e
			} else {
				logp, ent = do(G.Add(logp, lp)), do(G.Add(ent, e))
			}
			off += n
		}
	}
	if err != nil {
		return nil, err
	}
	ratio := do(G.Exp(do(G.Sub(logp, p.olp))))
	s1 := do(G.HadamardProd(ratio, p.adv))
	// clip(r, 1−ε, 1+ε) = (1−ε) + relu(r − (1−ε)) − relu(r − (1+ε))
	lo := do(G.Rectify(do(G.Sub(ratio, c32(1-eps)))))
	hi := do(G.Rectify(do(G.Sub(ratio, c32(1+eps)))))
	cr := do(G.Add(do(G.Sub(lo, hi)), c32(1-eps)))
	s2 := do(G.HadamardProd(cr, p.adv))
	// min(s1, s2) = s1 − relu(s1 − s2)
	surr := do(G.Sub(s1, do(G.Rectify(do(G.Sub(s1, s2))))))
	pl := do(G.Neg(do(G.Mean(surr))))
	v := do(p.gc.forward(p.xc))
	if err != nil {
		return nil, err
	}
	v = do(G.Reshape(v, tensor.Shape{p.cfg.MinibatchSize}))
	vl := do(G.Mean(do(G.Square(do(G.Sub(v, p.ret))))))
	loss := do(G.Add(pl, do(G.Mul(vl, c32(p.cfg.ValueCoef)))))
	if p.cfg.EntropyCoef > 0 {
		loss = do(G.Sub(loss, do(G.Mul(ent, c32(p.cfg.EntropyCoef)))))
	}
	if err != nil {
		return nil, err
	}
	G.Read(pl, &p.plV)
	G.Read(vl, &p.vlV)
	G.Read(ent, &p.enV)
	G.Read(logp, &p.logpV)
	G.Read(ratio, &p.ratioV)
	return loss, nil
}

// Config returns the configuration with defaults filled in.
func (p *PPO) Config() PPOConfig {
	c := p.cfg
	c.Arch = c.Arch.Clone()
	c.CriticHidden = append([]int(nil), c.CriticHidden...)
	return c
}

// Policy returns the actor network (logits per action) for decisions.
func (p *PPO) Policy() *Net { return p.actor }

// Critic returns the value network.
func (p *PPO) Critic() *Net { return p.critic }

// Updates counts completed Update calls; Steps counts gradient steps.
func (p *PPO) Updates() uint64 { return p.updates }

// Steps counts gradient steps taken.
func (p *PPO) Steps() uint64 { return p.steps }

// NewRollout makes a rollout buffer sized for this learner.
func (p *PPO) NewRollout(agents, horizon int) (*Rollout, error) {
	return NewRollout(agents, horizon, p.cfg.RowDim())
}

// Act samples an action per observation from the policy (randomness from
// rng; a nil rng picks the most probable action) and returns it with its
// log-probability and the critic's value. Rows hold RowDim values.
func (p *PPO) Act(obs [][]float32, rng *rand.Rand) (actions []int, logp []float32, values []float32, err error) {
	k := p.cfg.Arch.Out
	logits := make([]float32, len(obs)*k)
	ain, err := p.actorRows(obs)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("ppo: act: %w", err)
	}
	if err := p.actor.ForwardInto(logits, ain); err != nil {
		return nil, nil, nil, fmt.Errorf("ppo: act: %w", err)
	}
	values = make([]float32, len(obs))
	if err := p.critic.ForwardInto(values, obs); err != nil {
		return nil, nil, nil, fmt.Errorf("ppo: act: %w", err)
	}
	actions = make([]int, len(obs))
	logp = make([]float32, len(obs))
	lp := make([]float64, k)
	heads := p.cfg.heads()
	for i := range obs {
		row := logits[i*k : (i+1)*k]
		joint, stride, off := 0, 1, 0
		var sum float64
		for _, n := range heads {
			part, lph := row[off:off+n], lp[off:off+n]
			logSoftmax(lph, part)
			a := n - 1
			if rng == nil {
				a = Argmax(part)
			} else {
				u := rng.Float64()
				var c float64
				for j, l := range lph {
					c += math.Exp(l)
					if u < c {
						a = j
						break
					}
				}
			}
			sum += lph[a]
			joint += a * stride
			stride *= n
			off += n
		}
		actions[i] = joint
		logp[i] = float32(sum)
	}
	return actions, logp, values, nil
}

// actorRows is the actor's part of rows of RowDim values.
func (p *PPO) actorRows(rows [][]float32) ([][]float32, error) {
	if p.cfg.CriticExtra == 0 {
		return rows, nil
	}
	out := make([][]float32, len(rows))
	for i, r := range rows {
		if len(r) != p.cfg.RowDim() {
			return nil, fmt.Errorf("row %d has %d values: want %d (%d for the actor, %d for the critic alone)", i, len(r), p.cfg.RowDim(), p.cfg.Arch.In, p.cfg.CriticExtra)
		}
		out[i] = r[:p.cfg.Arch.In:p.cfg.Arch.In]
	}
	return out, nil
}

// Greedy returns the most probable action per observation (deployment):
// the best of each head, as a joint action (Net.GreedyJoint).
func (p *PPO) Greedy(obs [][]float32) ([]int, error) {
	acts, err := p.actor.GreedyJoint(obs, p.cfg.heads())
	if err != nil {
		return nil, fmt.Errorf("ppo: greedy: %w", err)
	}
	return acts, nil
}

// Values evaluates the critic, e.g. for Rollout.Finish (rows of RowDim).
func (p *PPO) Values(obs [][]float32) ([]float32, error) {
	v := make([]float32, len(obs))
	if err := p.critic.ForwardInto(v, obs); err != nil {
		return nil, fmt.Errorf("ppo: values: %w", err)
	}
	return v, nil
}

// Probs returns the action probabilities per observation (per head: each
// head's outputs sum to 1).
func (p *PPO) Probs(obs [][]float32) ([][]float32, error) {
	out, err := p.actor.Forward(obs)
	if err != nil {
		return nil, fmt.Errorf("ppo: probs: %w", err)
	}
	lp := make([]float64, p.cfg.Arch.Out)
	for _, row := range out {
		off := 0
		for _, n := range p.cfg.heads() {
			logSoftmax(lp[off:off+n], row[off:off+n])
			off += n
		}
		for j := range row {
			row[j] = float32(math.Exp(lp[j]))
		}
	}
	return out, nil
}

// logSoftmax writes log softmax(logits) to dst in float64.
func logSoftmax(dst []float64, logits []float32) {
	m := math.Inf(-1)
	for _, l := range logits {
		m = math.Max(m, float64(l))
	}
	var s float64
	for _, l := range logits {
		s += math.Exp(float64(l) - m)
	}
	lse := m + math.Log(s)
	for j, l := range logits {
		dst[j] = float64(l) - lse
	}
}

// Update runs Epochs of minibatch gradient steps on a finished rollout.
func (p *PPO) Update(buf *Rollout) (PPOStats, error) {
	var st PPOStats
	if err := p.checkRollout(buf); err != nil {
		return st, err
	}
	rows := buf.Len()
	if cap(p.perm) < rows {
		p.perm = make([]int, rows)
	}
	d := &ppoBatch{buf: buf, adv: p.normalisedAdvantages(buf), perm: p.perm[:rows], heads: p.cfg.heads()}
	d.choice = make([]int, len(d.heads))
	defer func() {
		p.ga.pull()
		p.gc.pull()
	}()
	var sums PPOStats
	for ep := 0; ep < p.cfg.Epochs; ep++ {
		epKL, nmb, err := p.epoch(d, ep, &sums)
		if err != nil {
			return st, err
		}
		st.Epochs = ep + 1
		if p.cfg.TargetKL > 0 && epKL/float64(nmb) > p.cfg.TargetKL {
			st.StoppedEarly = true
			break
		}
	}
	st.meanOf(sums)
	p.updates++
	return st, nil
}

// ppoBatch is what one Update draws its minibatches from.
type ppoBatch struct {
	buf    *Rollout
	adv    []float32 // the advantages per row, normalised unless RawAdvantages
	perm   []int     // the rows in the current epoch's order
	heads  []int     // the action heads' sizes
	choice []int     // scratch: a joint action split into one choice per head
}

// checkRollout says why buf cannot be learned from: not finished, rows of
// the wrong width, fewer rows than a minibatch, or an action out of range.
func (p *PPO) checkRollout(buf *Rollout) error {
	if buf == nil || !buf.done1 {
		return fmt.Errorf("ppo: update: rollout not finished: call Finish(lastValues, gamma, lambda) first")
	}
	if buf.dim != p.cfg.RowDim() {
		return fmt.Errorf("ppo: update: rollout has %d features, the policy expects %d (%d for the actor, then %d for the critic alone)", buf.dim, p.cfg.RowDim(), p.cfg.Arch.In, p.cfg.CriticExtra)
	}
	rows, mb := buf.Len(), p.cfg.MinibatchSize
	if rows < mb {
		return fmt.Errorf("ppo: update: rollout has %d rows (agents × steps): minibatch_size is %d", rows, mb)
	}
	joint := p.cfg.JointActions()
	for i := 0; i < rows; i++ {
		if a := int(buf.act[i]); a < 0 || a >= joint {
			return fmt.Errorf("ppo: update: rollout row %d has action %d: allowed 0..%d", i, buf.act[i], joint-1)
		}
	}
	return nil
}

// normalisedAdvantages copies buf's advantages into p.normAdv, normalised
// to mean 0 and standard deviation 1 unless RawAdvantages, and returns
// them.
func (p *PPO) normalisedAdvantages(buf *Rollout) []float32 {
	rows := buf.Len()
	if cap(p.normAdv) < rows {
		p.normAdv = make([]float32, rows)
	}
	adv := p.normAdv[:rows]
	copy(adv, buf.adv[:rows])
	if p.cfg.RawAdvantages {
		return adv
	}
	var mean, sq float64
	for _, a := range adv {
		mean += float64(a)
	}
	mean /= float64(rows)
	for _, a := range adv {
		sq += (float64(a) - mean) * (float64(a) - mean)
	}
	std := math.Sqrt(sq/float64(rows)) + 1e-8
	for i, a := range adv {
		adv[i] = float32((float64(a) - mean) / std)
	}
	return adv
}

// epoch shuffles the rows and takes one gradient step per whole minibatch,
// adding each step's figures to sums; it returns the epoch's summed
// approximate KL and the number of minibatches.
func (p *PPO) epoch(d *ppoBatch, ep int, sums *PPOStats) (float64, int, error) {
	perm := d.perm
	for i := range perm {
		perm[i] = i
	}
	p.rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	var epKL float64
	nmb := len(perm) / p.cfg.MinibatchSize
	for b := 0; b < nmb; b++ {
		p.loadMinibatch(d, b)
		kl, clipFrac, norm, err := p.step()
		if err != nil {
			return 0, 0, fmt.Errorf("ppo: update %d epoch %d minibatch %d: %w", p.updates, ep, b, err)
		}
		sums.PolicyLoss += scalarOf(p.plV)
		sums.ValueLoss += scalarOf(p.vlV)
		sums.Entropy += scalarOf(p.enV)
		sums.ApproxKL += kl
		sums.ClipFrac += clipFrac
		sums.GradNorm += norm
		sums.Steps++
		epKL += kl
	}
	return epKL, nmb, nil
}

// loadMinibatch fills the graph's input buffers with minibatch b of the
// epoch's row order: observations, one-hot actions (one per head), old
// log-probabilities, advantages and returns.
func (p *PPO) loadMinibatch(d *ppoBatch, b int) {
	buf, mb, in, k, rd := d.buf, p.cfg.MinibatchSize, p.cfg.Arch.In, p.cfg.Arch.Out, p.cfg.RowDim()
	clear(p.aBuf)
	for r := 0; r < mb; r++ {
		j := d.perm[b*mb+r]
		copy(p.xBuf[r*in:(r+1)*in], buf.obs[j*rd:j*rd+in])
		if p.xcBuf != nil {
			copy(p.xcBuf[r*rd:(r+1)*rd], buf.obs[j*rd:(j+1)*rd])
		}
		if len(d.heads) == 1 {
			p.aBuf[r*k+int(buf.act[j])] = 1
		} else {
			splitJoint(d.choice, d.heads, int(buf.act[j]))
			off := 0
			for h, n := range d.heads {
				p.aBuf[r*k+off+d.choice[h]] = 1
				off += n
			}
		}
		p.olpBuf[r] = buf.logp[j]
		p.advBuf[r] = d.adv[j]
		p.retBuf[r] = buf.ret[j]
	}
}

// meanOf sets st's losses, entropy, KL, clip fraction and gradient norm to
// their means over the steps summed in sums, and its steps to theirs.
func (st *PPOStats) meanOf(sums PPOStats) {
	if n := float64(sums.Steps); n > 0 {
		st.PolicyLoss = sums.PolicyLoss / n
		st.ValueLoss = sums.ValueLoss / n
		st.Entropy = sums.Entropy / n
		st.ApproxKL = sums.ApproxKL / n
		st.ClipFrac = sums.ClipFrac / n
		st.GradNorm = sums.GradNorm / n
	}
	st.Steps = sums.Steps
}

// step runs one forward/backward pass on the loaded minibatch and one
// Adam step. It returns the approximate KL and clip fraction measured
// before the step, and the gradient norm before clipping.
func (p *PPO) step() (kl, clipFrac, norm float64, err error) {
	if p.xcT != nil {
		if err = G.Let(p.xc, p.xcT); err != nil {
			return 0, 0, 0, fmt.Errorf("feed: %w", err)
		}
	}
	if err = G.Let(p.x, p.xT); err == nil {
		if err = G.Let(p.a, p.aT); err == nil {
			if err = G.Let(p.olp, p.olpT); err == nil {
				if err = G.Let(p.adv, p.advT); err == nil {
					err = G.Let(p.ret, p.retT)
				}
			}
		}
	}
	if err != nil {
		return 0, 0, 0, fmt.Errorf("feed: %w", err)
	}
	defer p.vm.Reset()
	if err = p.vm.RunAll(); err != nil {
		return 0, 0, 0, fmt.Errorf("forward/backward: %w", err)
	}
	lp := p.logpV.Data().([]float32)
	ratio := p.ratioV.Data().([]float32)
	lo, hi := 1-p.cfg.ClipRange, 1+p.cfg.ClipRange
	clipped := 0
	for r := range lp {
		kl += float64(p.olpBuf[r]) - float64(lp[r])
		if rr := float64(ratio[r]); rr < lo || rr > hi {
			clipped++
		}
	}
	kl /= float64(len(lp))
	clipFrac = float64(clipped) / float64(len(lp))
	if p.criticOnly {
		if err = zeroGrads(p.ga.nodes); err != nil {
			return kl, clipFrac, 0, err
		}
	}
	if norm, err = clipGradNorm(p.params, p.cfg.MaxGradNorm); err != nil {
		return kl, clipFrac, norm, err
	}
	if err = p.solver.Step(G.NodesToValueGrads(p.params)); err != nil {
		return kl, clipFrac, norm, fmt.Errorf("adam step: %w", err)
	}
	p.steps++
	return kl, clipFrac, norm, nil
}
