package gym

import (
	"math"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
)

// leafSpineSmallIncast is two leaves of three hosts under one spine, with
// 4-to-1 incasts of 60 KB flows (the small class) every 100 µs.
func leafSpineSmallIncast() simenv.Config {
	cfg := tinyIncast()
	cfg.Topology = simenv.LeafSpineTopology(2, 1, 3, 100e9, 100e9, simenv.Microsecond)
	cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Priority: 3, Fanin: 4, SizeBytes: 60_000,
		Every: 100 * simenv.Microsecond}}
	return cfg
}

// TestFlowPathAndTruthReward: on a leaf-spine a flow's path is its
// source leaf's uplink, the spine's port to the destination leaf and that
// leaf's host port; the ground-truth terms charge exactly the queues the
// finished flows crossed, by the mean log2 slowdown of those flows, and
// nothing else.
func TestFlowPathAndTruthReward(t *testing.T) {
	cfg := leafSpineSmallIncast()
	base := env.DefaultRewardWeights()
	truth := base
	truth.FlowSmall = 0.5
	run := func(w env.RewardWeights) (*Env, [][]float64) {
		e, err := New(cfg, Options{Reward: &w})
		if err != nil {
			t.Fatal(err)
		}
		ep := runEpisode(t, e, 3, func(int, []env.Observation) []int { return make([]int, len(e.Keys())) })
		return e, ep.rewards
	}
	e0, r0 := run(base)
	e1, r1 := run(truth)
	sim := e1.Sim()
	flows, _ := sim.FinishedFlows(0)
	if len(flows) == 0 {
		t.Fatal("no flow finished")
	}
	// Every path ends at the destination's host port, crosses the spine
	// when source and destination hang off different leaves.
	sws := sim.Switches()
	for _, f := range flows[:min(len(flows), 20)] {
		p := sim.FlowPath(nil, f.ID)
		if len(p) != 1 && len(p) != 3 {
			t.Fatalf("flow %d %d→%d: path %v, want 1 or 3 hops", f.ID, f.Src, f.Dst, p)
		}
		last := sws[p[len(p)-1].Switch].Ports[p[len(p)-1].Port]
		if last.PeerSwitch || last.Peer != cfg.Topology.Nodes[f.Dst].Name || p[0].Queue != 3 {
			t.Fatalf("flow %d to %s: last hop %+v", f.ID, cfg.Topology.Nodes[f.Dst].Name, last)
		}
	}
	if p := sim.FlowPath(nil, -1); len(p) != 0 {
		t.Fatalf("no flow: path %v", p)
	}
	if _, n := e0.Sim().FinishedFlows(0); n != len(flows) {
		t.Fatalf("the truth terms changed the run: %d vs %d flows finished", n, len(flows))
	}
	charged := 0
	for s := range r0 {
		for q := range r0[s] {
			d := r0[s][q] - r1[s][q]
			if d < -1e-12 || math.IsNaN(d) {
				t.Fatalf("step %d queue %s: truth raised the reward by %g", s, e1.Keys()[q], -d)
			}
			if d > 0 {
				charged++
				if d > truth.FlowSmall*math.Log2(1e4) {
					t.Fatalf("step %d: charge %g is more than a slowdown of 1e4", s, d)
				}
			}
		}
	}
	if charged == 0 {
		t.Fatal("no queue was charged for the flows that crossed it")
	}
	bad := truth
	bad.FlowLarge = -1
	if _, err := New(cfg, Options{Reward: &bad}); err == nil {
		t.Fatal("negative flow_large accepted")
	}
}

// TestFlowSmallTailReward: the tail term charges a queue the largest log2
// slowdown of the small flows that finished through it, so, weight for
// weight, never less than the mean term and more wherever those flows'
// slowdowns differ; it charges the same queues and steps.
func TestFlowSmallTailReward(t *testing.T) {
	cfg := leafSpineSmallIncast()
	run := func(w env.RewardWeights) [][]float64 {
		e, err := New(cfg, Options{Reward: &w})
		if err != nil {
			t.Fatal(err)
		}
		return runEpisode(t, e, 3, func(int, []env.Observation) []int { return make([]int, len(e.Keys())) }).rewards
	}
	base := env.DefaultRewardWeights()
	mean, tail := base, base
	mean.FlowSmall, tail.FlowSmallTail = 0.5, 0.5
	r0, rm, rt := run(base), run(mean), run(tail)
	more := 0
	for s := range r0 {
		for q := range r0[s] {
			dm, dt := r0[s][q]-rm[s][q], r0[s][q]-rt[s][q]
			if (dm > 0) != (dt > 0) {
				t.Fatalf("step %d queue %d: mean charge %g, tail charge %g: not the same queues", s, q, dm, dt)
			}
			if dt < dm-1e-9 || dt > tail.FlowSmallTail*math.Log2(1e4) {
				t.Fatalf("step %d queue %d: tail charge %g, mean charge %g", s, q, dt, dm)
			}
			if dt > dm+1e-9 {
				more++
			}
		}
	}
	if more == 0 {
		t.Fatal("the tail term never charged more than the mean: it is not the largest slowdown")
	}
	bad := base
	bad.FlowSmallTail = math.Inf(1)
	if _, err := New(cfg, Options{Reward: &bad}); err == nil || !strings.Contains(err.Error(), "flow_small_tail") {
		t.Fatalf("infinite flow_small_tail: err = %v", err)
	}
}

// TestPFCActionsReachTheSimulator: act-v3's headroom and alpha actions
// change the PG, are seen in the next observation and never put headroom
// below the floor.
func TestPFCActionsReachTheSimulator(t *testing.T) {
	e, err := New(tinyIncast(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := e.Reset(1)
	if err != nil {
		t.Fatal(err)
	}
	cat := e.Catalogue()
	acts := make([]int, len(obs))
	pfcs := make([]int, len(obs))
	for i := range acts {
		pfcs[i] = 1 + i%(cat.PFCLen()-1) // every PFC action somewhere, ECN held
		acts[i] = cat.Joint(env.ActionHold, pfcs[i])
	}
	next, _, _, info, err := e.Step(acts)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range next {
		h, a, _ := cat.PFC(pfcs[i])
		fl := obs[i].MinHeadroomBytes
		if fl <= 0 {
			t.Fatalf("%s: floor unknown", o.Key)
		}
		switch {
		case h >= 0:
			want := int64(math.Ceil(float64(fl) * env.HeadroomFactors[h]))
			if o.Current.HeadroomBytes != want || o.Current.HeadroomBytes < fl {
				t.Fatalf("%s: headroom %d after %s, want %d (floor %d)", o.Key, o.Current.HeadroomBytes, cat.Describe(acts[i]), want, fl)
			}
		case a >= 0:
			if o.Current.Alpha != env.Alphas[a] || info.Settings[i].Alpha != env.Alphas[a] {
				t.Fatalf("%s: alpha %g after %s", o.Key, o.Current.Alpha, cat.Describe(acts[i]))
			}
		}
		if o.Current.KmaxBytes != obs[i].Current.KmaxBytes {
			t.Fatalf("%s: a PFC action changed kmax", o.Key)
		}
		if o.Features[env.FeatAlphaKnown] != 1 || o.Features[env.FeatHeadroomKnown] != 1 {
			t.Fatalf("%s: PFC state not in the features", o.Key)
		}
	}
}

// TestFlowLargeProgressReward: the progress term charges large flows
// while they are late, not only when they finish: charges are never
// negative, come in intervals in which no large flow finished, and a flow
// still running at the episode's end has been charged its lateness then
// (its time so far over its standalone FCT), which FlowLarge never
// charges it.
func TestFlowLargeProgressReward(t *testing.T) {
	cfg := tinyIncast()
	cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Priority: 3, Fanin: 7, SizeBytes: 2_000_000,
		Every: simenv.Millisecond}}
	base := env.DefaultRewardWeights()
	prog := base
	prog.FlowLargeProgress = 0.5
	run := func(w env.RewardWeights) (*Env, episode) {
		e, err := New(cfg, Options{Reward: &w})
		if err != nil {
			t.Fatal(err)
		}
		return e, runEpisode(t, e, 2, func(int, []env.Observation) []int { return make([]int, len(e.Keys())) })
	}
	_, ep0 := run(base)
	e1, ep1 := run(prog)
	sim := e1.Sim()
	finished, _ := sim.FinishedFlows(0)
	finishedIn := func(from, to simenv.Time) bool {
		for _, f := range finished {
			if f.SizeBytes >= truthLargeBytes && f.Finish > from && f.Finish <= to {
				return true
			}
		}
		return false
	}
	iv := e1.Interval()
	whileSlow := 0
	for s := range ep0.rewards {
		end := min(simenv.Time(s+2)*iv, cfg.Duration) // Reset ran the first interval
		for q := range ep0.rewards[s] {
			d := ep0.rewards[s][q] - ep1.rewards[s][q]
			if d < -1e-12 || math.IsNaN(d) {
				t.Fatalf("step %d queue %s: the progress term raised the reward by %g", s, e1.Keys()[q], -d)
			}
			if d > 1e-12 && !finishedIn(end-iv, end) {
				whileSlow++
			}
		}
	}
	if whileSlow == 0 {
		t.Fatal("no queue was charged in an interval in which no large flow finished")
	}
	now := sim.Now()
	running := 0
	for _, a := range sim.ActiveFlows(nil) {
		if a.SizeBytes < truthLargeBytes || now-a.Start <= a.Standalone {
			continue
		}
		running++
		want := math.Log2(float64(now-a.Start) / float64(a.Standalone))
		if got := e1.late[a.ID]; math.Abs(got-want) > 1e-9 || got <= 0 {
			t.Fatalf("flow %d running at the end, %v in, standalone %v: charged lateness %g, want %g",
				a.ID, now-a.Start, a.Standalone, got, want)
		}
	}
	if running == 0 {
		t.Fatal("no large flow was late and still running at the end: the test does not test censoring")
	}
	for _, f := range finished {
		if _, ok := e1.late[f.ID]; ok {
			t.Fatalf("flow %d finished but is still tracked", f.ID)
		}
	}
	bad := prog
	bad.FlowLargeProgress = math.NaN()
	if _, err := New(cfg, Options{Reward: &bad}); err == nil || !strings.Contains(err.Error(), "flow_large_progress") {
		t.Fatalf("NaN flow_large_progress: err = %v", err)
	}
}
