package twin

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
)

// A twin with phases, an incast and a collective, on another queue: the
// file loads, with each workload in its window, at its priority.
func TestScenarioYAMLPhases(t *testing.T) {
	f := Fabric{Kind: "leafspine", Leaves: 2, Spines: 1, HostsPerLeaf: 12, HostRateBps: 25e9, FabricRateBps: 100e9, BufferBytes: 12_000_000,
		LinkDelay: simenv.Microsecond, CableMeters: 10, MTU: 1000, ECN: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2},
		Alpha: 0.125, Queue: 4}
	s := Scenario{Name: "p", Seed: 2, Duration: 8 * simenv.Millisecond, Fabric: f, Comment: []string{"fitted", "by a test"}, Phases: []Phase{
		{Start: 0, End: 4 * simenv.Millisecond, Workload: Workload{Family: "fbhadoop", Load: 0.3,
			Collective: &Collective{Kind: "alltoall", Ranks: 24, SizeBytes: 1_048_576, Gap: 1500 * simenv.Microsecond}}},
		{Start: 4 * simenv.Millisecond, End: 8 * simenv.Millisecond, Workload: Workload{
			Incast: &Incast{Fanin: 10, SizeBytes: 64_000, Every: 250 * simenv.Microsecond}}},
	}}
	y := string(s.YAML())
	cfg, err := s.Config()
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	if !strings.HasPrefix(y, "# fitted\n# by a test\n") || len(cfg.Workloads) != 3 {
		t.Fatalf("%s\n%d workloads", y, len(cfg.Workloads))
	}
	for i, w := range cfg.Workloads {
		if w.Priority != 4 {
			t.Errorf("workload %d at priority %d, want 4", i, w.Priority)
		}
	}
	a2a, inc := cfg.Workloads[1], cfg.Workloads[2]
	if a2a.Kind != simenv.WorkloadAllToAll || a2a.Ranks != 24 || a2a.SizeBytes != 1_048_576 || a2a.Gap != 1500*simenv.Microsecond || a2a.End != 4*simenv.Millisecond {
		t.Errorf("all-to-all %+v", a2a)
	}
	if inc.Kind != simenv.WorkloadIncast || inc.Fanin != 10 || inc.SizeBytes != 64_000 || inc.Start != 4*simenv.Millisecond {
		t.Errorf("incast %+v", inc)
	}
	if d := s.Phases[0].Workload.Describe(); d != "fbhadoop 30% + alltoall 24 ranks 1.049MB gap 1500us" {
		t.Errorf("Describe = %q", d)
	}
	if cfg.Interval != 0 || cfg.Warmup != 0 {
		t.Errorf("interval %v, warmup %v of a twin that names neither", cfg.Interval, cfg.Warmup)
	}
	// the agent's interval and the lead-in travel in the file: eval decides
	// at the one and leaves the other's flows out
	s.Interval, s.Lead = 320*simenv.Microsecond, 1280*simenv.Microsecond
	if cfg, err = s.Config(); err != nil {
		t.Fatalf("%v\n%s", err, s.YAML())
	}
	if cfg.Interval != s.Interval || cfg.Warmup != s.Lead {
		t.Errorf("interval %v, warmup %v; want %v, %v\n%s", cfg.Interval, cfg.Warmup, s.Interval, s.Lead, s.YAML())
	}
}

// The twin's counters lose what the observed switches do not export.
func TestMeasureMasksMissingTelemetry(t *testing.T) {
	f := Fabric{Kind: "star", Hosts: 4, HostRateBps: 100e9, BufferBytes: 16_000_000, LinkDelay: simenv.Microsecond, CableMeters: 5,
		MTU: 1000, ECN: env.Setting{KminBytes: 5_000, KmaxBytes: 20_000, Pmax: 0.2}, Alpha: 0.125, Queue: 3}
	s := Scenario{Name: "m", Seed: 1, Duration: simenv.Millisecond, Fabric: f,
		Phases: []Phase{{End: simenv.Millisecond, Workload: Workload{Incast: &Incast{Fanin: 3, SizeBytes: 500_000, Every: 200 * simenv.Microsecond}}}}}
	cfg, err := s.Config()
	if err != nil {
		t.Fatal(err)
	}
	full, err := Measure(cfg, 100*simenv.Microsecond, []int{3}, 0)
	if err != nil {
		t.Fatal(err)
	}
	masked, err := Measure(cfg, 100*simenv.Microsecond, []int{3}, env.TelMarkedPkts|env.TelMarkedBytes|env.TelMaxQueue|env.TelAvgQueue|env.TelCurQueue)
	if err != nil {
		t.Fatal(err)
	}
	a, b := Compute(full)[RoleHost], Compute(masked)[RoleHost]
	if !(a["mark"] > 0 && a["maxq_p90"] > 0) || b["mark"] != 0 || b["maxq_p90"] != 0 || b["util_mean"] != a["util_mean"] {
		t.Fatalf("full %v\nmasked %v", a, b)
	}
}
