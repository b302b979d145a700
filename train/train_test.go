package train

import (
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/gym"
	"github.com/ecntune/ecntune/simenv/scenario"
)

// tinyScenario is a 4-host star with 3-to-1 incasts and web-search-like
// background: a 1 ms episode costs a few milliseconds.
func tinyScenario(name string, load float64) scenario.Named {
	cfg := simenv.DefaultConfig()
	cfg.Name = name
	cfg.Duration = simenv.Millisecond
	cfg.Topology = simenv.StarTopology(4, 100e9, simenv.Microsecond)
	cfg.Workloads = []simenv.Workload{
		{Kind: simenv.WorkloadIncast, Priority: 3, Fanin: 3, SizeBytes: 60_000, Every: 150 * simenv.Microsecond},
		{Kind: simenv.WorkloadCDF, Priority: 3, Load: load, CDF: []simenv.CDFPoint{{Bytes: 1000, Percent: 0}, {Bytes: 10_000, Percent: 60},
			{Bytes: 200_000, Percent: 100}}},
	}
	return scenario.Named{Name: name, Path: name + ".yaml", Config: cfg}
}

func tinyConfig(algo string) Config {
	return Config{Algo: algo, Scenarios: []scenario.Named{tinyScenario("a", 0.3), tinyScenario("b", 0.6)},
		Episodes: 8, Workers: 2, Seed: 3, Hidden: []int{16}, Interval: 100 * simenv.Microsecond,
		MaxEpisode: simenv.Millisecond, WarmUp: 64, CheckpointEvery: 1, EvalEvery: 2}
}

func openReg(t *testing.T) *models.Registry {
	t.Helper()
	r, err := models.Open(filepath.Join(t.TempDir(), "reg.db"), models.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestTrainingIsDeterministic(t *testing.T) {
	for _, algo := range []string{AlgoDDQN, AlgoPPO} {
		t.Run(algo, func(t *testing.T) {
			cfg := tinyConfig(algo)
			a, err := Run(cfg, Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := Run(cfg, Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			if a.Episodes != 8 || len(a.Curve) != 4 {
				t.Fatalf("episodes %d rounds %d, want 8 and 4 (2 workers)", a.Episodes, len(a.Curve))
			}
			last := a.Curve[len(a.Curve)-1]
			if last.Updates == 0 || last.Transitions < 100 {
				t.Fatalf("last round %+v: want gradient steps and >= 100 agent steps", last)
			}
			if !a.Net.Equal(b.Net) {
				t.Fatal("two runs with the same seed and workers gave different weights")
			}
			if !reflect.DeepEqual(a.Curve, b.Curve) || !reflect.DeepEqual(a.Eval, b.Eval) {
				t.Fatalf("curves differ:\n%+v\n%+v", a.Curve, b.Curve)
			}
			cfg.Seed = 4
			c, err := Run(cfg, Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			if a.Net.Equal(c.Net) {
				t.Fatal("another seed gave the same weights")
			}
		})
	}
}

// killingStore fails (as a killed process would stop) right after its
// n-th successful save.
type killingStore struct {
	*models.Registry
	saves, killAt int
}

var errKilled = errors.New("killed")

func (k *killingStore) SaveCheckpoint(run string, step int, state []byte) error {
	if err := k.Registry.SaveCheckpoint(run, step, state); err != nil {
		return err
	}
	k.saves++
	if k.saves == k.killAt {
		return errKilled
	}
	return nil
}

func TestResumeGivesSameWeights(t *testing.T) {
	for _, algo := range []string{AlgoDDQN, AlgoPPO} {
		t.Run(algo, func(t *testing.T) {
			cfg := tinyConfig(algo)
			whole, err := Run(cfg, Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			reg := openReg(t)
			_, err = Run(cfg, Hooks{Store: &killingStore{Registry: reg, killAt: 2}, Run: "tiny"})
			if !errors.Is(err, errKilled) {
				t.Fatalf("first run: err = %v, want the simulated kill", err)
			}
			cp, err := reg.LoadCheckpoint("tiny")
			if err != nil || cp.Step != 4 {
				t.Fatalf("checkpoint after the kill: step %d err %v, want episode 4", cp.Step, err)
			}
			res, err := Run(cfg, Hooks{Store: reg, Run: "tiny"})
			if err != nil {
				t.Fatal(err)
			}
			if res.ResumedFrom != 4 || res.Episodes != 8 {
				t.Fatalf("resumed from %d, episodes %d: want 4 and 8", res.ResumedFrom, res.Episodes)
			}
			if !res.Net.Equal(whole.Net) {
				t.Fatal("resumed run ended with other weights than the uninterrupted one")
			}
			if !reflect.DeepEqual(res.Curve, whole.Curve) {
				t.Fatalf("resumed curve differs:\n%+v\n%+v", res.Curve, whole.Curve)
			}
			other := cfg
			other.Seed = 99
			// refused, saying what differs (it gave two fingerprints)
			if _, err := Run(other, Hooks{Store: reg, Run: "tiny"}); err == nil || !strings.Contains(err.Error(), "another configuration (it differs in: seed "+strconv.FormatUint(cfg.Seed, 10)+" -> 99)") {
				t.Fatalf("resume with another seed: err = %v, want a fingerprint refusal naming the seed", err)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	base := tinyConfig(AlgoDDQN)
	for _, c := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Algo = "sarsa" }, `algorithm "sarsa"`},
		{func(c *Config) { c.Scenarios = nil }, "no scenario"},
		{func(c *Config) { c.Workers = -1 }, "workers -1"},
		{func(c *Config) { c.Episodes = -2 }, "episodes -2"},
		{func(c *Config) { c.Gamma = 1 }, "gamma 1"},
		{func(c *Config) { c.MaxEpisode = 150 * simenv.Microsecond }, "max episode"},
		{func(c *Config) { c.Randomise = Randomisation{LoadMin: 2, LoadMax: 1} }, "load_min 2"},
		{func(c *Config) { c.Randomise = Randomisation{HostRates: []float64{10}} }, "host_rates[0]"},
		{func(c *Config) { c.Randomise = Randomisation{FabricScales: []float64{1, 0}} }, "fabric_scales[1] = 0"},
		{func(c *Config) { c.Randomise = Randomisation{BufferMin: 0, BufferMax: 2} }, "buffer_min 0"},
		{func(c *Config) { c.Randomise = Randomisation{CableMin: 3, CableMax: 2} }, "cable_min 3"},
		{func(c *Config) { c.Randomise = Randomisation{DelayMin: -1, DelayMax: 2} }, "delay_min -1"},
		{func(c *Config) { c.Hidden = []int{0} }, "hidden[0]"},
		{func(c *Config) { c.Scenarios[0].Config.Duration = 0 }, "scenario 0 (a): duration"},
		{func(c *Config) { c.Spec = "obs-v9/act-v2" }, `spec "obs-v9/act-v2": want OBS/ACT with OBS one of`},
		{func(c *Config) { c.Spec = "obs-v3" }, `spec "obs-v3"`},
		{func(c *Config) { c.Spec = "obs-v4/act-v3" }, "ddqn speaks act-v2 only"},
		{func(c *Config) { c.PmaxStep = 0.2 }, "pmax step 0.2"},
		// two scenarios of one name: one figure for both in the output
		// and the card (Result.Eval is by name), one resume part
		{func(c *Config) {
			s := c.Scenarios[0]
			c.Scenarios[0].Path, s.Path = "x/a.yaml", "y/a.yaml"
			c.Scenarios = append(c.Scenarios, s)
		}, "scenarios 0 (x/a.yaml) and 2 (y/a.yaml) are both named a"},
	} {
		cfg := base
		cfg.Scenarios = append([]scenario.Named(nil), base.Scenarios...)
		c.mut(&cfg)
		if _, err := Run(cfg, Hooks{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want it to mention %q", err, c.want)
		}
	}
}

func TestPerturbStaysInRange(t *testing.T) {
	sc := tinyScenario("a", 0.6).Config
	r := DefaultRandomisation()
	rng := rand.New(rand.NewPCG(1, 2))
	rates := map[float64]int{}
	added := 0
	for i := 0; i < 400; i++ {
		p := perturb(r, sc, rng)
		if p.Workloads[0].Fanin < 2 || p.Workloads[0].Fanin > 3 {
			t.Fatalf("fan-in %d outside 2..hosts-1", p.Workloads[0].Fanin)
		}
		if s := p.Workloads[0].SizeBytes; s < 30_000 || s > 120_000 {
			t.Fatalf("incast size %d outside ×0.5..×2 of 60 KB", s)
		}
		if l := p.Workloads[1].Load; l < 0.3-1e-9 || l > 0.9+1e-9 {
			t.Fatalf("load %g outside ×0.5..×1.5 of 0.6", l)
		}
		host := p.Topology.Links[0].RateBps
		rates[host]++
		if math.Abs(p.DCQCN.AIBps/host-sc.DCQCN.AIBps/100e9) > 1e-12 {
			t.Fatalf("DCQCN AI %g did not scale with host rate %g", p.DCQCN.AIBps, host)
		}
		if len(p.Workloads) == 3 {
			added++
		}
		if err := p.ECN.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	if len(rates) != 4 || added < 80 || added > 160 {
		t.Fatalf("rates %v, added incasts %d/400: want all 4 rates and about 30%%", rates, added)
	}
	if sc.Topology.Links[0].RateBps != 100e9 || len(sc.Workloads) != 2 {
		t.Fatal("perturb changed the scenario it was given")
	}
}

// TestPerturbFabric checks the fabric randomisation on a leaf-spine:
// fabric_scales moves the switch-to-switch links only, and the buffer,
// cable and delay factors stay in their ranges.
func TestPerturbFabric(t *testing.T) {
	sc := tinyScenario("a", 0.6).Config
	sc.Topology = simenv.LeafSpineTopology(2, 1, 3, 100e9, 100e9, simenv.Microsecond)
	r := Randomisation{FabricScales: []float64{0.5, 2}, BufferMin: 0.5, BufferMax: 2, CableMin: 1, CableMax: 20,
		DelayMin: 0.5, DelayMax: 2}
	rng := rand.New(rand.NewPCG(3, 4))
	scales := map[float64]bool{}
	for i := 0; i < 200; i++ {
		p := perturb(r, sc, rng)
		var fabric float64
		for _, l := range p.Topology.Links {
			a, b := p.Topology.Nodes[l.A], p.Topology.Nodes[l.B]
			switch {
			case a.Switch && b.Switch:
				if fabric != 0 && l.RateBps != fabric {
					t.Fatalf("fabric links at %g and %g in one episode", fabric, l.RateBps)
				}
				fabric = l.RateBps
			case l.RateBps != 100e9:
				t.Fatalf("host link at %g, want 100G (fabric_scales moves fabric links only)", l.RateBps)
			}
			if d := float64(l.Delay) / float64(simenv.Microsecond); d < 0.5-1e-9 || d > 2+1e-9 {
				t.Fatalf("link delay ×%g outside 0.5..2", d)
			}
		}
		scales[fabric/100e9] = true
		if b := float64(p.BufferBytes) / float64(sc.BufferBytes); b < 0.5-1e-6 || b > 2+1e-6 {
			t.Fatalf("buffer ×%g outside 0.5..2", b)
		}
		if c := p.PFC.CableMeters / sc.PFC.CableMeters; c < 1-1e-9 || c > 20+1e-9 {
			t.Fatalf("cable ×%g outside 1..20", c)
		}
	}
	if len(scales) != 2 || !scales[0.5] || !scales[2] {
		t.Fatalf("fabric scales drawn %v, want 0.5 and 2", scales)
	}
	if sc.Topology.Links[len(sc.Topology.Links)-1].RateBps != 100e9 {
		t.Fatal("perturb changed the scenario it was given")
	}
}

func TestCurveWriters(t *testing.T) {
	curve := []Round{{Round: 1, Episodes: 2, Transitions: 80, MeanReward: 0.25, Epsilon: 1, Evaluated: true, EvalScore: 0.5},
		{Round: 2, Episodes: 4, Transitions: 160, MeanReward: 0.5, Epsilon: 0.5, Loss: 0.125, Updates: 10, Entropy: 3.5}}
	var b strings.Builder
	if err := WriteCurveCSV(&b, curve); err != nil {
		t.Fatal(err)
	}
	want := "round,episodes,transitions,mean_reward,epsilon,loss,updates,eval_score,entropy\n1,2,80,0.25,1,0,0,0.5,0\n2,4,160,0.5,0.5,0.125,10,,3.5\n"
	if b.String() != want {
		t.Fatalf("csv:\n%s\nwant:\n%s", b.String(), want)
	}
	var png strings.Builder
	if err := WriteCurvePNG(&png, curve, "t"); err != nil || !strings.HasPrefix(png.String(), "\x89PNG") {
		t.Fatalf("png: err %v, %d bytes", err, png.Len())
	}
	if err := WriteCurvePNG(&png, nil, "t"); err == nil {
		t.Fatal("empty curve plotted")
	}
}

// BenchmarkTrainingThroughput measures environment (agent) steps per
// second of DDQN training on 2 workers, learning included.
func BenchmarkTrainingThroughput(b *testing.B) {
	cfg := tinyConfig(AlgoDDQN)
	cfg.Scenarios[0].Config.Topology = simenv.StarTopology(8, 100e9, simenv.Microsecond)
	cfg.Scenarios[1].Config.Topology = simenv.StarTopology(8, 100e9, simenv.Microsecond)
	cfg.Episodes = 16
	var steps uint64
	for b.Loop() {
		res, err := Run(cfg, Hooks{})
		if err != nil {
			b.Fatal(err)
		}
		steps += res.Curve[len(res.Curve)-1].Transitions
	}
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "agent-steps/s")
	_ = env.NumFeatures
}

// BenchmarkRolloutThroughput measures agent steps per second of rollouts
// alone (simulation, observation, batched forward pass; no learning), one
// goroutine.
func BenchmarkRolloutThroughput(b *testing.B) {
	cfg := tinyConfig(AlgoDDQN).withDefaults()
	cfg.Scenarios[0].Config.Topology = simenv.StarTopology(8, 100e9, simenv.Microsecond)
	lr, err := newLearner(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var steps int
	ep := 0
	for b.Loop() {
		out, err := runEpisode(cfg, ep, lr.actorFor(0.1))
		if err != nil {
			b.Fatal(err)
		}
		steps += len(out.trans)
		ep++
	}
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "agent-steps/s")
}

// --spec obs-v3/act-v2 trains a model of the embedded model's specs with
// PPO: it reads the first 44 features, has the ECN head alone, and its
// record says so; the default is today's specs with both heads.
func TestTrainEarlierSpec(t *testing.T) {
	cfg := tinyConfig(AlgoPPO)
	cfg.Episodes, cfg.Spec = 2, "obs-v3/act-v2"
	res, err := Run(cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Net.Arch()
	if a.In != env.ObsSpecFeatures("obs-v3") || a.Out != env.DefaultCatalogue().ECNLen() {
		t.Fatalf("arch %+v, want %d inputs and %d outputs", a, env.ObsSpecFeatures("obs-v3"), env.DefaultCatalogue().ECNLen())
	}
	m, err := res.Model(Provenance{Name: "old"})
	if err != nil || m.ObsSpec != "obs-v3" || m.ActSpec != "act-v2" || m.Hyper["spec"] != "obs-v3/act-v2" || m.Hyper["catalogue"] != "83 actions" {
		t.Fatalf("model %s/%s hyper %v (%v)", m.ObsSpec, m.ActSpec, m.Hyper, err)
	}
	if err := models.CheckSpecIn(m, env.ReadableObsSpecs, env.ReadableActionSpecs); err != nil {
		t.Fatalf("the model is not readable: %v", err)
	}
	cfg.Spec = ""
	if res, err = Run(cfg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if a := res.Net.Arch(); a.In != env.NumFeatures || a.Out != env.DefaultCatalogue().Outputs() {
		t.Fatalf("default arch %+v", a)
	}
}

func TestPreferenceWeights(t *testing.T) {
	fab := 0.5
	w := env.RewardWeights{Throughput: 1, FabricThroughput: &fab, Delay: 0.1, TailDelay: 0.02, OverMark: 1, Pause: 2,
		PauseEvent: 0.1, Drop: 4, DropEvent: 2, FlowSmall: 0.3, FlowLarge: 0.2, FlowSmallTail: 0.7}
	if got := Preference(w, 2, 0); !reflect.DeepEqual(got, w) {
		t.Fatalf("preference 0 changed the weights: %+v", got)
	}
	got := Preference(w, 2, 0.5) // x2 latency, x1/2 throughput
	want := w
	want.Delay, want.TailDelay, want.FlowSmall = 0.2, 0.04, 0.6
	want.Throughput, want.FlowLarge = 0.5, 0.1
	wf := 0.25
	want.FabricThroughput = &wf
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("preference +0.5 at scale 2: %+v, want %+v", got, want)
	}
	if fab != 0.5 {
		t.Fatal("Preference wrote through the caller's FabricThroughput")
	}
	w.FabricThroughput = nil
	if got := Preference(w, 1, -1); got.FabricThroughput != nil || got.Throughput != 2 || got.Delay != 0.05 || got.FlowSmallTail != 0.7 {
		t.Fatalf("preference -1 at scale 1: %+v", got)
	}
}

func TestFeaturesWithPreference(t *testing.T) {
	obs := []env.Observation{{Features: make([]float32, env.NumFeatures)}, {Features: make([]float32, env.NumFeatures)}}
	obs[1].Features[3] = 7
	in := env.ObsSpecFeatures("obs-v3")
	f := featuresOf(obs, in, true, -0.5)
	for i, row := range f {
		if len(row) != in+1 || row[in] != -0.5 || row[3] != obs[i].Features[3] {
			t.Fatalf("row %d: %v", i, row)
		}
	}
	f[0][0] = 9
	if obs[0].Features[0] != 0 {
		t.Fatal("the rows alias the observation's features")
	}
	if plain := featuresOf(obs, in, false, -0.5); len(plain[1]) != in {
		t.Fatalf("unconditioned row has %d features, want %d", len(plain[1]), in)
	}
}

func TestTrainPreferenceConditioned(t *testing.T) {
	cfg := tinyConfig(AlgoPPO)
	cfg.Episodes, cfg.Spec, cfg.PreferenceScale = 2, "obs-v3/act-v2", 2
	res, err := Run(cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if in := res.Net.Arch().In; in != env.ObsSpecFeatures("obs-v3")+1 {
		t.Fatalf("network reads %d inputs, want obs-v3's %d features and the preference", in, env.ObsSpecFeatures("obs-v3"))
	}
	m, err := res.Model(Provenance{Name: "pref"})
	if err != nil || m.Hyper[models.HyperPreferenceScale] != "2" {
		t.Fatalf("hyper %v (%v)", m.Hyper, err)
	}
	cfg.PreferenceScale = 0
	plain, err := Run(cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if pm, err := plain.Model(Provenance{Name: "plain"}); err != nil || pm.Hyper[models.HyperPreferenceScale] != "" || plain.Net.Arch().In != env.ObsSpecFeatures("obs-v3") {
		t.Fatalf("unconditioned run: hyper %v, %d inputs (%v)", pm.Hyper, plain.Net.Arch().In, err)
	}
	for _, s := range []float64{-1, MaxPreferenceScale + 1, math.NaN()} {
		cfg.PreferenceScale = s
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "preference scale") {
			t.Fatalf("preference scale %g: err = %v", s, err)
		}
	}
}

// TestTrainCriticTruth: an asymmetric run keeps a model that reads the
// counters only, records the truth spec, is reproducible and resumable,
// learns other weights than the same run with a symmetric critic (the
// truth reaches the learning), and is refused where there is no critic to
// read it.
func TestTrainCriticTruth(t *testing.T) {
	cfg := tinyConfig(AlgoPPO)
	cfg.Spec, cfg.CriticTruth = "obs-v3/act-v2", true
	a, err := Run(cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if in := a.Net.Arch().In; in != env.ObsSpecFeatures("obs-v3") {
		t.Fatalf("model reads %d inputs, want obs-v3's %d: the truth is the critic's alone", in, env.ObsSpecFeatures("obs-v3"))
	}
	m, err := a.Model(Provenance{Name: "asym"})
	if err != nil || m.Hyper["critic_truth"] != gym.TruthSpec {
		t.Fatalf("hyper %v (%v)", m.Hyper, err)
	}
	b, err := Run(cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Net.Equal(b.Net) || !reflect.DeepEqual(a.Curve, b.Curve) {
		t.Fatal("two asymmetric runs of one seed differ")
	}
	reg := openReg(t)
	if _, err := Run(cfg, Hooks{Store: &killingStore{Registry: reg, killAt: 2}, Run: "asym"}); !errors.Is(err, errKilled) {
		t.Fatalf("first run: %v", err)
	}
	res, err := Run(cfg, Hooks{Store: reg, Run: "asym"})
	if err != nil || res.ResumedFrom != 4 || !res.Net.Equal(a.Net) {
		t.Fatalf("resumed from %d (%v): same weights %v", res.ResumedFrom, err, err == nil && res.Net.Equal(a.Net))
	}
	sym := cfg
	sym.CriticTruth = false
	s, err := Run(sym, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Net.Equal(a.Net) {
		t.Fatal("the critic's truth changed nothing the actor learned")
	}
	if _, err := Run(sym, Hooks{Store: reg, Run: "asym"}); err == nil || !strings.Contains(err.Error(), "another configuration") {
		t.Fatalf("resuming an asymmetric run without the truth: %v", err)
	}
	d := tinyConfig(AlgoDDQN)
	d.CriticTruth = true
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "critic truth") {
		t.Fatalf("ddqn with critic truth: %v", err)
	}
}

// TestCriticRowsCarryTruth: the rows an asymmetric episode records for the
// critic hold the actor's features, then the ground truth (the share of
// the episode left falls from below 1 towards 0), and the truth is refused
// when it does not match the queues.
func TestCriticRowsCarryTruth(t *testing.T) {
	cfg := tinyConfig(AlgoPPO).withDefaults()
	cfg.Spec, cfg.CriticTruth = "obs-v3/act-v2", true
	lr, err := newLearner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := lr.actorFor(0)
	a.seed(1)
	out, err := playEpisode(cfg, episodeConfig(cfg, cfg.Scenarios[0].Config), 7, a, true, false, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	in := cfg.inDim()
	prev := float32(1)
	for s, rows := range out.obs {
		for q, r := range rows {
			if len(r) != in+gym.NumTruthFeatures {
				t.Fatalf("step %d queue %d: row of %d values, want %d", s, q, len(r), in+gym.NumTruthFeatures)
			}
		}
		left := rows[0][in+gym.TruthTimeLeft]
		if !(left > 0 && left < prev) {
			t.Fatalf("step %d: time left %g after %g in the critic's row %v", s, left, prev, rows[0][in:])
		}
		prev = left
	}
	if _, err := withTruth(make([][]float32, 3), make([][]float32, 2)); err == nil || !strings.Contains(err.Error(), "2 rows of ground truth for 3 queues") {
		t.Fatalf("short truth: %v", err)
	}
}

// A checkpoint is resumed only by a run on the same scenarios: the
// fingerprint reads each scenario's configuration (it read none while
// the configuration's JSON failed on ECNByRate's float keys).
func TestFingerprintReadsTheScenarios(t *testing.T) {
	a := Config{Scenarios: []scenario.Named{tinyScenario("s", 0.5)}}
	b := Config{Scenarios: []scenario.Named{tinyScenario("s", 0.6)}}
	if a.fingerprint() == b.fingerprint() {
		t.Fatal("runs on scenarios of another load have the same fingerprint")
	}
	c := Config{Scenarios: []scenario.Named{tinyScenario("s", 0.5)}}
	c.Scenarios[0].Config.ECNByRate = map[float64]simenv.ECN{100e9: {KminBytes: 1000, KmaxBytes: 2000, Pmax: 0.1}, 25e9: {KminBytes: 500, KmaxBytes: 900, Pmax: 0.2}}
	d := Config{Scenarios: []scenario.Named{tinyScenario("s", 0.5)}}
	d.Scenarios[0].Config.ECNByRate = map[float64]simenv.ECN{25e9: {KminBytes: 500, KmaxBytes: 900, Pmax: 0.2}, 100e9: {KminBytes: 1000, KmaxBytes: 2000, Pmax: 0.1}}
	if c.fingerprint() != d.fingerprint() || c.fingerprint() == a.fingerprint() {
		t.Fatal("the fingerprint of per-rate ECN settings is not theirs alone")
	}
}

// failingStore refuses its first checkpoint, as a registry held by another
// process past its wait, or a full disk, does.
type failingStore struct {
	*models.Registry
	failed bool
}

func (f *failingStore) SaveCheckpoint(run string, step int, state []byte) error {
	if !f.failed {
		f.failed = true
		return errors.New("registry reg.db: database locked by another process")
	}
	return f.Registry.SaveCheckpoint(run, step, state)
}

// A checkpoint that could not be saved costs the rounds since the last
// one when Hooks.CheckpointFailed says to go on (the run ended, all its
// work lost), and ends the run without it.
func TestCheckpointFailureGoesOn(t *testing.T) {
	cfg := tinyConfig(AlgoDDQN)
	if _, err := Run(cfg, Hooks{Store: &failingStore{Registry: openReg(t)}, Run: "tiny"}); err == nil {
		t.Fatal("a failed checkpoint without CheckpointFailed: no error")
	}
	told := 0
	reg := openReg(t)
	res, err := Run(cfg, Hooks{Store: &failingStore{Registry: reg}, Run: "tiny",
		CheckpointFailed: func(int, error) bool { told++; return true }})
	if err != nil || res.Episodes != 8 || told != 1 {
		t.Fatalf("with CheckpointFailed: %v, %d episodes, told %d times", err, res.Episodes, told)
	}
	if cp, err := reg.LoadCheckpoint("tiny"); err != nil || cp.Step == 0 {
		t.Fatalf("the next checkpoint after the failed one: %+v, %v", cp, err)
	}
}

// constActor takes one action on every queue at every step.
type constActor struct{ a int }

func (constActor) seed(uint64) {}
func (c constActor) act(obs []env.Observation, _ [][]float32) ([]int, []float32, []float32, error) {
	acts := make([]int, len(obs))
	for i := range acts {
		acts[i] = c.a
	}
	return acts, nil, nil, nil
}
func (constActor) value([][]float32) ([]float32, error) { return nil, nil }

// With PmaxStep the training episodes run a decision at the Pmax a
// switch of that resolution holds: the catalogue's 0.3% point earns what
// its 1% twin earns, as the agent's guard would run it; without it, as
// decided (and the two differ). The model card says which.
func TestTrainPmaxStep(t *testing.T) {
	cat := env.DefaultCatalogue()
	levels := cat.PmaxLevels()
	lo, hi := slices.Index(levels, 0.003), slices.Index(levels, 0.01)
	if lo < 0 || hi < 0 {
		t.Fatalf("catalogue pmax levels %v: want 0.3%% and 1%%", levels)
	}
	sc := tinyScenario("a", 0.6).Config
	reward := func(step float64, l int) float64 {
		c := tinyConfig(AlgoPPO).withDefaults()
		c.PmaxStep = step
		out, err := playEpisode(c, sc, 7, constActor{cat.Absolute(0, 0, l)}, false, false, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return out.rewardSum
	}
	if a, b := reward(0, lo), reward(0, hi); a == b {
		t.Fatalf("as decided, 0.3%% and 1%% earn the same (%g): the test cannot tell", a)
	}
	if a, b := reward(env.PmaxStep, lo), reward(env.PmaxStep, hi); a != b {
		t.Fatalf("at whole percents 0.3%% earned %g, 1%% %g: want the same", a, b)
	}
	c := tinyConfig(AlgoPPO)
	c.PmaxStep = env.PmaxStep
	if h := c.withDefaults().Hyper(); h["pmax_step"] != "0.01" {
		t.Fatalf("hyper pmax_step %q", h["pmax_step"])
	}
	if h := tinyConfig(AlgoPPO).withDefaults().Hyper(); h["pmax_step"] != "" {
		t.Fatalf("as decided, hyper pmax_step %q", h["pmax_step"])
	}
}
