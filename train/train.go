package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy/nn"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/gym"
	"github.com/ecntune/ecntune/simenv/scenario"
	"github.com/ecntune/ecntune/train/rl"
)

// Algorithms.
const (
	AlgoDDQN = "ddqn"
	AlgoPPO  = "ppo"
)

// Randomisation perturbs a scenario per episode (domain randomisation).
// Multipliers are drawn uniformly in [Min, Max]; a zero pair keeps the
// value. See Config.withDefaults for the defaults.
type Randomisation struct {
	// Off disables every perturbation (episodes differ only by seed).
	Off bool `json:"off,omitempty"`
	// LoadMin/LoadMax multiply the load of every CDF workload (the result
	// is kept within 0.05..0.95).
	LoadMin float64 `json:"load_min"`
	LoadMax float64 `json:"load_max"`
	// FaninMin/FaninMax multiply incast fan-in (kept within 2..hosts-1),
	// SizeMin/SizeMax incast flow sizes.
	FaninMin float64 `json:"fanin_min"`
	FaninMax float64 `json:"fanin_max"`
	SizeMin  float64 `json:"size_min"`
	SizeMax  float64 `json:"size_max"`
	// HostRates lists host link rates (bps) to pick from; every link rate
	// and the DCQCN rate steps scale by the same factor.
	HostRates []float64 `json:"host_rates,omitempty"`
	// FabricScales lists factors to pick from for the rate of every link
	// between two switches (the hosts' rate is HostRates'): 0.5 halves
	// the uplinks, doubling a leaf's oversubscription.
	FabricScales []float64 `json:"fabric_scales,omitempty"`
	// BufferMin/BufferMax multiply every switch's shared buffer (buffer
	// per port), CableMin/CableMax the PFC cable length (the headroom a
	// PG needs), DelayMin/DelayMax every link's propagation delay.
	BufferMin float64 `json:"buffer_min,omitempty"`
	BufferMax float64 `json:"buffer_max,omitempty"`
	CableMin  float64 `json:"cable_min,omitempty"`
	CableMax  float64 `json:"cable_max,omitempty"`
	DelayMin  float64 `json:"delay_min,omitempty"`
	DelayMax  float64 `json:"delay_max,omitempty"`
	// AddIncast is the probability of adding an incast workload (fan-in
	// 3..hosts-1, 50..400 KB every 200..800 µs) to the episode: mixes.
	AddIncast float64 `json:"add_incast"`
	// RandomStart starts every episode from a random catalogue setting
	// instead of the scenario's.
	RandomStart bool `json:"random_start"`
	// RandomPFC is the probability of an episode whose lossless PGs start
	// at a random headroom (1 to 3 times the computed lossless minimum:
	// the margins vendors add) and a random alpha (one of env.Alphas),
	// so that the policy meets the PFC settings its act-v3 actions leave.
	RandomPFC float64 `json:"random_pfc,omitempty"`
	// HidePeer is the probability of an episode in which no queue's Peer
	// is known (gym.Options.HidePeer): the policy then also learns
	// what to do for a switch whose agent has no fabric-ports.
	HidePeer float64 `json:"hide_peer,omitempty"`
	// DropTelemetry is the probability of an episode in which every queue
	// lacks the optional telemetry of one kind of switch (a device profile
	// of env.DeviceTelemetry, or a random subset of the optional features):
	// feature dropout, so that one model serves every profile.
	DropTelemetry float64 `json:"drop_telemetry,omitempty"`
}

// IsZero reports whether r sets nothing, not even Off: a Config with such
// a Randomisation trains with DefaultRandomisation.
func (r Randomisation) IsZero() bool {
	return !r.Off && r.LoadMin == 0 && r.LoadMax == 0 && r.FaninMin == 0 && r.FaninMax == 0 && r.SizeMin == 0 &&
		r.SizeMax == 0 && len(r.HostRates) == 0 && len(r.FabricScales) == 0 && r.BufferMin == 0 && r.BufferMax == 0 &&
		r.CableMin == 0 && r.CableMax == 0 && r.DelayMin == 0 && r.DelayMax == 0 && r.AddIncast == 0 && !r.RandomStart && r.HidePeer == 0 && r.DropTelemetry == 0 && r.RandomPFC == 0
}

// Config is everything a training run depends on.
type Config struct {
	Algo      string
	Scenarios []scenario.Named
	// Episodes is the number of episodes to train (0: until Stop says so;
	// then exploration decays over DefaultDecayEpisodes).
	Episodes int
	// Workers is the number of episodes run in parallel per round.
	Workers int
	Seed    uint64
	// Hidden are the hidden layer widths (default 64, 64).
	Hidden []int
	// Interval is the control interval Δ (default 200 µs).
	Interval simenv.Time
	// MaxEpisode caps an episode's simulated time (default 5 ms).
	MaxEpisode simenv.Time
	// SpreadEpisodes starts each training episode of a scenario longer
	// than MaxEpisode at an offset drawn across it (episodeRNG: the same
	// for a seed and episode), its workloads shifted to it, so that the
	// episodes see all of the scenario's traffic, not its first
	// MaxEpisode only (a twin whose traffic changes later); the greedy
	// evaluation episode still starts at 0.
	SpreadEpisodes bool
	// PmaxStep > 0 runs every decision of the training episodes at the
	// Pmax a switch of that resolution holds (gym.Options.PmaxStep;
	// env.PmaxStep: whole percents): the policy learns what its choice
	// does as switches run it (a 0.3% action runs as the 1% one). train
	// --twin sets the switches' (--agent's pmax-step, else whole
	// percents); 0 runs decisions as made.
	PmaxStep float64
	Gamma    float64 // default 0.7 (DDQN), 0.9 (PPO), unless GammaSet
	// GammaSet: Gamma was given, and 0 is a discount of 0 (each decision
	// judged by its own interval's reward alone), not the default.
	GammaSet bool
	LR       float64 // default 1e-3 (DDQN), 3e-4 (PPO)
	// Randomise perturbs the scenarios per episode.
	Randomise Randomisation
	// Reward weights (default env.DefaultRewardWeights()).
	Reward *env.RewardWeights
	// WarmUp is the number of transitions DDQN stores before its first
	// gradient step (default 1000).
	WarmUp int
	// CheckpointEvery saves a checkpoint every so many rounds (default 10).
	CheckpointEvery int
	// EvalEvery runs the greedy evaluation episode every so many rounds
	// (default 5).
	EvalEvery int
	// Spec is "OBS/ACT", the observation and action specs the model
	// speaks, e.g. "obs-v3/act-v2" to train a model of an earlier spec
	// (it reads the prefix of today's features; act-v2 is the ECN head
	// alone). Empty: env.SpecVersion, and act-v3 for PPO, act-v2 for DDQN.
	Spec string
	// PreferenceScale, when > 0, trains a model conditioned on the
	// operator's preference (see Preference): one model for every point of
	// the latency/throughput trade-off, where a model trained without it
	// takes its preference as a tie-break over its scores.
	PreferenceScale float64
	// CriticTruth trains an asymmetric actor-critic (PPO only): the critic
	// reads the simulator's ground truth of each queue (gym.Truth, spec
	// gym.TruthSpec: flows in flight through it by size, their backlog,
	// the slowdowns of the flows that just finished through it, and the
	// share of the episode left) after the actor's features, so its
	// advantages are less noisy; the actor, which is all a model keeps,
	// reads counters only.
	CriticTruth bool
	// ECN, when set, makes the run train a switch-level headroom model
	// (observation spec env.SwitchSpecVersion, action spec
	// env.HeadroomActionSpec) beside this frozen ECN policy: every interval
	// the ECN network picks each queue's ECN action (its best, greedily),
	// and the model being trained picks one headroom action per switch, for
	// all of the switch's lossless PGs at once, from the switch's features
	// (env.SwitchFeatures), rewarded with the mean reward of its queues.
	// A PG's headroom moves the shared pool of every PG of its switch, so
	// its own queue's reward barely sees it; one decision per switch does.
	// PPO only. ECNName names the ECN policy in the model's provenance.
	ECN     *rl.Net
	ECNName string
	// Init, when set, is the network the run starts from instead of
	// random weights (fine-tuning a trained model, see FineTune): the
	// policy network of the algorithm (PPO's actor, DDQN's Q-network),
	// of exactly the architecture the run trains. InitName names it in
	// the model's provenance. A DDQN run from Init explores from
	// epsilon 0.2 down, not 1.
	Init     *rl.Net
	InitName string
	// CriticWarmUp is the number of episodes, from the first, whose PPO
	// updates fit the critic alone (rl.PPO.UpdateCritic), with Init only:
	// the actor started from learns from the advantages of a critic fitted
	// to it, not of a random one.
	CriticWarmUp int
	// HeldOut are simulator seeds no training episode uses (those of the
	// evaluation that follows a fine-tuning run).
	HeldOut SeedRange
}

// switchLevel reports whether c trains a switch-level headroom model.
func (c Config) switchLevel() bool { return c.ECN != nil }

// MaxPreferenceScale bounds Config.PreferenceScale: at 4 the latency
// terms weigh 256 times as much at one end of the preferences as at the
// other.
const MaxPreferenceScale = 4

// Preference is what a preference-conditioned training episode (Config.
// PreferenceScale s > 0) does with its preference p, drawn uniformly in
// [-1, 1] per episode: the reward's latency terms (delay, tail_delay,
// flow_small) are multiplied by 2^(s·p) and its throughput terms
// (throughput, fabric_throughput, flow_large, flow_large_progress) by 2^(−s·p), and p is one
// more input of the network, after the observation's features. The small
// flows' tail (flow_small_tail) is not scaled: at every preference the
// slowest small flows cost the same, so the throughput end cannot buy
// goodput with them. p > 0
// leans to latency, p < 0 to throughput, as policy.Learned's prefer=P,
// which is that input at inference.
func Preference(w env.RewardWeights, scale, p float64) env.RewardWeights {
	lat, thr := math.Exp2(scale*p), math.Exp2(-scale*p)
	w.Delay *= lat
	w.TailDelay *= lat
	w.FlowSmall *= lat
	w.Throughput *= thr
	w.FlowLarge *= thr
	w.FlowLargeProgress *= thr
	if w.FabricThroughput != nil {
		f := *w.FabricThroughput * thr
		w.FabricThroughput = &f
	}
	return w
}

// Defaults.
const (
	DefaultInterval       = 200 * simenv.Microsecond
	DefaultMaxEpisode     = 5 * simenv.Millisecond
	DefaultDecayEpisodes  = 300
	DefaultCheckpointEvry = 10
	DefaultEvalEvery      = 5
	// EvalSeed is the simulator seed of the greedy evaluation episodes.
	EvalSeed = 1_000_003
)

func (c Config) withDefaults() Config {
	c.Algo = strings.ToLower(strings.TrimSpace(c.Algo))
	if c.Algo == "" {
		c.Algo = AlgoDDQN
	}
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.Hidden == nil {
		c.Hidden = []int{64, 64}
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.MaxEpisode == 0 {
		c.MaxEpisode = DefaultMaxEpisode
	}
	if c.Gamma == 0 && !c.GammaSet {
		c.Gamma = 0.7
		if c.Algo == AlgoPPO {
			c.Gamma = 0.9
		}
	}
	if c.LR == 0 {
		c.LR = 1e-3
		if c.Algo == AlgoPPO {
			c.LR = 3e-4
		}
	}
	if c.Randomise.IsZero() {
		c.Randomise = DefaultRandomisation()
	}
	if c.Reward == nil {
		w := DefaultReward()
		c.Reward = &w
	}
	if c.CheckpointEvery == 0 {
		c.CheckpointEvery = DefaultCheckpointEvry
	}
	if c.WarmUp == 0 {
		c.WarmUp = 1000
	}
	if c.EvalEvery == 0 {
		c.EvalEvery = DefaultEvalEvery
	}
	return c
}

// DefaultReward is the reward training uses unless told otherwise:
// env.DefaultRewardWeights.
func DefaultReward() env.RewardWeights {
	return env.DefaultRewardWeights()
}

// DefaultRandomisation: loads ×0.5..1.5, fan-in ×0.5..1.5, incast sizes
// ×0.5..2, hosts at 25, 50, 100 or 200 Gb/s, an extra incast in 30% of the
// episodes, random starting settings, the peer hidden in 20%, a device
// profile's telemetry missing in 40%.
func DefaultRandomisation() Randomisation {
	return Randomisation{LoadMin: 0.5, LoadMax: 1.5, FaninMin: 0.5, FaninMax: 1.5, SizeMin: 0.5, SizeMax: 2,
		HostRates: []float64{25e9, 50e9, 100e9, 200e9}, AddIncast: 0.3, RandomStart: true, HidePeer: 0.2, DropTelemetry: 0.4, RandomPFC: 0.5}
}

func checkPair(name string, lo, hi float64) error {
	if lo == 0 && hi == 0 {
		return nil
	}
	if !(lo > 0) || !(hi >= lo) || math.IsInf(hi, 0) {
		return fmt.Errorf("train: randomisation %s_min %g, %s_max %g: want 0 < min <= max, finite", name, lo, name, hi)
	}
	return nil
}

// Validate names the first field at fault; zero fields stand for their
// defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	for _, check := range []func() error{c.validateRun, c.Randomise.validate, c.validateSpec, c.validateModel, c.validateInit} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateRun checks the algorithm, the scenarios and the run's scalar
// settings (episodes, workers, interval, discount, learning rate, ...).
func (c Config) validateRun() error {
	if c.Algo != AlgoDDQN && c.Algo != AlgoPPO {
		return fmt.Errorf("train: algorithm %q: want ddqn or ppo", c.Algo)
	}
	if len(c.Scenarios) == 0 {
		return errors.New("train: no scenario: give at least one --scenario")
	}
	named := map[string]int{}
	for i, s := range c.Scenarios {
		if s.Config.Duration <= 0 {
			return fmt.Errorf("train: scenario %d (%s): duration %v must be positive", i, s.Name, s.Config.Duration)
		}
		// the greedy evaluation's figures (Result.Eval, the output, the
		// model's card) and the resume parts are by name: two of one name
		// gave the second's figure for both
		j, dup := named[s.Name]
		switch {
		case dup && s.Path != "" && s.Path == c.Scenarios[j].Path:
			return fmt.Errorf("train: scenario %s is given twice (%d and %d): give each once", s.Path, j, i)
		case dup:
			return fmt.Errorf("train: scenarios %d (%s) and %d (%s) are both named %s: their figures would be one; give one another name: in its file",
				j, c.Scenarios[j].Path, i, s.Path, s.Name)
		}
		named[s.Name] = i
	}
	switch {
	case c.Episodes < 0:
		return fmt.Errorf("train: episodes %d: want 0 (until stopped) or more", c.Episodes)
	case c.Workers < 1 || c.Workers > 256:
		return fmt.Errorf("train: workers %d: allowed 1..256", c.Workers)
	case !(c.PmaxStep >= 0 && c.PmaxStep <= 0.1):
		return fmt.Errorf("train: pmax step %g: want 0 (as decided) or a resolution up to 0.1", c.PmaxStep)
	case c.Interval < simenv.Microsecond:
		return fmt.Errorf("train: interval %v: want at least 1µs", c.Interval)
	case c.MaxEpisode < 2*c.Interval:
		return fmt.Errorf("train: max episode %v: want at least two intervals (%v)", c.MaxEpisode, 2*c.Interval)
	case !(c.Gamma >= 0 && c.Gamma < 1):
		return fmt.Errorf("train: gamma %g: allowed [0, 1)", c.Gamma)
	case !(c.LR > 0 && c.LR <= 1):
		return fmt.Errorf("train: learning rate %g: allowed (0, 1]", c.LR)
	case c.CheckpointEvery < 1:
		return fmt.Errorf("train: checkpoint every %d rounds: want at least 1", c.CheckpointEvery)
	case c.WarmUp < 1 || c.WarmUp > 60_000:
		return fmt.Errorf("train: warm-up %d transitions: allowed 1..60000 (the replay capacity)", c.WarmUp)
	case c.EvalEvery < 1:
		return fmt.Errorf("train: eval every %d rounds: want at least 1", c.EvalEvery)
	}
	return nil
}

// validate checks the randomisation's ranges, host rates and
// probabilities.
func (r Randomisation) validate() error {
	for _, p := range []struct {
		n      string
		lo, hi float64
	}{{"load", r.LoadMin, r.LoadMax}, {"fanin", r.FaninMin, r.FaninMax}, {"size", r.SizeMin, r.SizeMax},
		{"buffer", r.BufferMin, r.BufferMax}, {"cable", r.CableMin, r.CableMax}, {"delay", r.DelayMin, r.DelayMax}} {
		if err := checkPair(p.n, p.lo, p.hi); err != nil {
			return err
		}
	}
	for i, v := range r.HostRates {
		if !(v >= 1e9 && v <= 1.6e12) {
			return fmt.Errorf("train: randomisation host_rates[%d] = %g bps: allowed 1 Gb/s..1.6 Tb/s", i, v)
		}
	}
	for i, v := range r.FabricScales {
		if !(v >= 0.0625 && v <= 16) {
			return fmt.Errorf("train: randomisation fabric_scales[%d] = %g: allowed 0.0625..16", i, v)
		}
	}
	if !(r.AddIncast >= 0 && r.AddIncast <= 1) {
		return fmt.Errorf("train: randomisation add_incast %g: allowed [0, 1]", r.AddIncast)
	}
	if !(r.DropTelemetry >= 0 && r.DropTelemetry <= 1) {
		return fmt.Errorf("train: randomisation drop_telemetry %g: allowed [0, 1]", r.DropTelemetry)
	}
	if !(r.RandomPFC >= 0 && r.RandomPFC <= 1) {
		return fmt.Errorf("train: randomisation random_pfc %g: allowed [0, 1]", r.RandomPFC)
	}
	if !(r.HidePeer >= 0 && r.HidePeer <= 1) {
		return fmt.Errorf("train: randomisation hide_peer %g: allowed [0, 1]", r.HidePeer)
	}
	return nil
}

// validateSpec checks an ECN model's OBS/ACT spec against the readable
// specs and the algorithm (a switch-level model's is validateSwitch's).
func (c Config) validateSpec() error {
	if c.Spec == "" || c.switchLevel() {
		return nil
	}
	obs, act, ok := strings.Cut(c.Spec, "/")
	switch {
	case !ok || !slices.Contains(env.ReadableObsSpecs, obs) || !slices.Contains(env.ReadableActionSpecs, act):
		return fmt.Errorf("train: spec %q: want OBS/ACT with OBS one of %s and ACT one of %s", c.Spec,
			strings.Join(env.ReadableObsSpecs, ", "), strings.Join(env.ReadableActionSpecs, ", "))
	case act != "act-v2" && c.Algo == AlgoDDQN:
		return fmt.Errorf("train: spec %q: ddqn speaks act-v2 only (one Q-value per joint action would be %d outputs)", c.Spec, env.DefaultCatalogue().Len())
	}
	return nil
}

// validateModel checks what shapes the model: the reward weights, a
// switch-level model's settings, critic truth, the preference scale and
// the hidden widths.
func (c Config) validateModel() error {
	if c.Reward != nil {
		if err := c.Reward.Validate(); err != nil {
			return fmt.Errorf("train: %w", err)
		}
	}
	if c.switchLevel() {
		if err := c.validateSwitch(); err != nil {
			return err
		}
	}
	if c.CriticTruth && (c.Algo != AlgoPPO || c.switchLevel()) {
		return fmt.Errorf("train: critic truth: only a PPO model of ECN settings has a critic that reads it (algo %s, switch-level %v)", c.Algo, c.switchLevel())
	}
	if !(c.PreferenceScale >= 0 && c.PreferenceScale <= MaxPreferenceScale) {
		return fmt.Errorf("train: preference scale %g: allowed 0 (no preference input) to %d", c.PreferenceScale, MaxPreferenceScale)
	}
	for i, h := range c.Hidden {
		if h < 1 || h > 4096 {
			return fmt.Errorf("train: hidden[%d] = %d: allowed 1..4096", i, h)
		}
	}
	return nil
}

// Hyper returns the hyper-parameters as text, for model provenance.
func (c Config) Hyper() map[string]string {
	c = c.withDefaults()
	hid := make([]string, len(c.Hidden))
	for i, h := range c.Hidden {
		hid[i] = strconv.Itoa(h)
	}
	rnd, _ := json.Marshal(c.Randomise)
	rw, _ := json.Marshal(c.Reward)
	h := map[string]string{
		"algo":             c.Algo,
		"episodes":         strconv.Itoa(c.Episodes),
		"hidden":           strings.Join(hid, ","),
		"interval":         c.Interval.String(),
		"max_episode":      c.MaxEpisode.String(),
		"gamma":            strconv.FormatFloat(c.Gamma, 'g', -1, 64),
		"lr":               strconv.FormatFloat(c.LR, 'g', -1, 64),
		"randomisation":    string(rnd),
		"reward":           string(rw),
		"checkpoint_every": strconv.Itoa(c.CheckpointEvery),
		"catalogue":        catalogueHyper(c),
	}
	if c.Spec != "" {
		h["spec"] = c.Spec
	}
	if c.SpreadEpisodes {
		h["episode_start"] = "spread"
	}
	if c.PmaxStep > 0 {
		h["pmax_step"] = strconv.FormatFloat(c.PmaxStep, 'g', -1, 64)
	}
	if c.switchLevel() {
		h["level"] = "switch"
		h["ecn_policy"] = c.ECNName
		if b, err := c.ECN.MarshalBinary(); err == nil {
			sum := sha256.Sum256(b)
			h["ecn_weights_sha256"] = hex.EncodeToString(sum[:])
		}
	}
	if c.CriticTruth {
		h["critic_truth"] = gym.TruthSpec
	}
	if c.PreferenceScale > 0 {
		h[models.HyperPreferenceScale] = strconv.FormatFloat(c.PreferenceScale, 'g', -1, 64)
	}
	c.initHyper(h)
	if c.Algo == AlgoDDQN {
		d := ddqnConfig(c)
		h["batch"] = strconv.Itoa(d.BatchSize)
		h["replay"] = strconv.Itoa(d.ReplayCapacity)
		h["train_every"] = strconv.Itoa(d.TrainEvery)
		h["warm_up"] = strconv.Itoa(d.WarmUp)
		h["target_sync"] = strconv.Itoa(d.TargetSync)
		h["eps"] = fmt.Sprintf("%g→%g over %d episodes", c.epsStart(), epsEnd, c.decayEpisodes())
	} else {
		p := ppoConfig(c)
		h["lambda"] = strconv.FormatFloat(p.Lambda, 'g', -1, 64)
		h["clip"] = strconv.FormatFloat(p.ClipRange, 'g', -1, 64)
		h["minibatch"] = strconv.Itoa(p.MinibatchSize)
		h["epochs"] = strconv.Itoa(p.Epochs)
		h["value_coef"] = strconv.FormatFloat(p.ValueCoef, 'g', -1, 64)
		h["entropy_coef"] = strconv.FormatFloat(p.EntropyCoef, 'g', -1, 64)
	}
	return h
}

// fingerprint identifies the run for resume: a checkpoint is only resumed
// by a run of the same configuration.
func (c Config) fingerprint() string {
	h := sha256.New()
	hy, _ := json.Marshal(c.Hyper()) // map keys are sorted
	h.Write(hy)
	fmt.Fprintf(h, "|seed %d|workers %d|", c.Seed, c.Workers)
	for _, s := range c.Scenarios {
		// %+v, not JSON: a Config does not marshal (ECNByRate's float
		// keys), and its error left every scenario out of the fingerprint;
		// fmt prints maps in key order and a Config holds no pointers
		fmt.Fprintf(h, "%s|%s|%+v|", s.Name, s.SHA256, s.Config)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// fingerprintParts are the settings fingerprint reads, by name and in
// words (a scenario by a digest of its file and configuration): a
// checkpoint keeps them, so that a resume refused for another
// configuration says which differ.
func (c Config) fingerprintParts() map[string]string {
	p := maps.Clone(c.Hyper())
	p["seed"], p["workers"] = strconv.FormatUint(c.Seed, 10), strconv.Itoa(c.Workers)
	for _, s := range c.Scenarios {
		d := sha256.Sum256(fmt.Appendf(nil, "%s|%+v", s.SHA256, s.Config))
		p["scenario "+s.Name] = hex.EncodeToString(d[:])[:12]
	}
	return p
}

// partsDiffer says which of the parts a checkpoint was made with (was)
// differ from this run's (now): "lr 0.001 -> 0.0001, scenario b (added)".
func partsDiffer(was, now map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(now)) {
		switch w, ok := was[k]; {
		case !ok:
			out = append(out, k+" (added)")
		case w != now[k]:
			out = append(out, fmt.Sprintf("%s %s -> %s", k, w, now[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(was)) {
		if _, ok := now[k]; !ok {
			out = append(out, k+" (dropped)")
		}
	}
	return strings.Join(out, ", ")
}

const epsEnd = 0.05

func (c Config) decayEpisodes() int {
	if c.Episodes > 0 {
		return max(1, c.Episodes*6/10)
	}
	return DefaultDecayEpisodes
}

// epsStartInit is DDQN's first exploration rate from a trained network
// (Config.Init): acting at random most of the time would learn what the
// network already knows from its own random play.
const epsStartInit = 0.2

// epsStart is DDQN's exploration rate at the first episode.
func (c Config) epsStart() float64 {
	if c.Init != nil {
		return epsStartInit
	}
	return 1
}

// epsilon is the exploration rate for a round starting at episode ep.
func (c Config) epsilon(ep int) float64 {
	f := float64(ep) / float64(c.decayEpisodes())
	if f > 1 {
		f = 1
	}
	return c.epsStart() + f*(epsEnd-c.epsStart())
}

func ddqnConfig(c Config) rl.DDQNConfig {
	return rl.DDQNConfig{
		Arch:  rl.Arch{In: c.inDim(), Hidden: append([]int(nil), c.Hidden...), Out: env.DefaultCatalogue().ECNLen(), Act: rl.ReLU},
		Gamma: c.Gamma, LearningRate: c.LR, BatchSize: 64, ReplayCapacity: 60_000, WarmUp: c.WarmUp, TrainEvery: 2,
		TargetSync: 250, Seed: c.Seed,
	}
}

func ppoConfig(c Config) rl.PPOConfig {
	mb := 32
	if c.switchLevel() {
		mb = 8 // an episode on a one-switch fabric holds one row per interval
	}
	extra := 0
	if c.CriticTruth {
		extra = gym.NumTruthFeatures
	}
	return rl.PPOConfig{
		Arch:  rl.Arch{In: c.inDim(), Hidden: append([]int(nil), c.Hidden...), Out: sum(c.heads()), Act: rl.Tanh},
		Gamma: c.Gamma, Lambda: 0.95, ClipRange: 0.2, ValueCoef: 0.5, EntropyCoef: 0.01, LearningRate: c.LR,
		MinibatchSize: mb, Epochs: 4, MaxGradNorm: 0.5, Seed: c.Seed, Heads: c.heads(), CriticExtra: extra,
	}
}

// heads are the policy heads the model has: PPO chooses an ECN and a PFC
// action (act-v3, two heads) unless Spec says act-v2; DDQN scores the ECN
// actions only (act-v2: one Q-value per joint action would be 913
// outputs).
func (c Config) heads() []int {
	if c.switchLevel() {
		return env.SwitchHeads(c.ActionSpec())
	}
	cat := env.DefaultCatalogue()
	if c.Algo == AlgoDDQN || cat.PFCLen() == 1 || c.actSpec() == "act-v2" {
		return []int{cat.ECNLen()}
	}
	return []int{cat.ECNLen(), cat.PFCLen()}
}

// actSpec is the action spec Spec names ("" when it names none).
func (c Config) actSpec() string {
	_, act, _ := strings.Cut(c.Spec, "/")
	return act
}

// ObsSpec is the observation spec a model trained with c reads.
func (c Config) ObsSpec() string {
	if c.switchLevel() {
		return env.SwitchSpecVersion
	}
	if obs, _, ok := strings.Cut(c.Spec, "/"); ok {
		return obs
	}
	return env.SpecVersion
}

// features is how many features the network reads: a prefix of today's.
func (c Config) features() int { return env.ObsSpecFeatures(c.ObsSpec()) }

// inDim is the network's input width: the features, then the preference
// when the model is conditioned on it.
func (c Config) inDim() int {
	if c.switchLevel() {
		return env.NumSwitchFeatures
	}
	if c.PreferenceScale > 0 {
		return c.features() + 1
	}
	return c.features()
}

// ActionSpec is the action spec a model trained with c speaks.
func (c Config) ActionSpec() string {
	if c.switchLevel() {
		if c.actSpec() == env.HeadroomAlphaActionSpec {
			return env.HeadroomAlphaActionSpec
		}
		return env.HeadroomActionSpec
	}
	if len(c.heads()) == 1 {
		return "act-v2"
	}
	return env.ActionSpecVersion
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

func catalogueHyper(c Config) string {
	h := c.heads()
	if len(h) == 1 {
		return strconv.Itoa(h[0]) + " actions"
	}
	return strconv.Itoa(h[0]) + " ECN × " + strconv.Itoa(h[1]) + " PFC actions"
}

// Round is one row of the learning curve.
type Round struct {
	Round       int     `json:"round"`
	Episodes    int     `json:"episodes"`          // episodes done after this round
	Transitions uint64  `json:"transitions"`       // agent steps stored or rolled out so far
	MeanReward  float64 `json:"mean_reward"`       // per measured queue-interval, this round's episodes
	Epsilon     float64 `json:"epsilon"`           // exploration (DDQN); 0 for PPO
	Entropy     float64 `json:"entropy,omitempty"` // PPO's exploration: mean policy entropy (nats) over this round's updates; 0 for DDQN
	Loss        float64 `json:"loss"`              // mean TD loss (DDQN) or policy loss (PPO) this round
	Updates     uint64  `json:"updates"`           // gradient steps so far
	EvalScore   float64 `json:"eval_score"`        // greedy mean reward on the evaluation episode
	Evaluated   bool    `json:"evaluated"`         // EvalScore was measured this round
}

// ErrForeignCheckpoint: the run's stored checkpoint was made by another
// configuration (scenarios, algorithm, seed, workers, hyper-parameters),
// so it cannot be resumed.
var ErrForeignCheckpoint = errors.New("not resumable by this configuration")

// Checkpointer stores and loads training state; *models.Registry is one.
// LoadCheckpoint reports a missing checkpoint with an error matching
// models.ErrNotFound.
type Checkpointer interface {
	SaveCheckpoint(run string, step int, state []byte) error
	LoadCheckpoint(run string) (models.Checkpoint, error)
}

// Hooks connect a run to the outside world; all are optional.
type Hooks struct {
	// Store, with Run naming the checkpoint, saves checkpoints and
	// resumes from one of the same run and configuration.
	Store Checkpointer
	Run   string
	// Stop is asked after every round (the CLI's wall-clock budget); true
	// ends training there.
	Stop func(last Round) bool
	// Progress is called after every round.
	Progress func(last Round, total int)
	// Interrupted is asked after every round (the CLI's Ctrl-C); true
	// saves a checkpoint there, whatever CheckpointEvery says, and ends
	// the run with ErrInterrupted and the Result so far (no final
	// evaluation): the same run resumes from it.
	Interrupted func() bool
	// Resumed, when the run starts from a checkpoint, is told at once the
	// episodes and rounds that checkpoint holds.
	Resumed func(episodes, round int)
	// Select, when set, judges a snapshot of the policy network every
	// SelectEvery rounds and after the last (lower is better; the CLI's
	// frontier ratio on validation scenarios, eval.Yardstick): the run
	// ends with the best snapshot judged, not with its last network,
	// and Result.Selected says which. The reward a policy climbs is not
	// the judgement its model meets, and the two part as training goes
	// on (docs/model/obs-v5-eval.txt). note is a line for the provenance.
	Select      func(r Round, net *rl.Net) (score float64, note string, err error)
	SelectEvery int
	// SelectBasis names what Select judges by (the CLI: the validation
	// scenarios' files, sha256 and seeds). A resumed run keeps the
	// snapshot its checkpoint chose only when it was judged on the same
	// basis: scores against another yardstick do not compare.
	SelectBasis string
	// CheckpointFailed, when set, is told of a checkpoint that could not
	// be saved (the registry held by another process, a full disk) and
	// says whether training goes on, the next checkpoint trying again;
	// nil, or false, ends the run with the error. A checkpoint an
	// interruption asks for ends the run when it fails, whatever it says.
	CheckpointFailed func(round int, err error) bool
}

// Selection is the snapshot Hooks.Select judged best.
type Selection struct {
	Round    int     `json:"round"`
	Episodes int     `json:"episodes"`
	Score    float64 `json:"score"`
	Note     string  `json:"note,omitempty"`
	// Judged counts the snapshots judged.
	Judged int `json:"judged"`
	// Basis is Hooks.SelectBasis of the run that judged.
	Basis string `json:"basis,omitempty"`
}

// ErrInterrupted: Hooks.Interrupted stopped the run; its checkpoint is
// stored (when Hooks name a store and run) and the Result holds the
// episodes done.
var ErrInterrupted = errors.New("training interrupted")

// Result is a finished (or stopped) run.
type Result struct {
	Config      Config
	Net         *rl.Net // the policy network (Q-values or logits)
	Curve       []Round
	Episodes    int
	ResumedFrom int // episode count of the checkpoint resumed from (0: fresh)
	// Eval is the greedy mean reward per queue-interval on each training
	// scenario, unperturbed, at the end.
	Eval map[string]float64
	// Selected, with Hooks.Select, is the snapshot Net is.
	Selected *Selection
	selNet   *rl.Net // the selected snapshot while the run goes on
}

// learner is the algorithm-specific part of the loop.
type learner interface {
	actorFor(eps float64) actor                              // a snapshot that acts during a round
	learn(eps []episodeOut) (loss, entropy float64, _ error) // merge a round's episodes in order
	net() *rl.Net
	steps() uint64
	updates() uint64
	marshal() ([]byte, error)
}

// Run trains according to cfg. With hooks.Store and a checkpoint of the
// same run and configuration, it resumes where that checkpoint stopped
// and ends with the same weights as an uninterrupted run.
func Run(cfg Config, hooks Hooks) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	for i := range cfg.Scenarios {
		if _, err := gym.New(episodeConfig(cfg, cfg.Scenarios[i].Config), gym.Options{Interval: cfg.Interval}); err != nil {
			return nil, fmt.Errorf("train: scenario %s: %w", cfg.Scenarios[i].Name, err)
		}
	}
	fp := cfg.fingerprint()
	res := &Result{Config: cfg}
	lr, round, err := resume(cfg, hooks, fp, res)
	if err != nil {
		return nil, err
	}
	if cfg.Init != nil && round == 0 {
		// The network started from is a candidate too: a run that
		// finds nothing better keeps it.
		if err := selectSnapshot(hooks, Round{}, true, lr.net(), res); err != nil {
			return nil, err
		}
	}
	for cfg.Episodes == 0 || res.Episodes < cfg.Episodes {
		r, err := playRound(cfg, lr, round, res.Episodes)
		if err != nil {
			return nil, err
		}
		res.Episodes, round = r.Episodes, r.Round
		last := cfg.Episodes > 0 && res.Episodes >= cfg.Episodes
		if round%cfg.EvalEvery == 0 || last {
			s, err := greedyScore(cfg, cfg.Scenarios[0].Config, lr.net())
			if err != nil {
				return nil, fmt.Errorf("train: evaluation after round %d: %w", round, err)
			}
			r.EvalScore, r.Evaluated = s, true
		}
		res.Curve = append(res.Curve, r)
		intr := !last && hooks.Interrupted != nil && hooks.Interrupted()
		stop := !last && (intr || hooks.Stop != nil && hooks.Stop(r))
		// The network the run ends with (its episodes or its budget) is
		// judged too; an interrupted run's is judged when it resumes.
		if err := selectSnapshot(hooks, r, last || stop && !intr, lr.net(), res); err != nil {
			return nil, err
		}
		if hooks.Store != nil && hooks.Run != "" && (round%cfg.CheckpointEvery == 0 || stop) && !last {
			if err := checkpoint(hooks, lr, fp, cfg.fingerprintParts(), round, res); err != nil &&
				(hooks.CheckpointFailed == nil || intr || !hooks.CheckpointFailed(round, err)) {
				return nil, err
			}
		}
		if hooks.Progress != nil {
			hooks.Progress(r, cfg.Episodes)
		}
		if intr {
			return res, ErrInterrupted
		}
		if stop || last {
			break
		}
	}
	res.Net = lr.net().Clone()
	if res.selNet != nil {
		res.Net = res.selNet
	}
	res.Eval = make(map[string]float64, len(cfg.Scenarios))
	for _, s := range cfg.Scenarios {
		v, err := greedyScore(cfg, s.Config, res.Net)
		if err != nil {
			return nil, fmt.Errorf("train: final evaluation on %s: %w", s.Name, err)
		}
		res.Eval[s.Name] = v
	}
	return res, nil
}

// selectSnapshot asks hooks.Select to judge the network after round r
// (every SelectEvery rounds, and after the last) and keeps it in res when
// it is the best judged so far (ties keep the earlier).
func selectSnapshot(hooks Hooks, r Round, last bool, net *rl.Net, res *Result) error {
	every := max(hooks.SelectEvery, 1)
	if hooks.Select == nil || !(r.Round%every == 0 || last) {
		return nil
	}
	snap := net.Clone()
	score, note, err := hooks.Select(r, snap)
	if err != nil {
		return fmt.Errorf("train: judging the network after round %d: %w", r.Round, err)
	}
	if math.IsNaN(score) {
		score = math.Inf(1)
	}
	judged := 1
	if res.Selected != nil {
		judged += res.Selected.Judged
		if !(score < res.Selected.Score) {
			res.Selected.Judged = judged
			return nil
		}
	}
	res.Selected = &Selection{Round: r.Round, Episodes: r.Episodes, Score: score, Note: note, Judged: judged, Basis: hooks.SelectBasis}
	res.selNet = snap
	return nil
}

// resume returns the learner a run starts from: the one in the run's
// checkpoint when hooks name a stored one (with its round, and its curve
// and episode count filled into res), else a new one at round 0. A
// checkpoint of another configuration (fingerprint fp) is refused.
func resume(cfg Config, hooks Hooks, fp string, res *Result) (learner, int, error) {
	if hooks.Store != nil && hooks.Run != "" {
		cp, lerr := hooks.Store.LoadCheckpoint(hooks.Run)
		if lerr == nil {
			h, blob, err := decodeState(cp.State)
			if err != nil {
				return nil, 0, fmt.Errorf("train: checkpoint of run %s: %w", hooks.Run, err)
			}
			if h.Fingerprint != fp {
				what := fmt.Sprintf("fingerprint %s, this run %s", h.Fingerprint, fp)
				if d := partsDiffer(h.Settings, cfg.fingerprintParts()); h.Settings != nil && d != "" {
					what = "it differs in: " + d
				}
				return nil, 0, fmt.Errorf("train: checkpoint of run %s was made by another configuration (%s): %w: run the command it was made with to resume it, or use another run name or delete it",
					hooks.Run, what, ErrForeignCheckpoint)
			}
			lr, err := restoreLearner(cfg, blob)
			if err != nil {
				return nil, 0, fmt.Errorf("train: checkpoint of run %s: %w", hooks.Run, err)
			}
			res.Curve, res.Episodes, res.ResumedFrom = h.Curve, h.Episodes, h.Episodes
			if h.Selected != nil && h.Selected.Basis == hooks.SelectBasis {
				if res.selNet, err = nn.UnmarshalNet(h.SelectedWeights); err != nil {
					return nil, 0, fmt.Errorf("train: checkpoint of run %s: selected snapshot: %w", hooks.Run, err)
				}
				res.Selected = h.Selected
			}
			if hooks.Resumed != nil {
				hooks.Resumed(h.Episodes, h.Round)
			}
			return lr, h.Round, nil
		} else if !errors.Is(lerr, models.ErrNotFound) {
			return nil, 0, fmt.Errorf("train: load checkpoint of run %s: %w", hooks.Run, lerr)
		}
	}
	lr, err := newLearner(cfg)
	return lr, 0, err
}

// playRound plays one round after round rounds and done episodes: up to
// cfg.Workers episodes in parallel, then one learning step on them. The
// Round it returns counts this round and its episodes; evaluation is the
// caller's.
func playRound(cfg Config, lr learner, round, done int) (Round, error) {
	n := cfg.Workers
	if cfg.Episodes > 0 {
		n = min(n, cfg.Episodes-done)
	}
	eps := cfg.epsilon(done)
	if cfg.Algo == AlgoPPO {
		eps = 0
	}
	outs := make([]episodeOut, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			outs[w], errs[w] = runEpisode(cfg, done+w, lr.actorFor(eps))
			outs[w].ep = done + w
		}(w)
	}
	wg.Wait()
	for w, e := range errs {
		if e != nil {
			return Round{}, fmt.Errorf("train: episode %d: %w", done+w, e)
		}
	}
	loss, entropy, err := lr.learn(outs)
	if err != nil {
		return Round{}, fmt.Errorf("train: round %d: %w", round, err)
	}
	r := Round{Round: round + 1, Episodes: done + n, Transitions: lr.steps(), Epsilon: eps, Entropy: entropy, Loss: loss, Updates: lr.updates()}
	var sum float64
	var cnt int
	for _, o := range outs {
		sum += o.rewardSum
		cnt += o.rewardN
	}
	if cnt > 0 {
		r.MeanReward = sum / float64(cnt)
	}
	return r, nil
}

// checkpoint stores the learner's state after round in the run's
// checkpoint.
func checkpoint(hooks Hooks, lr learner, fp string, parts map[string]string, round int, res *Result) error {
	blob, err := lr.marshal()
	if err != nil {
		return fmt.Errorf("train: checkpoint after round %d: %w", round, err)
	}
	h := ckptHeader{Version: 1, Fingerprint: fp, Settings: parts, Round: round, Episodes: res.Episodes, Curve: res.Curve, Selected: res.Selected}
	if res.selNet != nil {
		if h.SelectedWeights, err = res.selNet.MarshalBinary(); err != nil {
			return fmt.Errorf("train: checkpoint after round %d: selected snapshot: %w", round, err)
		}
	}
	state, err := encodeState(h, blob)
	if err != nil {
		return err
	}
	if err := hooks.Store.SaveCheckpoint(hooks.Run, res.Episodes, state); err != nil {
		return fmt.Errorf("train: checkpoint after round %d: %w", round, err)
	}
	return nil
}

// episodeConfig caps a scenario's duration at MaxEpisode.
func episodeConfig(c Config, sc simenv.Config) simenv.Config {
	if sc.Duration > c.MaxEpisode {
		sc.Duration = c.MaxEpisode
	}
	return sc
}

// trainingWindow is the part of sc a training episode runs: its first
// MaxEpisode, or with SpreadEpisodes MaxEpisode from an offset rng draws
// (uniform over the scenario's length less MaxEpisode).
func (c Config) trainingWindow(sc simenv.Config, rng *rand.Rand) simenv.Config {
	if c.SpreadEpisodes && sc.Duration > c.MaxEpisode && !sc.Loop {
		sc = startAt(sc, simenv.Time(rng.Int64N(int64(sc.Duration-c.MaxEpisode)+1)))
	}
	return episodeConfig(c, sc)
}

// startAt is sc run from off on: its duration and warmup shortened by
// off, its workloads moved off earlier. A workload over before off is
// left out; one under way at off runs from 0 (a periodic incast keeps its
// phase; a one-shot incast that fired before off is left out; a trace
// keeps the flows that start from off on). sc without a workload left
// is run from 0.
func startAt(sc simenv.Config, off simenv.Time) simenv.Config {
	if off <= 0 || off >= sc.Duration {
		return sc
	}
	var ws []simenv.Workload
	for _, w := range sc.Workloads {
		if w.End > 0 && w.End <= off {
			continue
		}
		if w.End > 0 {
			w.End -= off
		}
		switch {
		case w.Start >= off:
			w.Start -= off
		case w.Kind == simenv.WorkloadTrace:
			var flows []simenv.TraceFlow
			for _, fl := range w.Flows {
				if at := w.Start + fl.Start; at >= off {
					fl.Start = at - off
					flows = append(flows, fl)
				}
			}
			if len(flows) == 0 {
				continue
			}
			w.Start, w.Flows = 0, flows
		case w.Kind == simenv.WorkloadIncast && w.Every <= 0:
			continue // fired before off
		case w.Kind == simenv.WorkloadIncast:
			w.Start = (w.Every - (off-w.Start)%w.Every) % w.Every
			if w.End > 0 && w.Start >= w.End {
				continue
			}
		default:
			w.Start = 0
		}
		ws = append(ws, w)
	}
	if len(ws) == 0 {
		return sc
	}
	sc.Workloads = ws
	sc.Duration -= off
	sc.Warmup = max(0, sc.Warmup-off)
	return sc
}

// greedyScore runs one greedy episode of cfg (unperturbed) with net and
// returns the mean reward per measured queue-interval.
func greedyScore(c Config, sc simenv.Config, net *rl.Net) (float64, error) {
	out, err := playEpisode(c, episodeConfig(c, sc), EvalSeed, greedyActor{net: net, heads: c.heads()}, false, false, 0, 0)
	if err != nil {
		return 0, err
	}
	if out.rewardN == 0 {
		return 0, nil
	}
	return out.rewardSum / float64(out.rewardN), nil
}

// perturb applies domain randomisation to a copy of sc.
func perturb(r Randomisation, sc simenv.Config, rng *rand.Rand) simenv.Config {
	u := func(lo, hi float64) float64 {
		if lo == 0 && hi == 0 {
			return 1
		}
		return lo + rng.Float64()*(hi-lo)
	}
	hosts := 0
	for _, n := range sc.Topology.Nodes {
		if !n.Switch {
			hosts++
		}
	}
	sc.Topology.Links = append([]simenv.Link(nil), sc.Topology.Links...)
	sc.Workloads = append([]simenv.Workload(nil), sc.Workloads...)
	if len(r.HostRates) > 0 && len(sc.Topology.Links) > 0 {
		host := sc.Topology.Links[0].RateBps
		for _, l := range sc.Topology.Links {
			a, b := sc.Topology.Nodes[l.A], sc.Topology.Nodes[l.B]
			if !a.Switch || !b.Switch {
				host = l.RateBps
				break
			}
		}
		f := r.HostRates[rng.IntN(len(r.HostRates))] / host
		for i := range sc.Topology.Links {
			sc.Topology.Links[i].RateBps *= f
		}
		sc.DCQCN.AIBps *= f
		sc.DCQCN.HAIBps *= f
		sc.DCQCN.MinRateBps *= f
		sc.ECNByRate = nil
	}
	perturbFabric(r, &sc, rng, u)
	for i := range sc.Workloads {
		w := &sc.Workloads[i]
		switch w.Kind {
		case simenv.WorkloadCDF:
			w.Load = math.Min(0.95, math.Max(0.05, w.Load*u(r.LoadMin, r.LoadMax)))
		case simenv.WorkloadIncast:
			w.Fanin = int(math.Round(float64(w.Fanin) * u(r.FaninMin, r.FaninMax)))
			w.Fanin = max(2, min(w.Fanin, hosts-1))
			w.SizeBytes = max(1000, int64(float64(w.SizeBytes)*u(r.SizeMin, r.SizeMax)))
		}
	}
	if r.AddIncast > 0 && rng.Float64() < r.AddIncast && hosts >= 4 {
		sc.Workloads = append(sc.Workloads, simenv.Workload{Kind: simenv.WorkloadIncast, Priority: simenv.DefaultPriority,
			Fanin:     3 + rng.IntN(hosts-3),
			SizeBytes: int64(50_000 + rng.IntN(350_001)),
			Every:     simenv.Time(200+rng.IntN(601)) * simenv.Microsecond})
	}
	if r.RandomPFC > 0 && rng.Float64() < r.RandomPFC && sc.PFC.Enabled {
		sc.PFC.HeadroomBytes = 0
		sc.PFC.HeadroomFactor = 1 + 2*rng.Float64()
		sc.PFC.Alpha = env.Alphas[rng.IntN(len(env.Alphas))]
	}
	if r.RandomStart {
		cat := env.DefaultCatalogue()
		k := cat.KmaxLevels()
		ratios := cat.KminRatios()
		p := cat.PmaxLevels()
		kmax := k[rng.IntN(len(k))]
		sc.ECN = simenv.ECN{KmaxBytes: kmax, KminBytes: int64(math.Round(float64(kmax) * ratios[rng.IntN(len(ratios))])),
			Pmax: p[rng.IntN(len(p))]}
		sc.ECNByRate = nil
	}
	return sc
}

// perturbFabric applies the fabric randomisation to sc, whose links are
// its own copy: the uplinks' rate, the buffer, the PFC cable and the links'
// delay (u draws a factor in [lo, hi], 1 without drawing for 0, 0).
func perturbFabric(r Randomisation, sc *simenv.Config, rng *rand.Rand, u func(lo, hi float64) float64) {
	if len(r.FabricScales) > 0 {
		f := r.FabricScales[rng.IntN(len(r.FabricScales))]
		for i, l := range sc.Topology.Links {
			if sc.Topology.Nodes[l.A].Switch && sc.Topology.Nodes[l.B].Switch {
				sc.Topology.Links[i].RateBps *= f
			}
		}
		sc.ECNByRate = nil
	}
	if f := u(r.BufferMin, r.BufferMax); f != 1 {
		sc.BufferBytes = max(100_000, int64(float64(sc.BufferBytes)*f))
	}
	if f := u(r.CableMin, r.CableMax); f != 1 {
		sc.PFC.CableMeters *= f
	}
	if f := u(r.DelayMin, r.DelayMax); f != 1 {
		for i := range sc.Topology.Links {
			sc.Topology.Links[i].Delay = max(simenv.Nanosecond, simenv.Time(float64(sc.Topology.Links[i].Delay)*f))
		}
	}
}

// episodeRNG is the RNG of episode ep: scenario choice, perturbation,
// simulator seed and exploration all come from it.
func episodeRNG(seed uint64, ep int) *rand.Rand {
	return rand.New(rand.NewPCG(seed^0x5851f42d4c957f2d, uint64(ep)*0x9e3779b97f4a7c15+1))
}

// dropoutProfiles are the device profiles' feature sets, in a fixed order
// (training is deterministic).
var dropoutProfiles = func() []env.Telemetry {
	names := make([]string, 0, len(env.DeviceTelemetry))
	for n, m := range env.DeviceTelemetry {
		if m != 0 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := make([]env.Telemetry, len(names))
	for i, n := range names {
		out[i] = env.DeviceTelemetry[n]
	}
	return out
}()

// dropout picks the telemetry an episode lacks: three times in four a
// device profile's, otherwise each optional feature with probability 1/2.
func dropout(rng *rand.Rand) env.Telemetry {
	if len(dropoutProfiles) > 0 && rng.IntN(4) > 0 {
		return dropoutProfiles[rng.IntN(len(dropoutProfiles))]
	}
	var m env.Telemetry
	for b := env.Telemetry(1); b <= env.AllTelemetry; b <<= 1 {
		if b&env.AllTelemetry != 0 && rng.IntN(2) == 0 {
			m |= b
		}
	}
	return m &^ env.TelPortSpeed // the rate is never missing (it is required)
}

// runEpisode plays training episode ep.
func runEpisode(c Config, ep int, a actor) (episodeOut, error) {
	rng := episodeRNG(c.Seed, ep)
	sc := c.Scenarios[rng.IntN(len(c.Scenarios))]
	cfg := sc.Config
	if !c.Randomise.Off {
		cfg = perturb(c.Randomise, cfg, rng)
	}
	hide := !c.Randomise.Off && c.Randomise.HidePeer > 0 && rng.Float64() < c.Randomise.HidePeer
	var missing env.Telemetry
	if !c.Randomise.Off && c.Randomise.DropTelemetry > 0 && rng.Float64() < c.Randomise.DropTelemetry {
		missing = dropout(rng)
	}
	pref := 0.0
	if c.PreferenceScale > 0 {
		pref = 2*rng.Float64() - 1
	}
	cfg = c.trainingWindow(cfg, rng)
	a.seed(rng.Uint64())
	out, err := playEpisode(c, cfg, c.episodeSeed(rng), a, true, hide, missing, pref)
	if err != nil {
		return out, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	return out, nil
}

// episodeSeed draws a training episode's simulator seed from rng, never
// one of the held-out seeds.
func (c Config) episodeSeed(rng *rand.Rand) uint64 {
	seed := rng.Uint64()
	for c.HeldOut.Contains(seed) {
		seed = rng.Uint64()
	}
	return seed
}

// episodeOut is what one episode gives the learner.
type episodeOut struct {
	// DDQN: transitions in (step, queue) order.
	trans []rl.Transition
	// PPO: per step, per queue.
	obs     [][][]float32
	actions [][]int
	logp    [][]float32
	values  [][]float32
	rewards [][]float32
	last    []float32 // critic values after the last step
	dones   [][]bool

	rewardSum float64
	rewardN   int
	ep        int // the episode's index in the run
}

// actor chooses actions during an episode.
type actor interface {
	seed(s uint64)
	act(obs []env.Observation, feats [][]float32) (actions []int, logp, values []float32, err error)
	value(feats [][]float32) ([]float32, error)
}

type greedyActor struct {
	net   *rl.Net
	heads []int
}

func (greedyActor) seed(uint64) {}
func (g greedyActor) act(obs []env.Observation, feats [][]float32) ([]int, []float32, []float32, error) {
	acts, err := g.net.GreedyJoint(feats, g.heads)
	if err != nil {
		return nil, nil, nil, err
	}
	for i := range obs {
		if !obs[i].Valid {
			acts[i] = env.ActionHold
		}
	}
	return acts, nil, nil, nil
}
func (greedyActor) value([][]float32) ([]float32, error) { return nil, nil }

// playEpisode runs one episode with actor a; record keeps what the
// learner needs; hidePeer leaves every queue's Peer unknown; pref is the
// episode's preference (a preference-conditioned model only).
func playEpisode(c Config, cfg simenv.Config, seed uint64, a actor, record, hidePeer bool, missing env.Telemetry, pref float64) (episodeOut, error) {
	if c.switchLevel() {
		return playSwitchEpisode(c, cfg, seed, a, record, hidePeer, missing)
	}
	var out episodeOut
	w := c.Reward
	if c.PreferenceScale > 0 {
		pw := Preference(*c.Reward, c.PreferenceScale, pref)
		w = &pw
	}
	truth := c.CriticTruth && record
	e, err := gym.New(cfg, gym.Options{Interval: c.Interval, Reward: w, HidePeer: hidePeer, Missing: missing, Truth: truth, PmaxStep: c.PmaxStep})
	if err != nil {
		return out, err
	}
	obs, err := e.Reset(seed)
	if err != nil {
		return out, err
	}
	in, cond := c.features(), c.PreferenceScale > 0
	feats := featuresOf(obs, in, cond, pref)
	if truth {
		if feats, err = withTruth(feats, e.Truth()); err != nil {
			return out, err
		}
	}
	for done := false; !done; {
		acts, logp, vals, err := a.act(obs, feats)
		if err != nil {
			return out, err
		}
		next, rewards, d, _, err := e.Step(acts)
		if err != nil {
			return out, err
		}
		done = d
		nextF := featuresOf(next, in, cond, pref)
		if truth {
			if nextF, err = withTruth(nextF, e.Truth()); err != nil {
				return out, err
			}
		}
		rw := make([]float32, len(rewards))
		for i, r := range rewards {
			rw[i] = float32(r)
			if next[i].Valid {
				out.rewardSum += r
				out.rewardN++
			}
		}
		if record {
			if logp == nil { // DDQN
				for i := range acts {
					if !obs[i].Valid || !next[i].Valid {
						continue
					}
					out.trans = append(out.trans, rl.Transition{Obs: feats[i], Action: acts[i], Reward: rw[i], Next: nextF[i]})
				}
			} else {
				out.addStep(feats, acts, logp, vals, rw, done)
			}
		}
		obs, feats = next, nextF
	}
	return out, out.finish(a, feats, record)
}

// addStep records one PPO step: per agent its features, action, log
// probability, value and reward, all done at the episode's end.
func (o *episodeOut) addStep(feats [][]float32, acts []int, logp, vals, rw []float32, done bool) {
	dn := make([]bool, len(acts))
	if done {
		for i := range dn {
			dn[i] = true
		}
	}
	o.obs = append(o.obs, feats)
	o.actions = append(o.actions, acts)
	o.logp = append(o.logp, logp)
	o.values = append(o.values, vals)
	o.rewards = append(o.rewards, rw)
	o.dones = append(o.dones, dn)
}

// finish records the critic's values after the last step (PPO, when the
// episode was recorded and has steps).
func (o *episodeOut) finish(a actor, last [][]float32, record bool) error {
	if !record || len(o.obs) == 0 {
		return nil
	}
	var err error
	o.last, err = a.value(last)
	return err
}

// withTruth appends each queue's ground truth to its features: the rows an
// asymmetric critic reads (the actor reads the features alone).
func withTruth(feats, truth [][]float32) ([][]float32, error) {
	if len(truth) != len(feats) {
		return nil, fmt.Errorf("critic truth: %d rows of ground truth for %d queues", len(truth), len(feats))
	}
	if len(feats) == 0 {
		return feats, nil
	}
	w := len(feats[0]) + gym.NumTruthFeatures
	flat := make([]float32, len(feats)*w)
	out := make([][]float32, len(feats))
	for i, f := range feats {
		row := flat[i*w : (i+1)*w : (i+1)*w]
		n := copy(row, f)
		copy(row[n:], truth[i])
		out[i] = row
	}
	return out, nil
}

// featuresOf is each observation's first in features (a model of an
// earlier observation spec reads a prefix of today's), followed, for a
// preference-conditioned model (cond), by the preference pref.
func featuresOf(obs []env.Observation, in int, cond bool, pref float64) [][]float32 {
	f := make([][]float32, len(obs))
	if !cond {
		for i := range obs {
			f[i] = obs[i].Features[:min(in, len(obs[i].Features))]
		}
		return f
	}
	flat := make([]float32, len(obs)*(in+1))
	for i := range obs {
		row := flat[i*(in+1) : (i+1)*(in+1)]
		n := copy(row, obs[i].Features[:min(in, len(obs[i].Features))])
		row[n] = float32(pref)
		f[i] = row[:n+1]
	}
	return f
}
