package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/simenv/report"
)

func runSim(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	c := newSimCmd()
	var out, errOut bytes.Buffer
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(&errOut)
	c.SilenceUsage = true
	c.SilenceErrors = true
	err := c.Execute()
	return out.String(), errOut.String(), err
}

// TestSimFlagErrors covers the errors raised before any simulation starts;
// each names the flag or file at fault.
func TestSimFlagErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("topology: {kind: star, hosts: 4}\nworkloads: [{kind: incast, fanin: 9, size: 1MB, every: 1ms}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{nil, "give --scenario FILE (YAML) or --hpcc-config FILE"},
		{[]string{"--scenario", "a.yaml", "--hpcc-config", "b.txt"}, "--scenario and --hpcc-config both given"},
		{[]string{"--scenario", filepath.Join(dir, "none.yaml")}, "none.yaml: cannot read scenario"},
		{[]string{"--hpcc-config", filepath.Join(dir, "none.txt")}, "none.txt: cannot read HPCC config"},
		{[]string{"--scenario", bad}, "workloads[0].fanin: 9 senders need 10 hosts"},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--duration", "5"}, "--duration: cannot parse duration \"5\""},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--duration", "0ms"}, "--duration: 0ms must be above 0"},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--fct-out", filepath.Join(dir, "no", "such", "dir.txt")}, "--fct-out: open"},
		{[]string{"--seed", "x", "--scenario", "../../scenarios/star-incast.yaml"}, "invalid argument \"x\" for \"--seed\""},
		{[]string{"extra"}, "unknown command \"extra\""},
	}
	for _, tc := range cases {
		_, _, err := runSim(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sim %v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// TestSimRunsScenario runs the shipped star incast end to end: 15 senders ×
// 1 MB to one receiver every 2 ms for 10 ms is five bursts of 15 flows,
// at 0 to 8 ms, and all finish (the one due at 10 ms, the run's end, does
// not start: it was counted as 15 unfinished flows).
func TestSimRunsScenario(t *testing.T) {
	fctPath := filepath.Join(t.TempDir(), "fct.txt")
	out, errOut, err := runSim(t, "--scenario", "../../scenarios/star-incast.yaml", "--json", "--fct-out", fctPath, "--seed", "3")
	if err != nil {
		t.Fatal(err)
	}
	// Off a terminal a short run prints no progress, only the file it wrote.
	if errOut != "wrote "+fctPath+"\n" {
		t.Errorf("stderr %q, want only the --fct-out file written", errOut)
	}
	var sum struct {
		Scenario    string  `json:"scenario"`
		Seed        uint64  `json:"seed"`
		Flows       int     `json:"flows"`
		Finished    int     `json:"finished"`
		Unfinished  int     `json:"unfinished"`
		SimTimeS    float64 `json:"sim_time_s"`
		WallS       float64 `json:"wall_s"`
		PacketHops  uint64  `json:"packet_hops"`
		GoodputGbps float64 `json:"goodput_gbps"`
		FCT         map[string]struct {
			N   int     `json:"n"`
			P50 float64 `json:"p50"`
		} `json:"fct_slowdown"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if sum.Scenario != "star-incast" || sum.Seed != 3 || sum.Flows != 75 || sum.Finished != 75 || sum.Unfinished != 0 ||
		sum.SimTimeS != 0.01 || sum.WallS <= 0 || sum.PacketHops == 0 {
		t.Errorf("summary %+v", sum)
	}
	// 75 MB delivered at most at the receiver's 100 Gb/s: the flows of a
	// burst share one link, so each is slowed down about 15-fold.
	if b := sum.FCT[">=1MB"]; b.N != 75 || b.P50 < 10 || b.P50 > 20 {
		t.Errorf(">=1MB bucket %+v, want 75 flows with median slowdown in 10..20", b)
	}
	if sum.GoodputGbps < 50 || sum.GoodputGbps > 100 {
		t.Errorf("goodput %g Gb/s, want 50..100 (one 100G receiver, busy most of the run)", sum.GoodputGbps)
	}
	fh, err := os.Open(fctPath)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	flows, err := report.ReadFCT(fh)
	if err != nil {
		t.Fatal(err)
	}
	if len(flows) != 75 {
		t.Fatalf("fct file has %d flows, want 75", len(flows))
	}
	for i, f := range flows {
		if f.SizeBytes != 1_000_000 || f.Dst == f.Src || (i > 0 && f.Finish < flows[i-1].Finish) {
			t.Errorf("fct flow %d: %+v (want 1 MB flows in finish order)", i, f)
		}
	}

	// The same seed gives the same run; the text form carries the table.
	text1, _, err := runSim(t, "--scenario", "../../scenarios/star-incast.yaml", "--duration", "3ms")
	if err != nil {
		t.Fatal(err)
	}
	text2, _, _ := runSim(t, "--scenario", "../../scenarios/star-incast.yaml", "--duration", "3ms")
	cut := func(s string) string { return s[:strings.Index(s, "wall time")] }
	if cut(text1) != cut(text2) {
		t.Errorf("two runs with one seed differ:\n%s\n%s", text1, text2)
	}
	for _, want := range []string{"scenario star-incast, seed 1", "FCT slowdown", "30 started, 15 finished, 15 unfinished", "simulated time         3 ms"} {
		if !strings.Contains(text1, want) {
			t.Errorf("text lacks %q:\n%s", want, text1)
		}
	}
}

// TestSimRunsHPCCConfig runs ns-3's single 1 MB flow and compares with the
// reference: same flow in the fct file, FCT within 3% of ns-3's 87,091 ns.
func TestSimRunsHPCCConfig(t *testing.T) {
	cfgPath := "../../testdata/ns3-hpcc/config_star_single1MB_dcqcn.txt"
	if _, err := os.Stat(cfgPath); err != nil {
		t.Fatalf("reference data missing (testdata/ns3-hpcc is part of the repository): %v", err)
	}
	fctPath := filepath.Join(t.TempDir(), "fct.txt")
	if _, _, err := runSim(t, "--hpcc-config", cfgPath, "--fct-out", fctPath); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(fctPath)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(data))
	if len(f) != 8 || strings.Join(f[:6], " ") != "0b000201 0b000301 "+f[2]+" 100 1000000 2000000000" {
		t.Fatalf("fct = %q", data)
	}
	fct, _ := strconv.Atoi(f[6])
	if math.Abs(float64(fct)-87091)/87091 > 0.03 {
		t.Errorf("FCT %d ns, ns-3 took 87091 ns", fct)
	}
}

// TestSimReportsCollectives: sim --json carries each collective workload's
// iteration times (the shipped all-to-all completes one iteration in
// about 0.73 ms).
func TestSimReportsCollectives(t *testing.T) {
	out, _, err := runSim(t, "--scenario", "../../scenarios/ai-alltoall.yaml", "--json", "--duration", "1ms")
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Collectives []struct {
			Kind       string  `json:"kind"`
			Iterations int     `json:"iterations"`
			P99        float64 `json:"iter_p99_us"`
		} `json:"collectives"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Collectives) != 1 || sum.Collectives[0].Kind != "alltoall" || sum.Collectives[0].Iterations < 1 || sum.Collectives[0].P99 <= 0 {
		t.Fatalf("collectives %+v", sum.Collectives)
	}
}

// sim --report writes the heatmaps and the page, and says where.
func TestSimReportWritesHeatmaps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rep")
	_, errOut, err := runSim(t, "--scenario", "../../scenarios/star-incast.yaml", "--duration", "2ms", "--report", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"fabric-depth.png", "time-depth.png", "time-marks.png", "time-pfc.png", "index.html"} {
		p := filepath.Join(dir, f)
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if !strings.Contains(errOut, "wrote "+p) {
			t.Errorf("stderr does not say it wrote %s: %q", p, errOut)
		}
	}
}

// A run whose flows start at 2 s (the HPCC flow files) stops once its
// flows are done, whatever --duration allows: the summary is the same
// with the config's 4 s and with 2.003 s, and goodput and utilisation are
// also given from the first flow's start (a 16 -> 1 incast of 1 MB each:
// tens of Gb/s, not the 0.06 Gb/s a 2 s idle lead-in made of it).
func TestSimHPCCStopsWhenIdle(t *testing.T) {
	cfgPath := "../../testdata/ns3-hpcc/config_star_incast16_dcqcn.txt"
	var sums [2]struct {
		SimTimeS    float64 `json:"sim_time_s"`
		Util        float64 `json:"utilisation_from_first_flow"`
		Goodput     float64 `json:"goodput_gbps"`
		GoodputFrom float64 `json:"goodput_from_first_flow_gbps"`
	}
	for i, extra := range [][]string{nil, {"--duration", "2003ms"}} {
		out, _, err := runSim(t, append([]string{"--hpcc-config", cfgPath, "--json"}, extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &sums[i]); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	if sums[0] != sums[1] || sums[0].SimTimeS > 2.0025 || sums[0].GoodputFrom < 40 || sums[0].Goodput > 1 {
		t.Fatalf("4 s config %+v, --duration 2003ms %+v: want the same, ended within 0.1 ms of the last flow, and goodput from the first flow over 40 Gb/s", sums[0], sums[1])
	}
}

// A run that starts no flow says so on stderr, and why each workload
// started none (a cdf load too low for its window, with the flows it
// expects), and its simulated time is the run's duration (it printed a
// table of zeros and "simulated time 0 ms", exit 0, nothing said).
func TestSimWarnsWhenNoFlowStarts(t *testing.T) {
	cdf, err := filepath.Abs("../../scenarios/cdf/websearch.txt")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "idle.yaml")
	if err := os.WriteFile(path, []byte("name: idle\nduration: 3ms\ntopology: {kind: star, hosts: 4, host_rate: 100Gbps, link_delay: 1us, buffer: 32MB}\n"+
		"workloads:\n  - {kind: cdf, cdf: "+cdf+", load: 0.000001, end: 0.5ms}\n  - {kind: incast, fanin: 2, size: 1MB, every: 1ms, start: 2ms}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, seed := range []string{"1", "2"} {
		out, errOut, err := runSim(t, "--scenario", path, "--json", "--seed", seed, "--duration", "1ms")
		if err != nil {
			t.Fatal(err)
		}
		var sum struct {
			Flows    int     `json:"flows"`
			SimTimeS float64 `json:"sim_time_s"`
		}
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if sum.Flows != 0 || sum.SimTimeS != 1e-3 {
			t.Errorf("seed %s: %d flows, simulated time %g s; want none over the 1 ms run", seed, sum.Flows, sum.SimTimeS)
		}
		for _, want := range []string{"warning: no flow started in the 1ms run of idle",
			"warning: workloads[0] (cdf) at load 1e-06 starts 0.0292 flows/s of 1.711MB on average: 1.5e-05 expected in its 500µs, too few to count on (raise its load",
			"warning: workloads[1] (incast) starts at 2ms, when the run has ended (give --duration above 2ms)"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("seed %s: stderr %q; want %q", seed, errOut, want)
			}
		}
	}
	// a run with flows says nothing of the kind
	if _, errOut, err := runSim(t, "--scenario", "../../scenarios/star-incast.yaml", "--duration", "1ms"); err != nil || strings.Contains(errOut, "no flow") {
		t.Errorf("a run with flows: %q, %v", errOut, err)
	}
}
