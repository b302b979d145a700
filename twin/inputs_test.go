package twin

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
)

// starRecord is a 4-port star switch whose host ports run s at rate.
func starRecord(name string, rate float64, s env.Setting) env.FabricRecord {
	r := env.FabricRecord{Target: name, BufferBytes: 16_000_000}
	for i := 0; i < 4; i++ {
		r.Ports = append(r.Ports, env.FabricPort{Name: fmt.Sprintf("Ethernet%d", i), RateBps: rate, Peer: env.PeerHost, Queue: 3, Setting: s})
	}
	return r
}

// What BuildFabric takes from a stored record, the scenario it writes
// loads: an alpha above the simulator's largest (SONiC's dynamic_th 7 and
// 8) and a marking probability the switch does not export became
// "alpha: 128" and "pmax: 0", which the parser refuses, and every
// candidate of the fit failed. Ports without a speed are refused, saying
// so.
func TestTwinScenarioLoadsWhatBuildFabricTakes(t *testing.T) {
	ok := env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2, Alpha: 0.125}
	alpha128, pmax0 := ok, ok
	alpha128.Alpha = 128
	pmax0.Pmax = 0
	for _, c := range []struct {
		name string
		rec  env.FabricRecord
		want func(simenv.Config) bool
		note string
	}{
		{"baseline", starRecord("leaf0", 100e9, ok), func(c simenv.Config) bool { return c.PFC.Alpha == 0.125 && c.ECN.Pmax == 0.2 }, ""},
		{"alpha 128", starRecord("leaf0", 100e9, alpha128), func(c simenv.Config) bool { return c.PFC.Alpha == simenv.MaxAlpha }, "simulated as"},
		{"pmax not reported", starRecord("leaf0", 100e9, pmax0), func(c simenv.Config) bool { return c.ECN.Pmax > 0 && c.ECN.KmaxBytes == 400_000 }, "no marking probability"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := BuildFabric([]env.FabricRecord{c.rec})
			if err != nil {
				t.Fatal(err)
			}
			s := Scenario{Name: "t", Seed: 1, Duration: simenv.Millisecond, Fabric: f,
				Phases: []Phase{{End: simenv.Millisecond, Workload: Workload{Family: "websearch", Load: 0.3}}}}
			cfg, err := s.Config()
			if err != nil {
				t.Fatalf("the twin's scenario does not load: %v", err)
			}
			if !c.want(cfg) {
				t.Fatalf("loaded %+v, %+v", cfg.ECN, cfg.PFC)
			}
			if c.note != "" && !strings.Contains(strings.Join(f.Notes, "; "), c.note) {
				t.Fatalf("notes %q do not say %q", f.Notes, c.note)
			}
		})
	}
	if _, err := BuildFabric([]env.FabricRecord{starRecord("leaf0", 0, ok)}); err == nil || !strings.Contains(err.Error(), "speed") {
		t.Fatalf("ports without a speed: %v", err)
	}
}

// A name the YAML would cut short or misread is quoted, and reads back.
func TestTwinScenarioNameQuoted(t *testing.T) {
	f, err := BuildFabric([]env.FabricRecord{starRecord("leaf0", 100e9, env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2})})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"dc1 #2", "a: b", "plain-name", "'x'"} {
		s := Scenario{Name: name, Seed: 1, Duration: simenv.Millisecond, Fabric: f,
			Phases: []Phase{{End: simenv.Millisecond, Workload: Workload{Family: "websearch", Load: 0.3}}}}
		cfg, err := s.Config()
		if err != nil || cfg.Name != name {
			t.Errorf("name %q: loaded %q, %v", name, cfg.Name, err)
		}
	}
}

// An agent's db keeps the fabric record of a switch it no longer watches
// (renamed, removed, moved to another fleet member): the fit uses the
// switches with telemetry, and says which it left out.
func TestTwinLeavesOutSwitchesNoLongerWatched(t *testing.T) {
	ok := env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2}
	recs := []env.FabricRecord{starRecord("leaf0", 100e9, ok), starRecord("leaf1", 100e9, ok)}
	if _, err := BuildFabric(recs); err == nil {
		t.Fatal("setup: two stars with hosts build a fabric")
	}
	samples := []Sample{{Key: env.QueueKey{Target: "leaf1", Port: "Ethernet0", Queue: 3}}}
	got, gone := observedRecords(recs, samples)
	if len(got) != 1 || got[0].Target != "leaf1" || len(gone) != 1 || gone[0] != "leaf0" {
		t.Fatalf("kept %v, left out %v", got, gone)
	}
	if _, err := BuildFabric(got); err != nil {
		t.Fatal(err)
	}
}

// The statistics fitted are the simulated queue's: samples of other
// queues the agent watched are left out, and the report says so.
func TestTwinFitsTheSimulatedQueueAlone(t *testing.T) {
	f := Fabric{Queue: 3}
	var samples []Sample
	for _, q := range []int{3, 4, 3, 4} {
		samples = append(samples, Sample{Key: env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: q}})
	}
	got := f.onQueue(samples)
	if len(got) != 2 || got[0].Key.Queue != 3 || got[1].Key.Queue != 3 {
		t.Fatalf("kept %+v", got)
	}
	if len(f.Notes) != 1 || !strings.Contains(f.Notes[0], "queue(s) [4]") {
		t.Fatalf("notes %q", f.Notes)
	}
}

// spineWithoutLLDP is a 2-leaf, 1-spine fabric whose leaves run LLDP and
// whose spine's ports say nothing of what they face, its records and the
// twin's fabric built from them.
func spineWithoutLLDP(t *testing.T) (simenv.Config, []env.FabricRecord, Fabric) {
	t.Helper()
	cfg := config(simenv.LeafSpineTopology(2, 1, 4, 100e9, 100e9, simenv.Microsecond), 12_000_000, 10)
	recs := recordsOf(t, cfg, true)
	for i := range recs {
		if recs[i].Target == "spine0" {
			for j := range recs[i].Ports {
				recs[i].Ports[j].Neighbor, recs[i].Ports[j].Peer = env.Neighbor{}, env.PeerUnknown
			}
		}
	}
	f, err := BuildFabric(recs)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, recs, f
}

// Leaves run LLDP (their uplinks name the spine); the spine's own ports
// say nothing: it is a spine all the same (it was left out, and the
// fabric refused: "switches with hosts and none without").
func TestTwinSpineWithoutLLDP(t *testing.T) {
	_, _, f := spineWithoutLLDP(t)
	if f.Kind != "leafspine" || f.Leaves != 2 || f.Spines != 1 || f.FabricRateBps != 100e9 {
		t.Fatalf("fabric %s: %d leaves, %d spines, uplink %g", f.Kind, f.Leaves, f.Spines, f.FabricRateBps)
	}
}

// utilSamples is n intervals of every port of every record, each at the
// utilisation util gives it (by switch and port name).
func utilSamples(recs []env.FabricRecord, n int, util func(target, port string) float64) []Sample {
	var out []Sample
	for t := int64(1); t <= int64(n); t++ {
		for _, r := range recs {
			for _, p := range r.Ports {
				out = append(out, Sample{TimeNs: t * 1000, Key: env.QueueKey{Target: r.Target, Port: p.Name, Queue: 3},
					RateBps: p.RateBps, Metrics: env.Metrics{IntervalNs: 1000, Util: util(r.Target, p.Name)}})
			}
		}
	}
	return out
}

// The statistics fitted are the simulated ports': a star's ports that
// face nothing known (unused, idle) or a switch the agent does not watch
// (uplinks at 30%) are left out of the twin, and their samples out of
// what it is fitted to (they diluted the hosts' 60% to 40% and added a
// fabric role a star cannot match); so is telemetry of a switch without
// a fabric record, and the report says so.
func TestTwinFitsTheSimulatedPortsAlone(t *testing.T) {
	r := starRecord("leaf0", 100e9, env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2})
	for i := 4; i < 8; i++ {
		p := env.FabricPort{Name: fmt.Sprintf("Ethernet%d", i), RateBps: 100e9, Queue: 3, Setting: r.Ports[0].Setting}
		if i >= 6 {
			p.Peer, p.Neighbor = env.PeerSwitch, env.Neighbor{System: "spine-not-watched", Port: "Ethernet1"}
		}
		r.Ports = append(r.Ports, p)
	}
	recs := []env.FabricRecord{r}
	f, err := BuildFabric(recs)
	if err != nil {
		t.Fatal(err)
	}
	if f.Kind != "star" || f.Hosts != 4 {
		t.Fatalf("fabric %s with %d hosts", f.Kind, f.Hosts)
	}
	stranger := starRecord("leaf9", 100e9, r.Ports[0].Setting)
	samples := utilSamples(append(recs, stranger), 5, func(target, port string) float64 {
		switch {
		case target == "leaf9":
			return 0.9
		case port == "Ethernet4" || port == "Ethernet5":
			return 0
		case port == "Ethernet6" || port == "Ethernet7":
			return 0.3
		}
		return 0.6
	})
	kept := f.withPeers(recs, samples)
	if len(kept) != 4*5 {
		t.Fatalf("kept %d samples, want the 4 host ports' 20", len(kept))
	}
	st := Compute(kept)
	if got := st[RoleHost]["util_mean"]; math.Abs(got-0.6) > 1e-9 {
		t.Errorf("host util_mean %.3f, want 0.6 (the host ports' alone)", got)
	}
	if roles := st.Roles(); len(roles) != 1 || roles[0] != RoleHost {
		t.Errorf("roles %v: a star twin has host ports alone", roles)
	}
	if n := f.Notes[len(f.Notes)-1]; !strings.Contains(n, "leaf9") || !strings.Contains(n, "no fabric record") {
		t.Errorf("last note %q does not name the switch without a record", n)
	}
}

// A spine none of whose ports says what it faces (found by the leaves'
// links to it) is simulated with every port facing a leaf: its samples
// are fitted as fabric ports, as the twin's own spine ports are measured
// (they counted as host ports).
func TestTwinSpineWithoutLLDPFittedAsFabric(t *testing.T) {
	cfg, recs, f := spineWithoutLLDP(t)
	sim, err := Measure(cfg, 200*simenv.Microsecond, []int{simenv.DefaultPriority}, 0)
	if err != nil {
		t.Fatal(err)
	}
	stored := append([]Sample(nil), sim...)
	for i := range stored {
		stored[i].Peer = env.PeerUnknown // what an agent without LLDP stores
	}
	got := f.withPeers(recs, f.onQueue(stored))
	if len(got) != len(sim) {
		t.Fatalf("kept %d of the %d samples of the twin's own ports", len(got), len(sim))
	}
	for i, s := range got {
		if want := sim[i].Peer; s.Peer != want {
			t.Fatalf("%s/%s observed as %v, the twin measures it as %v", s.Key.Target, s.Key.Port, s.Peer, want)
		}
	}
}

// A closed loop changes the setting its fabric record holds (written at
// the agent's first snapshot): the twin marks at the setting the host
// ports' queues ran most in the intervals read (each sample's read-back),
// and says which share ran another, which one setting cannot simulate
// (a closed loop's db: 97.6% of the queue-intervals ran a setting the
// twin never simulated, host marks -71%, with nothing said).
func TestTwinMarksAtTheSettingTheQueuesRan(t *testing.T) {
	rec := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	a := env.Setting{KminBytes: 323_100, KmaxBytes: 359_000, Pmax: 0.01}
	b := env.Setting{KminBytes: 696_600, KmaxBytes: 774_000, Pmax: 0.01}
	recs := []env.FabricRecord{starRecord("sw0", 100e9, rec)}
	ran := func(s Sample) env.Setting {
		if s.TimeNs <= 3000 {
			return a
		}
		return b
	}
	for _, c := range []struct {
		name  string
		ran   func(Sample) env.Setting
		want  env.Setting
		share float64
		note  string
	}{
		{"closed loop", ran, a, 0.4, "the host ports' queues ran kmin 323.1KB kmax 359KB pmax 1% in 60% of the intervals read, not the kmin 400KB kmax 1.6MB pmax 20% of the switches' fabric record"},
		{"shadow", func(Sample) env.Setting { return rec }, rec, 0, ""},
		{"not stored", func(Sample) env.Setting { return env.Setting{} }, rec, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := BuildFabric(recs)
			if err != nil {
				t.Fatal(err)
			}
			samples := utilSamples(recs, 5, func(string, string) float64 { return 0.5 })
			for i := range samples {
				samples[i].Setting = c.ran(samples[i])
			}
			share := f.ranSettings(f.withPeers(recs, samples))
			notes := strings.Join(f.Notes, "\n")
			rep := Report{Fabric: f, OtherSetting: share}
			if w := rep.SettingWarning(); (w != "") != (c.share > 0) || c.share > 0 && !strings.HasPrefix(w, "40% of the observed host-port queue-intervals ran another ECN setting than the twin's kmin 323.1KB kmax 359KB pmax 1%") {
				t.Fatalf("warning %q", w)
			}
			if f.ECN != c.want || math.Abs(share-c.share) > 1e-9 || c.note != "" && !strings.Contains(notes, c.note) ||
				c.note == "" && strings.Contains(notes, "queues ran") {
				t.Fatalf("ECN %+v, share %v, notes %q; want %+v, %v, %q", f.ECN, share, notes, c.want, c.share, c.note)
			}
		})
	}
}
