package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy/nn"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/scenario"
	"github.com/ecntune/ecntune/train/rl"
)

// Fine-tuning (Config.Init): a run that starts from a trained model's
// weights instead of random ones, on the scenario of one fabric (a twin
// fitted from its telemetry).
const (
	// TwinCriticWarmUp is the number of episodes a PPO fine-tuning run
	// fits its fresh critic alone (Config.CriticWarmUp): a stored model
	// keeps its actor, not the critic it was trained with.
	TwinCriticWarmUp = 16
	// TwinMaxEpisode caps a fine-tuning episode: the twin's own duration
	// up to this much simulated time.
	TwinMaxEpisode = 20 * simenv.Millisecond
)

// SeedRange is N simulator seeds from First on (First, First+1, ...).
type SeedRange struct {
	First uint64
	N     int
}

// Contains reports whether seed is one of r's.
func (r SeedRange) Contains(seed uint64) bool {
	return r.N > 0 && seed >= r.First && seed-r.First < uint64(r.N)
}

// String is "FIRST-LAST" ("" for none).
func (r SeedRange) String() string {
	if r.N <= 0 {
		return ""
	}
	return strconv.FormatUint(r.First, 10) + "-" + strconv.FormatUint(r.First+uint64(r.N)-1, 10)
}

// TwinRandomisation is the domain randomisation of fine-tuning on a twin,
// narrowed around it from the starting model's own (from): the twin's
// workload loads ×0.8-1.2, incast fan-ins ×0.8-1.2 and incast sizes
// ×0.8-1.25 (a fit is uncertain and a fabric's traffic drifts), its link
// speeds, topology and PFC configuration as they are (measured, not
// guessed: no host-rate draw, no random PFC), no incast added (the twin has
// the ones it was fitted with), every queue's peer known (the twin is
// built from LLDP). Kept from the starting model: random starting settings
// (a switch may run anything when the model takes over) and the telemetry
// dropout (the model stays usable on every device profile).
func TwinRandomisation(from Randomisation) Randomisation {
	return Randomisation{LoadMin: 0.8, LoadMax: 1.2, FaninMin: 0.8, FaninMax: 1.2, SizeMin: 0.8, SizeMax: 1.25,
		RandomStart: from.RandomStart, DropTelemetry: from.DropTelemetry}
}

// TwinTruthReward is the reward a fine-tuning run on a twin trains on:
// the starting model's, plus the simulator's ground truth where it has
// none (a twin is a simulation, so the flows' completion times are known
// while training, though no switch counter shows them): FlowSmall 0.1,
// FlowLarge 0.1 and FlowSmallTail 0.3. The starting model's reward reads
// counters and is nearly flat across neighbouring thresholds; the twin is
// judged by its small flows' tail at its large flows' goodput, which these
// terms charge directly. Chosen on policy/builtin/validation's fitted
// twins against the starting model's reward alone
// (docs/model/twin-pipeline-eval.txt, "Fine-tuning on the twin's ground
// truth"). A model that already trained on such terms keeps its own.
func TwinTruthReward(w env.RewardWeights) env.RewardWeights {
	if !w.GroundTruth() {
		w.FlowSmall, w.FlowLarge, w.FlowSmallTail = 0.1, 0.1, 0.3
	}
	return w
}

// FineTune is what a fine-tuning run starts from: a stored ECN policy
// and the scenario of a twin.
type FineTune struct {
	// From names the starting model in the provenance ("builtin",
	// "model:NAME@V").
	From  string
	Model models.Model
	Twin  scenario.Named
	// HeldOut are the seeds the twin's evaluation runs on; training
	// episodes use none of them.
	HeldOut SeedRange
}

// Config is the run of ft: the starting model's algorithm, spec,
// architecture, discount, learning rate, reward weights (with
// TwinTruthReward's ground truth) and decision interval (from its
// recorded hyper-parameters; the twin's own where it names one: the
// agent's that recorded it), on the twin alone with
// TwinRandomisation, episodes as long as the twin (at most
// TwinMaxEpisode; a longer twin's start at offsets across it,
// Config.SpreadEpisodes), the starting model's weights as the initial network
// and, for PPO, TwinCriticWarmUp episodes of critic-only updates. It
// refuses a model it cannot continue: a switch-level headroom model, a
// preference-conditioned one, a spec this build cannot train, weights of
// another architecture than the recorded hyper-parameters give.
func (ft FineTune) Config(seed uint64, workers int) (Config, error) {
	m := ft.Model
	c := Config{Algo: m.Algorithm, Scenarios: []scenario.Named{ft.Twin}, Workers: workers, Seed: seed,
		Spec: m.ObsSpec + "/" + m.ActSpec, InitName: ft.From, HeldOut: ft.HeldOut}
	if err := ft.Refuse(); err != nil {
		return Config{}, err
	}
	var err error
	if c.Hidden, err = hyperInts(m, "hidden"); err != nil {
		return Config{}, err
	}
	if c.Gamma, err = hyperFloat(m, "gamma"); err != nil {
		return Config{}, err
	}
	c.GammaSet = true // a model trained at 0 is fine-tuned at 0
	if c.LR, err = hyperFloat(m, "lr"); err != nil {
		return Config{}, err
	}
	if c.Interval, err = hyperDuration(m, "interval"); err != nil {
		return Config{}, err
	}
	if iv := ft.Twin.Config.Interval; iv > 0 {
		c.Interval = iv // the agent's decision interval, the fine-tuned model's (a twin simulates one above twin.MaxTwinInterval as twin.CompressedInterval)
	}
	w := DefaultReward()
	if err := hyperJSON(m, "reward", &w); err != nil {
		return Config{}, err
	}
	w = TwinTruthReward(w)
	c.Reward = &w
	from := DefaultRandomisation()
	if err := hyperJSON(m, "randomisation", &from); err != nil {
		return Config{}, err
	}
	c.Randomise = TwinRandomisation(from)
	c.MaxEpisode = min(max(ft.Twin.Config.Duration, 2*c.Interval), TwinMaxEpisode)
	c.SpreadEpisodes = true // a twin longer than an episode is trained on all of it
	if c.Init, err = nn.UnmarshalNet(m.Weights); err != nil {
		return Config{}, fmt.Errorf("train: starting model %s: weights: %w", ft.From, err)
	}
	if c.Algo == AlgoPPO {
		c.CriticWarmUp = TwinCriticWarmUp
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("starting model %s: %w", ft.From, err)
	}
	return c, nil
}

// Refuse says why ft's model cannot be fine-tuned here (nil: it can):
// an algorithm other than ppo or ddqn, a switch-level headroom model, a
// preference-conditioned one.
func (ft FineTune) Refuse() error {
	m := ft.Model
	switch {
	case m.Algorithm != AlgoPPO && m.Algorithm != AlgoDDQN:
		return fmt.Errorf("train: starting model %s: algorithm %q: fine-tuning continues ppo or ddqn models", ft.From, m.Algorithm)
	case m.ObsSpec == env.SwitchSpecVersion || m.Hyper["level"] == "switch":
		return fmt.Errorf("train: starting model %s is a switch-level headroom model: fine-tuning on a twin continues an ECN policy", ft.From)
	case m.Hyper[models.HyperPreferenceScale] != "":
		return fmt.Errorf("train: starting model %s reads an operator preference (%s = %s): fine-tuning continues a model without one",
			ft.From, models.HyperPreferenceScale, m.Hyper[models.HyperPreferenceScale])
	}
	return nil
}

// hyperFloat reads a number the model's record must hold.
func hyperFloat(m models.Model, key string) (float64, error) {
	v, ok := m.Hyper[key]
	if !ok {
		return 0, fmt.Errorf("train: starting model %s: no hyper-parameter %s", m.Ref(), key)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("train: starting model %s: hyper-parameter %s = %q: %v", m.Ref(), key, v, err)
	}
	return f, nil
}

// HiddenOf is a stored model's hidden layer widths (its hyper-parameter
// hidden, "64,64").
func HiddenOf(m models.Model) ([]int, error) { return hyperInts(m, "hidden") }

// hyperInts reads "64,64".
func hyperInts(m models.Model, key string) ([]int, error) {
	v, ok := m.Hyper[key]
	if !ok {
		return nil, fmt.Errorf("train: starting model %s: no hyper-parameter %s", m.Ref(), key)
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("train: starting model %s: hyper-parameter %s = %q: %v", m.Ref(), key, v, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// hyperDuration reads "200µs" as simulated time.
func hyperDuration(m models.Model, key string) (simenv.Time, error) {
	v, ok := m.Hyper[key]
	if !ok {
		return 0, fmt.Errorf("train: starting model %s: no hyper-parameter %s", m.Ref(), key)
	}
	d, err := units.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("train: starting model %s: hyper-parameter %s = %q: want a positive duration", m.Ref(), key, v)
	}
	return simenv.FromDuration(d), nil
}

// hyperJSON decodes a JSON hyper-parameter over into's values; a model
// without it keeps them.
func hyperJSON(m models.Model, key string, into any) error {
	v, ok := m.Hyper[key]
	if !ok {
		return nil
	}
	if err := json.Unmarshal([]byte(v), into); err != nil {
		return fmt.Errorf("train: starting model %s: hyper-parameter %s: %v", m.Ref(), key, err)
	}
	return nil
}

// initHyper adds a fine-tuning run's own hyper-parameters to h: the model
// it started from and the sha256 of its weights, the critic's warm-up
// and the held-out seeds.
func (c Config) initHyper(h map[string]string) {
	if c.Init == nil {
		return
	}
	h["init"] = c.InitName
	if b, err := c.Init.MarshalBinary(); err == nil {
		sum := sha256.Sum256(b)
		h["init_weights_sha256"] = hex.EncodeToString(sum[:])
	}
	if c.CriticWarmUp > 0 {
		h["critic_warm_up"] = strconv.Itoa(c.CriticWarmUp)
	}
	if s := c.HeldOut.String(); s != "" {
		h["held_out_seeds"] = s
	}
}

// validateInit checks the network a fine-tuning run starts from against
// the one the configuration trains.
func (c Config) validateInit() error {
	switch {
	case c.Init == nil && c.CriticWarmUp != 0:
		return fmt.Errorf("train: critic warm-up %d episodes: only a run that starts from a model's weights has an actor to keep", c.CriticWarmUp)
	case c.Init == nil:
		return nil
	case c.switchLevel():
		return fmt.Errorf("train: a switch-level headroom model starts from random weights, not %s's", c.InitName)
	case c.PreferenceScale > 0:
		return fmt.Errorf("train: a preference-conditioned model starts from random weights, not %s's", c.InitName)
	case c.CriticWarmUp < 0 || c.CriticWarmUp > 0 && c.Algo != AlgoPPO:
		return fmt.Errorf("train: critic warm-up %d episodes: a count >= 0, for ppo only", c.CriticWarmUp)
	}
	want := ddqnConfig(c).Arch
	if c.Algo == AlgoPPO {
		want = ppoConfig(c).Arch
	}
	if got := c.Init.Arch(); !got.Equal(want) {
		return fmt.Errorf("train: %s is %s, this run trains %s (spec %s/%s, hidden %v): %w",
			c.InitName, rl.ArchString(got), rl.ArchString(want), c.ObsSpec(), c.ActionSpec(), c.Hidden, rl.ErrArchMismatch)
	}
	return nil
}
