package gym

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
)

// tinyIncast is an 8-host star at 100G with 7-to-1 incasts of 250 KB every
// 100 µs on priority 3 (140 Gb/s offered to one 100G port), for 3 ms.
func tinyIncast() simenv.Config {
	c := simenv.DefaultConfig()
	c.Name = "tiny-incast"
	c.Duration = 3 * simenv.Millisecond
	c.Topology = simenv.StarTopology(8, 100e9, simenv.Microsecond)
	c.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Priority: 3, Fanin: 7, SizeBytes: 250_000,
		Every: 100 * simenv.Microsecond}}
	return c
}

type episode struct {
	obs     [][]env.Observation
	rewards [][]float64
	infos   []StepInfo
}

func runEpisode(t *testing.T, e *Env, seed uint64, act func(step int, obs []env.Observation) []int) episode {
	t.Helper()
	obs, err := e.Reset(seed)
	if err != nil {
		t.Fatal(err)
	}
	ep := episode{obs: [][]env.Observation{obs}}
	for step := 0; ; step++ {
		if step > 1000 {
			t.Fatal("episode does not end")
		}
		var r []float64
		var done bool
		var info StepInfo
		obs, r, done, info, err = e.Step(act(step, obs))
		if err != nil {
			t.Fatal(err)
		}
		ep.obs = append(ep.obs, obs)
		ep.rewards = append(ep.rewards, r)
		ep.infos = append(ep.infos, info)
		if done {
			return ep
		}
	}
}

func TestSimEnvResetStepDeterminism(t *testing.T) {
	cfg := tinyIncast()
	e, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	keys := e.Keys()
	if len(keys) != 8 || keys[0] != (env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}) {
		t.Fatalf("keys = %v, want 8 queues sw0/Ethernet0..7/q3", keys)
	}
	if e.Interval() != 3*simenv.Millisecond/21 {
		t.Fatalf("default interval %v, want Duration/21 = 142.9µs (DefaultIntervalFor)", e.Interval())
	}
	if _, _, _, _, err := e.Step(make([]int, 8)); err == nil || !strings.Contains(err.Error(), "Reset") {
		t.Fatalf("Step before Reset: err = %v", err)
	}
	cat := e.Catalogue()
	// A deterministic "policy" that walks the catalogue.
	walk := func(step int, obs []env.Observation) []int {
		a := make([]int, len(obs))
		for i := range a {
			a[i] = (step*7 + i*13) % cat.Len()
		}
		return a
	}
	ep1 := runEpisode(t, e, 42, walk)
	ep2 := runEpisode(t, e, 42, walk)
	if len(ep1.rewards) < MinDecisions {
		t.Fatalf("episode had %d decisions, want >= %d", len(ep1.rewards), MinDecisions)
	}
	if !reflect.DeepEqual(ep1, ep2) {
		t.Fatal("same seed, same actions: episodes differ")
	}
	if ep3 := runEpisode(t, e, 43, walk); reflect.DeepEqual(ep1.rewards, ep3.rewards) {
		t.Fatal("seeds 42 and 43 gave the same rewards: Reset must reseed the simulation")
	}
	last := ep1.infos[len(ep1.infos)-1]
	if last.Now != cfg.Duration || last.Step != len(ep1.rewards) {
		t.Fatalf("last step at %v step %d, want %v and %d", last.Now, last.Step, cfg.Duration, len(ep1.rewards))
	}
	if last.FlowsFinished == 0 || last.MeanSlowdown < 1 || last.MaxSlowdown < last.MeanSlowdown {
		t.Fatalf("ground truth: finished %d mean slowdown %g max %g", last.FlowsFinished, last.MeanSlowdown, last.MaxSlowdown)
	}
	if mid := ep1.infos[10]; mid.FlowsFinished == 0 || mid.FlowsFinished > last.FlowsFinished || mid.MeanSlowdown != 0 {
		t.Fatalf("mid-episode info: finished %d (last %d), slowdown %g (want 0: filled at the end only)", mid.FlowsFinished, last.FlowsFinished, mid.MeanSlowdown)
	}
	// The receiver's port (host0 = Ethernet0) carries the incast: it must
	// be busy, queue and mark; the settings walked must show in the
	// observations.
	var busy, marked, queued bool
	for s, obs := range ep1.obs {
		for i, ob := range obs {
			if !ob.Valid {
				t.Fatalf("step %d %s: not valid: %s", s, ob.Key, ob.Problem)
			}
			if s > 0 && ob.Current != ep1.infos[s-1].Settings[i] {
				t.Fatalf("step %d %s: observed setting %+v, applied %+v", s, ob.Key, ob.Current, ep1.infos[s-1].Settings[i])
			}
			if ob.Key.Port == "Ethernet0" {
				busy = busy || ob.Metrics.Util > 0.5
				marked = marked || ob.Metrics.MarkFrac > 0
				queued = queued || ob.Metrics.MaxQueueFrac > 0.1
			}
		}
	}
	if !busy || !marked || !queued {
		t.Fatalf("incast port never busy (%v), marked (%v) or queued (%v)", busy, marked, queued)
	}
	for _, r := range ep1.rewards {
		for _, v := range r {
			if math.IsNaN(v) || math.IsInf(v, 0) || v > 1 {
				t.Fatalf("reward %g", v)
			}
		}
	}
	if _, _, _, _, err := e.Step(make([]int, 8)); err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("Step after done: err = %v", err)
	}
}

func TestSimEnvStepSettingsAndErrors(t *testing.T) {
	cfg := tinyIncast()
	cfg.Duration = 1 * simenv.Millisecond
	e, err := New(cfg, Options{Interval: 250 * simenv.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := e.Reset(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 8 || obs[0].Current.KmaxBytes != 1_600_000 || obs[0].RateBps != 100e9 {
		t.Fatalf("reset: %d observations, kmax %d rate %g; want 8, 1600000 (config), 100G", len(obs), obs[0].Current.KmaxBytes, obs[0].RateBps)
	}
	if obs[0].Metrics.IntervalNs != 250_000 {
		t.Fatalf("reset observation covers %d ns, want 250000", obs[0].Metrics.IntervalNs)
	}
	if _, _, _, _, err := e.Step([]int{1}); err == nil || !strings.Contains(err.Error(), "want one per controlled queue (8)") {
		t.Fatalf("short actions: err = %v", err)
	}
	bad := make([]int, 8)
	bad[5] = 10_000
	if _, _, _, _, err := e.Step(bad); err == nil || !strings.Contains(err.Error(), "sw0/Ethernet5/q3") {
		t.Fatalf("bad action: err = %v, want it to name sw0/Ethernet5/q3", err)
	}
	set := make([]env.Setting, 8)
	for i := range set {
		set[i] = env.Setting{KminBytes: 20_000, KmaxBytes: 200_000, Pmax: 0.1}
	}
	set[2].KminBytes = 300_000
	if _, _, _, _, err := e.StepSettings(set); err == nil || !strings.Contains(err.Error(), "Ethernet2") || !strings.Contains(err.Error(), "kmin") {
		t.Fatalf("kmin > kmax: err = %v", err)
	}
	set[2].KminBytes = 20_000
	obs, _, _, info, err := e.StepSettings(set)
	if err != nil {
		t.Fatal(err)
	}
	set[3].HeadroomBytes = obs[3].Current.HeadroomBytes // 0 in set: headroom kept
	set[3].Alpha = obs[3].Current.Alpha                 // and alpha
	if set[3].HeadroomBytes == 0 || obs[3].Current != set[3] || info.Settings[3] != set[3] {
		t.Fatalf("applied %+v, observed %+v", set[3], obs[3].Current)
	}
	if _, err := New(cfg, Options{Switches: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("unknown switch: err = %v", err)
	}
	if _, err := New(cfg, Options{Priorities: []int{8}}); err == nil || !strings.Contains(err.Error(), "priority 8") {
		t.Fatalf("bad priority: err = %v", err)
	}
	if _, err := New(cfg, Options{Interval: cfg.Duration}); err == nil || !strings.Contains(err.Error(), "below") {
		t.Fatalf("interval = duration: err = %v", err)
	}
	w := env.DefaultRewardWeights()
	w.Drop = math.NaN()
	if _, err := New(cfg, Options{Reward: &w}); err == nil || !strings.Contains(err.Error(), "drop") {
		t.Fatalf("bad weights: err = %v", err)
	}
}

// The thresholds matter: on the incast port, a low Kmax marks more and
// queues less than a very high one, and the Observer sees it.
func TestSimEnvThresholdsShowInObservations(t *testing.T) {
	cfg := tinyIncast()
	e, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat := e.Catalogue()
	low, high := cat.Absolute(0, 0, 1), cat.Absolute(18, 0, 0) // kmax 100 KB pmax 1% vs kmax 10 MB pmax 0.3%
	measure := func(a int) (mark, queue float64) {
		ep := runEpisode(t, e, 3, func(int, []env.Observation) []int {
			acts := make([]int, len(e.Keys()))
			for i := range acts {
				acts[i] = a
			}
			return acts
		})
		n := 0
		for _, obs := range ep.obs[2:] {
			mark += obs[0].Metrics.MarkFrac
			queue += obs[0].Metrics.AvgQueueFrac
			n++
		}
		return mark / float64(n), queue / float64(n)
	}
	mLow, qLow := measure(low)
	mHigh, qHigh := measure(high)
	t.Logf("kmax 100KB: mark %.3f avg queue %.3f ref; kmax 10MB: mark %.3f avg queue %.3f ref", mLow, qLow, mHigh, qHigh)
	if !(mLow > 0.1) || mHigh != 0 || !(qLow < 0.6*qHigh) {
		t.Fatalf("kmax 100KB: mark %.3f queue %.3f; kmax 10MB: mark %.3f queue %.3f; want marking only at the low kmax and a queue under 60%% of the high kmax's",
			mLow, qLow, mHigh, qHigh)
	}
}

// On a leaf-spine the leaves' uplinks and the spine's ports face switches
// and the leaves' host ports face hosts; HidePeer makes every peer unknown.
func TestSimEnvPeers(t *testing.T) {
	cfg := tinyIncast()
	cfg.Topology = simenv.LeafSpineTopology(2, 1, 2, 100e9, 100e9, simenv.Microsecond)
	cfg.Workloads[0].Fanin = 3
	zero := 0.0
	w := env.DefaultRewardWeights()
	w.FabricThroughput = &zero
	var rewards [2][]float64
	for h, hide := range []bool{false, true} {
		e, err := New(cfg, Options{HidePeer: hide, Reward: &w})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Reset(1); err != nil {
			t.Fatal(err)
		}
		obs, r, _, _, err := e.Step(make([]int, len(e.Keys())))
		if err != nil {
			t.Fatal(err)
		}
		rewards[h] = r
		counts := map[env.Peer]int{}
		busyFabric := false
		for i, o := range obs {
			if e.peers[i] == env.PeerSwitch && o.Metrics.Util > 0 {
				busyFabric = true
			}
			counts[o.Peer]++
			want := env.PeerHost
			if strings.HasPrefix(o.Key.Target, "spine") || o.Key.Port == "Ethernet2" {
				want = env.PeerSwitch
			}
			if hide {
				want = env.PeerUnknown
			}
			if o.Peer != want {
				t.Errorf("hide=%v: %s faces %q, want %q", hide, o.Key, o.Peer, want)
			}
		}
		t.Logf("hide=%v: %v", hide, counts)
		if !busyFabric {
			t.Fatal("no fabric queue carried traffic in the step: the reward check below would prove nothing")
		}
	}
	// Hiding the peer from the policy does not change the reward, which
	// uses the true peer (no throughput paid on the fabric ports here).
	if !reflect.DeepEqual(rewards[0], rewards[1]) {
		t.Fatalf("rewards with the peer shown %v and hidden %v differ", rewards[0], rewards[1])
	}
}

// With PmaxStep, a setting runs at the Pmax a switch of that resolution
// holds (0.3% as 1%, 2.4% as 2%), and the observation says what ran;
// without it, as decided. A step outside [0, 0.1] is refused.
func TestSimEnvPmaxStep(t *testing.T) {
	cfg := tinyIncast()
	cfg.Duration = 1 * simenv.Millisecond
	for _, c := range []struct {
		step      float64
		want0     float64
		want1     float64
		wantError string
	}{{0, 0.003, 0.024, ""}, {env.PmaxStep, 0.01, 0.02, ""}, {0.2, 0, 0, "pmax step 0.2"}} {
		e, err := New(cfg, Options{Interval: 250 * simenv.Microsecond, PmaxStep: c.step})
		if c.wantError != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantError) {
				t.Fatalf("step %g: err = %v", c.step, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		obs, err := e.Reset(1)
		if err != nil {
			t.Fatal(err)
		}
		set := make([]env.Setting, len(obs))
		for i := range set {
			set[i] = env.Setting{KminBytes: 20_000, KmaxBytes: 200_000, Pmax: 0.003}
		}
		set[1].Pmax = 0.024
		obs, _, _, info, err := e.StepSettings(set)
		if err != nil {
			t.Fatal(err)
		}
		if obs[0].Current.Pmax != c.want0 || obs[1].Current.Pmax != c.want1 || info.Settings[0].Pmax != c.want0 {
			t.Errorf("step %g: ran pmax %g and %g (info %g), want %g and %g", c.step, obs[0].Current.Pmax, obs[1].Current.Pmax, info.Settings[0].Pmax, c.want0, c.want1)
		}
	}
}
