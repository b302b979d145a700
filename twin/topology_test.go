package twin

import (
	"slices"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/export"
)

// recordsOf builds the fabric records an agent would store for cfg's
// switches: their first snapshot, with LLDP's neighbours (lldp) or only
// the peers a fabric-ports list gives.
func recordsOf(t *testing.T, cfg simenv.Config, lldp bool) []env.FabricRecord {
	t.Helper()
	sim, err := simenv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out []env.FabricRecord
	for _, sw := range sim.Switches() {
		snap := export.Snapshot(sim.Telemetry(sw.Index), sw, []int{simenv.DefaultPriority})
		neigh := map[string]env.Neighbor{}
		for _, p := range sw.Ports {
			if lldp {
				neigh[p.Name] = env.Neighbor{System: p.Peer, Port: "Ethernet1"}
			}
		}
		out = append(out, env.NewFabricRecord(snap, neigh, cfg.PFC.CableMeters, cfg.MTU+cfg.HeaderBytes))
	}
	return out
}

func config(topo simenv.Topology, buffer int64, cable float64) simenv.Config {
	cfg := simenv.DefaultConfig()
	cfg.Topology, cfg.BufferBytes, cfg.PFC.CableMeters = topo, buffer, cable
	cfg.ECN = simenv.ECN{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2}
	cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Fanin: 1, SizeBytes: 1000, Every: simenv.Millisecond, Priority: 3}}
	return cfg
}

func TestBuildFabric(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  simenv.Config
		lldp bool
		want Fabric
	}{
		{"star", config(simenv.StarTopology(8, 800e9, simenv.Microsecond), 48_000_000, 100), true,
			Fabric{Kind: "star", Hosts: 8, HostRateBps: 800e9}},
		{"leafspine lldp", config(simenv.LeafSpineTopology(2, 1, 12, 25e9, 100e9, simenv.Microsecond), 12_000_000, 10), true,
			Fabric{Kind: "leafspine", Leaves: 2, Spines: 1, HostsPerLeaf: 12, HostRateBps: 25e9, FabricRateBps: 100e9}},
		{"leafspine listed", config(simenv.LeafSpineTopology(4, 2, 4, 400e9, 400e9, 2*simenv.Microsecond), 64_000_000, 20), false,
			Fabric{Kind: "leafspine", Leaves: 4, Spines: 2, HostsPerLeaf: 4, HostRateBps: 400e9, FabricRateBps: 400e9}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := BuildFabric(recordsOf(t, c.cfg, c.lldp))
			if err != nil {
				t.Fatal(err)
			}
			w := c.want
			if f.Kind != w.Kind || f.Hosts != w.Hosts || f.Leaves != w.Leaves || f.Spines != w.Spines || f.HostsPerLeaf != w.HostsPerLeaf ||
				f.HostRateBps != w.HostRateBps || f.FabricRateBps != w.FabricRateBps {
				t.Fatalf("built %+v, want %+v", f, w)
			}
			delay := c.cfg.Topology.Links[0].Delay
			if f.BufferBytes != c.cfg.BufferBytes || f.CableMeters != c.cfg.PFC.CableMeters || f.MTU != c.cfg.MTU || f.LinkDelay != delay ||
				f.Alpha != c.cfg.PFC.Alpha || f.Queue != 3 {
				t.Fatalf("switch config %+v (notes %q), want buffer %d cable %g mtu %d delay %v alpha %g", f, f.Notes,
					c.cfg.BufferBytes, c.cfg.PFC.CableMeters, c.cfg.MTU, delay, c.cfg.PFC.Alpha)
			}
			if want := (env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2}); f.ECN != want {
				t.Fatalf("ECN %+v, want %+v (restated at 100G)", f.ECN, want)
			}
			if !c.lldp && !strings.Contains(strings.Join(f.Notes, "\n"), "spread evenly") {
				t.Fatalf("notes %q: want the even spread of unnamed uplinks said", f.Notes)
			}
			// The scenario file says what was built.
			s := Scenario{Name: "t", Seed: 1, Duration: simenv.Millisecond, Fabric: f,
				Phases: []Phase{{End: simenv.Millisecond, Workload: Workload{Family: "websearch", Load: 0.3}}}}
			got, err := s.Config()
			if err != nil {
				t.Fatalf("%v\n%s", err, s.YAML())
			}
			if len(got.Topology.Nodes) != len(c.cfg.Topology.Nodes) || len(got.Topology.Links) != len(c.cfg.Topology.Links) ||
				got.BufferBytes != c.cfg.BufferBytes || got.ECN != c.cfg.ECN || got.Topology.Links[0].Delay != delay {
				t.Fatalf("scenario:\n%s\nloads as %+v", s.YAML(), got)
			}
		})
	}
}

func TestBuildFabricRefuses(t *testing.T) {
	if _, err := BuildFabric(nil); err == nil || !strings.Contains(err.Error(), "no fabric record") {
		t.Fatalf("no records: %v", err)
	}
	recs := recordsOf(t, config(simenv.LeafSpineTopology(2, 2, 2, 100e9, 100e9, simenv.Microsecond), 32_000_000, 5), true)
	var leaves []env.FabricRecord
	for _, r := range recs {
		if strings.HasPrefix(r.Target, "leaf") {
			leaves = append(leaves, r)
		}
	}
	// The spines unwatched: leaves that face switches the agent has no
	// record of, no spine to build.
	if _, err := BuildFabric(leaves); err == nil || !strings.Contains(err.Error(), "none without") {
		t.Fatalf("leaves only: %v", err)
	}
	// A leaf-spine where one leaf misses a spine.
	cut := append([]env.FabricRecord(nil), recs...)
	for i, r := range cut {
		if r.Target == "leaf0" {
			r.Ports = r.Ports[:len(r.Ports)-1]
			cut[i] = r
		}
	}
	if _, err := BuildFabric(cut); err == nil || !strings.Contains(err.Error(), "has no link to spine1") {
		t.Fatalf("missing link: %v", err)
	}
}

func TestDelayFromFloor(t *testing.T) {
	for _, c := range []struct {
		rate  float64
		meter float64
	}{{25e9, 200}, {100e9, 200}, {400e9, 400}, {800e9, 200}} {
		floor := env.LosslessFloor(c.rate, c.meter, 1048)
		if got, want := delayFromFloor(floor, c.rate, 1048), simenv.Time(c.meter*5)*simenv.Nanosecond; got != want {
			t.Errorf("%gG %gm: delay %v, want %v", c.rate/1e9, c.meter, got.Duration(), want.Duration())
		}
	}
}

// The twin's PG headroom is the one the switches report, restated at
// 100 Gb/s as pfc.headroom states it; a headroom at the lossless floor
// is the simulator's own; one not reported is said.
func TestHeadroomFromRecords(t *testing.T) {
	build := func(t *testing.T, recs []env.FabricRecord) (Fabric, int64, int64) {
		t.Helper()
		f, err := BuildFabric(recs)
		if err != nil {
			t.Fatal(err)
		}
		s := Scenario{Name: "t", Seed: 1, Duration: simenv.Millisecond, Fabric: f,
			Phases: []Phase{{End: simenv.Millisecond, Workload: Workload{Family: "websearch", Load: 0.3}}}}
		cfg, err := s.Config()
		if err != nil {
			t.Fatal(err)
		}
		hr, _ := simenv.PGHeadroom(cfg, recs[0].Ports[0].RateBps, f.LinkDelay)
		return f, cfg.PFC.HeadroomBytes, hr
	}
	notes := func(f Fabric) string { return strings.Join(f.Notes, "\n") }
	t.Run("reported", func(t *testing.T) {
		cfg := config(simenv.StarTopology(8, 400e9, simenv.Microsecond), 64_000_000, 5)
		cfg.PFC.HeadroomBytes = 100_000 // 400KB at 400G
		f, h100, hr := build(t, recordsOf(t, cfg, true))
		if h100 != 100_000 || hr != 400_000 || strings.Contains(notes(f), "headroom") {
			t.Errorf("reported 400KB at 400G: twin pfc.headroom %d, in effect %d, notes %q; want 100KB at 100G, 400KB in effect, no note", h100, hr, f.Notes)
		}
	})
	t.Run("at the floor", func(t *testing.T) {
		recs := recordsOf(t, config(simenv.StarTopology(8, 100e9, simenv.Microsecond), 32_000_000, 5), true)
		f, h100, hr := build(t, recs)
		if h100 != 0 || hr != recs[0].Ports[0].Setting.HeadroomBytes || strings.Contains(notes(f), "headroom") {
			t.Errorf("switches at their floor %d: twin pfc.headroom %d, in effect %d, notes %q", recs[0].Ports[0].Setting.HeadroomBytes, h100, hr, f.Notes)
		}
	})
	t.Run("differing", func(t *testing.T) {
		cfg := config(simenv.StarTopology(8, 100e9, simenv.Microsecond), 32_000_000, 5)
		cfg.PFC.HeadroomBytes = 200_000
		recs := recordsOf(t, cfg, true)
		for i := range 3 {
			recs[0].Ports[i].Setting.HeadroomBytes = 300_000
		}
		f, _, hr := build(t, recs)
		if hr != 200_000 || !strings.Contains(notes(f), "headroom differs (200KB to 300KB at 100 Gb/s) over sw0: the twin's is 200KB") {
			t.Errorf("5 ports at 200KB, 3 at 300KB: in effect %d, notes %q", hr, f.Notes)
		}
	})
	t.Run("not reported", func(t *testing.T) {
		recs := recordsOf(t, config(simenv.StarTopology(8, 100e9, simenv.Microsecond), 32_000_000, 5), true)
		for i := range recs[0].Ports {
			recs[0].Ports[i].Setting.HeadroomBytes, recs[0].Ports[i].HeadroomReported = 0, false
		}
		f, h100, _ := build(t, recs)
		if h100 != 0 || !strings.Contains(notes(f), "report no PG headroom: the twin's is the lossless floor") {
			t.Errorf("no headroom reported: pfc.headroom %d, notes %q", h100, f.Notes)
		}
	})
}

// What the twin cannot build as the switches are is said: links to
// switches the agent does not watch, host ports of several speeds,
// buffers of several sizes, a link delay that the floor cannot tell.
func TestBuildFabricNotesWhatItLeavesOut(t *testing.T) {
	without := func(recs []env.FabricRecord, names ...string) []env.FabricRecord {
		var out []env.FabricRecord
		for _, r := range recs {
			if !slices.Contains(names, r.Target) {
				out = append(out, r)
			}
		}
		return out
	}
	for _, c := range []struct {
		name string
		recs func(t *testing.T) []env.FabricRecord
		says string
	}{
		{"a spine not watched", func(t *testing.T) []env.FabricRecord {
			return without(recordsOf(t, config(simenv.LeafSpineTopology(2, 3, 8, 100e9, 100e9, simenv.Microsecond), 32_000_000, 5), true), "spine2")
		}, "leaf0's uplinks to switches the agent does not watch (spine2: 100Gbps of its 300Gbps to the spines) are left out"},
		{"leaves not watched", func(t *testing.T) []env.FabricRecord {
			return without(recordsOf(t, config(simenv.LeafSpineTopology(4, 2, 4, 100e9, 100e9, simenv.Microsecond), 32_000_000, 5), true), "leaf2", "leaf3")
		}, "spine0 faces 4 switches, of which the agent watches 2 (leaf0, leaf1) and not leaf2, leaf3: the twin has 2 leaves"},
		{"host ports of two speeds", func(t *testing.T) []env.FabricRecord {
			recs := recordsOf(t, config(simenv.StarTopology(8, 100e9, simenv.Microsecond), 32_000_000, 5), true)
			for i := range 3 {
				recs[0].Ports[i].RateBps = 400e9
			}
			return recs
		}, "the host ports run at several speeds (100Gbps x5, 400Gbps x3): every host of the twin runs at 100Gbps"},
		{"buffers of two sizes", func(t *testing.T) []env.FabricRecord {
			recs := recordsOf(t, config(simenv.LeafSpineTopology(2, 2, 4, 100e9, 100e9, simenv.Microsecond), 16_000_000, 5), true)
			for i := range recs {
				if strings.HasPrefix(recs[i].Target, "spine") {
					recs[i].BufferBytes = 64_000_000
				}
			}
			return recs
		}, "the switches' buffers differ (16MB x2, 64MB x2): every switch of the twin has 16MB"},
		{"a cable longer than the link", func(t *testing.T) []env.FabricRecord {
			return recordsOf(t, config(simenv.StarTopology(4, 100e9, 100*simenv.Nanosecond), 32_000_000, 300), true)
		}, "the switches' lossless floor is that of the 300m cable (1.5µs each way)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := BuildFabric(c.recs(t))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(f.Notes, "\n"), c.says) {
				t.Errorf("notes %q, want %q", f.Notes, c.says)
			}
		})
	}
	// a leaf-spine whose ports are listed (no LLDP) faces no switch by name:
	// nothing is said of switches not watched
	f, err := BuildFabric(recordsOf(t, config(simenv.LeafSpineTopology(4, 2, 4, 100e9, 100e9, simenv.Microsecond), 32_000_000, 5), false))
	if err != nil || strings.Contains(strings.Join(f.Notes, "\n"), "not watch") {
		t.Errorf("listed ports: %v, notes %q", err, f.Notes)
	}
}
