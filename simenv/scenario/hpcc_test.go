package scenario

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/simenv"
)

// refDir holds the ns-3 HPCC reference runs (see its README.md).
const refDir = "../../testdata/ns3-hpcc"

func needRef(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(refDir); err != nil {
		t.Fatalf("reference files absent: %v", err)
	}
}

func TestLoadHPCCReferenceConfigs(t *testing.T) {
	needRef(t)
	paths, _ := filepath.Glob(filepath.Join(refDir, "config_*.txt"))
	if len(paths) != 6 {
		t.Fatalf("found %d reference configs, want 6", len(paths))
	}
	flows := map[string]int{"fat_ws30_dcqcn": 3198, "star_incast16_dcqcn": 16, "star_incast2_dcqcn": 2,
		"star_incast60_buf4_dcqcn": 60, "star_incast60_dcqcn": 60, "star_single1MB_dcqcn": 1}
	for _, p := range paths {
		cfg, err := LoadHPCCConfig(p)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if _, err := simenv.New(cfg); err != nil {
			t.Errorf("%s: the simulator refuses it: %v", p, err)
		}
		n, ok := flows[cfg.Name]
		if !ok {
			t.Errorf("%s: unexpected name %q", p, cfg.Name)
			continue
		}
		if len(cfg.Workloads) != 1 || cfg.Workloads[0].Kind != simenv.WorkloadTrace || len(cfg.Workloads[0].Flows) != n {
			t.Errorf("%s: want one trace workload of %d flows", cfg.Name, n)
		}
		wantBuf := int64(32 << 20)
		if strings.Contains(cfg.Name, "buf4") {
			wantBuf = 4 << 20
		}
		if cfg.BufferBytes != wantBuf {
			t.Errorf("%s: buffer %d, want %d", cfg.Name, cfg.BufferBytes, wantBuf)
		}
		wantDCQCN := simenv.DCQCNConfig{Enabled: true, G: 1.0 / 256, AIBps: 20e6, HAIBps: 200e6,
			IncreaseTimer: 300 * simenv.Microsecond, AlphaTimer: simenv.Microsecond, DecreaseTimer: 4 * simenv.Microsecond,
			MinRateBps: 1e9, FastRecoverySteps: 1}
		if cfg.DCQCN != wantDCQCN {
			t.Errorf("%s: DCQCN %+v, want %+v", cfg.Name, cfg.DCQCN, wantDCQCN)
		}
		wantPFC := simenv.PFCConfig{Enabled: true, Alpha: 0.125, AlphaScaleWithRate: true, CableMeters: simenv.DefaultConfig().PFC.CableMeters,
			HeadroomFormula: simenv.HeadroomHPCC, ReserveBytes: 4096, XonOffsetBytes: 3072}
		if cfg.PFC != wantPFC {
			t.Errorf("%s: PFC %+v, want %+v", cfg.Name, cfg.PFC, wantPFC)
		}
		if cfg.MTU != 1000 || cfg.HeaderBytes != 48 || cfg.AckHighPriority || cfg.AckBytes != 60 || cfg.AckEvery != 1 || cfg.Duration != 4*simenv.Second {
			t.Errorf("%s: mtu %d header %d ackhigh %v ackevery %d duration %s", cfg.Name, cfg.MTU, cfg.HeaderBytes, cfg.AckHighPriority, cfg.AckEvery, cfg.Duration)
		}
		if e := cfg.ECNByRate[100e9]; e != (simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}) || cfg.ECN != e {
			t.Errorf("%s: ECN at 100G %+v, ECN %+v", cfg.Name, e, cfg.ECN)
		}
	}
}

func TestHPCCFatTree(t *testing.T) {
	needRef(t)
	cfg, err := LoadHPCCConfig(filepath.Join(refDir, "config_fat_ws30_dcqcn.txt"))
	if err != nil {
		t.Fatal(err)
	}
	topo := cfg.Topology
	hosts, switches := 0, 0
	for id, n := range topo.Nodes {
		want := "host" + strconv.Itoa(id)
		if n.Switch {
			want = "sw" + strconv.Itoa(id)
			switches++
		} else {
			hosts++
		}
		if n.Name != want {
			t.Fatalf("node %d named %q, want %q", id, n.Name, want)
		}
	}
	if hosts != 320 || switches != 56 || len(topo.Links) != 480 || topo.Kind != "hpcc" {
		t.Fatalf("fat tree: %d hosts %d switches %d links, want 320 56 480", hosts, switches, len(topo.Links))
	}
	if l := topo.Links[0]; l != (simenv.Link{A: 0, B: 320, RateBps: 100e9, Delay: simenv.Microsecond}) {
		t.Errorf("first link %+v", l)
	}
	if e := cfg.ECNByRate[400e9]; e != (simenv.ECN{KminBytes: 1_600_000, KmaxBytes: 6_400_000, Pmax: 0.2}) {
		t.Errorf("ECN at 400G %+v", e)
	}
	fl := cfg.Workloads[0].Flows
	if fl[0] != (simenv.TraceFlow{Src: 100, Dst: 192, Priority: 3, DPort: 100, SizeBytes: 17138, Start: 2_000_000_642 * simenv.Nanosecond}) {
		t.Errorf("first flow %+v", fl[0])
	}
	var total int64
	for _, f := range fl {
		total += f.SizeBytes
	}
	if total < 5.28e9 || total > 5.30e9 {
		t.Errorf("flows carry %d bytes, README says 5.29 GB", total)
	}
}

// TestFlowStartsMatchNS3 checks the conversion of start seconds against the
// start_ns ns-3 wrote for every flow of the fat-tree run (ns-3 truncates the
// double: 2.000000643 s starts at 2000000642 ns).
func TestFlowStartsMatchNS3(t *testing.T) {
	needRef(t)
	flows, err := LoadFlowFile(filepath.Join(refDir, "ws30_5ms.txt"))
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		src, dst int
		size     int64
	}
	starts := map[key][]int64{}
	for _, f := range flows {
		k := key{f.Src, f.Dst, f.SizeBytes}
		starts[k] = append(starts[k], f.Start.Ns())
	}
	fh, err := os.Open(filepath.Join(refDir, "fct_fat_ws30_dcqcn.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	matched := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sip, _ := strconv.ParseUint(f[0], 16, 32)
		dip, _ := strconv.ParseUint(f[1], 16, 32)
		size, _ := strconv.ParseInt(f[4], 10, 64)
		start, _ := strconv.ParseInt(f[5], 10, 64)
		k := key{int(sip>>8) & 0xffff, int(dip>>8) & 0xffff, size}
		found := false
		for _, s := range starts[k] {
			if s == start {
				found = true
			}
		}
		if !found {
			t.Errorf("ns-3 flow %v started at %d ns; our starts for it: %v", k, start, starts[k])
			continue
		}
		matched++
	}
	if matched != 3198 {
		t.Errorf("matched %d flows, want 3198", matched)
	}
}

func TestNS3Units(t *testing.T) {
	rates := map[string]float64{"100Gbps": 100e9, "20Mb/s": 20e6, "1000Mb/s": 1e9, "400Gb/s": 400e9,
		"1000": 1000, "1KiB/s": 8192, "2GBps": 16e9, "10kbps": 1e4}
	for s, want := range rates {
		if got, err := parseNS3Rate(s); err != nil || got != want {
			t.Errorf("parseNS3Rate(%q) = %g, %v; want %g", s, got, err, want)
		}
	}
	for _, s := range []string{"", "fast", "100Gbit", "-1Gbps", "0bps", "NaNbps"} {
		if _, err := parseNS3Rate(s); err == nil {
			t.Errorf("parseNS3Rate(%q) accepted", s)
		}
	}
	times := map[string]simenv.Time{"1000ns": simenv.Microsecond, "0.001ms": simenv.Microsecond, "1us": simenv.Microsecond,
		"2": 2 * simenv.Second, "1.5s": 1500 * simenv.Millisecond, "1500ps": simenv.Nanosecond, "1min": 60 * simenv.Second,
		"2.000000643s": 2_000_000_642 * simenv.Nanosecond}
	for s, want := range times {
		if got, err := parseNS3Time(s); err != nil || got != want {
			t.Errorf("parseNS3Time(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "soon", "-1us", "1e300s", "1 us"} {
		if _, err := parseNS3Time(s); err == nil {
			t.Errorf("parseNS3Time(%q) accepted", s)
		}
	}
}

// hpccBase is a minimal valid config for the error table to break.
var hpccBase = []string{
	"TOPOLOGY_FILE topo.txt", "FLOW_FILE flows.txt", "CC_MODE 1", "HAS_WIN 0",
	"RATE_AI 20Mb/s", "RATE_HAI 200Mb/s", "RP_TIMER 300", "EWMA_GAIN 0.00390625", "L2_ACK_INTERVAL 1",
	"KMAX_MAP 2 100000000000 1600 400000000000 6400", "KMIN_MAP 2 100000000000 400 400000000000 1600",
	"PMAX_MAP 2 100000000000 0.2 400000000000 0.2",
}

func hpccWith(replace map[string]string, extra ...string) string {
	var lines []string
	for _, l := range hpccBase {
		key := strings.Fields(l)[0]
		if r, ok := replace[key]; ok {
			if r != "" {
				lines = append(lines, r)
			}
			continue
		}
		lines = append(lines, l)
	}
	return strings.Join(append(lines, extra...), "\n") + "\n"
}

func TestHPCCConfigDefaults(t *testing.T) {
	dir := writeFiles(t, map[string]string{"topo.txt": testTopo, "flows.txt": testFlows})
	cfg, err := ParseHPCCConfig([]byte(hpccWith(nil)), dir, "config_x.txt")
	if err != nil {
		t.Fatal(err)
	}
	// third.cc's defaults for the omitted keys.
	if cfg.Name != "x" || cfg.BufferBytes != 16<<20 || cfg.Duration != 3_009_999_999*simenv.Nanosecond || cfg.AckHighPriority ||
		cfg.DCQCN.AlphaTimer != 55*simenv.Microsecond || cfg.DCQCN.FastRecoverySteps != 5 || cfg.DCQCN.MinRateBps != 100e6 ||
		!cfg.DCQCN.Enabled || cfg.MTU != 1000 {
		t.Errorf("defaults: %+v", cfg)
	}
	if len(cfg.ECNByRate) != 2 {
		t.Errorf("ECNByRate %v", cfg.ECNByRate)
	}
	if cfg.ECNOff {
		t.Error("default ENABLE_QCN: ECN marking off")
	}
	// ENABLE_QCN 0, explicit values. SIMULATOR_STOP_TIME 2.01 is 2009999999 ns
	// as in ns-3, which truncates the double 2.0099999999999997868.
	cfg, err = ParseHPCCConfig([]byte(hpccWith(nil, "ENABLE_QCN 0", "BUFFER_SIZE 9", "SIMULATOR_STOP_TIME 2.01",
		"PACKET_PAYLOAD_SIZE 4000", "L2_CHUNK_SIZE 4000", "ACK_HIGH_PRIO 1", "MIN_RATE 1Gbps", "PAUSE_TIME 5",
		"USE_DYNAMIC_PFC_THRESHOLD 0", "LINK_DOWN 0 0 0", "FCT_OUTPUT_FILE out.txt", "U_TARGET 0.95")), dir, "c.txt")
	if err != nil {
		t.Fatal(err)
	}
	// ACK_HIGH_PRIO 1 is a host-NIC setting in ns-3: switches still queue
	// ACKs with the data, so AckHighPriority stays false; ACKs are 60 B.
	// ENABLE_QCN 0 also turns switch marking off, as third.cc sets the
	// switches' EcnEnabled from it.
	if !cfg.ECNOff {
		t.Error("ENABLE_QCN 0: switches still mark ECN (ns-3 turns EcnEnabled off)")
	}
	if cfg.DCQCN.Enabled || cfg.BufferBytes != 9<<20 || cfg.Duration != 2_009_999_999*simenv.Nanosecond || cfg.MTU != 4000 ||
		cfg.AckHighPriority || cfg.AckBytes != 60 || cfg.DCQCN.MinRateBps != 1e9 {
		t.Errorf("explicit values: %+v", cfg)
	}
}

func TestHPCCConfigOnlyLowRateMap(t *testing.T) {
	// No 100G entry: ECN is the 25G entry restated at 100G.
	topo := "3 1 2\n0\n0 1 25Gbps 1us 0\n0 2 25Gbps 1us 0\n"
	dir := writeFiles(t, map[string]string{"topo.txt": topo, "flows.txt": "1\n1 2 3 100 1000 2\n"})
	src := hpccWith(map[string]string{"KMAX_MAP": "KMAX_MAP 1 25000000000 400", "KMIN_MAP": "KMIN_MAP 1 25000000000 100",
		"PMAX_MAP": "PMAX_MAP 1 25000000000 0.1"})
	cfg, err := ParseHPCCConfig([]byte(src), dir, "c.txt")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ECN != (simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.1}) ||
		cfg.ECNByRate[25e9] != (simenv.ECN{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.1}) {
		t.Errorf("ECN %+v, by rate %v", cfg.ECN, cfg.ECNByRate)
	}
}

func TestHPCCConfigErrors(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"topo.txt": testTopo, "flows.txt": testFlows,
		"topo100.txt":  "3 1 2\n0\n0 1 100Gbps 1us 0\n0 2 100Gbps 1us 0\n",
		"flowsw.txt":   "1\n1 0 3 100 1000 2\n",
		"flowbad.txt":  "2\n1 2 3 100 1000 2\n1 9 3 100 1000 2\n",
		"flowback.txt": "2\n1 2 3 100 1000 2.5\n1 3 3 100 1000 2\n",
	})
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"cc mode", hpccWith(map[string]string{"CC_MODE": "CC_MODE 3"}), []string{"line 3", `unsupported CC_MODE "3", only 1 (DCQCN)`}},
		{"window", hpccWith(map[string]string{"HAS_WIN": "HAS_WIN 1"}), []string{`HAS_WIN: "1" is not supported, only 0`}},
		{"missing window", hpccWith(map[string]string{"HAS_WIN": ""}), []string{"HAS_WIN is missing"}},
		{"missing topology", hpccWith(map[string]string{"TOPOLOGY_FILE": ""}), []string{"TOPOLOGY_FILE is missing"}},
		{"unknown key", hpccWith(nil, "FOO_BAR 1"), []string{"line 13", `unknown key "FOO_BAR"`, "KMAX_MAP"}},
		{"repeated key", hpccWith(nil, "RP_TIMER 55"), []string{"line 13", "RP_TIMER is given again (first on line 7)"}},
		{"value count", hpccWith(map[string]string{"RP_TIMER": "RP_TIMER 300 400"}), []string{"RP_TIMER takes 1 value(s), got 2"}},
		{"bad rate", hpccWith(map[string]string{"RATE_AI": "RATE_AI 20Mbit"}), []string{"RATE_AI", "cannot parse rate"}},
		{"bad timer", hpccWith(map[string]string{"RP_TIMER": "RP_TIMER -3"}), []string{"RP_TIMER", "positive number of microseconds"}},
		{"bad gain", hpccWith(map[string]string{"EWMA_GAIN": "EWMA_GAIN 0"}), []string{"EWMA_GAIN", "(0, 1]"}},
		{"link loss", hpccWith(nil, "ERROR_RATE_PER_LINK 0.01"), []string{"ERROR_RATE_PER_LINK", "only 0"}},
		{"link down", hpccWith(nil, "LINK_DOWN 1000 0 1"), []string{"LINK_DOWN", "link failures are not modelled"}},
		{"back to zero", hpccWith(nil, "L2_BACK_TO_ZERO 1"), []string{`L2_BACK_TO_ZERO: "1" is not supported`}},
		{"clamp", hpccWith(nil, "CLAMP_TARGET_RATE 1"), []string{`CLAMP_TARGET_RATE: "1" is not supported`}},
		{"no rate limiter", hpccWith(nil, "RATE_BOUND 0"), []string{`RATE_BOUND: "0" is not supported`}},
		{"pause time zero", hpccWith(nil, "PAUSE_TIME 0"), []string{"PAUSE_TIME", "positive"}},
		{"sparse acks", hpccWith(map[string]string{"L2_ACK_INTERVAL": "L2_ACK_INTERVAL 4000"}), []string{"L2_ACK_INTERVAL 4000 is above PACKET_PAYLOAD_SIZE 1000"}},
		{"buffer fraction", hpccWith(nil, "BUFFER_SIZE 4.5"), []string{"BUFFER_SIZE", "integer"}},
		{"map count", hpccWith(map[string]string{"KMIN_MAP": "KMIN_MAP 2 100000000000 400"}), []string{"KMIN_MAP", "declares 2 entries"}},
		{"map rate missing", hpccWith(map[string]string{"PMAX_MAP": "PMAX_MAP 1 100000000000 0.2"}), []string{"PMAX_MAP has no entry for 400Gbps"}},
		{"kmin above kmax", hpccWith(map[string]string{"KMIN_MAP": "KMIN_MAP 2 100000000000 2000 400000000000 1600"}), []string{"at 100Gbps", "kmin 2000000 B is above kmax 1600000 B"}},
		{"pmax above one", hpccWith(map[string]string{"PMAX_MAP": "PMAX_MAP 2 100000000000 1.2 400000000000 0.2"}), []string{"PMAX_MAP", "outside (0, 1]"}},
		{"topology file missing", hpccWith(map[string]string{"TOPOLOGY_FILE": "TOPOLOGY_FILE none.txt"}), []string{"TOPOLOGY_FILE", "none.txt", "cannot read topology file"}},
		{"flow file missing", hpccWith(map[string]string{"FLOW_FILE": "FLOW_FILE none.txt"}), []string{"FLOW_FILE", "none.txt", "cannot read flow file"}},
		{"flow to a switch", hpccWith(map[string]string{"FLOW_FILE": "FLOW_FILE flowsw.txt"}), []string{"flowsw.txt: line 2", "dst: node 0 is a switch"}},
		{"flow to nowhere", hpccWith(map[string]string{"FLOW_FILE": "FLOW_FILE flowbad.txt"}), []string{"flowbad.txt: line 3", "node 9 does not exist"}},
		{"flows out of order", hpccWith(map[string]string{"FLOW_FILE": "FLOW_FILE flowback.txt"}), []string{"flowback.txt: line 3", "start-time order"}},
		// a slip between Mb/s and Gb/s: DCQCN could never slow a sender (the YAML's dcqcn.min_rate refuses it too)
		{"min rate above the hosts' links", hpccWith(nil, "MIN_RATE 400Gb/s"), []string{"line 13", "MIN_RATE 400Gbps is above the host link rate 100Gbps"}},
		{"unused 400G map ok, 100G topo", hpccWith(map[string]string{"TOPOLOGY_FILE": "TOPOLOGY_FILE topo100.txt", "KMIN_MAP": "KMIN_MAP 1 400000000000 1600"}), []string{"KMIN_MAP has no entry for 100Gbps"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseHPCCConfig([]byte(tc.src), dir, "cfg.txt")
			if err == nil {
				t.Fatalf("no error; got %+v", cfg.Name)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "cfg.txt: ") {
				t.Errorf("error does not start with the file name: %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
}

func TestHPCCTopologyErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{"", "file ends at line 0 where node count was expected"},
		{"1 0 0\n", "line 1: 1 nodes"},
		{"3 1 2\n0\n0 1 100Gbps 1us 0\n", "file ends at line 3 where link 2 of 2: node a was expected"},
		{"3 1 1\n5\n", "line 2: switch id 1 of 1 \"5\" is not an integer in 0..2"},
		{"3 2 1\n0 0\n", "line 2: switch id 0 is listed twice"},
		{"3 1 1\n0\n0 0 100Gbps 1us 0\n", "connects node 0 to itself"},
		{"3 1 2\n0\n0 1 100Gbps 1us 0\n1 0 100Gbps 1us 0\n", "line 4: link 2 of 2 repeats the link 1-0 of line 3"},
		{"3 1 1\n0\n0 1 fast 1us 0\n", "line 3: link 1 of 1: cannot parse rate \"fast\""},
		{"3 1 1\n0\n0 1 100Gbps soon 0\n", "line 3: link 1 of 1: delay: cannot parse time \"soon\""},
		{"3 1 1\n0\n0 1 100Gbps 1us 0.01\n", "error rate \"0.01\": only 0 is supported"},
		{"x 1 1\n", "line 1: node count: not an integer in 0..65536 (a word of 1 B; the wrong file?)"}, // the first word: not quoted
	}
	for _, tc := range cases {
		_, err := ParseHPCCTopology([]byte(tc.src), "t.txt")
		if err == nil || !strings.HasPrefix(err.Error(), "t.txt: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.src, err, tc.want)
		}
	}
	// Links past the declared count are ignored, as ns-3 does.
	topo, err := ParseHPCCTopology([]byte("3 1 1\n0\n0 1 100Gbps 1us 0\n0 2 garbage\n"), "t.txt")
	if err != nil || len(topo.Links) != 1 || topo.Nodes[0] != (simenv.Node{Name: "sw0", Switch: true}) || topo.Nodes[2].Name != "host2" {
		t.Errorf("trailing lines: %+v, %v", topo, err)
	}
}

func TestFlowFileErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{"", "where flow count was expected"},
		{"2\n1 2 3 100 1000 2\n", "file ends at line 2 where flow 2 of 2: src was expected"},
		{"1\n1 2 7 100 1000 2\n", "line 2: flow 1 of 1: priority 7 is the control queue"},
		{"1\n1 2 9 100 1000 2\n", "priority \"9\" is not an integer in 0..7"},
		{"1\n1 2 3 70000 1000 2\n", "dport \"70000\""},
		{"1\n1 2 3 100 0 2\n", "size is 0 bytes"},
		{"1\n1 2 3 100 -5 2\n", "size \"-5\""},
		{"1\n1 2 3 100 1000 later\n", "start time \"later\" is not a non-negative number of seconds"},
		{"1\n1 2 3 100 1000 -1\n", "start time \"-1\""},
	}
	for _, tc := range cases {
		_, err := ParseFlowFile([]byte(tc.src), "f.txt")
		if err == nil || !strings.HasPrefix(err.Error(), "f.txt: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.src, err, tc.want)
		}
	}
	flows, err := ParseFlowFile([]byte("2\n1 2 3 100 1000 2\n2 1 4 200 3000 2\n"), "f.txt")
	if err != nil || len(flows) != 2 || flows[1] != (simenv.TraceFlow{Src: 2, Dst: 1, Priority: 4, DPort: 200, SizeBytes: 3000, Start: 2 * simenv.Second}) {
		t.Errorf("flows %+v, %v", flows, err)
	}
}

func TestCDFFiles(t *testing.T) {
	for _, tc := range []struct {
		path   string
		points int
		median float64 // size at 50% if a point is there
	}{{"../../scenarios/cdf/websearch.txt", 12, 0}, {"../../scenarios/cdf/fbhadoop.txt", 20, 700}} {
		pts, err := LoadCDF(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if len(pts) != tc.points || pts[len(pts)-1].Percent != 100 {
			t.Errorf("%s: %d points, want %d", tc.path, len(pts), tc.points)
		}
		for _, p := range pts {
			if p.Percent == 50 && p.Bytes != tc.median {
				t.Errorf("%s: 50%% at %g, want %g", tc.path, p.Bytes, tc.median)
			}
		}
	}
	// Comments and blank lines are fine; one point is not a CDF.
	if pts, err := ParseCDF([]byte("# sizes\n0 0\n\n5 100\n"), "c"); err != nil || len(pts) != 2 {
		t.Errorf("comments: %v %v", pts, err)
	}
	if _, err := ParseCDF([]byte("0 0\n"), "c"); err == nil || !strings.Contains(err.Error(), "at least two points") {
		t.Errorf("single point: %v", err)
	}
	if _, err := ParseCDF([]byte("0 0\n5 50 1\n"), "c"); err == nil || !strings.Contains(err.Error(), "line 2: want two numbers") {
		t.Errorf("three columns: %v", err)
	}
	if _, err := ParseCDF([]byte("0 0\n5 150\n"), "c"); err == nil || !strings.Contains(err.Error(), "above 100") {
		t.Errorf("percent above 100: %v", err)
	}
}
