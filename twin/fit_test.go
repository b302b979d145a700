package twin

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
)

// truth is a known fabric and workload: the samples the agent would have
// stored of it (through the same observer) and its fabric records.
func truth(t *testing.T, s Scenario, lldp bool) Input {
	t.Helper()
	cfg, err := s.Config()
	if err != nil {
		t.Fatalf("%v\n%s", err, s.YAML())
	}
	samples, err := Measure(cfg, 200*simenv.Microsecond, []int{simenv.DefaultPriority}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range samples {
		samples[i].Peer = env.PeerUnknown // as stored: the record says it
	}
	return Input{Fabric: recordsOf(t, cfg, lldp), Samples: samples}
}

// A small star under web search at 40%: the fit finds the star and a
// web-search load near 40% within a small budget.
func TestFitRecoversSmallStar(t *testing.T) {
	f := Fabric{Kind: "star", Hosts: 8, HostRateBps: 100e9, BufferBytes: 16_000_000, LinkDelay: simenv.Microsecond, CableMeters: 5,
		MTU: 1000, ECN: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}, Alpha: 0.125, Queue: 3}
	want := Workload{Family: "fbhadoop", Load: 0.5}
	s := Scenario{Name: "truth", Seed: 7, Duration: 6 * simenv.Millisecond, Fabric: f, Phases: []Phase{{End: 6 * simenv.Millisecond, Workload: want}}}
	in := truth(t, s, true)
	budget := 20 * time.Second
	if os.Getenv("ECNTUNE_TWIN_HEAVY") != "" {
		budget = 2 * time.Minute
	}
	start := time.Now()
	r, err := Fit(in, Options{Budget: budget, Seed: 3, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fit in %s:\n%s", time.Since(start).Round(time.Millisecond), r.Scenario.YAML())
	got := r.Scenario.Fabric
	if got.Kind != "star" || got.Hosts != 8 || got.HostRateBps != 100e9 || got.BufferBytes != 16_000_000 {
		t.Fatalf("fabric %+v", got)
	}
	if len(r.Scenario.Phases) != 1 {
		t.Fatalf("phases %+v: steady traffic is one window", r.Scenario.Phases)
	}
	w := r.Scenario.Phases[0].Workload
	if w.Family != want.Family || math.Abs(w.Load-want.Load) > 0.1 {
		t.Errorf("workload %s, want %s (load within 0.1)", w.Describe(), want.Describe())
	}
}
