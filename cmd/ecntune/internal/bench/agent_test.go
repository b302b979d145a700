package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/simenv"
)

// TestMain lets this test binary serve a bench fabric as the child of
// RunAgent (the environment says so), and otherwise runs the tests.
func TestMain(m *testing.M) {
	if os.Getenv(ServeEnv) != "" {
		if err := ServeFabric(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// selfChild runs this test binary as the serving child (no tests run).
func selfChild(ctx context.Context, nice bool) *exec.Cmd {
	return ChildCommand(ctx, nice, os.Args[0], "-test.run=^$", "-test.bench=^$")
}

func TestFabricShape(t *testing.T) {
	o := DefaultAgentOptions()
	o.InitialECN = InitialECN(o.Policy)
	cfg := Fabric(o)
	s, err := simenv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sws := s.Switches()
	if len(sws) != 100 {
		t.Fatalf("%d switches, want 100", len(sws))
	}
	for _, sw := range sws {
		if len(sw.Ports) != 32 {
			t.Fatalf("%s has %d ports, want 32", sw.Name, len(sw.Ports))
		}
	}
	if got := s.LosslessPriorities(); len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Fatalf("lossless priorities %v, want [3 4]", got)
	}
	if n := len(s.Hosts()); n != 896 {
		t.Fatalf("%d hosts, want 2 pods x 32 leaves x 14", n)
	}
	// static:hpcc is 400 KB / 1.6 MB / 20 % at 100 Gb/s; the switches start
	// at 1.5x so that every queue changes within the guard's 2x step.
	if e := o.InitialECN; e != (simenv.ECN{KminBytes: 600_000, KmaxBytes: 2_400_000, Pmax: 0.2}) {
		t.Fatalf("initial ECN %+v", e)
	}
	if e := InitialECN("builtin"); e.KminBytes != 600_000 {
		t.Fatalf("initial ECN for a non-static policy %+v, want the hpcc preset x 1.5", e)
	}
}

func TestAgentOptionErrors(t *testing.T) {
	for _, c := range []struct {
		mod  func(*AgentOptions)
		want string
	}{
		{func(o *AgentOptions) { o.Pods = 0 }, "--pods"},
		{func(o *AgentOptions) { o.Load = 1.5 }, "--load"},
		{func(o *AgentOptions) { o.Timescale = -1 }, "--timescale"},
		{func(o *AgentOptions) { o.Warmup = 1 }, "--warmup"},
		{func(o *AgentOptions) { o.Mode = "loud" }, "--mode"},
		{func(o *AgentOptions) { o.Encoding = "xml" }, "--encoding"},
		{func(o *AgentOptions) { o.ChangeBudget = 0 }, "--change-budget"},
		{func(o *AgentOptions) { o.Interval = 0 }, "--interval"},
	} {
		o := DefaultAgentOptions()
		o.InitialECN = InitialECN(o.Policy)
		c.mod(&o)
		err := o.check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error naming %s", err, c.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if p := percentile(ds, 50); p != 50*time.Millisecond {
		t.Fatalf("p50 %v", p)
	}
	if p := percentile(ds, 99); p != 99*time.Millisecond {
		t.Fatalf("p99 %v", p)
	}
	if p := percentile(ds, 100); p != 100*time.Millisecond {
		t.Fatalf("max %v", p)
	}
	if p := percentile(nil, 99); p != 0 {
		t.Fatalf("empty %v", p)
	}
}

// A small fabric end to end: 3 switches, 8 ports, 16 queues, every queue
// set once from 1.5x hpcc to hpcc through the guard, Sets timed.
func TestAgentSmallFabric(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process and runs the agent for about 2 s")
	}
	r := runSmallAgent(t, DefaultAgentOptions().Policy)
	// leaves: 2 hosts + 1 spine; the spine: 2 leaves.
	if r.Switches != 3 || r.Ports != 8 || r.PortsPerSwitch != [2]int{2, 3} || r.Queues != 16 || r.QueuesPerPort != 2 {
		t.Fatalf("fabric %+v", r)
	}
	if r.QueuesApplied != 16 || r.Sets < 3 || r.SetErrors != 0 || r.QueuesPerSet <= 0 {
		t.Fatalf("closed loop: %d queues applied in %d Sets (%d failed), want all 16", r.QueuesApplied, r.Sets, r.SetErrors)
	}
	if !(r.SetP50Ms > 0 && r.SetP99Ms >= r.SetP50Ms && r.SetMaxMs >= r.SetP99Ms) {
		t.Fatalf("Set latency p50 %g p99 %g max %g", r.SetP50Ms, r.SetP99Ms, r.SetMaxMs)
	}
	if !(r.AgentCPUPerIntervalMs > 0 && r.AgentCPUPer1000QMs > r.AgentCPUPerIntervalMs) || r.HeapLiveBytes == 0 || r.WallS <= 0 {
		t.Fatalf("measurements %+v", r)
	}
	if r.QueuesObsMin < 1 || r.QueuesObsMean > 16 {
		t.Fatalf("queues decided on per interval: mean %g, fewest %d", r.QueuesObsMean, r.QueuesObsMin)
	}
	if !strings.Contains(r.Verdict, "10,000 queues") || strings.Contains(r.Verdict, "NOT a measure") || r.HeldForInterval != 0 {
		t.Fatalf("verdict %q (%d held)", r.Verdict, r.HeldForInterval)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 switches (2-3 ports each), 8 ports", "Set latency", "agent CPU per interval per 1,000 queues"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// BenchmarkAgentOverGNMI is a shorter bench agent: the default fabric
// (100 switches x 32 ports x 2 lossless queues = 6,400 queues, served by a
// child process at nice 19), the agent in closed loop with static:hpcc over
// gNMI at a 1 s interval, 4 intervals measured after 3. One op is one whole
// run (about 10 s); the metrics are the agent process's. Shorter intervals
// are not used: on 2 cores the simulated switches' gNMI server alone needs
// most of the machine at 1 s.
func BenchmarkAgentOverGNMI(b *testing.B) {
	for _, enc := range []string{"json_ietf", "proto"} {
		b.Run(enc, func(b *testing.B) {
			o := DefaultAgentOptions()
			o.Encoding = enc
			o.Warmup, o.Intervals = 3, 4
			o.InitialECN = InitialECN(o.Policy)
			var r *AgentResult
			for i := 0; i < b.N; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				var err error
				r, err = RunAgent(ctx, o, selfChild(ctx, true))
				cancel()
				if err != nil {
					b.Fatal(err)
				}
			}
			if r.Queues != 6400 {
				b.Fatalf("%d queues, want 6400", r.Queues)
			}
			b.ReportMetric(r.AgentCPUPer1000QMs, "cpu-ms/1000q-interval")
			b.ReportMetric(r.AgentCores, "agent-cores")
			b.ReportMetric(r.HeapPer1000QB/1e3, "heap-KB/1000q")
			b.ReportMetric(r.DecisionMsMean, "decision-ms")
			b.ReportMetric(r.SetP50Ms, "set-p50-ms")
			b.ReportMetric(r.SetP99Ms, "set-p99-ms")
			b.ReportMetric(float64(r.Sets), "sets")
		})
	}
}

// The built-in model at the default timescale sees counters over 10 µs
// (200 ms / 20,000), outside the intervals it was validated for: it holds
// every queue, and the verdict says the figure is not its decisions'.
func TestAgentBenchSaysPolicyHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process and runs the agent for about 2 s")
	}
	r := runSmallAgent(t, "builtin")
	if r.HeldForInterval == 0 || !strings.Contains(r.Verdict, "NOT a measure of the policy's decisions: it held 100%") {
		t.Fatalf("verdict %q (%d held)", r.Verdict, r.HeldForInterval)
	}
}

// runSmallAgent runs bench agent on 3 switches (2 leaves of 2 hosts, one
// spine) with policy, 3 intervals of 200 ms measured after 3.
func runSmallAgent(t *testing.T, policy string) *AgentResult {
	t.Helper()
	o := DefaultAgentOptions()
	o.Pods, o.Leaves, o.Spines, o.HostsPerLeaf = 1, 2, 1, 2
	o.Interval, o.Warmup, o.Intervals = 200*time.Millisecond, 3, 3
	o.Policy = policy
	o.InitialECN = InitialECN(o.Policy)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := RunAgent(ctx, o, selfChild(ctx, false))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
