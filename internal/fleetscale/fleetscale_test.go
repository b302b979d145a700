package fleetscale

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/internal/childproc"
)

// TestFleetScale measures the fleet at rest with real processes (Run) at
// each size ECNTUNE_FLEETSCALE lists (comma-separated, e.g. 250,1000),
// prints each point's report and the fit over them, and fails only on
// real errors (a process died, switches unowned or without telemetry),
// never on a figure. The environment also sets:
//
//	ECNTUNE_FLEETSCALE_AGENTS    agents (4)
//	ECNTUNE_FLEETSCALE_INTERVAL  interval and sample-interval (10s)
//	ECNTUNE_FLEETSCALE_WINDOW    the measured window (3m)
//	ECNTUNE_FLEETSCALE_KEEP      a directory to keep logs and reports in
func TestFleetScale(t *testing.T) {
	sizes := os.Getenv("ECNTUNE_FLEETSCALE")
	if testing.Short() || sizes == "" {
		t.Skip("ECNTUNE_FLEETSCALE=250,1000 measures 4 agents on that many simulated switches (minutes each)")
	}
	dir := t.TempDir()
	if keep := os.Getenv("ECNTUNE_FLEETSCALE_KEEP"); keep != "" {
		dir = keep
	}
	bin, etcd, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	agents := 0
	if s := os.Getenv("ECNTUNE_FLEETSCALE_AGENTS"); s != "" {
		if agents, err = strconv.Atoi(s); err != nil || agents < 1 {
			t.Fatalf("ECNTUNE_FLEETSCALE_AGENTS=%q: want a number of agents", s)
		}
	}
	var points []*Point
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 10 {
			t.Fatalf("ECNTUNE_FLEETSCALE: %q: want sizes of at least 10 switches", s)
		}
		pdir := filepath.Join(dir, "n"+strconv.Itoa(n))
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := Config{Dir: pdir, Bin: bin, Etcd: etcd, Switches: n, Agents: agents, Logf: t.Logf,
			Interval: childproc.EnvDur(t, "ECNTUNE_FLEETSCALE_INTERVAL", 0), Window: childproc.EnvDur(t, "ECNTUNE_FLEETSCALE_WINDOW", 0)}
		p, err := Run(t.Context(), cfg)
		if p != nil {
			t.Logf("report of %d switches:\n%s", n, p)
			_ = os.WriteFile(filepath.Join(pdir, "report.txt"), []byte(p.String()), 0o644)
			points = append(points, p)
		}
		if err != nil {
			t.Fatalf("%d switches: %v (logs in %s)", n, err, pdir)
		}
	}
	if len(points) > 1 {
		f := Fit(points, 10000) + AgentFit(points, 10000)
		t.Logf("fit a + b·switches, projected:\n%s", f)
		_ = os.WriteFile(filepath.Join(dir, "fit.txt"), []byte(f), 0o644)
	}
}

func TestParseMetrics(t *testing.T) {
	sc, err := parseMetrics(strings.NewReader(`# HELP x y
# TYPE grpc_server_handled_total counter
grpc_server_handled_total{grpc_code="OK",grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 12
grpc_server_handled_total{grpc_code="Canceled",grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 3
grpc_server_handled_total{grpc_code="OK",grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"} 1
ecntune_agent_fleet_owner{target="a\"b"} 1
etcd_debugging_mvcc_keys_total 1.5e+03
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.by("grpc_server_handled_total", "grpc_method", "grpc_type", "unary"); len(got) != 1 || got["Range"] != 15 {
		t.Errorf("unary by method: %v, want Range 15 only", got)
	}
	if got := sc.sum("etcd_debugging_mvcc_keys_total"); got != 1500 {
		t.Errorf("keys: %v", got)
	}
	if got := sc.by("ecntune_agent_fleet_owner", "target"); got[`a"b`] != 1 {
		t.Errorf("escaped label: %v", got)
	}
	if _, err := parseMetrics(strings.NewReader("x{a=\"1\n")); err == nil {
		t.Error("an unterminated label parsed")
	}
}

func TestProcUsageOfThisProcess(t *testing.T) {
	u, err := procUsage(os.Getpid())
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	if u.RSS <= 0 || u.HWM < u.RSS || u.CPU < 0 {
		t.Errorf("usage %+v", u)
	}
}

func TestFitIsALineThroughTheEnds(t *testing.T) {
	pt := func(n int, ops float64) *Point {
		return &Point{Switches: n, Agents: 4, Window: time.Minute, Ops: []Op{{"Range", ops}}}
	}
	f := Fit([]*Point{pt(1000, 300), pt(250, 150), pt(500, 200)}, 10000)
	// 150 at 250 and 300 at 1000: 100 + 0.2 n, 2100 at 10,000; 200 at 500
	for _, want := range []string{"2100", "(line at n=500: 200)"} {
		if !strings.Contains(f, want) {
			t.Errorf("fit lacks %q:\n%s", want, f)
		}
	}
}

func TestBalanced(t *testing.T) {
	v := &fleetView{owned: []int{313, 229, 229, 229}}
	if !v.balanced(1000) { // bound ceil(1250/4) = 313
		t.Error("313 of 1000 on 4 agents is within the bound")
	}
	v.owned[0] = 314
	if v.balanced(1000) {
		t.Error("314 of 1000 on 4 agents is beyond the bound")
	}
}

// A stream's end counts as one more message received: etcdOps takes it
// off, so a KeepAliveOnce (a stream, one renewal, the end) is one request.
func TestEtcdOpsCountStreamRequests(t *testing.T) {
	parse := func(s string) scrape {
		sc, err := parseMetrics(strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	a := parse(`grpc_server_handled_total{grpc_code="OK",grpc_method="Range",grpc_type="unary"} 10
grpc_server_msg_received_total{grpc_method="LeaseKeepAlive",grpc_type="bidi_stream"} 100
grpc_server_handled_total{grpc_code="Canceled",grpc_method="LeaseKeepAlive",grpc_type="bidi_stream"} 40
grpc_server_started_total{grpc_method="LeaseKeepAlive",grpc_type="bidi_stream"} 41
`)
	b := parse(`grpc_server_handled_total{grpc_code="OK",grpc_method="Range",grpc_type="unary"} 16
grpc_server_msg_received_total{grpc_method="LeaseKeepAlive",grpc_type="bidi_stream"} 130
grpc_server_handled_total{grpc_code="Canceled",grpc_method="LeaseKeepAlive",grpc_type="bidi_stream"} 50
grpc_server_started_total{grpc_method="LeaseKeepAlive",grpc_type="bidi_stream"} 51
`)
	ops, opened, _ := etcdOps(a, b)
	want := []Op{{"Range", 6}, {"LeaseKeepAlive (stream)", 20}}
	if len(ops) != 2 || ops[0] != want[0] || ops[1] != want[1] {
		t.Errorf("ops %v, want %v", ops, want)
	}
	if len(opened) != 1 || opened[0] != (Op{"LeaseKeepAlive", 10}) {
		t.Errorf("streams opened %v", opened)
	}
}

func TestAgentFitSeparatesListedFromOwned(t *testing.T) {
	// cpu = 0.1 + 0.001·listed + 0.002·owned, rss = 40 + 0.15·listed + 0.1·owned
	pt := func(n int, owned ...int) *Point {
		p := &Point{Switches: n, Agents: len(owned), Window: 100 * time.Second}
		for _, o := range owned {
			cpu := 0.1 + 0.001*float64(n) + 0.002*float64(o) // % of 100 s: that many seconds
			rss := 40 + 0.15*float64(n) + 0.1*float64(o)
			p.AgentUse = append(p.AgentUse, AgentUse{Owned: o, Usage: usage{CPU: time.Duration(cpu * float64(time.Second)), RSS: int64(rss * (1 << 20))}})
		}
		return p
	}
	f := AgentFit([]*Point{pt(250, 78, 32, 62, 78), pt(1000, 312, 126, 250, 312)}, 10000)
	for _, want := range []string{"agent CPU % of a core = 0.1 + 0.001·listed + 0.002·owned", "agent RSS MB = 40 + 0.15·listed + 0.1·owned", "15.1 owning 2500"} {
		if !strings.Contains(f, want) {
			t.Errorf("agent fit lacks %q:\n%s", want, f)
		}
	}
	if f := AgentFit([]*Point{pt(250, 60, 60)}, 10000); !strings.Contains(f, "too few") {
		t.Errorf("one size fitted: %s", f)
	}
}
