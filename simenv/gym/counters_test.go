package gym

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/export"
)

// shadow replays a Env episode on its own simulator (same config and
// seed, same knob changes at the same times) and rebuilds observations and
// rewards from nothing but what the switches export: FromSim of each
// switch's telemetry, a fresh Observer, and RewardAt with the peer the port
// is cabled to. It never reads the Env.
type shadow struct {
	t        *testing.T
	cfg      simenv.Config
	sim      *simenv.Sim
	obs      *env.Observer
	w        env.RewardWeights
	hide     bool
	interval simenv.Time
	prios    []int
	peers    []env.Peer // true peer per queue of the last observation
	refs     []simenv.QueueRef
}

func newShadow(t *testing.T, cfg simenv.Config, seed uint64, interval simenv.Time, ocfg env.ObserverConfig, w env.RewardWeights, hide bool) *shadow {
	t.Helper()
	cfg.Seed = seed
	sim, err := simenv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prios := sim.LosslessPriorities()
	sort.Ints(prios)
	return &shadow{t: t, cfg: cfg, sim: sim, obs: env.NewObserver(ocfg), w: w, hide: hide, interval: interval, prios: prios}
}

// observe reads every switch once and returns observations and rewards.
func (s *shadow) observe() ([]env.Observation, []float64) {
	var out []env.Observation
	var rewards []float64
	s.peers, s.refs = s.peers[:0], s.refs[:0]
	for _, sw := range s.sim.Switches() {
		cabled := make(map[string]simenv.PortInfo, len(sw.Ports))
		for _, p := range sw.Ports {
			cabled[p.Name] = p
		}
		snap := export.Snapshot(s.sim.Telemetry(sw.Index), sw, s.prios)
		var peers []env.Peer
		for i := range snap.Queues {
			q := &snap.Queues[i]
			p, ok := cabled[q.Key.Port]
			if !ok {
				s.t.Fatalf("snapshot names port %s that %s does not have", q.Key.Port, sw.Name)
			}
			peer := env.PeerHost
			if p.PeerSwitch {
				peer = env.PeerSwitch
			}
			peers = append(peers, peer)
			s.refs = append(s.refs, simenv.QueueRef{Switch: sw.Index, Port: p.Index, Queue: q.Key.Queue})
			if s.hide {
				q.Peer = env.PeerUnknown
			}
		}
		obs := s.obs.Observe(snap)
		for i := range obs {
			rewards = append(rewards, env.RewardAt(obs[i].Metrics, peers[i], s.w))
		}
		out = append(out, obs...)
		s.peers = append(s.peers, peers...)
	}
	return out, rewards
}

// advance runs one interval (capped at Duration) and observes.
func (s *shadow) advance() ([]env.Observation, []float64, bool) {
	next := min(s.sim.Now()+s.interval, s.cfg.Duration)
	if next > s.sim.Now() {
		s.sim.RunUntil(next)
	}
	obs, r := s.observe()
	return obs, r, s.sim.Now() >= s.cfg.Duration || s.sim.Idle()
}

// apply sets every queue to settings (headroom 0: keep the current one).
func (s *shadow) apply(settings []env.Setting, last []env.Observation) {
	for i, st := range settings {
		if st.HeadroomBytes == 0 {
			settings[i].HeadroomBytes = last[i].Current.HeadroomBytes
		}
		if st.Alpha == 0 {
			settings[i].Alpha = last[i].Current.Alpha
		}
		ref := s.refs[i]
		if err := s.sim.SetECN(ref, simenv.ECN{KminBytes: st.KminBytes, KmaxBytes: st.KmaxBytes, Pmax: st.Pmax}); err != nil {
			s.t.Fatal(err)
		}
		if h := settings[i].HeadroomBytes; h != last[i].Current.HeadroomBytes {
			if err := s.sim.SetHeadroom(simenv.PGRef{Switch: ref.Switch, Port: ref.Port, PG: ref.Queue}, h); err != nil {
				s.t.Fatal(err)
			}
		}
		if a := settings[i].Alpha; a != last[i].Current.Alpha {
			if err := s.sim.SetAlpha(simenv.PGRef{Switch: ref.Switch, Port: ref.Port, PG: ref.Queue}, a); err != nil {
				s.t.Fatal(err)
			}
		}
	}
}

func sameObservations(t *testing.T, step int, got, want []env.Observation) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("step %d: Env gave %d observations, counters give %d", step, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			g, w := got[i], want[i]
			for f := range w.Features {
				if f < len(g.Features) && g.Features[f] != w.Features[f] {
					t.Errorf("step %d %s: feature %d (%s) = %v, from counters %v", step, w.Key, f, env.FeatureNames()[f], g.Features[f], w.Features[f])
				}
			}
			g.Features, w.Features = nil, nil
			t.Fatalf("step %d %s: Env observation differs from the one rebuilt from counters\n got %+v\nwant %+v", step, want[i].Key, g, w)
		}
	}
}

func sameRewards(t *testing.T, step int, keys []env.QueueKey, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("step %d: Env gave %d rewards, counters give %d", step, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] { // same code, same order: bit-exact
			t.Fatalf("step %d %s: Env reward %.17g, from counters %.17g", step, keys[i], got[i], want[i])
		}
	}
}

// checkRanges checks the documented ranges of obs-v3 (observation.go).
func checkRanges(t *testing.T, step int, obs []env.Observation) {
	t.Helper()
	for _, ob := range obs {
		if len(ob.Features) != env.NumFeatures {
			t.Fatalf("step %d %s: %d features, want %d", step, ob.Key, len(ob.Features), env.NumFeatures)
		}
		for i, v := range ob.Features {
			lo, hi := float32(0), float32(1)
			switch i {
			case env.FeatKmin, env.FeatKmax, env.FeatKmaxOverXoff:
				lo = -1
			}
			f := float64(v)
			if math.IsNaN(f) || math.IsInf(f, 0) || v < lo || v > hi {
				t.Fatalf("step %d %s: feature %d (%s) = %g outside [%g, %g]", step, ob.Key, i, env.FeatureNames()[i], v, lo, hi)
			}
			switch i {
			case env.FeatXoffKnown, env.FeatValid, env.FeatFabric, env.FeatPeerKnown:
				if v != 0 && v != 1 {
					t.Fatalf("step %d %s: flag %s = %g, want 0 or 1", step, ob.Key, env.FeatureNames()[i], v)
				}
			}
		}
		m := ob.Metrics
		for name, v := range map[string]float64{"util": m.Util, "mark": m.MarkFrac, "avg_queue": m.AvgQueueFrac, "max_queue": m.MaxQueueFrac,
			"pause_rx": m.PauseRxFrac, "pause_tx": m.PauseTxFrac, "drop": m.DropFrac, "incast": m.Incast, "avg_delay": m.AvgDelayNs, "max_delay": m.MaxDelayNs} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("step %d %s: metric %s = %g, want finite and >= 0", step, ob.Key, name, v)
			}
		}
		for name, v := range map[string]float64{"mark": m.MarkFrac, "pause_rx": m.PauseRxFrac, "pause_tx": m.PauseTxFrac, "drop": m.DropFrac, "incast": m.Incast} {
			if v > 1 {
				t.Fatalf("step %d %s: metric %s = %g, want <= 1", step, ob.Key, name, v)
			}
		}
		if !ob.Valid || m.IntervalNs <= 0 {
			t.Fatalf("step %d %s: interval not measured (%d ns): %s", step, ob.Key, m.IntervalNs, ob.Problem)
		}
	}
}

// TestSimEnvRewardsFromCountersOnly makes "observations and rewards come from
// switch counters only" a checked property: on every step of an episode
// whose actions move Kmin, Kmax, Pmax and headroom, Env's observations
// and rewards equal, bit for bit, those rebuilt from the switches' exported
// counters alone by a fresh Observer on a simulator run in lockstep.
func TestSimEnvRewardsFromCountersOnly(t *testing.T) {
	cfg := simenv.DefaultConfig()
	cfg.Name = "counters-only"
	cfg.Duration = 3 * simenv.Millisecond
	// 2 leaves of 3 hosts at 100G, one 50G uplink each: the incast crosses
	// the fabric, so host and fabric queues at two rates both carry load.
	cfg.Topology = simenv.LeafSpineTopology(2, 1, 3, 100e9, 50e9, simenv.Microsecond)
	cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Priority: 3, Fanin: 5, SizeBytes: 250_000,
		Every: 100 * simenv.Microsecond}}
	cfg.BufferBytes = 2_000_000 // small enough for PFC pauses, so the pause terms count
	// Weights and normalisation away from the defaults, so the check sees
	// whether the env uses the ones it was given.
	fabric := 0.3
	w := env.DefaultRewardWeights()
	w.FabricThroughput = &fabric
	w.Delay = 0.07
	ocfg := env.ObserverConfig{RefRTT: 15 * time.Microsecond, PauseFrameTime: 8 * time.Microsecond}
	const seed = 5

	for _, hide := range []bool{false, true} {
		t.Run(fmt.Sprintf("hidepeer=%v", hide), func(t *testing.T) {
			// 25 decisions of 120 µs (the default would be 150 µs: 20).
			e, err := New(cfg, Options{Interval: 120 * simenv.Microsecond, Observer: ocfg, Reward: &w, HidePeer: hide})
			if err != nil {
				t.Fatal(err)
			}
			cat := e.Catalogue()
			keys := e.Keys()
			sh := newShadow(t, cfg, seed, e.Interval(), ocfg, w, hide)

			got, err := e.Reset(seed)
			if err != nil {
				t.Fatal(err)
			}
			sh.observe() // first sample at time 0, as the env takes it
			// Reset returns no rewards.
			want, _, wantDone := sh.advance()
			sameObservations(t, 0, got, want)
			checkRanges(t, 0, got)
			for i, ob := range got {
				if ob.Key != keys[i] {
					t.Fatalf("observation %d is %s, Keys says %s", i, ob.Key, keys[i])
				}
				for f := env.IntervalFeatures; f < env.HistoryLen*env.IntervalFeatures; f++ {
					if ob.Features[f] != 0 {
						t.Fatalf("reset %s: feature %s = %g before any older interval was measured", ob.Key, env.FeatureNames()[f], ob.Features[f])
					}
				}
			}
			if wantDone {
				t.Fatal("episode over after Reset")
			}

			var changed, fabricPaid, pfc, marks int
			prev := got
			for step := 1; ; step++ {
				if step > 100 {
					t.Fatal("episode does not end")
				}
				var settings []env.Setting
				var info StepInfo
				var gotR, wantR []float64
				var done bool
				if step == 9 { // direct settings, off the grid, with a headroom change on some PGs
					settings = make([]env.Setting, len(keys))
					for i := range settings {
						settings[i] = env.Setting{KminBytes: 30_000 + int64(i)*1000, KmaxBytes: 300_000, Pmax: 0.05}
						if i%3 == 0 {
							settings[i].HeadroomBytes = want[i].Current.HeadroomBytes + 8192
						}
					}
					got, gotR, done, info, err = e.StepSettings(settings)
					settings = append([]env.Setting(nil), settings...)
				} else {
					actions := make([]int, len(keys))
					for i := range actions {
						switch step % 4 {
						case 0: // hold: history moves while the setting stays
						case 1: // relative moves
							actions[i] = 1 + (step+i)%(env.NumRelativeActions-1)
						case 2: // absolute grid points
							actions[i] = env.NumRelativeActions + (step*5+i*11)%(cat.Len()-env.NumRelativeActions)
						case 3: // half hold, half absolute
							if i%2 == 1 {
								actions[i] = env.NumRelativeActions + (step*3+i*7)%(cat.Len()-env.NumRelativeActions)
							}
						}
					}
					settings = make([]env.Setting, len(keys))
					for i, a := range actions { // from the shadow's own observations
						settings[i] = cat.SettingFor(a, want[i].RateBps, want[i].Current, want[i].MinHeadroomBytes)
					}
					got, gotR, done, info, err = e.Step(actions)
				}
				if err != nil {
					t.Fatal(err)
				}
				sh.apply(settings, want)
				want, wantR, wantDone = sh.advance()

				if !reflect.DeepEqual(info.Settings, settings) {
					t.Fatalf("step %d: env applied %+v, expected %+v", step, info.Settings, settings)
				}
				sameObservations(t, step, got, want)
				sameRewards(t, step, keys, gotR, wantR)
				checkRanges(t, step, got)
				if done != wantDone {
					t.Fatalf("step %d: done %v, want %v at %v", step, done, wantDone, sh.sim.Now())
				}
				// History: block b now is block b-1 of the previous step.
				for i, ob := range got {
					for b := 1; b < env.HistoryLen; b++ {
						cur := ob.Features[b*env.IntervalFeatures : (b+1)*env.IntervalFeatures]
						old := prev[i].Features[(b-1)*env.IntervalFeatures : b*env.IntervalFeatures]
						if !reflect.DeepEqual(cur, old) {
							t.Fatalf("step %d %s: history block %d %v, previous step's block %d %v", step, ob.Key, b, cur, b-1, old)
						}
					}
					if ob.Current != prev[i].Current {
						changed++
					}
					if sh.peers[i] == env.PeerSwitch && ob.Metrics.Util > 0 {
						fabricPaid++
					}
					if ob.Metrics.PauseRxFrac > 0 || ob.Metrics.PauseTxFrac > 0 {
						pfc++
					}
					if ob.Metrics.MarkFrac > 0 {
						marks++
					}
				}
				prev = got
				if done {
					t.Logf("%d steps, %d queues: %d setting changes, %d busy fabric intervals, %d with PFC, %d with marks",
						step, len(keys), changed, fabricPaid, pfc, marks)
					if step < MinDecisions || changed < 3*len(keys) || fabricPaid == 0 || pfc == 0 || marks == 0 {
						t.Fatal("episode too weak for the check: too few steps, setting changes, busy fabric queues, pauses or marks")
					}
					return
				}
			}
		})
	}
}
