package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/scenario"
)

func tinySim() simenv.Config {
	cfg := simenv.DefaultConfig()
	cfg.Name = "tiny"
	cfg.Duration = 200 * simenv.Microsecond
	cfg.Topology = simenv.StarTopology(4, 100e9, simenv.Microsecond)
	cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Fanin: 3, SizeBytes: 30_000, Every: 50 * simenv.Microsecond, Priority: 3}}
	return cfg
}

func TestSim(t *testing.T) {
	b, err := NewSim(SimOptions{Config: tinySim(), Input: "tiny.yaml", Runs: 3, Parallel: 2, Reseed: true, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	r := b.Run()
	if len(r.Runs) != 3 || r.Runs[2].Seed != 9 || r.Runs[0].PacketHops == 0 || !(r.AggregateHopsPerS > 0) || r.PeakRSSBytes == 0 || r.Parallel != 2 {
		t.Fatalf("report %+v", r)
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	// The keys in the order the command has always printed them.
	keys := []string{`"aggregate_packet_hops_per_s"`, `"cores"`, `"parallel"`, `"peak_rss_bytes"`, `"runs"`, `"total_wall_s"`}
	last := -1
	for _, k := range keys {
		i := strings.Index(js.String(), k)
		if i < last {
			t.Fatalf("key %s out of order:\n%s", k, js.String())
		}
		last = i
	}
	var back map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back) != len(keys) {
		t.Fatalf("json %v: %s", err, js.String())
	}
	var txt bytes.Buffer
	if err := r.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "tiny.yaml: 3 run(s), 2 at a time on ") || strings.Count(txt.String(), "\n") != 6 ||
		r.Runs[0].VsNS3 != 0 || r.Runs[0].CPUS != 0 || !strings.Contains(txt.String(), "x ns-3: only on the run ns-3's speed was measured on") {
		t.Fatalf("text:\n%s", txt.String())
	}

	// One run at a time: each run's CPU time, speed per CPU second and
	// their median; the ratio to ns-3 only on the run it was measured on.
	b, err = NewSim(SimOptions{Config: tinySim(), Input: "../shared/reference/ns3-hpcc/config_fat_ws30_dcqcn.txt", Runs: 3, Parallel: 1, Reseed: true, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	r = b.Run()
	txt.Reset()
	r.WriteText(&txt)
	for _, x := range r.Runs {
		if !(x.CPUS > 0) || !(x.HopsPerCPUSec > 0) || x.VsNS3 != x.HopsPerCPUSec/ns3HopsPerSec {
			t.Fatalf("run %+v", x)
		}
	}
	if !strings.Contains(txt.String(), "per CPU second over the 3 runs: median ") || !strings.Contains(txt.String(), "x ns-3: against ns-3 HPCC's 0.42 M") {
		t.Fatalf("text:\n%s", txt.String())
	}

	if _, err := NewSim(SimOptions{Config: tinySim(), Runs: 0, Parallel: 1}); err == nil || !strings.Contains(err.Error(), "--runs") {
		t.Fatalf("0 runs: %v", err)
	}
	bad := tinySim()
	bad.Topology.Links = nil
	if _, err := NewSim(SimOptions{Config: bad, Input: "bad.yaml", Runs: 1, Parallel: 1}); err == nil || !strings.HasPrefix(err.Error(), "bad.yaml: ") {
		t.Fatalf("bad config: %v", err)
	}
}

// BenchmarkSimFatTreeWS30 is the ns-3 HPCC fat tree (320 hosts, WebSearch
// at 30% load, DCQCN) that `bench sim --hpcc-config` runs, cut to the first
// 2 ms of its traffic (its 3,198 flows arrive within 5 ms; the whole run is
// about 10 s of CPU here), so that one op takes about 3.5 s on 2 cores: the
// benchmark that catches the simulator slowing down as features come.
// Compare two commits with `go test -run X -bench SimFatTree -count 6
// ./internal/bench`, runs of the two alternating; packet-hops/s is the
// throughput `bench sim` reports and events/op must not move unless the
// simulation itself changed.
func BenchmarkSimFatTreeWS30(b *testing.B) {
	cfg, err := scenario.LoadHPCCConfig("../../../../testdata/ns3-hpcc/config_fat_ws30_dcqcn.txt")
	if err != nil {
		b.Fatal(err)
	}
	first := simenv.Time(-1)
	for _, w := range cfg.Workloads {
		for _, f := range w.Flows {
			if first < 0 || f.Start < first {
				first = f.Start
			}
		}
	}
	if first < 0 {
		b.Fatal("the fat tree's flow file has no flow")
	}
	cfg.Duration = first + 2*simenv.Millisecond
	var hops, events uint64
	b.ResetTimer()
	for range b.N {
		r := simOne(cfg, "fat", false, func(simenv.Time) {})
		hops += r.PacketHops
		events += r.Events
	}
	b.ReportMetric(float64(hops)/b.Elapsed().Seconds(), "packet-hops/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}

// The median of an even count is the mean of the middle two (2 runs gave
// the better one as the median).
func TestMedianEvenCount(t *testing.T) {
	if m := median([]float64{5.41, 5.89}); m != 5.65 {
		t.Fatalf("median of 2: %v", m)
	}
	if m := median([]float64{1, 2, 9}); m != 2 {
		t.Fatalf("median of 3: %v", m)
	}
}
