package train

import (
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy/builtin"
	"github.com/ecntune/ecntune/policy/nn"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/gym"
	"github.com/ecntune/ecntune/train/rl"
)

// builtinFineTune is a fine-tuning of the embedded model on a tiny twin,
// cut to a few short episodes.
func builtinFineTune(t *testing.T) (FineTune, Config) {
	t.Helper()
	m, err := builtin.Model()
	if err != nil {
		t.Fatal(err)
	}
	twin := tinyScenario("twin", 0.5)
	twin.Config.Duration = 3 * simenv.Millisecond // a PPO update needs 32 rows of 4 queues' decisions
	twin.SHA256 = strings.Repeat("cd", 32)
	ft := FineTune{From: "builtin", Model: m, Twin: twin, HeldOut: SeedRange{First: twin.Config.Seed, N: 5}}
	cfg, err := ft.Config(3, 2)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Episodes, cfg.EvalEvery = 2, 1
	return ft, cfg
}

func TestFineTuneConfigFollowsTheModel(t *testing.T) {
	ft, cfg := builtinFineTune(t)
	if cfg.Algo != AlgoPPO || cfg.Spec != "obs-v3/act-v2" || !slices.Equal(cfg.Hidden, []int{64, 64}) || cfg.Gamma != 0.5 ||
		cfg.LR != 3e-4 || cfg.Interval != 200*simenv.Microsecond || cfg.Reward.Delay != 0.12 || cfg.Reward.TailDelay != 0.02 ||
		cfg.Reward.FlowSmall != 0.1 || cfg.Reward.FlowLarge != 0.1 || cfg.Reward.FlowSmallTail != 0.3 {
		t.Fatalf("config %+v does not follow the builtin model's recipe", cfg)
	}
	if cfg.MaxEpisode != ft.Twin.Config.Duration || cfg.CriticWarmUp != TwinCriticWarmUp || len(cfg.Scenarios) != 1 {
		t.Fatalf("episodes of %v, critic warm-up %d, %d scenarios", cfg.MaxEpisode, cfg.CriticWarmUp, len(cfg.Scenarios))
	}
	r := cfg.Randomise
	if len(r.HostRates) != 0 || r.AddIncast != 0 || r.RandomPFC != 0 || r.HidePeer != 0 || r.LoadMin != 0.8 || r.LoadMax != 1.2 ||
		!r.RandomStart || r.DropTelemetry != 0.4 {
		t.Fatalf("randomisation %+v is not the twin's", r)
	}
}

// A twin that names the agent's decision interval is fine-tuned at it,
// not at the starting model's.
func TestFineTuneAtTheTwinsInterval(t *testing.T) {
	ft, _ := builtinFineTune(t)
	ft.Twin.Config.Interval = 240 * simenv.Microsecond
	cfg, err := ft.Config(3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Interval != 240*simenv.Microsecond {
		t.Fatalf("fine-tuned every %v, want the twin's 240µs", cfg.Interval)
	}
}

// TestFineTuneStartsFromTheModel: the learner starts with the model's
// weights bit for bit, so it decides as the model does before any update;
// a run whose updates all fit the critic ends with them unchanged, and one
// that learns moves them.
func TestFineTuneStartsFromTheModel(t *testing.T) {
	ft, cfg := builtinFineTune(t)
	model, err := nn.UnmarshalNet(ft.Model.Weights)
	if err != nil {
		t.Fatal(err)
	}
	lr, err := newLearner(cfg.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if !lr.net().Equal(model) {
		t.Fatal("the learner does not start with the model's weights")
	}
	e, err := gym.New(ft.Twin.Config, gym.Options{Interval: cfg.Interval})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := e.Reset(7)
	if err != nil {
		t.Fatal(err)
	}
	heads := cfg.withDefaults().heads()
	for step := 0; step < 4; step++ {
		f := featuresOf(obs, cfg.withDefaults().features(), false, 0)
		want, err1 := model.GreedyJoint(f, heads)
		got, err2 := lr.net().GreedyJoint(f, heads)
		if err1 != nil || err2 != nil || !slices.Equal(got, want) {
			t.Fatalf("step %d: decisions %v, the model's %v (%v, %v)", step, got, want, err1, err2)
		}
		if obs, _, _, _, err = e.Step(want); err != nil {
			t.Fatal(err)
		}
	}

	cfg.CriticWarmUp = cfg.Episodes
	kept, err := Run(cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if !kept.Net.Equal(model) {
		t.Error("a run whose updates all fit the critic changed the actor")
	}
	cfg.CriticWarmUp = 0
	moved, err := Run(cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if moved.Net.Equal(model) {
		t.Error("a run that learns did not move the actor from the model's weights")
	}
}

// TestFineTuneProvenance: the record names the model started from (and
// its weights' sha256), the twin with its sha256, the held-out seeds and
// what the caller adds.
func TestFineTuneProvenance(t *testing.T) {
	ft, cfg := builtinFineTune(t)
	res := &Result{Config: cfg.withDefaults(), Net: cfg.Init, Episodes: 2, Eval: map[string]float64{"twin": 0.1}}
	m, err := res.Model(Provenance{Name: "tuned", Created: time.Now(), Parent: "base@2",
		Hyper: map[string]string{"twin_sha256": ft.Twin.SHA256, "init": "overridden?"}, Eval: map[string]any{"twin_frontier": map[string]any{"promoted": true}}})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Hyper
	if h["init"] != "builtin" || h["init_weights_sha256"] != ft.Model.WeightsSHA256 || h["held_out_seeds"] != "1-5" ||
		h["critic_warm_up"] != "16" || h["twin_sha256"] != ft.Twin.SHA256 {
		t.Fatalf("hyper %v", h)
	}
	if m.Parent != "base@2" || len(m.Scenarios) != 1 || m.Scenarios[0] != (models.ScenarioRef{Name: "twin.yaml", SHA256: ft.Twin.SHA256}) {
		t.Fatalf("parent %q, scenarios %+v", m.Parent, m.Scenarios)
	}
	if !strings.Contains(string(m.Eval), `"twin_frontier":{"promoted":true}`) || !strings.Contains(string(m.Eval), `"greedy_mean_reward"`) {
		t.Fatalf("eval %s", m.Eval)
	}
	// The fingerprint depends on the model started from: a checkpoint of
	// a fine-tuning of another model is not resumed.
	other := cfg
	other.Init = cfg.Init.Clone()
	other.Init.Layers[0].B[0] += 1
	if cfg.withDefaults().fingerprint() == other.withDefaults().fingerprint() {
		t.Error("fine-tunings of two models share a fingerprint")
	}
}

func TestFineTuneRefusesWhatItCannotContinue(t *testing.T) {
	ft, _ := builtinFineTune(t)
	hyper := func(k, v string) FineTune {
		f := ft
		f.Model.Hyper = maps.Clone(ft.Model.Hyper)
		f.Model.Hyper[k] = v
		return f
	}
	spec := func(obs, act string) FineTune {
		f := ft
		f.Model.ObsSpec, f.Model.ActSpec = obs, act
		return f
	}
	pref, err := builtin.PreferenceModel()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ft   FineTune
		says string
		arch bool
	}{
		{"hidden widths other than its weights'", hyper("hidden", "32,32"), "44 → 64 → 64 → 83, tanh", true},
		{"an action spec other than its weights'", spec("obs-v3", "act-v3"), "this run trains", true},
		{"an observation spec other than its weights'", spec("obs-v4", "act-v2"), "this run trains", true},
		{"a ddqn record of ppo weights", func() FineTune { f := ft; f.Model.Algorithm = AlgoDDQN; return f }(), "relu", true},
		{"an unknown algorithm", func() FineTune { f := ft; f.Model.Algorithm = "a3c"; return f }(), "algorithm \"a3c\"", false},
		{"a preference model", FineTune{From: "builtin:prefer", Model: pref, Twin: ft.Twin}, "reads an operator preference", false},
		{"a headroom model", hyper("level", "switch"), "switch-level headroom model", false},
		{"a damaged hyper-parameter", hyper("gamma", "half"), "gamma", false},
	} {
		_, err := c.ft.Config(1, 2)
		if err == nil || !strings.Contains(err.Error(), c.says) || c.arch != errors.Is(err, rl.ErrArchMismatch) {
			t.Errorf("%s: %v, want an error saying %q (architecture mismatch: %v)", c.name, err, c.says, c.arch)
		}
	}
}

func TestSeedRange(t *testing.T) {
	r := SeedRange{First: 41, N: 10}
	for s, want := range map[uint64]bool{40: false, 41: true, 50: true, 51: false} {
		if r.Contains(s) != want {
			t.Errorf("%v contains %d: %v", r, s, !want)
		}
	}
	top := SeedRange{First: 1<<64 - 2, N: 5}
	if !top.Contains(1<<64-1) || top.Contains(0) || (SeedRange{}).Contains(0) {
		t.Error("a range at the top of the seeds, or an empty one, is wrong")
	}
	// Training draws no held-out seed: here, none of the lower half.
	c := Config{HeldOut: SeedRange{First: 0, N: math.MaxInt}}
	rng := episodeRNG(1, 0)
	for range 100 {
		if s := c.episodeSeed(rng); s < 1<<63 {
			t.Fatalf("episode seed %d is held out", s)
		}
	}
	if r.String() != "41-50" || (SeedRange{}).String() != "" {
		t.Errorf("%q", r.String())
	}
}

// TestTwinTruthReward: a counter-only reward gains the ground-truth terms;
// one that has any of its own keeps them as they are.
func TestTwinTruthReward(t *testing.T) {
	w := TwinTruthReward(DefaultReward())
	if w.FlowSmall != 0.1 || w.FlowLarge != 0.1 || w.FlowSmallTail != 0.3 || w.Delay != DefaultReward().Delay {
		t.Fatalf("counter-only reward became %+v", w)
	}
	own := DefaultReward()
	own.FlowSmallTail = 1
	if got := TwinTruthReward(own); got != own {
		t.Fatalf("a reward with its own ground truth became %+v, want %+v", got, own)
	}
}

// A twin longer than a fine-tuning episode is trained on all of it: the
// episodes start at offsets across it (the same for a seed), so that the
// traffic of its last window is seen too, not its first 20 ms only.
func TestFineTuneEpisodesSpanALongTwin(t *testing.T) {
	ft, _ := builtinFineTune(t)
	ms := simenv.Millisecond
	ft.Twin.Config.Duration = 60 * ms
	cdf := ft.Twin.Config.Workloads[1]
	cdf.Start, cdf.End = 0, 30*ms
	late := simenv.Workload{Kind: simenv.WorkloadIncast, Priority: 3, Fanin: 3, SizeBytes: 60_000, Every: 150 * simenv.Microsecond,
		Start: 45 * ms, End: 60 * ms}
	ft.Twin.Config.Workloads = []simenv.Workload{cdf, late}
	cfg, err := ft.Config(3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxEpisode != TwinMaxEpisode || cfg.Hyper()["episode_start"] != "spread" {
		t.Fatalf("episodes of %v, hyper episode_start %q", cfg.MaxEpisode, cfg.Hyper()["episode_start"])
	}
	sawLate := 0
	for ep := range 32 {
		w := cfg.trainingWindow(ft.Twin.Config, episodeRNG(cfg.Seed, ep))
		if again := cfg.trainingWindow(ft.Twin.Config, episodeRNG(cfg.Seed, ep)); !slices.EqualFunc(w.Workloads, again.Workloads,
			func(a, b simenv.Workload) bool { return a.Start == b.Start && a.End == b.End }) {
			t.Fatalf("episode %d: windows %+v and %+v for one seed", ep, w.Workloads, again.Workloads)
		}
		if w.Duration != TwinMaxEpisode {
			t.Fatalf("episode %d runs %v", ep, w.Duration)
		}
		if err := func() error { _, err := simenv.New(w); return err }(); err != nil {
			t.Fatalf("episode %d: %v", ep, err)
		}
		for _, wl := range w.Workloads {
			if wl.Kind == simenv.WorkloadIncast {
				sawLate++
			}
		}
	}
	if sawLate < 8 {
		t.Fatalf("%d of 32 episodes see the incast of the twin's last 15 ms", sawLate)
	}
}

// startAt moves a scenario's workloads to an offset: the ones over are
// left out, a periodic incast keeps its phase, a trace its later flows.
func TestStartAt(t *testing.T) {
	us := simenv.Microsecond
	sc := simenv.DefaultConfig()
	sc.Duration, sc.Warmup = 1000*us, 300*us
	sc.Workloads = []simenv.Workload{
		{Kind: simenv.WorkloadCDF, Load: 0.3, End: 200 * us},                  // over
		{Kind: simenv.WorkloadCDF, Load: 0.5, Start: 200 * us, End: 600 * us}, // under way
		{Kind: simenv.WorkloadIncast, Fanin: 2, SizeBytes: 1000, Every: 150 * us, Start: 100 * us},
		{Kind: simenv.WorkloadIncast, Fanin: 2, SizeBytes: 1000, Start: 50 * us}, // one-shot, fired
		{Kind: simenv.WorkloadTrace, Start: 200 * us, Flows: []simenv.TraceFlow{{Start: 0}, {Start: 100 * us}, {Start: 300 * us}}},
		{Kind: simenv.WorkloadAllReduce, Ranks: 2, SizeBytes: 1000, Start: 800 * us},
	}
	got := startAt(sc, 260*us)
	if got.Duration != 740*us || got.Warmup != 40*us || len(got.Workloads) != 4 {
		t.Fatalf("from 260us: duration %v, warmup %v, workloads %+v", got.Duration, got.Warmup, got.Workloads)
	}
	w := got.Workloads
	if w[0].Load != 0.5 || w[0].Start != 0 || w[0].End != 340*us {
		t.Errorf("cdf under way: %+v", w[0])
	}
	if w[1].Start != 140*us { // it fires at 100, 250, 400us: the first from 260us is at 400us
		t.Errorf("periodic incast: %+v, want its first firing 140us in (400us)", w[1])
	}
	if w[2].Kind != simenv.WorkloadTrace || w[2].Start != 0 || len(w[2].Flows) != 2 || w[2].Flows[0].Start != 40*us || w[2].Flows[1].Start != 240*us {
		t.Errorf("trace: %+v", w[2])
	}
	if w[3].Start != 540*us {
		t.Errorf("collective: %+v", w[3])
	}
	if len(sc.Workloads) != 6 || sc.Workloads[1].Start != 200*us {
		t.Errorf("startAt changed its argument: %+v", sc.Workloads)
	}
}

// A discount of 0 is one (each decision judged by its own interval's
// reward), not "the default": a run given it trains at 0 and records it,
// and a fine-tuning of a model trained at 0 keeps 0 (both ran at 0.7 or
// 0.9 without a word).
func TestGammaZeroIsADiscount(t *testing.T) {
	for _, algo := range []string{AlgoDDQN, AlgoPPO} {
		c := tinyConfig(algo)
		c.Gamma, c.GammaSet = 0, true
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		d := c.withDefaults()
		if d.Gamma != 0 || c.Hyper()["gamma"] != "0" || ddqnConfig(d).Gamma != 0 || ppoConfig(d).Gamma != 0 {
			t.Errorf("%s given gamma 0: runs at %g, records %q", algo, d.Gamma, c.Hyper()["gamma"])
		}
		c.GammaSet = false
		if g := c.withDefaults().Gamma; g == 0 {
			t.Errorf("%s without a gamma: %g, want the default", algo, g)
		}
	}
	ft, _ := builtinFineTune(t)
	ft.Model.Hyper = maps.Clone(ft.Model.Hyper)
	ft.Model.Hyper["gamma"] = "0"
	cfg, err := ft.Config(3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if g := cfg.withDefaults().Gamma; g != 0 {
		t.Fatalf("fine-tuning a model trained at gamma 0 runs at %g", g)
	}
}
