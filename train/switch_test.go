package train

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv/gym"
	"github.com/ecntune/ecntune/train/rl"
)

// holdNet is an ECN network (obs-v4, act-v2) that always holds.
func holdNet(t *testing.T) *rl.Net {
	t.Helper()
	n, err := rl.NewNet(rl.Arch{In: env.NumFeatures, Out: env.DefaultCatalogue().ECNLen(), Act: rl.Tanh})
	if err != nil {
		t.Fatal(err)
	}
	n.Kind = rl.OutputLogits
	n.Layers[0].B[env.ActionHold] = 5
	return n
}

func switchConfig(t *testing.T) Config {
	c := tinyConfig(AlgoPPO)
	c.ECN, c.ECNName = holdNet(t), "hold"
	r := DefaultRandomisation()
	r.RandomPFC, r.HostRates = 1, nil
	c.Randomise = r
	return c
}

func TestSwitchLevelTraining(t *testing.T) {
	cfg := switchConfig(t)
	a, err := Run(cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Net.InDim() != env.NumSwitchFeatures || a.Net.OutDim() != env.SwitchActions() {
		t.Fatalf("switch-level network %d→%d, want %d→%d", a.Net.InDim(), a.Net.OutDim(), env.NumSwitchFeatures, env.SwitchActions())
	}
	b, err := Run(cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Net.Equal(b.Net) {
		t.Fatal("two switch-level runs of one configuration differ")
	}
	m, err := a.Model(Provenance{Name: "hdrm"})
	if err != nil {
		t.Fatal(err)
	}
	if m.ObsSpec != env.SwitchSpecVersion || m.ActSpec != env.HeadroomActionSpec || m.Hyper["level"] != "switch" ||
		m.Hyper["ecn_policy"] != "hold" || len(m.Hyper["ecn_weights_sha256"]) != 64 {
		t.Fatalf("model specs %s/%s, hyper %v", m.ObsSpec, m.ActSpec, m.Hyper)
	}
	// Another ECN network is another run: a checkpoint of one is not resumed by the other.
	other := switchConfig(t)
	other.ECN.Layers[0].B[env.ActionKmaxUp] = 1
	if cfg.fingerprint() == other.fingerprint() {
		t.Fatal("the ECN policy's weights are not part of the run's fingerprint")
	}
}

func TestSwitchLevelValidate(t *testing.T) {
	wide, _ := rl.NewNet(rl.Arch{In: 7, Out: env.DefaultCatalogue().ECNLen(), Act: rl.Tanh})
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Algo = AlgoDDQN }, "with ppo"},
		{func(c *Config) { c.PreferenceScale = 1 }, "no preference scale"},
		{func(c *Config) { c.Spec = "obs-v4/act-v3" }, "speaks sw-v1/hdrm-v1"},
		{func(c *Config) { c.ECN = wide }, "reads 7 inputs"},
	} {
		cfg := switchConfig(t)
		c.mod(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("err = %v, want %q", err, c.want)
		}
	}
	if err := switchConfig(t).Validate(); err != nil {
		t.Fatal(err)
	}
}

// A switch's one action reaches every member PG: an actor that always
// picks factor 1 brings every PG of the star from its random start down
// to its lossless floor after one interval.
func TestSwitchActionSetsEveryPG(t *testing.T) {
	cfg := switchConfig(t).withDefaults()
	sc := tinyScenario("a", 0.3).Config
	sc = perturb(Randomisation{RandomPFC: 1}, sc, episodeRNG(5, 0))
	floor, err := rl.NewNet(rl.Arch{In: env.NumSwitchFeatures, Out: env.SwitchActions(), Act: rl.Tanh})
	if err != nil {
		t.Fatal(err)
	}
	floor.Kind = rl.OutputLogits
	floor.Layers[0].B[1] = 5 // factor HeadroomFactors[0] = 1
	e, err := gym.New(sc, gym.Options{Interval: cfg.Interval})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := e.Reset(1)
	if err != nil {
		t.Fatal(err)
	}
	above := 0
	for _, o := range obs {
		if o.Current.HeadroomBytes > o.MinHeadroomBytes {
			above++
		}
	}
	if above == 0 {
		t.Fatal("random_pfc 1 left every PG at its floor: the test shows nothing")
	}
	out, err := playSwitchEpisode(cfg, sc, 1, greedyActor{net: floor, heads: []int{env.SwitchActions()}}, true, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.obs) == 0 || len(out.obs[0]) != 1 || out.actions[0][0] != 1 {
		t.Fatalf("%d steps, first step's rows %v, actions %v: want one switch choosing action 1", len(out.obs), out.obs[:min(1, len(out.obs))], out.actions[:min(1, len(out.actions))])
	}
	// The switch's features read every PG's headroom over its floor: above
	// it at the start, at it (0) from the second interval on.
	if h0, h1 := out.obs[0][0][12], out.obs[1][0][12]; !(h0 > 0) || h1 != 0 || out.obs[1][0][13] != 0 {
		t.Fatalf("headroom feature %g then %g (min %g): want > 0, then 0 once the switch set its floor", h0, h1, out.obs[1][0][13])
	}
}

// hdrm-v2 trains two heads (headroom, alpha) into one switch-level model,
// and one switch's choice moves both knobs of every member PG: an actor
// that always picks the floor and alpha 2 brings the star's PGs to their
// floors and alpha 2 after one interval (the alpha features read it).
func TestSwitchLevelHeadroomAlpha(t *testing.T) {
	cfg := switchConfig(t)
	cfg.Spec = env.SwitchSpecVersion + "/" + env.HeadroomAlphaActionSpec
	a, err := Run(cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	heads := env.SwitchHeads(env.HeadroomAlphaActionSpec)
	m, err := a.Model(Provenance{Name: "ha"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Net.OutDim() != heads[0]+heads[1] || m.ActSpec != env.HeadroomAlphaActionSpec {
		t.Fatalf("network → %d, spec %s", a.Net.OutDim(), m.ActSpec)
	}
	cfg = cfg.withDefaults()
	sc := perturb(Randomisation{RandomPFC: 1}, tinyScenario("a", 0.3).Config, episodeRNG(5, 0))
	n, err := rl.NewNet(rl.Arch{In: env.NumSwitchFeatures, Out: heads[0] + heads[1], Act: rl.Tanh})
	if err != nil {
		t.Fatal(err)
	}
	n.Kind = rl.OutputLogits
	n.Layers[0].B[1] = 5
	n.Layers[0].B[heads[0]+1+slices.Index(env.SwitchAlphas, 2)] = 5
	out, err := playSwitchEpisode(cfg, sc, 1, greedyActor{net: n, heads: heads}, true, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := float32((math.Log2(2) + 4) / 6) // the alpha feature of alpha 2
	if len(out.obs) < 2 || out.obs[1][0][12] != 0 || math.Abs(float64(out.obs[1][0][14]-want)) > 1e-6 {
		t.Fatalf("after one interval: headroom feature %g (want 0), alpha feature %g (want %g)", out.obs[1][0][12], out.obs[1][0][14], want)
	}
	bad := switchConfig(t)
	bad.Spec = env.SwitchSpecVersion + "/hdrm-v9"
	if _, err := Run(bad, Hooks{}); err == nil || !strings.Contains(err.Error(), "sw-v1/hdrm-v2 (headroom and alpha)") {
		t.Fatalf("unknown switch spec: %v", err)
	}
}
