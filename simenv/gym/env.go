package gym

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/export"
)

// DefaultInterval is the longest default control interval Δ of Env.
const DefaultInterval = 500 * simenv.Microsecond

// MinDecisions is the number of decisions per episode the default Δ
// guarantees (DefaultIntervalFor).
const MinDecisions = 20

// ShortestDefaultInterval is the Δ a short episode's default is raised to
// while it still holds MinDecisions decisions: the interval models are
// trained at, and the shortest the built-in model was validated for (a
// learned policy holds every queue outside its validated intervals, so a
// default below it would measure the starting setting, not the policy).
const ShortestDefaultInterval = 200 * simenv.Microsecond

// MinInterval is the shortest control interval eval takes: below a few
// base RTTs an interval measures nothing a decision could act on, and the
// run takes a decision per interval (1 ns over 2 ms: two million).
const MinInterval = 10 * simenv.Microsecond

// DefaultIntervalFor is the default Δ of an episode of duration d:
// d/(MinDecisions+5), at most DefaultInterval, and raised towards
// ShortestDefaultInterval as far as MinDecisions decisions still fit (the
// first observation takes one interval): a 4 ms episode decides every
// 190 µs, inside the built-in model's validated intervals, not every
// 160 µs, outside them. 0 when d is too short for any.
func DefaultIntervalFor(d simenv.Time) simenv.Time {
	iv := min(DefaultInterval, d/(MinDecisions+5))
	return max(iv, min(ShortestDefaultInterval, d/(MinDecisions+1)))
}

// IntervalFor is the control interval of cfg where none is given: the
// one it names (Config.Interval: a twin's is the agent's), else
// DefaultIntervalFor its duration.
func IntervalFor(cfg simenv.Config) simenv.Time {
	if cfg.Interval > 0 {
		return cfg.Interval
	}
	return DefaultIntervalFor(cfg.Duration)
}

// Options configure a Env. Zero fields take the defaults.
type Options struct {
	// Interval is the control interval Δ in simulated time.
	Interval simenv.Time
	// Catalogue maps actions to settings (default DefaultCatalogue()).
	Catalogue env.Catalogue
	// Observer normalises observations (defaults of ObserverConfig).
	Observer env.ObserverConfig
	// Reward weighs the reward terms (nil: DefaultRewardWeights()).
	Reward *env.RewardWeights
	// Priorities are the queues controlled on every port (nil: the
	// simulation's lossless priorities).
	Priorities []int
	// Switches restricts control to the switches of these names (nil: all).
	Switches []string
	// FlowStatsEveryStep fills StepInfo's slowdown figures on every step;
	// by default only on the last step of an episode (they read and sort
	// every flow of the run).
	FlowStatsEveryStep bool
	// HidePeer leaves every queue's Peer unknown in the observations, as
	// from a switch whose agent has no fabric-ports (training teaches that
	// case with it); rewards still use the true peer.
	HidePeer bool
	// Missing makes every queue look as a switch lacking this telemetry
	// exports it (env.Telemetry.Mask): how a policy fares under a device
	// profile's feature set, and the feature dropout of training.
	Missing env.Telemetry
	// Truth computes Env.Truth after every interval: ground truth for an
	// asymmetric critic in training, never an input of a policy.
	Truth bool
	// PmaxStep > 0 runs every setting a step applies at the Pmax a switch
	// of that resolution holds (env.QuantizePmax; env.PmaxStep is whole
	// percents, as OpenConfig and SONiC switches hold it): the policy as
	// deployed rather than as decided. 0: as decided.
	PmaxStep float64
}

// StepInfo carries ground truth for evaluation. A policy must not read it:
// observations and rewards come from switch counters only.
type StepInfo struct {
	Step     int           // decisions taken so far in this episode
	Now      simenv.Time   // simulated time at the end of the step
	Settings []env.Setting // setting applied to each queue (Keys order) for this step
	Stats    simenv.Stats

	FlowsStarted  int
	FlowsFinished int
	// MeanSlowdown and MaxSlowdown are over the flows finished so far (0
	// when none has), on the last step of an episode, or on every step with
	// Options.FlowStatsEveryStep.
	MeanSlowdown float64
	MaxSlowdown  float64
}

// Env is a Gymnasium-style multi-agent environment over the simulator:
// one agent per controlled egress queue, all sharing one policy, deciding
// every Δ of simulated time. Observations go through export.Snapshot and the
// same Observer a production agent uses. Not safe for concurrent use.
type Env struct {
	cfg    simenv.Config
	opts   Options
	weight env.RewardWeights
	cat    env.Catalogue

	sim      *simenv.Sim
	obs      *env.Observer
	switches []simenv.SwitchInfo // controlled switches
	prios    []int
	keys     []env.QueueKey
	refs     []simenv.QueueRef
	interval simenv.Time
	last     []env.Observation
	peers    []env.Peer // true peer of every queue at the last observation, Keys order
	step     int
	done     bool

	// ground truth (RewardWeights.FlowSmall/FlowLarge/FlowSmallTail)
	byRef map[simenv.QueueRef]int // controlled queue -> Keys index

	maxHeadroom []int64 // by switch index: the most one PG's headroom may be

	finished int               // cursor into Sim.FinishedFlows
	path     []simenv.QueueRef // scratch
	truth    []truthAcc        // scratch, one per queue

	// Options.Truth: the features of Truth, NumTruthFeatures per queue.
	truthFeat []float32
	inFlight  []float64           // scratch: per queue, flows in flight by class and their backlog
	active    []simenv.ActiveFlow // scratch
	paths     map[int][]int       // flow id -> controlled queues it crosses (FlowQueues)
	late      map[int]float64     // RewardWeights.FlowLargeProgress: large flow id -> lateness charged so far
	queues    []int               // scratch
}

// truthAcc sums one queue's ground truth over an interval.
type truthAcc struct {
	small, large   float64
	nSmall, nLarge int
	smallMax       float64 // the largest log2 slowdown of a small flow
	// growth in lateness of the large flows crossing the queue in the
	// interval (RewardWeights.FlowLargeProgress), and how many there were
	lateGrowth float64
	nLate      int
}

// Flow classes of the ground-truth reward (eval's classes).
const (
	truthSmallBytes = 100_000
	truthLargeBytes = 1_000_000
)

// New checks cfg and opts and builds the simulation once (seed
// cfg.Seed) to learn the controlled queues. Call Reset before Step.
func New(cfg simenv.Config, opts Options) (*Env, error) {
	e := &Env{cfg: cfg, opts: opts}
	if opts.Interval < 0 {
		return nil, fmt.Errorf("sim env: interval %v is negative", opts.Interval)
	}
	if !(opts.PmaxStep >= 0 && opts.PmaxStep <= 0.1) {
		return nil, fmt.Errorf("sim env: pmax step %g must be within [0, 0.1]", opts.PmaxStep)
	}
	if cfg.Duration <= 0 {
		return nil, fmt.Errorf("sim env: config %q duration %v must be positive", cfg.Name, cfg.Duration)
	}
	e.interval = opts.Interval
	if e.interval == 0 {
		e.interval = IntervalFor(cfg)
		if e.interval <= 0 {
			return nil, fmt.Errorf("sim env: config %q duration %v is too short for %d decisions", cfg.Name, cfg.Duration, MinDecisions)
		}
	}
	if e.interval >= cfg.Duration {
		return nil, fmt.Errorf("sim env: interval %v must be below config %q duration %v", e.interval, cfg.Name, cfg.Duration)
	}
	e.weight = env.DefaultRewardWeights()
	if opts.Reward != nil {
		if err := opts.Reward.Validate(); err != nil {
			return nil, fmt.Errorf("sim env: %w", err)
		}
		e.weight = *opts.Reward
	}
	e.cat = opts.Catalogue
	if e.cat.IsZero() {
		e.cat = env.DefaultCatalogue()
	}
	for _, p := range opts.Priorities {
		if p < 0 || p >= simenv.NumQueues {
			return nil, fmt.Errorf("sim env: priority %d is outside 0..%d", p, simenv.NumQueues-1)
		}
	}
	if err := e.build(cfg.Seed); err != nil {
		return nil, err
	}
	e.done = true // Step needs a Reset first
	return e, nil
}

// build creates the simulation with seed and derives the controlled queues.
func (e *Env) build(seed uint64) error {
	cfg := e.cfg
	cfg.Seed = seed
	sim, err := simenv.New(cfg)
	if err != nil {
		return fmt.Errorf("sim env: %w", err)
	}
	prios := e.opts.Priorities
	if prios == nil {
		prios = sim.LosslessPriorities()
	}
	prios = append([]int(nil), prios...)
	sort.Ints(prios)
	all := sim.Switches()
	var sws []simenv.SwitchInfo
	if e.opts.Switches == nil {
		sws = all
	} else {
		byName := make(map[string]simenv.SwitchInfo, len(all))
		for _, s := range all {
			byName[s.Name] = s
		}
		for _, n := range e.opts.Switches {
			s, ok := byName[n]
			if !ok {
				return fmt.Errorf("sim env: switch %q is not in config %q (it has %d switches)", n, cfg.Name, len(all))
			}
			sws = append(sws, s)
		}
	}
	var keys []env.QueueKey
	var refs []simenv.QueueRef
	for _, s := range sws {
		for _, p := range s.Ports {
			for _, pr := range prios {
				keys = append(keys, env.QueueKey{Target: s.Name, Port: p.Name, Queue: pr})
				refs = append(refs, simenv.QueueRef{Switch: s.Index, Port: p.Index, Queue: pr})
			}
		}
	}
	if len(keys) == 0 {
		return fmt.Errorf("sim env: config %q has no controlled queue (switches %d, priorities %v)", cfg.Name, len(sws), prios)
	}
	e.sim, e.switches, e.prios, e.keys, e.refs = sim, sws, prios, keys, refs
	e.byRef = make(map[simenv.QueueRef]int, len(refs))
	for i, r := range refs {
		e.byRef[r] = i
	}
	e.finished = 0
	e.paths, e.late = nil, nil
	e.truthFeat = e.truthFeat[:0]
	e.maxHeadroom = make([]int64, len(all))
	for _, s := range all {
		e.maxHeadroom[s.Index] = s.BufferBytes / 4
	}
	e.obs = env.NewObserver(e.opts.Observer)
	e.last, e.step, e.done = nil, 0, false
	return nil
}

// Keys lists the controlled queues, in the order of observations, actions
// and rewards.
func (e *Env) Keys() []env.QueueKey { return append([]env.QueueKey(nil), e.keys...) }

// Interval is the control interval Δ.
func (e *Env) Interval() simenv.Time { return e.interval }

// Catalogue is the action catalogue Step uses.
func (e *Env) Catalogue() env.Catalogue { return e.cat }

// Sim is the current simulation (for evaluation and plots; a policy must
// not read it).
func (e *Env) Sim() *simenv.Sim { return e.sim }

// Reset rebuilds the simulation with seed, takes a first sample at time 0,
// runs one interval under the configured initial settings and returns the
// observations at its end.
func (e *Env) Reset(seed uint64) ([]env.Observation, error) {
	if err := e.build(seed); err != nil {
		e.done = true
		return nil, err
	}
	e.observe() // first sample: primes the env.Observer
	obs, _, err := e.advance()
	if err != nil {
		e.done = true
		return nil, err
	}
	e.done = e.sim.Now() >= e.cfg.Duration // an idle fabric still gets one Step
	return obs, nil
}

// Step applies one catalogue action per queue (Keys order), runs one
// interval Δ and returns the new observations, one reward per queue, and
// whether the episode is over (Duration reached or no traffic left).
func (e *Env) Step(actions []int) ([]env.Observation, []float64, bool, StepInfo, error) {
	if err := e.ready(len(actions), "actions"); err != nil {
		return nil, nil, true, StepInfo{}, err
	}
	settings := make([]env.Setting, len(actions))
	for i, a := range actions {
		if a < 0 || a >= e.cat.Len() {
			return nil, nil, e.done, StepInfo{}, fmt.Errorf("sim env: action %d for %s is outside 0..%d", a, e.keys[i], e.cat.Len()-1)
		}
		settings[i] = e.cat.SettingFor(a, e.last[i].RateBps, e.last[i].Current, e.last[i].MinHeadroomBytes)
	}
	return e.stepWith(settings)
}

// StepSettings is Step for policies that decide settings directly
// (presets, the adaptive baseline): one setting per queue, Keys order. A
// setting with HeadroomBytes > 0 that differs from the current headroom
// also changes the headroom of the port's PG of that priority.
func (e *Env) StepSettings(settings []env.Setting) ([]env.Observation, []float64, bool, StepInfo, error) {
	if err := e.ready(len(settings), "settings"); err != nil {
		return nil, nil, true, StepInfo{}, err
	}
	return e.stepWith(append([]env.Setting(nil), settings...))
}

func (e *Env) ready(n int, what string) error {
	if e.sim == nil || e.last == nil {
		return errors.New("sim env: call Reset before Step")
	}
	if e.done {
		return errors.New("sim env: episode is over: call Reset")
	}
	if n != len(e.keys) {
		return fmt.Errorf("sim env: got %d %s, want one per controlled queue (%d)", n, what, len(e.keys))
	}
	return nil
}

func (e *Env) stepWith(settings []env.Setting) ([]env.Observation, []float64, bool, StepInfo, error) {
	for i, s := range settings {
		ecn := simenv.ECN{KminBytes: s.KminBytes, KmaxBytes: s.KmaxBytes, Pmax: s.Pmax}
		if err := ecn.Validate(); err != nil {
			return nil, nil, e.done, StepInfo{}, fmt.Errorf("sim env: setting for %s: %w", e.keys[i], err)
		}
		if s.HeadroomBytes < 0 {
			return nil, nil, e.done, StepInfo{}, fmt.Errorf("sim env: setting for %s: headroom %d B is negative", e.keys[i], s.HeadroomBytes)
		}
	}
	for i := range settings {
		if e.opts.PmaxStep > 0 && settings[i].Pmax > 0 {
			settings[i].Pmax = env.QuantizePmax(settings[i].Pmax, e.opts.PmaxStep)
		}
		if settings[i].HeadroomBytes == 0 { // not managed: keep what the PG has
			settings[i].HeadroomBytes = e.last[i].Current.HeadroomBytes
		}
		if settings[i].Alpha == 0 {
			settings[i].Alpha = e.last[i].Current.Alpha
		}
	}
	var changed []bool
	if e.weight.Change > 0 {
		changed = make([]bool, len(settings))
		for i := range settings {
			changed[i] = !settings[i].SameECN(e.last[i].Current)
		}
	}
	for i, s := range settings {
		ref := e.refs[i]
		if err := e.sim.SetECN(ref, simenv.ECN{KminBytes: s.KminBytes, KmaxBytes: s.KmaxBytes, Pmax: s.Pmax}); err != nil {
			return nil, nil, e.done, StepInfo{}, fmt.Errorf("sim env: set ECN of %s: %w", e.keys[i], err)
		}
		pg := simenv.PGRef{Switch: ref.Switch, Port: ref.Port, PG: ref.Queue}
		if lim := min(e.maxHeadroom[ref.Switch], e.sim.HeadroomLimit(pg)); s.HeadroomBytes > lim {
			// The simulated MMU holds at most a quarter of its buffer
			// as one PG's headroom, and no more headroom in all than
			// its buffer leaves room for; a switch would refuse more.
			s.HeadroomBytes, settings[i].HeadroomBytes = lim, lim
		}
		if s.HeadroomBytes > 0 && s.HeadroomBytes != e.last[i].Current.HeadroomBytes {
			if err := e.sim.SetHeadroom(pg, s.HeadroomBytes); err != nil {
				return nil, nil, e.done, StepInfo{}, fmt.Errorf("sim env: set headroom of %s: %w", e.keys[i], err)
			}
		}
		if s.Alpha > 0 && s.Alpha != e.last[i].Current.Alpha {
			if err := e.sim.SetAlpha(pg, s.Alpha); err != nil {
				return nil, nil, e.done, StepInfo{}, fmt.Errorf("sim env: set alpha of %s: %w", e.keys[i], err)
			}
		}
	}
	obs, rewards, err := e.advance()
	if err != nil {
		return nil, nil, true, StepInfo{}, err
	}
	for i, c := range changed { // RewardWeights.Change
		if c {
			rewards[i] -= e.weight.Change
		}
	}
	e.step++
	info := e.info(settings)
	return obs, rewards, e.done, info, nil
}

// advance runs one interval and observes.
func (e *Env) advance() ([]env.Observation, []float64, error) {
	now := e.sim.Now()
	next := min(now+e.interval, e.cfg.Duration)
	if next > now {
		e.sim.RunUntil(next)
	}
	obs := e.observe()
	if len(obs) != len(e.keys) {
		return nil, nil, fmt.Errorf("sim env: telemetry gave %d queues, want %d", len(obs), len(e.keys))
	}
	rewards := make([]float64, len(obs))
	for i := range obs {
		rewards[i] = env.RewardAt(obs[i].Metrics, e.peers[i], e.weight)
	}
	e.addTruth(rewards, obs)
	if e.opts.Truth {
		e.observeTruth(obs)
	}
	e.last = obs
	e.done = e.sim.Now() >= e.cfg.Duration || e.sim.Idle()
	return obs, rewards, nil
}

// observe reads every controlled switch once (which also restarts its
// watermark window) and returns the observations in Keys order.
func (e *Env) observe() []env.Observation {
	out := make([]env.Observation, 0, len(e.keys))
	e.peers = e.peers[:0]
	for _, s := range e.switches {
		snap := export.Snapshot(e.sim.Telemetry(s.Index), s, e.prios)
		for i := range snap.Queues {
			e.peers = append(e.peers, snap.Queues[i].Peer)
			if e.opts.HidePeer {
				snap.Queues[i].Peer = env.PeerUnknown
			}
			e.opts.Missing.Mask(&snap.Queues[i])
		}
		out = append(out, e.obs.Observe(snap)...)
	}
	return out
}

func (e *Env) info(settings []env.Setting) StepInfo {
	st := e.sim.Stats()
	info := StepInfo{Step: e.step, Now: e.sim.Now(), Settings: settings, Stats: st,
		FlowsStarted: st.FlowsStarted, FlowsFinished: st.FlowsFinished}
	if !e.done && !e.opts.FlowStatsEveryStep {
		return info
	}
	n := 0
	sum := 0.0
	for _, f := range e.sim.Flows() {
		if f.Finish == 0 {
			continue
		}
		sd := f.Slowdown()
		sum += sd
		n++
		info.MaxSlowdown = max(info.MaxSlowdown, sd)
	}
	if n > 0 {
		info.MeanSlowdown = sum / float64(n)
	}
	return info
}

// addTruth charges each measured queue the ground-truth terms of the
// reward (RewardWeights.FlowSmall, FlowLarge, FlowSmallTail): the mean
// log2 slowdown of the small and large flows that finished in the interval
// after crossing it, and the largest of the small ones; and
// FlowLargeProgress: the mean growth in lateness of the large flows that
// crossed it in the interval, finished or not. Flows that finished are
// read once (a cursor), so a step costs what finished in it, plus, with
// FlowLargeProgress, what is in flight.
func (e *Env) addTruth(rewards []float64, obs []env.Observation) {
	if !e.weight.GroundTruth() && !e.opts.Truth {
		return
	}
	acc := e.finishedThrough(len(rewards))
	if e.weight.FlowLargeProgress != 0 {
		e.lateThrough(acc)
	}
	for i := range acc {
		if !obs[i].Valid {
			continue
		}
		if n := acc[i].nSmall; n > 0 {
			rewards[i] -= e.weight.FlowSmall*acc[i].small/float64(n) + e.weight.FlowSmallTail*acc[i].smallMax
		}
		if n := acc[i].nLarge; n > 0 {
			rewards[i] -= e.weight.FlowLarge * acc[i].large / float64(n)
		}
		if n := acc[i].nLate; n > 0 {
			rewards[i] -= e.weight.FlowLargeProgress * acc[i].lateGrowth / float64(n)
		}
	}
}

// lateness is log2 of a running flow's time so far over its standalone
// FCT, 0 until that has passed: a lower bound on the log2 slowdown it will
// finish with, which never falls as time goes on.
func lateness(elapsed, standalone simenv.Time) float64 {
	if standalone <= 0 || elapsed <= standalone {
		return 0
	}
	return math.Log2(float64(elapsed) / float64(standalone))
}

// lateThrough adds to acc, per controlled queue, the growth in lateness of
// the large flows in flight now that cross it (RewardWeights.
// FlowLargeProgress); finishedThrough has added the finished ones'.
func (e *Env) lateThrough(acc []truthAcc) {
	if e.late == nil {
		e.late = make(map[int]float64)
	}
	if e.paths == nil {
		e.paths = make(map[int][]int)
	}
	now := e.sim.Now()
	e.active = e.sim.ActiveFlows(e.active[:0])
	for _, a := range e.active {
		if a.SizeBytes < truthLargeBytes {
			continue
		}
		l := lateness(now-a.Start, a.Standalone)
		d := l - e.late[a.ID]
		e.late[a.ID] = l
		qs, ok := e.paths[a.ID]
		if !ok {
			qs = e.FlowQueues(nil, a.ID)
			e.paths[a.ID] = qs
		}
		for _, i := range qs {
			acc[i].lateGrowth += d
			acc[i].nLate++
		}
	}
}

// finishedThrough sums, per controlled queue (n of them), the log2
// slowdowns of the small and large flows that finished since the last
// call after crossing it.
func (e *Env) finishedThrough(n int) []truthAcc {
	if cap(e.truth) < n {
		e.truth = make([]truthAcc, n)
	}
	acc := e.truth[:n]
	clear(acc)
	flows, next := e.sim.FinishedFlows(e.finished)
	e.finished = next
	for _, f := range flows {
		delete(e.paths, f.ID) // Options.Truth's cache: the flow is done
		small, large := f.SizeBytes < truthSmallBytes, f.SizeBytes >= truthLargeBytes
		if !small && !large {
			continue
		}
		sd := f.Slowdown()
		if !(sd >= 1) || math.IsInf(sd, 0) {
			continue
		}
		l := math.Log2(sd)
		// FlowLargeProgress: the rest of its lateness, now its slowdown
		grow := 0.0
		if large {
			grow = l - e.late[f.ID]
			delete(e.late, f.ID)
		}
		e.queues = e.FlowQueues(e.queues[:0], f.ID)
		for _, i := range e.queues {
			if small {
				acc[i].small += l
				acc[i].nSmall++
				acc[i].smallMax = max(acc[i].smallMax, l)
			} else {
				acc[i].large += l
				acc[i].nLarge++
				acc[i].lateGrowth += grow
				acc[i].nLate++
			}
		}
	}
	return acc
}
