package policy

import (
	"math"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/gym"
)

// Presets and the adaptive baseline drive the simulator through
// gym.Env.StepSettings, reading only observations.
func TestPoliciesDriveSimEnv(t *testing.T) {
	cfg := simenv.DefaultConfig()
	cfg.Name = "tiny-incast"
	cfg.Duration = 4 * simenv.Millisecond
	cfg.Topology = simenv.StarTopology(8, 100e9, simenv.Microsecond)
	cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Priority: 3, Fanin: 7, SizeBytes: 250_000,
		Every: 100 * simenv.Microsecond}}
	e, err := gym.New(cfg, gym.Options{Interval: 100 * simenv.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	run := func(spec string) (mean float64, ds [][]Decision) {
		p, err := Lookup(spec)
		if err != nil {
			t.Fatal(err)
		}
		obs, err := e.Reset(5)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for done := false; !done; {
			d := p.Decide(obs)
			ds = append(ds, d)
			set := make([]env.Setting, len(d))
			for i := range d {
				set[i] = d[i].Setting
			}
			var r []float64
			obs, r, done, _, err = e.StepSettings(set)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range r {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("%s: reward %g", spec, v)
				}
				mean += v
				n++
			}
		}
		return mean / float64(n), ds
	}
	hpcc, _ := Preset("hpcc")
	mStatic, ds := run("static:hpcc")
	for _, d := range ds {
		if d[0].Setting.KmaxBytes != hpcc.Setting(100e9).KmaxBytes || d[0].Reason != "preset hpcc" {
			t.Fatalf("static:hpcc decided %+v", d[0])
		}
	}
	mAdaptive, da := run("adaptive")
	moves := 0
	for i := 1; i < len(da); i++ {
		if da[i][0].Setting != da[i-1][0].Setting {
			moves++
		}
	}
	// it probes (a probe is then measured over 11 busy intervals before
	// it is given up, and the incast leaves the port idle in between)
	if moves < 1 {
		t.Fatalf("adaptive changed the incast port's setting %d times in %d intervals, want it to search", moves, len(da))
	}
	t.Logf("mean reward per queue-interval: static:hpcc %.4f, adaptive %.4f (port 0: %d moves in %d intervals)", mStatic, mAdaptive, moves, len(da))
}

// builtinRunObs are the observations of an incast run at 25G and at
// 100G decided by the built-in model.
func builtinRunObs(t *testing.T) []env.Observation {
	t.Helper()
	var obs []env.Observation
	for _, rate := range []float64{25e9, 100e9} {
		cfg := simenv.DefaultConfig()
		cfg.Name = "pref-incast"
		cfg.Duration = 3 * simenv.Millisecond
		cfg.Topology = simenv.StarTopology(8, rate, simenv.Microsecond)
		cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Priority: 3, Fanin: 5, SizeBytes: 200_000,
			Every: 150 * simenv.Microsecond}}
		e, err := gym.New(cfg, gym.Options{Interval: 200 * simenv.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		o, err := e.Reset(3)
		if err != nil {
			t.Fatal(err)
		}
		base, err := Lookup("builtin")
		if err != nil {
			t.Fatal(err)
		}
		for done := false; !done; {
			obs = append(obs, o...)
			d := base.Decide(o)
			set := make([]env.Setting, len(d))
			for i := range d {
				set[i] = d[i].Setting
			}
			if o, _, done, _, err = e.StepSettings(set); err != nil {
				t.Fatal(err)
			}
		}
	}
	return obs
}

// The tie-break preference over the base model's scores moves each
// decision monotonically: on the same observations, a lower preference
// never picks an earlier-marking setting, and the ends differ.
func TestBuiltinTieBreakMonotone(t *testing.T) {
	obs := builtinRunObs(t)
	_, base := baseModel(t)
	prefs := []float64{-1, -0.5, 0, 0.5, 1}
	var all [][]Decision
	for _, p := range prefs {
		l, err := base.WithPreference("builtin", p)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, l.Decide(obs))
	}
	moved := 0
	for i := range obs {
		for k := 1; k < len(prefs); k++ {
			if c := compareLooseness(all[k][i].Setting, all[k-1][i].Setting); c > 0 {
				t.Fatalf("queue-interval %d: prefer=%g chose %+v, later-marking than prefer=%g's %+v", i, prefs[k], all[k][i].Setting,
					prefs[k-1], all[k-1][i].Setting)
			}
		}
		if all[0][i].Setting != all[len(prefs)-1][i].Setting {
			moved++
		}
	}
	if moved == 0 {
		t.Fatalf("no decision of %d differs between prefer=-1 and prefer=1", len(obs))
	}
	t.Logf("%d of %d decisions differ between prefer=-1 and prefer=1", moved, len(obs))
}

// builtin:prefer=P (P != 0) is the embedded preference model, which reads
// P as an input: on the same observations, a higher preference marks
// earlier on the whole (the mean log Kmax of its decisions falls), though
// not decision by decision.
func TestBuiltinPreferenceModel(t *testing.T) {
	obs := builtinRunObs(t)
	prev := math.Inf(1)
	for _, s := range []string{"builtin:prefer=-1", "builtin:prefer=-0.5", "builtin:prefer=0.5", "builtin:prefer=1"} {
		p, err := Lookup(s)
		if err != nil {
			t.Fatal(err)
		}
		if l, ok := p.(*Learned); !ok || !l.Conditioned() {
			t.Fatalf("%s is not the preference model", s)
		}
		var sum float64
		n := 0
		for _, d := range p.Decide(obs) {
			if d.Setting.KmaxBytes > 0 && d.Action != env.ActionHold {
				sum += math.Log2(float64(d.Setting.KmaxBytes))
				n++
			}
		}
		if n == 0 {
			t.Fatalf("%s decided nothing", s)
		}
		mean := sum / float64(n)
		t.Logf("%s: mean log2 Kmax %.2f over %d decisions", s, mean, n)
		if !(mean < prev) {
			t.Fatalf("%s: mean log2 Kmax %.2f, not below the lower preference's %.2f", s, mean, prev)
		}
		prev = mean
	}
	if p, err := Lookup("builtin:prefer=0"); err != nil || p.(*Learned).Conditioned() {
		t.Fatalf("builtin:prefer=0 is not the base model (%v)", err)
	}
}
