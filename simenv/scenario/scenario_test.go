package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ecntune/ecntune/simenv"
)

// writeFiles writes name → content into a fresh folder and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const testCDF = "0 0\n1000 50\n10000 100\n"

// A 4-host HPCC topology: switch 0, hosts 1..3 and 4 (host 4 on switch 5).
const testTopo = "6 2 5\n0 5\n0 1 100Gbps 1000ns 0\n0 2 100Gbps 1000ns 0\n0 3 100Gbps 1us 0\n0 5 400Gbps 0.001ms 0\n5 4 100Gbps 1us 0\n"

const testFlows = "2\n1 2 3 100 5000 2.000000643\n3 4 3 100 1000000 2.5\n"

const baseScenario = `
name: t
duration: 20ms
topology: {kind: star, hosts: 4}
workloads:
  - {kind: cdf, cdf: ws.txt, load: 0.5}
`

func TestParseFull(t *testing.T) {
	dir := writeFiles(t, map[string]string{"ws.txt": testCDF, "flows/f.txt": testFlows, "topo.txt": testTopo})
	src := `
name: full
seed: 7
duration: 3s
interval: 800us
warmup: 2ms
topology: {kind: hpcc, file: topo.txt, buffer: 12MB}
ecn: {kmin: 100KB, kmax: 2MiB, pmax: 0.05}
pfc: {enabled: false, alpha: 0.5, alpha_scale_with_rate: false, cable: 0.1km, headroom: 120KB,
      reserve: 2KiB, xon_offset: 1KB}
dcqcn: {enabled: false, g: 0.0625, ai: 5Mbps, hai: 50Mbps, increase_timer: 55us, alpha_timer: 2us,
        decrease_timer: 50us, min_rate: 100Mbps, fast_recovery: 5, cnp_interval: 4us, byte_counter: 10MB}
mtu: 4096
header_bytes: 60
ack_bytes: 80
ack_high_priority: false
ack_every: 2
workloads:
  - {kind: cdf, cdf: ws.txt, load: 0.25, start: 1ms, end: 4ms, priority: 4, hosts: [host1, host3, host4]}
  - {kind: incast, fanin: 3, size: 1.5MB, every: 500us}
  - {kind: allreduce, ranks: 4, size: 16MiB, gap: 1ms}
  - {kind: alltoall, ranks: 2, size: 8MiB, hosts: [host2, host4]}
  - {kind: trace, file: flows/f.txt}
`
	cfg, err := Parse([]byte(src), dir, "full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "full" || cfg.Seed != 7 || cfg.Duration != 3*simenv.Second || cfg.Interval != 800*simenv.Microsecond || cfg.Warmup != 2*simenv.Millisecond {
		t.Errorf("name/seed/duration/interval/warmup = %q %d %s %s %s", cfg.Name, cfg.Seed, cfg.Duration, cfg.Interval, cfg.Warmup)
	}
	if len(cfg.Topology.Nodes) != 6 || len(cfg.Topology.Links) != 5 || cfg.BufferBytes != 12_000_000 {
		t.Errorf("topology %d nodes %d links, buffer %d", len(cfg.Topology.Nodes), len(cfg.Topology.Links), cfg.BufferBytes)
	}
	if want := (simenv.ECN{KminBytes: 100_000, KmaxBytes: 2 << 20, Pmax: 0.05}); cfg.ECN != want {
		t.Errorf("ECN = %+v, want %+v", cfg.ECN, want)
	}
	wantPFC := simenv.PFCConfig{Enabled: false, Alpha: 0.5, AlphaScaleWithRate: false, CableMeters: 100,
		HeadroomBytes: 120_000, HeadroomFormula: simenv.HeadroomIEEE, ReserveBytes: 2048, XonOffsetBytes: 1000} // formula beside headroom: TestPFCInertKeys
	if cfg.PFC != wantPFC {
		t.Errorf("PFC = %+v, want %+v", cfg.PFC, wantPFC)
	}
	wantDCQCN := simenv.DCQCNConfig{Enabled: false, G: 0.0625, AIBps: 5e6, HAIBps: 50e6,
		IncreaseTimer: 55 * simenv.Microsecond, AlphaTimer: 2 * simenv.Microsecond, DecreaseTimer: 50 * simenv.Microsecond,
		MinRateBps: 100e6, FastRecoverySteps: 5, CNPInterval: 4 * simenv.Microsecond, ByteCounter: 10_000_000}
	if cfg.DCQCN != wantDCQCN {
		t.Errorf("DCQCN = %+v, want %+v", cfg.DCQCN, wantDCQCN)
	}
	if cfg.MTU != 4096 || cfg.HeaderBytes != 60 || cfg.AckBytes != 80 || cfg.AckHighPriority || cfg.AckEvery != 2 {
		t.Errorf("packet settings %d %d %d %v %d", cfg.MTU, cfg.HeaderBytes, cfg.AckBytes, cfg.AckHighPriority, cfg.AckEvery)
	}
	if len(cfg.Workloads) != 5 {
		t.Fatalf("%d workloads, want 5", len(cfg.Workloads))
	}
	w := cfg.Workloads[0]
	if w.Kind != simenv.WorkloadCDF || w.Load != 0.25 || w.Start != simenv.Millisecond || w.End != 4*simenv.Millisecond ||
		w.Priority != 4 || len(w.CDF) != 3 || w.CDF[1] != (simenv.CDFPoint{Bytes: 1000, Percent: 50}) ||
		len(w.Hosts) != 3 || w.Hosts[0] != 1 || w.Hosts[1] != 3 || w.Hosts[2] != 4 {
		t.Errorf("cdf workload = %+v", w)
	}
	w = cfg.Workloads[1]
	if w.Kind != simenv.WorkloadIncast || w.Fanin != 3 || w.SizeBytes != 1_500_000 || w.Every != 500*simenv.Microsecond || w.Priority != 3 {
		t.Errorf("incast workload = %+v", w)
	}
	w = cfg.Workloads[2]
	if w.Kind != simenv.WorkloadAllReduce || w.Ranks != 4 || w.SizeBytes != 16<<20 || w.Gap != simenv.Millisecond {
		t.Errorf("allreduce workload = %+v", w)
	}
	w = cfg.Workloads[3]
	if w.Kind != simenv.WorkloadAllToAll || w.Ranks != 2 || w.SizeBytes != 8<<20 || w.Gap != 0 || len(w.Hosts) != 2 {
		t.Errorf("alltoall workload = %+v", w)
	}
	w = cfg.Workloads[4]
	if w.Kind != simenv.WorkloadTrace || len(w.Flows) != 2 ||
		w.Flows[0] != (simenv.TraceFlow{Src: 1, Dst: 2, Priority: 3, DPort: 100, SizeBytes: 5000, Start: 2_000_000_642 * simenv.Nanosecond}) {
		t.Errorf("trace workload = %+v", w)
	}
}

func TestParseDefaults(t *testing.T) {
	dir := writeFiles(t, map[string]string{"ws.txt": testCDF})
	cfg, err := Parse([]byte("topology: {kind: leafspine, leaves: 2, spines: 1, hosts_per_leaf: 3}\nworkloads: [{kind: cdf, cdf: ws.txt, load: 1}]\n"), dir, "dir/my-scen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	def := simenv.DefaultConfig()
	if cfg.Name != "my-scen" || cfg.Seed != def.Seed || cfg.Duration != def.Duration || cfg.ECN != def.ECN ||
		cfg.PFC != def.PFC || cfg.DCQCN != def.DCQCN || cfg.MTU != def.MTU || cfg.HeaderBytes != def.HeaderBytes ||
		cfg.AckBytes != def.AckBytes || cfg.AckHighPriority != def.AckHighPriority || cfg.AckEvery != def.AckEvery ||
		cfg.BufferBytes != def.BufferBytes {
		t.Errorf("defaults not applied: %+v", cfg)
	}
	// 6 hosts, 2 leaves, 1 spine; every link at the default 100G and 1 µs.
	if len(cfg.Topology.Nodes) != 9 || len(cfg.Topology.Links) != 8 {
		t.Fatalf("leafspine has %d nodes and %d links, want 9 and 8", len(cfg.Topology.Nodes), len(cfg.Topology.Links))
	}
	for _, l := range cfg.Topology.Links {
		if l.RateBps != 100e9 || l.Delay != simenv.Microsecond {
			t.Errorf("link %+v, want 100G and 1us", l)
		}
	}
	if w := cfg.Workloads[0]; w.Priority != simenv.DefaultPriority || w.Start != 0 || w.End != 0 || w.Hosts != nil || w.Load != 1 {
		t.Errorf("workload defaults: %+v", w)
	}
}

// Hosts at or below the default DCQCN floor (1 Gb/s) get a floor of 1%
// of their rate when the scenario gives none (with no dcqcn: section the
// floor was above the line, and DCQCN never slowed a sender); a given
// min_rate above the host rate stays an error.
func TestDefaultMinRateBelowSlowHosts(t *testing.T) {
	dir := writeFiles(t, map[string]string{"ws.txt": testCDF})
	for _, c := range []struct {
		extra string
		want  float64
	}{{"", 5e6}, {"dcqcn: {enabled: true}\n", 5e6}, {"dcqcn: {min_rate: 100Mbps}\n", 100e6}} {
		cfg, err := Parse([]byte("topology: {kind: star, hosts: 4, host_rate: 500Mbps}\nworkloads: [{kind: cdf, cdf: ws.txt, load: 0.5}]\n"+c.extra), dir, "dir/slow.yaml")
		if err != nil {
			t.Fatalf("%q: %v", c.extra, err)
		}
		if cfg.DCQCN.MinRateBps != c.want {
			t.Errorf("%q: min rate %g, want %g", c.extra, cfg.DCQCN.MinRateBps, c.want)
		}
	}
	if _, err := Parse([]byte("topology: {kind: star, hosts: 4, host_rate: 500Mbps}\nworkloads: [{kind: cdf, cdf: ws.txt, load: 0.5}]\ndcqcn: {min_rate: 1Gbps}\n"), dir, "dir/slow.yaml"); err == nil ||
		!strings.Contains(err.Error(), "dcqcn.min_rate: 1Gbps is above the host link rate 500Mbps") {
		t.Fatalf("a given min_rate above the hosts' rate: %v", err)
	}
}

// TestParseErrors: every bad input gives one error naming the file, the
// field path and what is allowed, and never a partial result or a panic.
func TestParseErrors(t *testing.T) {
	files := map[string]string{
		"ws.txt":     testCDF,
		"topo.txt":   testTopo,
		"flows.txt":  testFlows,
		"bad0.txt":   "0 0\n100 50\n50 100\n",
		"bad1.txt":   "0 0\n100 50\n200 50\n300 100\n",
		"bad2.txt":   "10 0\n100 100\n",
		"bad3.txt":   "0 0\n100 50\n200 90\n",
		"bad4.txt":   "0 0\n100 x\n",
		"half.txt":   "0 0\n0.25 50\n0.5 100\n",
		"tiny.txt":   "0 0\n1 50\n20 100\n",
		"sw.txt":     "1\n0 2 3 100 1000 2\n",
		"nonode.txt": "1\n1 9 3 100 1000 2\n",
		"big.txt":    "2\n1 2 3 100 1000 0\n1 2 3 100 3000000000 0\n",
		"under.txt":  "1\n1 2 3 100 1000 0\n2 1 3 100 1000 0\n\n3 1 3 100 1000 0\n",
	}
	dir := writeFiles(t, files)
	star := "duration: 20ms\ntopology: {kind: star, hosts: 4}\n"
	cdf := "workloads: [{kind: cdf, cdf: ws.txt, load: 0.5}]\n"
	cases := []struct {
		name string
		src  string
		want []string // substrings of the error, besides the file name
	}{
		{"interval not below duration", star + cdf + "interval: 20ms\n", []string{"interval: 20ms is not below the duration 20ms"}},
		// sizes the simulator refuses name the line and the field (they
		// gave "workloads[0]: ..." alone), a collective's per rank
		{"incast size too large", star + "workloads: [{kind: incast, fanin: 2, size: 3GB, every: 1ms}]\n", []string{"line 3", "workloads[0].size: incast size 3000000000 B"}},
		{"collective size too large", star + "workloads: [{kind: allreduce, ranks: 2, size: 10GB}]\n", []string{"line 3", "workloads[0].size", "5000000000 B per rank"}},
		{"interval zero", star + cdf + "interval: 0us\n", []string{"interval: 0us must be above 0"}},
		{"interval bare", star + cdf + "interval: 300\n", []string{"interval"}},
		{"warmup past the end", star + cdf + "warmup: 25ms\n", []string{"warmup: 25ms is not below the duration 20ms"}},
		{"unknown top key", star + cdf + "colour: red\n", []string{"line 4", "colour: unknown key", "allowed: name, seed, duration"}},
		{"unknown nested key", "topology: {kind: star, hosts: 4, speed: 1}\n" + cdf, []string{"topology.speed: unknown key", "host_rate"}},
		{"unknown workload key", star + "workloads: [{kind: cdf, cdf: ws.txt, load: 0.5, lod: 1}]\n", []string{"workloads[0].lod: unknown key"}},
		{"key for another kind", star + "workloads: [{kind: cdf, cdf: ws.txt, load: 0.5, fanin: 2}]\n", []string{"workloads[0].fanin: not used by kind cdf", "allowed: kind, start"}},
		{"topology key for another kind", "topology: {kind: star, hosts: 4, leaves: 2}\n" + cdf, []string{"topology.leaves: not used by kind star"}},
		{"duplicate key", star + cdf + "seed: 1\nseed: 2\n", []string{"line 5", "seed: given twice (first on line 4)"}},
		{"missing CDF file", star + "workloads: [{kind: cdf, cdf: nope.txt, load: 0.5}]\n", []string{"workloads[0].cdf", "nope.txt", "cannot read CDF file"}},
		{"CDF sizes not increasing", star + "workloads: [{kind: cdf, cdf: bad0.txt, load: 0.5}]\n", []string{"workloads[0].cdf", "bad0.txt: line 3", "strictly increase"}},
		{"CDF percents not increasing", star + "workloads: [{kind: cdf, cdf: bad1.txt, load: 0.5}]\n", []string{"bad1.txt: line 3", "percents must strictly increase"}},
		{"CDF first point", star + "workloads: [{kind: cdf, cdf: bad2.txt, load: 0.5}]\n", []string{"bad2.txt: line 1", `"0 0"`}},
		{"CDF last percent", star + "workloads: [{kind: cdf, cdf: bad3.txt, load: 0.5}]\n", []string{"bad3.txt", "last point must have percent 100"}},
		{"CDF not numbers", star + "workloads: [{kind: cdf, cdf: bad4.txt, load: 0.5}]\n", []string{"bad4.txt: line 2"}},
		{"load zero", star + "workloads: [{kind: cdf, cdf: ws.txt, load: 0}]\n", []string{"workloads[0].load: 0 is outside the allowed range 1e-06..1"}},
		{"load tiny", star + "workloads: [{kind: cdf, cdf: ws.txt, load: 1e-20}]\n", []string{"workloads[0].load: 1e-20 is outside the allowed range 1e-06..1"}},
		{"load above one", star + "workloads:\n  - {kind: cdf, cdf: ws.txt, load: 0.5}\n  - {kind: cdf, cdf: ws.txt, load: 1.5}\n", []string{"line 5", "workloads[1].load: 1.5 is outside the allowed range 1e-06..1"}},
		{"load missing", star + "workloads: [{kind: cdf, cdf: ws.txt}]\n", []string{"workloads[0].load: required for kind cdf"}},
		{"load not a number", star + "workloads: [{kind: cdf, cdf: ws.txt, load: half}]\n", []string{"workloads[0].load: want a number"}},
		{"kmin above kmax", star + cdf + "ecn: {kmin: 2MB, kmax: 1MB}\n", []string{"ecn.kmin: kmin 2MB is above kmax 1MB", "kmin <= kmax"}},
		{"kmin above default kmax", star + cdf + "ecn: {kmin: 2MB}\n", []string{"ecn.kmin: kmin 2MB is above kmax 1.6MB"}},
		{"pmax zero", star + cdf + "ecn: {pmax: 0}\n", []string{"ecn.pmax: 0 is outside (0, 1]"}},
		{"pmax above one", star + cdf + "ecn: {pmax: 1.2}\n", []string{"ecn.pmax: 1.2 is outside (0, 1]"}},
		{"bad size unit", star + cdf + "ecn: {kmin: 400QB}\n", []string{"ecn.kmin", "cannot parse size", "KiB"}},
		{"bad rate unit", "topology: {kind: star, hosts: 4, host_rate: 100Gbit}\n" + cdf, []string{"topology.host_rate", "cannot parse rate"}},
		{"bad duration", "duration: 20\ntopology: {kind: star, hosts: 4}\n" + cdf, []string{"duration", "cannot parse duration", "20ms"}},
		{"negative duration", "duration: -5ms\ntopology: {kind: star, hosts: 4}\n" + cdf, []string{"duration", "negative"}},
		{"zero duration", "duration: 0s\ntopology: {kind: star, hosts: 4}\n" + cdf, []string{"duration: 0s must be above 0"}},
		{"negative start", star + "workloads: [{kind: cdf, cdf: ws.txt, load: 0.5, start: -1ms}]\n", []string{"workloads[0].start", "negative"}},
		{"start after run", star + "workloads: [{kind: cdf, cdf: ws.txt, load: 0.5, start: 30ms}]\n", []string{"workloads[0].start", "never run"}},
		{"end before start", star + "workloads: [{kind: cdf, cdf: ws.txt, load: 0.5, start: 5ms, end: 2ms}]\n", []string{"workloads[0].end: 2ms is not after start 5ms"}},
		{"fanin above hosts", star + "workloads: [{kind: incast, fanin: 4, size: 1MB, every: 1ms}]\n", []string{"workloads[0].fanin", "4 senders need 5 hosts", "1..3"}},
		{"fanin above host subset", star + "workloads: [{kind: incast, fanin: 2, size: 1MB, every: 1ms, hosts: [host0, host1]}]\n", []string{"workloads[0].fanin", "allowed 1..1"}},
		// too few hosts listed: hosts is what is wrong, not fanin or ranks
		{"incast with one host", star + "workloads: [{kind: incast, fanin: 1, size: 1MB, every: 1ms, hosts: [host1]}]\n", []string{"workloads[0].hosts: an incast workload needs at least 2 hosts (senders and a receiver), got 1"}},
		{"incast with no hosts", star + "workloads: [{kind: incast, fanin: 1, size: 1MB, every: 1ms, hosts: []}]\n", []string{"workloads[0].hosts: an incast workload needs at least 2 hosts (senders and a receiver), got 0"}},
		{"allreduce with no hosts", star + "workloads: [{kind: allreduce, ranks: 2, size: 1MB, hosts: []}]\n", []string{"workloads[0].hosts: an allreduce workload needs at least 2 hosts, got 0"}},
		{"alltoall with one host", star + "workloads: [{kind: alltoall, ranks: 2, size: 1MB, hosts: [host0]}]\n", []string{"workloads[0].hosts: an alltoall workload needs at least 2 hosts, got 1"}},
		{"incast without every", star + "workloads: [{kind: incast, fanin: 2, size: 1MB}]\n", []string{"workloads[0].every: required"}},
		{"ranks above hosts", star + "workloads: [{kind: allreduce, ranks: 5, size: 1MB}]\n", []string{"workloads[0].ranks: 5 ranks with 4 hosts", "2..4"}},
		{"ranks below two", star + "workloads: [{kind: alltoall, ranks: 1, size: 1MB}]\n", []string{"workloads[0].ranks", "2..4"}},
		{"unknown topology kind", "topology: {kind: torus}\n" + cdf, []string{"topology.kind: unknown kind \"torus\"", "star, leafspine, hpcc"}},
		{"missing topology", cdf, []string{"topology: required"}},
		{"too few star hosts", "topology: {kind: star, hosts: 1}\n" + cdf, []string{"topology.hosts: 1 is outside 2.."}},
		{"leafspine missing count", "topology: {kind: leafspine, leaves: 2, hosts_per_leaf: 2}\n" + cdf, []string{"topology.spines: required for kind leafspine"}},
		{"hpcc topology missing", "topology: {kind: hpcc, file: none.txt}\n" + cdf, []string{"topology.file", "none.txt", "cannot read topology file"}},
		{"unknown workload kind", star + "workloads: [{kind: storage}]\n", []string{"workloads[0].kind: unknown kind \"storage\"", "cdf, incast, allreduce, alltoall, trace"}},
		{"no workloads", star, []string{"workloads: at least one workload is required"}},
		{"trace flow to a switch", "topology: {kind: hpcc, file: topo.txt}\nworkloads: [{kind: trace, file: sw.txt}]\n", []string{"workloads[0].file", "sw.txt: line 2", "node 0 is a switch"}},
		{"trace flow to nowhere", "topology: {kind: hpcc, file: topo.txt}\nworkloads: [{kind: trace, file: nonode.txt}]\n", []string{"nonode.txt: line 2", "node 9 does not exist"}},
		{"trace flow too large", "topology: {kind: hpcc, file: topo.txt}\nworkloads: [{kind: trace, file: big.txt}]\n", []string{"workloads[0].file", "big.txt: line 3: flow 2 of 2: size 3000000000 bytes is above"}},
		{"trace flow file missing", "topology: {kind: hpcc, file: topo.txt}\nworkloads: [{kind: trace, file: gone.txt}]\n", []string{"workloads[0].file", "gone.txt", "cannot read flow file"}},
		{"trace after the run", "topology: {kind: hpcc, file: topo.txt}\nworkloads: [{kind: trace, file: flows.txt}]\n", []string{"workloads[0].file: flows.txt: the first flow starts at 2.000000642s", "duration 10ms"}},
		{"trace flows past the count", "duration: 10ms\ntopology: {kind: hpcc, file: topo.txt}\nworkloads: [{kind: trace, file: under.txt}]\n",
			[]string{"workloads[0].file", "under.txt: line 3: 2 more lines after the 1 flow declared on line 1", "raise the count on line 1"}},
		{"trace takes no start", "topology: {kind: hpcc, file: topo.txt}\nworkloads: [{kind: trace, file: flows.txt, start: 1ms}]\n", []string{"workloads[0].start: not used by kind trace"}},
		{"unknown host", star + "workloads: [{kind: cdf, cdf: ws.txt, load: 0.5, hosts: [host0, host9]}]\n", []string{"workloads[0].hosts[1]: no node is named \"host9\""}},
		{"host is a switch", star + "workloads: [{kind: cdf, cdf: ws.txt, load: 0.5, hosts: [host0, sw0]}]\n", []string{"workloads[0].hosts[1]: sw0 is a switch"}},
		{"host twice", star + "workloads: [{kind: cdf, cdf: ws.txt, load: 0.5, hosts: [host0, host0]}]\n", []string{"workloads[0].hosts[1]: host0 is listed twice"}},
		{"priority is control queue", star + "workloads: [{kind: cdf, cdf: ws.txt, load: 0.5, priority: 7}]\n", []string{"workloads[0].priority: 7 is outside 0..6"}},
		{"int given as float", star + cdf + "mtu: 1.5\n", []string{"mtu: want an integer"}},
		{"bool given as yes", star + cdf + "ack_high_priority: yes\n", []string{"ack_high_priority: want true or false"}},
		{"negative seed", star + cdf + "seed: -1\n", []string{"seed: \"-1\" is not a non-negative integer"}},
		{"list for a scalar", star + cdf + "name: [a]\n", []string{"name: want a single value"}},
		{"bad formula", star + cdf + "pfc: {formula: magic}\n", []string{"pfc.formula: unknown formula \"magic\"", "ieee, hpcc"}},
		{"bad cable", star + cdf + "pfc: {cable: 5ft}\n", []string{"pfc.cable", "5m"}},
		{"alpha zero", star + cdf + "pfc: {alpha: 0}\n", []string{"pfc.alpha: 0 is outside"}},
		{"g above one", star + cdf + "dcqcn: {g: 2}\n", []string{"dcqcn.g: 2 is outside (0, 1]"}},
		{"zero timer", star + cdf + "dcqcn: {increase_timer: 0us}\n", []string{"dcqcn.increase_timer: 0us must be above 0"}},
		{"min rate above host rate", star + cdf + "dcqcn: {min_rate: 200Gbps}\n", []string{"dcqcn.min_rate: 200Gbps is above the host link rate 100Gbps"}},
		{"mtu zero", star + cdf + "mtu: 0\n", []string{"mtu: 0 is outside 1..9000"}},
		{"two documents", star + cdf + "---\nseed: 1\n", []string{"only one YAML document"}},
		{"rate overflows", "topology: {kind: leafspine, leaves: 2, spines: 1, hosts_per_leaf: 2, fabric_rate: 1e300Tbps}\n" + cdf,
			[]string{"line 1", "topology.fabric_rate", `"1e300Tbps" is above the maximum of 10Tbps`}},
		{"rate too slow", "topology: {kind: star, hosts: 4, host_rate: 1e-300bps}\n" + cdf, []string{"topology.host_rate", "below the minimum of 1bps"}},
		{"size overflows", star + cdf + "ecn: {kmax: 1e30KB}\n", []string{"ecn.kmax", `"1e30KB" is above the maximum of 1TB`}},
		{"size near int64", star + cdf + "pfc: {headroom: 9e18B}\n", []string{"pfc.headroom", "above the maximum of 1TB"}},
		{"collective size overflows", star + "workloads: [{kind: allreduce, ranks: 2, size: 1e30KB}]\n", []string{"workloads[0].size", "above the maximum of 1TB"}},
		{"duration above an hour", "duration: 2h\ntopology: {kind: star, hosts: 4}\n" + cdf, []string{"duration: 2h is above the maximum of 1h0m0s"}},
		{"buffer of one byte", "topology: {kind: star, hosts: 4, buffer: 1B}\n" + cdf, []string{"line 1", "topology.buffer: buffer 1 B is below the minimum of 4192 B for switch sw0"}},
		{"buffer below reserves and headroom", "topology: {kind: star, hosts: 4, buffer: 100KB}\n" + cdf + "pfc: {headroom: 50KB}\n",
			[]string{"topology.buffer: buffer 100000 B is below what the MMU needs", "headroom 200000 B"}},
		{"reserve above the buffer", star + cdf + "pfc: {reserve: 1GB}\n", []string{"line 4", "pfc.reserve: pfc reserve 1000000000 B per port is above the 32000000 B buffer"}},
		{"headroom above the buffer", star + cdf + "pfc: {headroom: 100MB}\n", []string{"pfc.headroom", "is 100000000 B on sw0's 100G port, above its 32000000 B buffer"}},
		{"CDF under a byte", star + "workloads: [{kind: cdf, cdf: half.txt, load: 0.5}]\n", []string{"workloads[0].cdf", "half.txt: line 2: size 0.25 B is below 1 byte"}},
		{"CDF flows too small for the load", star + "workloads: [{kind: cdf, cdf: tiny.txt, load: 1}]\n",
			[]string{"line 3", "workloads[0].cdf: load 1 of flows of 5.5 B on average is 9.091e+09 flows/s, more than the 1.02e+09/s its 4 hosts' links can start"}},
		{"incast every nanosecond", star + "workloads: [{kind: incast, fanin: 3, size: 1MB, every: 1ns}]\n",
			[]string{"line 3", "workloads[0].every: 3 × 1000000 B every 1ns is 2.4e+16 b/s, more than the 4e+11 b/s of its 4 hosts' links"}},
		{"link delay above an hour", "topology: {kind: star, hosts: 4, link_delay: 90m}\n" + cdf, []string{"topology.link_delay: 90m is above the maximum of 1h0m0s"}},
		{"not yaml", "topology: {kind: star\n", []string{"bad.yaml"}},
		{"empty", "", []string{"empty"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.src), dir, "bad.yaml")
			if err == nil {
				t.Fatalf("no error; got %+v", cfg)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "bad.yaml: ") {
				t.Errorf("error does not start with the file name: %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if cfg.Topology.Nodes != nil || cfg.Workloads != nil {
				t.Errorf("partial result returned with the error: %+v", cfg)
			}
		})
	}
}

func TestLoadMissingScenario(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml: cannot read scenario") {
		t.Fatalf("err = %v", err)
	}
}

// TestShippedScenarios loads every scenario in scenarios/ and checks the
// figures the README and the shipped files promise.
func TestShippedScenarios(t *testing.T) {
	paths, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ai-allreduce", "ai-alltoall", "daynight", "fbhadoop-50", "star-incast", "websearch-30", "websearch-50", "websearch-70"}
	if len(paths) < len(want) {
		t.Fatalf("found %d scenarios (%v), want at least %d", len(paths), paths, len(want))
	}
	got := map[string]simenv.Config{}
	for _, p := range paths {
		cfg, err := Load(p)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		got[cfg.Name] = cfg
		if _, err := simenv.New(cfg); err != nil {
			t.Errorf("%s: the simulator refuses it: %v", p, err)
		}
		if base := strings.TrimSuffix(filepath.Base(p), ".yaml"); base != cfg.Name {
			t.Errorf("%s declares name %q; keep the name and the file name the same", p, cfg.Name)
		}
	}
	for _, name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("scenario %s missing", name)
		}
	}
	for _, name := range []string{"websearch-30", "websearch-50", "websearch-70", "fbhadoop-50", "ai-allreduce", "ai-alltoall", "daynight"} {
		cfg := got[name]
		hosts, switches := 0, 0
		for _, n := range cfg.Topology.Nodes {
			if n.Switch {
				switches++
			} else {
				hosts++
			}
		}
		if hosts != 32 || switches != 6 || cfg.Duration != 20*simenv.Millisecond {
			t.Errorf("%s: %d hosts, %d switches, %s; want 32, 6, 20ms", name, hosts, switches, cfg.Duration)
		}
		for _, l := range cfg.Topology.Links {
			host := !cfg.Topology.Nodes[l.A].Switch || !cfg.Topology.Nodes[l.B].Switch
			if (host && l.RateBps != 100e9) || (!host && l.RateBps != 400e9) {
				t.Errorf("%s: link %+v: want 100G host links, 400G fabric links", name, l)
			}
		}
	}
	for name, load := range map[string]float64{"websearch-30": 0.3, "websearch-50": 0.5, "websearch-70": 0.7, "fbhadoop-50": 0.5} {
		ws := got[name].Workloads
		if len(ws) != 1 || ws[0].Kind != simenv.WorkloadCDF || ws[0].Load != load {
			t.Errorf("%s workloads = %+v", name, ws)
		}
	}
	if ws := got["websearch-50"].Workloads; len(ws) == 1 && (len(ws[0].CDF) != 12 || ws[0].CDF[11].Bytes != 30_000_000) {
		t.Errorf("websearch CDF has %d points", len(ws[0].CDF))
	}
	if ws := got["fbhadoop-50"].Workloads; len(ws) == 1 && (len(ws[0].CDF) != 20 || ws[0].CDF[19].Bytes != 10_000_000) {
		t.Errorf("fbhadoop CDF has %d points", len(ws[0].CDF))
	}
	if c := got["star-incast"]; len(c.Topology.Nodes) != 17 || len(c.Workloads) != 1 || c.Workloads[0].Kind != simenv.WorkloadIncast {
		t.Errorf("star-incast: %d nodes, workloads %+v", len(c.Topology.Nodes), c.Workloads)
	}
	kinds := func(c simenv.Config) (ks []simenv.WorkloadKind) {
		for _, w := range c.Workloads {
			ks = append(ks, w.Kind)
		}
		return ks
	}
	if ks := kinds(got["ai-allreduce"]); len(ks) != 2 || ks[0] != simenv.WorkloadAllReduce || ks[1] != simenv.WorkloadCDF {
		t.Errorf("ai-allreduce kinds %v", ks)
	}
	if ks := kinds(got["ai-alltoall"]); len(ks) != 1 || ks[0] != simenv.WorkloadAllToAll {
		t.Errorf("ai-alltoall kinds %v", ks)
	}
	dn := got["daynight"].Workloads
	if len(dn) != 3 || dn[0].Kind != simenv.WorkloadCDF || dn[2].Kind != simenv.WorkloadCDF || dn[1].Kind != simenv.WorkloadIncast ||
		dn[0].End > dn[2].Start || dn[0].Load == dn[2].Load || dn[1].End > dn[0].End {
		t.Errorf("daynight workloads do not form two windows: %+v", dn)
	}
}

// TestModelScenarioSets loads the scenarios that train, select and judge
// the built-in model (policy/builtin/scenarios, policy/builtin/validation,
// scenarios/heldout): each loads, the simulator takes it, and no name is
// in two sets, so a result can always be told apart by scenario name.
func TestModelScenarioSets(t *testing.T) {
	seen := map[string]string{}
	for _, dir := range []string{"../../policy/builtin/scenarios", "../../policy/builtin/validation", "../../policy/builtin/validation/headroom",
		"../../scenarios/heldout", "../../scenarios/heldout2", "../../scenarios/heldout3", "../../scenarios/heldout4", "../../scenarios"} {
		paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil || len(paths) < 2 {
			t.Fatalf("%s: %d scenarios (%v); want at least 2", dir, len(paths), err)
		}
		for _, p := range paths {
			cfg, err := Load(p)
			if err != nil {
				t.Errorf("%v", err)
				continue
			}
			// ecn is stated at 100 Gb/s: fifteen files wrote it at their
			// own rate (3200KB at 800G: 102.4MB in effect, above the buffer)
			for _, w := range Warnings(cfg) {
				if strings.HasPrefix(w, "pfc.headroom") && strings.Contains(p, "validation/headroom/") {
					continue // at a vendor default below the floor, on purpose: what the headroom model meets
				}
				t.Errorf("%s: %s", p, w)
			}
			if _, err := simenv.New(cfg); err != nil {
				t.Errorf("%s: the simulator refuses it: %v", p, err)
			}
			if other, ok := seen[cfg.Name]; ok {
				t.Errorf("%s and %s both declare name %q", other, p, cfg.Name)
			}
			seen[cfg.Name] = p
		}
	}
}

// TestParseFS: a scenario read from a file system (an embedded set, say)
// reads the files it names from there, relative to its own directory, and
// gives the Config that Load gives for the same files on disk.
func TestParseFS(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, p := range []string{"scenarios/websearch-50.yaml", "policy/builtin/scenarios/train-websearch.yaml"} {
		want, err := Load(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseFS(os.DirFS(root), p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: ParseFS and Load differ", p)
		}
	}
	cdf, err := os.ReadFile(filepath.Join(root, "scenarios", "cdf", "websearch.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sc := func(cdfPath string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("duration: 1ms\ntopology: {kind: star, hosts: 2}\nworkloads:\n  - {kind: cdf, cdf: " + cdfPath + ", load: 0.3}\n")}
	}
	fsys := fstest.MapFS{
		"a/b/ok.yaml":      sc("../../cdf/ws.txt"),
		"a/b/escape.yaml":  sc("../../../ws.txt"),
		"a/b/missing.yaml": sc("nosuch.txt"),
		"cdf/ws.txt":       &fstest.MapFile{Data: cdf},
	}
	if c, err := ParseFS(fsys, "a/b/ok.yaml"); err != nil || len(c.Workloads) != 1 || len(c.Workloads[0].CDF) == 0 || c.Name != "ok" {
		t.Fatalf("ok.yaml: %+v %v", c.Workloads, err)
	}
	for file, want := range map[string]string{
		"a/b/escape.yaml":  "../../../ws.txt is outside the embedded scenarios",
		"a/b/missing.yaml": "a/b/nosuch.txt: cannot read CDF file",
		"a/b/none.yaml":    "a/b/none.yaml: cannot read scenario",
	} {
		if _, err := ParseFS(fsys, file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to say %q", file, err, want)
		}
	}
}

// A bare size is an error that shows the fix; a threshold below one MTU
// loads with a warning.
func TestBareSizeAndMTUWarning(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.yaml")
	base := "topology: {kind: star, hosts: 3, host_rate: 25Gbps}\nworkloads: [{kind: incast, fanin: 2, size: 100KB, every: 100us}]\n"
	if err := os.WriteFile(p, []byte(base+"ecn: {kmin: 400, kmax: 1600KB, pmax: 0.2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), `line 3: ecn.kmin: size "400" has no unit: write 400KB`) {
		t.Errorf("bare kmin: %v", err)
	}
	if err := os.WriteFile(p, []byte(base+"ecn: {kmin: 400B, kmax: 1600KB, pmax: 0.2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if w := Warnings(c); len(w) != 2 || !strings.Contains(w[0], "ecn: kmin 400B is below one MTU") || !strings.Contains(w[1], "ecn as in effect at 25Gbps") {
		t.Errorf("warnings %q", w)
	}
	// the thresholds in effect on slower ports: the default 400KB/1.6MB
	// scaled to 100 Mb/s is 400B/1.6KB (no warning said so)
	slow, err := Parse([]byte("topology: {kind: star, hosts: 4, host_rate: 100Mbps}\nworkloads: [{kind: incast, fanin: 2, size: 10KB, every: 10ms}]\ndcqcn: {min_rate: 10Mbps}\n"), dir, "dir/slow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if w := Warnings(slow); len(w) != 1 || !strings.Contains(w[0], "ecn as in effect at 100Mbps") || !strings.Contains(w[0], "kmin 400B") {
		t.Errorf("warnings at 100 Mb/s %q", w)
	}
}

// TestUnitsRequiredOnEverySize: every size and rate key of a scenario
// refuses a bare number, quoted or a YAML integer, and the error names the
// key, its line and the fix; pmax needs no unit and takes a percentage.
func TestUnitsRequiredOnEverySize(t *testing.T) {
	dir := writeFiles(t, map[string]string{"ws.txt": testCDF})
	cdf := "workloads: [{kind: cdf, cdf: ws.txt, load: 0.5}]\n"
	star := func(extra string) string { return "topology: {kind: star, hosts: 4" + extra + "}\n" }
	for _, tc := range []struct{ src, field, fix string }{
		{star(", buffer: 32000000") + cdf, "topology.buffer", "32000000B (32MB)"},
		{star(", host_rate: 100") + cdf, "topology.host_rate", "100Gbps"},
		{star(", host_rate: \"25\"") + cdf, "topology.host_rate", "25Gbps"},
		{"topology: {kind: leafspine, leaves: 2, spines: 1, hosts_per_leaf: 2, fabric_rate: 400}\n" + cdf, "topology.fabric_rate", "400Gbps"},
		{star("") + cdf + "ecn: {kmin: 400}\n", "ecn.kmin", "400KB"},
		{star("") + cdf + "ecn: {kmax: \"1600\"}\n", "ecn.kmax", "1600KB"},
		{star("") + cdf + "ecn: {kmax: 1.6e6}\n", "ecn.kmax", "1.6e6B (1.6MB)"},
		{star("") + cdf + "pfc: {headroom: 52000}\n", "pfc.headroom", "52000KB"},
		{star("") + cdf + "pfc: {reserve: 2048}\n", "pfc.reserve", "2048KB"},
		{star("") + cdf + "pfc: {xon_offset: 1000}\n", "pfc.xon_offset", "1000KB"},
		{star("") + cdf + "dcqcn: {ai: 20}\n", "dcqcn.ai", "20Gbps"},
		{star("") + cdf + "dcqcn: {hai: 200}\n", "dcqcn.hai", "200Gbps"},
		{star("") + cdf + "dcqcn: {min_rate: 1}\n", "dcqcn.min_rate", "1Gbps"},
		{star("") + cdf + "dcqcn: {byte_counter: 10000000}\n", "dcqcn.byte_counter", "10000000B (10MB)"},
		{star("") + "workloads: [{kind: incast, fanin: 2, size: 1000000, every: 1ms}]\n", "workloads[0].size", "1000000B (1MB)"},
	} {
		_, err := Parse([]byte(tc.src), dir, "s.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.field+": ") || !strings.Contains(err.Error(), "has no unit") ||
			!strings.Contains(err.Error(), "write "+tc.fix) || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: %v", tc.field, err)
		}
	}
	// Zero needs no unit.
	if _, err := Parse([]byte(star("")+cdf+"ecn: {kmin: 0}\npfc: {reserve: 0}\n"), dir, "s.yaml"); err != nil {
		t.Errorf("kmin: 0: %v", err)
	}
	for _, pm := range []struct {
		in   string
		want float64
	}{{"0.2", 0.2}, {"20%", 0.2}, {"\"0.3%\"", 0.003}} {
		c, err := Parse([]byte(star("")+cdf+"ecn: {pmax: "+pm.in+"}\n"), dir, "s.yaml")
		if err != nil || c.ECN.Pmax != pm.want {
			t.Errorf("pmax: %s = %g, %v; want %g", pm.in, c.ECN.Pmax, err, pm.want)
		}
	}
	if _, err := Parse([]byte(star("")+cdf+"ecn: {pmax: high}\n"), dir, "s.yaml"); err == nil || !strings.Contains(err.Error(), `ecn.pmax: "high" is not a fraction`) {
		t.Errorf("pmax: high: %v", err)
	}
}

// The threshold warnings read the scenario's own packet (mtu plus
// headers: 2KB under a 4000 B MTU is below one packet) and buffer (an 800G
// port with ecn written at its own rate, 3200KB scaled to 25.6MB/102.4MB,
// never marks at pmax on a 48 MB switch).
func TestWarningsReadMTUAndBuffer(t *testing.T) {
	dir := t.TempDir()
	c, err := Parse([]byte("topology: {kind: star, hosts: 3}\nmtu: 4000\necn: {kmin: 2KB, kmax: 3KB, pmax: 0.2}\nworkloads: [{kind: incast, fanin: 2, size: 100KB, every: 100us}]\n"), dir, "mtu.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if w := Warnings(c); len(w) != 2 || !strings.Contains(w[0], "kmin 2KB is below one MTU (4.048KB)") {
		t.Errorf("mtu 4000: %q", w)
	}
	c, err = Parse([]byte("topology: {kind: star, hosts: 3, host_rate: 800Gbps, buffer: 48MB}\necn: {kmin: 3200KB, kmax: 12800KB, pmax: 0.2}\ndcqcn: {min_rate: 8Gbps}\nworkloads: [{kind: incast, fanin: 2, size: 100KB, every: 100us}]\n"), dir, "s800.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if w := Warnings(c); len(w) != 1 || !strings.Contains(w[0], "at 800Gbps (stated at 100Gbps, scaled): kmax 102.4MB is above the switch's buffer 48MB") {
		t.Errorf("800G: %q", w)
	}
	c.ECN.KminBytes, c.ECN.KmaxBytes = 400_000, 1_600_000
	if w := Warnings(c); len(w) != 0 {
		t.Errorf("800G at 400KB/1.6MB stated at 100G: %q", w)
	}
}

// pfc.headroom is stated at 100G and scaled: below the lossless floor
// where it is in effect, a warning says so (40KB at 25G with 400 m cables
// is 10KB against a 39.9KB floor; the lossless class dropped 445 packets).
func TestHeadroomBelowFloorWarned(t *testing.T) {
	src := "topology: {kind: star, hosts: 4, host_rate: 25Gbps, link_delay: 2us, buffer: 1MB}\necn: {kmin: 100KB, kmax: 400KB}\npfc: {enabled: true, cable: 400m, headroom: %s}\nworkloads: [{kind: incast, fanin: 3, size: 100KB, every: 1ms}]\n"
	c, err := Parse([]byte(fmt.Sprintf(src, "40KB")), t.TempDir(), "h.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if w := Warnings(c); len(w) != 1 || !strings.Contains(w[0], "pfc.headroom 40KB (stated at 100Gbps, scaled) is 10KB in effect at 25Gbps") || !strings.Contains(w[0], "below the lossless floor 39.88KB") {
		t.Errorf("warnings %q", w)
	}
	if c, err = Parse([]byte(fmt.Sprintf(src, "160KB")), t.TempDir(), "h.yaml"); err != nil {
		t.Fatal(err)
	}
	if w := Warnings(c); len(w) != 0 {
		t.Errorf("160KB (40KB at 25G, above the floor): %q", w)
	}
}

// The hpcc formula's headroom (3 x rate x link delay) is below one frame on
// a short cable: warned about as an explicit pfc.headroom is (a 10 ns link
// at 100G gave 375B, and the lossless class dropped 2,925 packets in
// silence); at 5 us it is above the floor and not warned about.
func TestFormulaHeadroomBelowFloorWarned(t *testing.T) {
	src := "topology: {kind: star, hosts: 17, host_rate: 100Gbps, link_delay: %s, buffer: 4MB}\npfc: {enabled: true, cable: 5m, formula: hpcc}\nworkloads: [{kind: incast, fanin: 16, size: 1MB, every: 2ms}]\n"
	c, err := Parse([]byte(fmt.Sprintf(src, "10ns")), t.TempDir(), "h.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if w := Warnings(c); len(w) != 1 || !strings.Contains(w[0], "pfc headroom 375B (the pfc.formula hpcc: 3 x rate x link delay rule) at 100Gbps with a 10ns link is below the lossless floor") {
		t.Errorf("warnings %q", w)
	}
	if c, err = Parse([]byte(fmt.Sprintf(src, "5us")), t.TempDir(), "h.yaml"); err != nil {
		t.Fatal(err)
	}
	if w := Warnings(c); len(w) != 0 {
		t.Errorf("5us link (187.5KB of headroom): %q", w)
	}
}

// With host links of different rates, each host is offered the load of its
// own link: a flow's source is drawn in proportion to its link rate (drawn
// uniformly, 10G hosts beside 100G ones were offered 1.4-2.2 of their link
// at load 0.5, the 100G ones 0.2-0.4).
func TestMixedRateHostsOfferedOwnLoad(t *testing.T) {
	dir := writeFiles(t, map[string]string{"ws.txt": testCDF,
		"mixed.txt": "5 1 4\n4\n0 4 100Gbps 1000ns 0\n1 4 100Gbps 1000ns 0\n2 4 10Gbps 1000ns 0\n3 4 10Gbps 1000ns 0\n",
		"m.yaml":    "seed: 3\nduration: 4ms\ntopology: {kind: hpcc, file: mixed.txt, buffer: 32MB}\nworkloads: [{kind: cdf, cdf: ws.txt, load: 0.5}]\n"})
	cfg, err := Load(filepath.Join(dir, "m.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := simenv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Run()
	n, in := map[int]float64{}, map[int]float64{}
	for _, f := range s.Flows() {
		n[f.Src]++
		in[f.Dst]++
	}
	fast, slow := n[0]+n[1], n[2]+n[3]
	if slow == 0 || fast/slow < 6 || fast/slow > 16 {
		t.Fatalf("flows from the 100G hosts %v, from the 10G hosts %v: want about 10 times as many", fast, slow)
	}
	// received: in proportion to the link among the others (10G: 7.8% of
	// the flows each, 0.86 of the link; drawn uniformly, 3.5 of it)
	if fastIn, slowIn := in[0]+in[1], in[2]+in[3]; slowIn == 0 || fastIn/slowIn < 3.5 || fastIn/slowIn > 9 {
		t.Fatalf("flows to the 100G hosts %v, to the 10G hosts %v: want about 5.5 times as many", fastIn, slowIn)
	}
}

// A key given with no value is an error at its line, not the default:
// "pfc: {enabled: }" ran with PFC on; "kmin: ”" blamed the default kmin.
func TestKeyWithoutValueRefused(t *testing.T) {
	dir := writeFiles(t, map[string]string{"ws.txt": testCDF})
	base := "topology: {kind: star, hosts: 4}\nworkloads: [{kind: cdf, cdf: ws.txt, load: 0.5}]\n"
	for _, c := range []struct{ src, want string }{
		{base + "pfc: {enabled: }\n", "line 3: pfc.enabled: no value"},
		{base + "ecn: {kmin: \"\", kmax: 100KB}\n", "line 3: ecn.kmin: no value"},
		{base + "duration:\n", "line 3: duration: no value"},
		{"topology: {kind: star, hosts: 4}\nworkloads: [{kind: cdf, cdf: ws.txt, load: ~}]\n", "line 2: workloads[0].load: no value"},
	} {
		if _, err := Parse([]byte(c.src), dir, "s.yaml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
}
