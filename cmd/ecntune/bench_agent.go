package main

// ecntune bench agent: the agent's scale measured end to end over gNMI.
//
// The simulated switches run in a child process (this binary again, in a
// hidden serve mode), so that the getrusage CPU time and the Go heap of this
// process are the agent's alone: no subtraction of a simulator share is
// needed. The child answers "cpu" on its stdin with its own CPU time, which
// the report gives as the switch side's cost.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/cputime"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simswitch"
)

// benchServeEnv carries the fabric options (JSON) to the serving child.
const benchServeEnv = "ECNTUNE_BENCH_AGENT_SERVE"

// agentBenchOpts are the options of one measurement.
type agentBenchOpts struct {
	Pods         int           `json:"pods"`
	Leaves       int           `json:"leaves_per_pod"`
	Spines       int           `json:"spines_per_pod"`
	HostsPerLeaf int           `json:"hosts_per_leaf"`
	Load         float64       `json:"load"`
	Timescale    float64       `json:"timescale"`
	Step         time.Duration `json:"step_ns"`
	Seed         uint64        `json:"seed"`
	InitialECN   simenv.ECN    `json:"initial_ecn"`

	Interval     time.Duration `json:"-"`
	Intervals    int           `json:"-"`
	Warmup       int           `json:"-"`
	Mode         agent.Mode    `json:"-"`
	Policy       string        `json:"-"`
	Encoding     string        `json:"-"`
	ChangeBudget int           `json:"-"`
	LogLevel     slog.Level    `json:"-"`
	Log          io.Writer     `json:"-"`
}

func defaultAgentBenchOpts() agentBenchOpts {
	return agentBenchOpts{Pods: 2, Leaves: 32, Spines: 18, HostsPerLeaf: 14, Load: 0.01, Timescale: 20000,
		Step: 100 * time.Millisecond, Seed: 1, Interval: time.Second, Intervals: 10, Warmup: 3,
		Mode: agent.ModeClosedLoop, Policy: "static:hpcc", Encoding: "json_ietf", ChangeBudget: 64,
		LogLevel: slog.LevelWarn}
}

// check validates the fabric options; errors name the flag.
func (o agentBenchOpts) checkFabric() error {
	switch {
	case o.Pods < 1:
		return fmt.Errorf("--pods %d: must be at least 1", o.Pods)
	case o.Leaves < 1:
		return fmt.Errorf("--leaves %d: must be at least 1", o.Leaves)
	case o.Spines < 1:
		return fmt.Errorf("--spines %d: must be at least 1", o.Spines)
	case o.HostsPerLeaf < 1 || o.Leaves*o.HostsPerLeaf < 2:
		return fmt.Errorf("--hosts-per-leaf %d: each pod needs at least 2 hosts and every leaf at least 1", o.HostsPerLeaf)
	case !(o.Load > 0 && o.Load <= 1):
		return fmt.Errorf("--load %g: must be in (0, 1]", o.Load)
	case !(o.Timescale > 0) || math.IsInf(o.Timescale, 0):
		return fmt.Errorf("--timescale %g: must be > 0 (wall seconds per simulated second)", o.Timescale)
	case o.Step <= 0:
		return fmt.Errorf("--step %v: must be positive", o.Step)
	}
	return o.InitialECN.Validate()
}

func (o agentBenchOpts) check() error {
	if err := o.checkFabric(); err != nil {
		return err
	}
	switch {
	case o.Interval < time.Millisecond:
		return fmt.Errorf("--interval %v: must be at least 1ms", o.Interval)
	case o.Intervals < 1:
		return fmt.Errorf("--intervals %d: must be at least 1", o.Intervals)
	case o.Warmup < 2:
		return fmt.Errorf("--warmup %d: must be at least 2 (the first interval has no rates yet)", o.Warmup)
	case o.Mode != agent.ModeShadow && o.Mode != agent.ModeClosedLoop:
		return fmt.Errorf("--mode %q: want shadow or closed-loop", o.Mode)
	case o.ChangeBudget < 1:
		return fmt.Errorf("--change-budget %d: must be at least 1", o.ChangeBudget)
	}
	switch o.Encoding {
	case "json_ietf", "json", "proto":
	default:
		return fmt.Errorf("--encoding %q: want json_ietf, json or proto", o.Encoding)
	}
	return nil
}

// benchLightCDF is a short-flow size distribution (bytes, percent of
// flows at or below): most flows small, a tail to 2 MB.
var benchLightCDF = []simenv.CDFPoint{{Bytes: 1_000, Percent: 0}, {Bytes: 10_000, Percent: 50},
	{Bytes: 100_000, Percent: 80}, {Bytes: 1_000_000, Percent: 97}, {Bytes: 2_000_000, Percent: 100}}

// benchFabric builds the fabric: Pods independent two-tier Clos pods, each
// of Leaves leaves fully meshed to Spines spines, HostsPerLeaf hosts per
// leaf, every link 100 Gb/s. A leaf has HostsPerLeaf+Spines ports, a spine
// Leaves ports (the default 32 leaves x 18 spines x 14 hosts gives every
// switch 32 ports, 50 switches per pod). Each pod carries two light cdf
// workloads of its own hosts, on lossless priorities 3 and 4.
func benchFabric(o agentBenchOpts) simenv.Config {
	cfg := simenv.DefaultConfig()
	cfg.Name = "bench-agent"
	cfg.Seed = o.Seed
	cfg.ECN = o.InitialECN
	// The runner keeps going past Duration; flows are generated up to it.
	cfg.Duration = simenv.Time(float64(simenv.FromDuration(time.Hour)) / o.Timescale)
	const rate = units.RefRateBps
	delay := simenv.Microsecond
	t := simenv.Topology{Kind: "leafspine-pods"}
	nHosts := o.Pods * o.Leaves * o.HostsPerLeaf
	for h := 0; h < nHosts; h++ {
		t.Nodes = append(t.Nodes, simenv.Node{Name: fmt.Sprintf("host%d", h)})
	}
	leaf0 := len(t.Nodes)
	for l := 0; l < o.Pods*o.Leaves; l++ {
		t.Nodes = append(t.Nodes, simenv.Node{Name: fmt.Sprintf("leaf%d", l), Switch: true})
	}
	spine0 := len(t.Nodes)
	for s := 0; s < o.Pods*o.Spines; s++ {
		t.Nodes = append(t.Nodes, simenv.Node{Name: fmt.Sprintf("spine%d", s), Switch: true})
	}
	for p := 0; p < o.Pods; p++ {
		var hosts []int
		for l := p * o.Leaves; l < (p+1)*o.Leaves; l++ {
			for h := 0; h < o.HostsPerLeaf; h++ {
				host := l*o.HostsPerLeaf + h
				hosts = append(hosts, host)
				t.Links = append(t.Links, simenv.Link{A: leaf0 + l, B: host, RateBps: rate, Delay: delay})
			}
			for s := p * o.Spines; s < (p+1)*o.Spines; s++ {
				t.Links = append(t.Links, simenv.Link{A: leaf0 + l, B: spine0 + s, RateBps: rate, Delay: delay})
			}
		}
		for _, prio := range []int{3, 4} {
			cfg.Workloads = append(cfg.Workloads, simenv.Workload{Kind: simenv.WorkloadCDF, CDF: benchLightCDF,
				Load: o.Load, Priority: prio, Hosts: hosts})
		}
	}
	cfg.Topology = t
	return cfg
}

// benchHello is the serving child's first line.
type benchHello struct {
	Addr     string         `json:"addr"`
	Switches map[string]int `json:"switches"` // name → ports
	Lossless []int          `json:"lossless"`
	Hosts    int            `json:"hosts"`
}

// benchProbe answers a "cpu" line.
type benchProbe struct {
	CPUNs int64 `json:"cpu_ns"`
	SimPs int64 `json:"sim_ps"`
	LagPs int64 `json:"lag_ps"`
}

// serveBenchFabric is the child: it serves the fabric of the options in
// the environment on 127.0.0.1 (port 0), says where on out, answers "cpu"
// lines of in, and stops when in closes.
func serveBenchFabric(ctx context.Context, in io.Reader, out io.Writer) error {
	var o agentBenchOpts
	if err := json.Unmarshal([]byte(os.Getenv(benchServeEnv)), &o); err != nil {
		return fmt.Errorf("%s: %v", benchServeEnv, err)
	}
	if err := o.checkFabric(); err != nil {
		return err
	}
	cfg := benchFabric(o)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, addr, err := simswitch.Start(ctx, simswitch.Config{Sim: cfg, Listen: "127.0.0.1:0", Timescale: o.Timescale, Step: o.Step})
	if err != nil {
		return err
	}
	defer srv.Close()
	h := benchHello{Addr: addr, Switches: map[string]int{}, Lossless: srv.LosslessPriorities(),
		Hosts: o.Pods * o.Leaves * o.HostsPerLeaf}
	for _, s := range srv.Switches() {
		h.Switches[s.Name] = len(s.Ports)
	}
	enc := json.NewEncoder(out)
	if err := enc.Encode(h); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "cpu" {
			continue
		}
		now, lag := srv.Status()
		if err := enc.Encode(benchProbe{CPUNs: cputime.Process().Nanoseconds(), SimPs: int64(now), LagPs: int64(lag)}); err != nil {
			return err
		}
	}
	return nil
}

// benchChild is the running serving child.
type benchChild struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr *strings.Builder
	hello  benchHello
}

// startBenchChild starts cmd (whose environment gets the options) and
// reads its hello.
func startBenchChild(cmd *exec.Cmd, o agentBenchOpts) (*benchChild, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	cmd.Env = append(os.Environ(), benchServeEnv+"="+string(b))
	c := &benchChild{cmd: cmd, stderr: &strings.Builder{}}
	cmd.Stderr = c.stderr
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the simulated switches (%s): %v", cmd.Path, err)
	}
	c.lines = bufio.NewScanner(stdout)
	c.lines.Buffer(make([]byte, 1<<20), 1<<24)
	if err := c.read(&c.hello); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *benchChild) read(v any) error {
	if !c.lines.Scan() {
		return fmt.Errorf("simulated switches ended: %v %s", c.lines.Err(), strings.TrimSpace(c.stderr.String()))
	}
	if err := json.Unmarshal(c.lines.Bytes(), v); err != nil {
		return fmt.Errorf("simulated switches said %q: %v", c.lines.Text(), err)
	}
	return nil
}

func (c *benchChild) probe() (benchProbe, error) {
	var p benchProbe
	if _, err := io.WriteString(c.stdin, "cpu\n"); err != nil {
		return p, err
	}
	return p, c.read(&p)
}

// stop closes the child's stdin (it exits) and waits for it.
func (c *benchChild) stop() error {
	c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		return <-done
	}
}

// agentBenchResult is what bench agent reports.
type agentBenchResult struct {
	Switches       int     `json:"switches"`
	PortsPerSwitch [2]int  `json:"ports_per_switch_min_max"`
	Ports          int     `json:"ports"`
	QueuesPerPort  int     `json:"lossless_queues_per_port"`
	Queues         int     `json:"queues"`
	QueuesObsMin   int     `json:"queues_observed_min"`
	QueuesObsMean  float64 `json:"queues_observed_mean"`
	Hosts          int     `json:"hosts"`
	Mode           string  `json:"mode"`
	Policy         string  `json:"policy"`
	Encoding       string  `json:"encoding"`
	IntervalS      float64 `json:"interval_s"`
	Intervals      int     `json:"intervals"`
	WallS          float64 `json:"wall_s"`
	Timescale      float64 `json:"timescale"`
	SimAdvancedUs  float64 `json:"sim_advanced_us"`
	SimLagUs       float64 `json:"sim_lag_us"`

	AgentCPUPerIntervalMs   float64 `json:"agent_cpu_per_interval_ms"`
	AgentCPUPer1000QMs      float64 `json:"agent_cpu_per_interval_per_1000_queues_ms"`
	TicksPerInterval        float64 `json:"control_intervals_per_interval"`
	QueueSamples            int64   `json:"queue_samples"`
	SamplesPerQueueInterval float64 `json:"samples_per_queue_per_interval"`
	AgentCores              float64 `json:"agent_cores"`
	CoresFor10k             float64 `json:"cores_for_10000_queues"`
	SwitchCPUPerIntervalMs  float64 `json:"switch_side_cpu_per_interval_ms"`

	HeapBaseBytes   uint64  `json:"heap_before_agent_bytes"`
	HeapLiveBytes   uint64  `json:"heap_live_bytes"`
	HeapPer1000QB   float64 `json:"heap_per_1000_queues_bytes"`
	DecisionMsMean  float64 `json:"decision_ms_mean"`
	DecisionMsMax   float64 `json:"decision_ms_max"`
	DecideMsMean    float64 `json:"policy_decide_ms_mean"`
	Sets            int     `json:"sets"`
	SetErrors       int     `json:"set_errors"`
	QueuesPerSet    float64 `json:"queues_per_set"`
	SetP50Ms        float64 `json:"set_p50_ms"`
	SetP99Ms        float64 `json:"set_p99_ms"`
	SetMaxMs        float64 `json:"set_max_ms"`
	ReadP50Ms       float64 `json:"readback_get_p50_ms"`
	ReadP99Ms       float64 `json:"readback_get_p99_ms"`
	QueuesApplied   int     `json:"queues_applied"`
	ChangeBudget    int     `json:"change_budget"`
	Recommendations int     `json:"shadow_recommendations"`
	Verdict         string  `json:"verdict"`
}

// timedSwitch times the Sets and read-back Gets of an agent.Switch.
type timedSwitch struct {
	agent.Switch
	rec *latencies
}

type latencies struct {
	mu                  sync.Mutex
	set, get            []time.Duration
	setErrs, setsQueues int
}

func (s timedSwitch) Apply(ctx context.Context, settings map[env.QueueKey]env.Setting) error {
	t0 := time.Now()
	err := s.Switch.Apply(ctx, settings)
	d := time.Since(t0)
	s.rec.mu.Lock()
	if err != nil {
		s.rec.setErrs++
	} else {
		s.rec.set = append(s.rec.set, d)
		s.rec.setsQueues += len(settings)
	}
	s.rec.mu.Unlock()
	return err
}

func (s timedSwitch) Read(ctx context.Context, keys []env.QueueKey) (map[env.QueueKey]env.Setting, error) {
	t0 := time.Now()
	got, err := s.Switch.Read(ctx, keys)
	d := time.Since(t0)
	if err == nil {
		s.rec.mu.Lock()
		s.rec.get = append(s.rec.get, d)
		s.rec.mu.Unlock()
	}
	return got, err
}

// countingObserver counts the queue samples the agent takes in.
type countingObserver struct {
	*env.Observer
	samples atomic.Int64
}

func (c *countingObserver) Observe(s env.Snapshot) []env.Observation {
	c.samples.Add(int64(len(s.Queues)))
	return c.Observer.Observe(s)
}

// tickProbe wraps the policy: every Decide call marks the start of an
// interval with observations. It notes the time the policy took, the
// queues decided on, and the agent's decision-latency histogram as it
// stood (so the previous interval's decision latency is known).
type tickProbe struct {
	policy.Policy
	hist  func() (uint64, float64)
	ticks chan int

	mu       sync.Mutex
	n        int
	decide   []time.Duration
	queues   []int
	histN    []uint64
	histSum  []float64
	lastHist [2]float64
}

func (p *tickProbe) Decide(obs []env.Observation) []policy.Decision {
	hn, hs := p.hist()
	t0 := time.Now()
	d := p.Policy.Decide(obs)
	dt := time.Since(t0)
	p.mu.Lock()
	p.n++
	n := p.n
	p.decide = append(p.decide, dt)
	p.queues = append(p.queues, len(obs))
	p.histN = append(p.histN, hn)
	p.histSum = append(p.histSum, hs)
	p.mu.Unlock()
	select {
	case p.ticks <- n:
	default:
	}
	return d
}

func histogramOf(h interface{ Write(*dto.Metric) error }) func() (uint64, float64) {
	return func() (uint64, float64) {
		var m dto.Metric
		if h.Write(&m) != nil || m.Histogram == nil {
			return 0, 0
		}
		return m.Histogram.GetSampleCount(), m.Histogram.GetSampleSum()
	}
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// runAgentBench serves the fabric from the child spawn gives, runs the
// agent against it over gNMI and measures Warmup+Intervals intervals.
func runAgentBench(ctx context.Context, o agentBenchOpts, child *exec.Cmd) (*agentBenchResult, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	runtime.GC()
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)

	pol, err := policy.Lookup(o.Policy)
	if err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	c, err := startBenchChild(child, o)
	if err != nil {
		return nil, err
	}
	childDone := false
	defer func() {
		if !childDone {
			c.stop()
		}
	}()
	res := &agentBenchResult{Switches: len(c.hello.Switches), QueuesPerPort: len(c.hello.Lossless), Hosts: c.hello.Hosts,
		Mode: string(o.Mode), Policy: pol.Name(), Encoding: o.Encoding, IntervalS: o.Interval.Seconds(),
		Intervals: o.Intervals, Timescale: o.Timescale, ChangeBudget: o.ChangeBudget, HeapBaseBytes: ms0.HeapAlloc}
	names := make([]string, 0, len(c.hello.Switches))
	res.PortsPerSwitch = [2]int{math.MaxInt, 0}
	for n, p := range c.hello.Switches {
		names = append(names, n)
		res.Ports += p
		res.PortsPerSwitch = [2]int{min(res.PortsPerSwitch[0], p), max(res.PortsPerSwitch[1], p)}
	}
	sort.Strings(names)
	res.Queues = res.Ports * res.QueuesPerPort

	dir, err := os.MkdirTemp("", "ecntune-bench-agent-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	g := agent.DefaultGuardConfig(o.Interval)
	g.ChangeBudget = o.ChangeBudget
	// Two rules are relaxed, both because of the simulated switches, not
	// the agent: on a small machine the switch side can fall behind and
	// deliver a sample late, which must not trip the stale-telemetry
	// revert (it would set every queue at once, outside the budget); and
	// light traffic makes a queue's reward jump between intervals, which
	// must not read as a degradation to roll back.
	g.StaleFreeze, g.StaleRevert = 60*o.Interval, 120*o.Interval
	g.RollbackRewardDrop = 1e9
	g.Reward = agent.DefaultReward()
	cfg := &agent.Config{Mode: o.Mode, Policy: pol.Name(), Interval: o.Interval, SampleInterval: o.Interval,
		DB: filepath.Join(dir, "agent.db"), Owner: "bench", Guardrails: g}
	for _, n := range names {
		cfg.Targets = append(cfg.Targets, agent.TargetConfig{Name: n, Address: c.hello.Addr, Insecure: true,
			Timeout: 10 * time.Second, RetryTimer: time.Second, Dialect: agent.DialectOpenConfig, Encoding: o.Encoding,
			AllPorts: true, Queues: c.hello.Lossless})
	}
	j, err := agent.OpenJournal(cfg.DB, time.Second)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	lat := &latencies{}
	var sws []agent.Switch
	defer func() {
		for _, s := range sws {
			s.Close()
		}
	}()
	for _, t := range cfg.Targets {
		s, err := agent.DialSwitch(actx, t, cfg.SampleInterval)
		if err != nil {
			return nil, err
		}
		sws = append(sws, timedSwitch{Switch: s, rec: lat})
	}
	m := agent.NewMetrics()
	probe := &tickProbe{Policy: pol, hist: histogramOf(m.DecisionLatency), ticks: make(chan int, 1024)}
	log := slog.New(slog.NewTextHandler(o.Log, &slog.HandlerOptions{Level: o.LogLevel}))
	obsr := &countingObserver{Observer: env.NewObserver(env.ObserverConfig{})}
	a, err := agent.New(agent.Options{Config: cfg, Policy: probe, Model: pol.Name(), Observer: obsr,
		Journal: j, Switches: sws, Metrics: m, Logger: log, SetTimeout: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	runErr := make(chan error, 1)
	go func() { runErr <- a.Run(actx) }()
	stopped := false
	stopAgent := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-runErr
	}
	defer stopAgent() // before the journal closes

	// Interval boundaries are the policy's calls; the first Warmup
	// intervals are not measured.
	limit := time.Duration(o.Warmup+o.Intervals)*6*o.Interval + 30*time.Second
	deadline := time.NewTimer(limit + 30*time.Second)
	defer deadline.Stop()
	var cpu0, cpu1 time.Duration
	var wall0, wall1 time.Time
	var p0, p1 benchProbe
	var samples0, samples1 int64
	for n := 0; n < o.Warmup+o.Intervals; {
		select {
		case n = <-probe.ticks:
		case err := <-runErr:
			stopped = true
			return nil, fmt.Errorf("agent stopped: %v", err)
		case <-deadline.C:
			return nil, fmt.Errorf("only %d of %d intervals with observations in %v: is telemetry arriving? %s",
				n, o.Warmup+o.Intervals, limit+30*time.Second, strings.TrimSpace(c.stderr.String()))
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		switch n {
		case o.Warmup:
			cpu0, wall0, samples0 = cputime.Process(), time.Now(), obsr.samples.Load()
			if p0, err = c.probe(); err != nil {
				return nil, err
			}
		case o.Warmup + o.Intervals:
			cpu1, wall1, samples1 = cputime.Process(), time.Now(), obsr.samples.Load()
			if p1, err = c.probe(); err != nil {
				return nil, err
			}
		}
	}
	// The live heap while the agent runs (its state for every queue).
	runtime.GC()
	runtime.GC()
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	// One more interval so the last measured one's decision is recorded.
	select {
	case <-probe.ticks:
	case <-time.After(3 * o.Interval):
	}
	if err := stopAgent(); err != nil {
		return nil, err
	}
	childDone = true
	if err := c.stop(); err != nil {
		return nil, fmt.Errorf("simulated switches: %v %s", err, strings.TrimSpace(c.stderr.String()))
	}

	wall := wall1.Sub(wall0)
	res.WallS = wall.Seconds()
	perInterval := float64(cpu1-cpu0) * float64(o.Interval) / float64(wall)
	res.AgentCPUPerIntervalMs = perInterval / 1e6
	res.AgentCores = float64(cpu1-cpu0) / float64(wall)
	res.TicksPerInterval = float64(o.Intervals) * float64(o.Interval) / float64(wall)
	res.SwitchCPUPerIntervalMs = float64(p1.CPUNs-p0.CPUNs) * float64(o.Interval) / float64(wall) / 1e6
	res.SimAdvancedUs = float64(p1.SimPs-p0.SimPs) / 1e6
	res.SimLagUs = float64(p1.LagPs) / 1e6
	if ms1.HeapAlloc > ms0.HeapAlloc {
		res.HeapLiveBytes = ms1.HeapAlloc
	}
	probe.mu.Lock()
	res.QueuesObsMin = math.MaxInt
	var decideSum time.Duration
	var decMax float64
	decN := 0
	var decSum float64
	// Call i (0-based) starts interval i+1; the measured ones are calls
	// Warmup-1 .. Warmup+Intervals-2, and call i+1 sees call i's decision
	// latency in the histogram.
	for i := o.Warmup - 1; i < o.Warmup+o.Intervals-1 && i < len(probe.queues); i++ {
		res.QueuesObsMin = min(res.QueuesObsMin, probe.queues[i])
		res.QueuesObsMean += float64(probe.queues[i]) / float64(o.Intervals)
		decideSum += probe.decide[i]
		if i+1 < len(probe.histN) && probe.histN[i+1] == probe.histN[i]+1 {
			d := (probe.histSum[i+1] - probe.histSum[i]) * 1e3
			decSum += d
			decMax = math.Max(decMax, d)
			decN++
		}
	}
	probe.mu.Unlock()
	res.DecideMsMean = ms(decideSum) / float64(o.Intervals)
	if decN > 0 {
		res.DecisionMsMean = decSum / float64(decN)
		res.DecisionMsMax = decMax
	}
	if res.Queues > 0 {
		// Per queue sample taken in: a switch side that falls behind
		// delivers fewer samples than one per queue per interval, and
		// Sets holding the loop make control intervals fewer than wall
		// intervals; a queue sample is one queue's share of an interval
		// either way.
		res.QueueSamples = samples1 - samples0
		if res.QueueSamples > 0 {
			res.AgentCPUPer1000QMs = float64(cpu1-cpu0) / 1e6 / float64(res.QueueSamples) * 1000
		}
		res.SamplesPerQueueInterval = float64(res.QueueSamples) / float64(res.Queues) * float64(o.Interval) / float64(wall)
		res.HeapPer1000QB = float64(int64(res.HeapLiveBytes)-int64(res.HeapBaseBytes)) / float64(res.Queues) * 1000
	}
	res.CoresFor10k = res.AgentCPUPer1000QMs * 10 / 1e3 / o.Interval.Seconds()
	lat.mu.Lock()
	res.Sets, res.SetErrors = len(lat.set), lat.setErrs
	if len(lat.set) > 0 {
		res.QueuesPerSet = float64(lat.setsQueues) / float64(len(lat.set))
	}
	res.SetP50Ms, res.SetP99Ms, res.SetMaxMs = ms(percentile(lat.set, 50)), ms(percentile(lat.set, 99)), ms(percentile(lat.set, 100))
	res.ReadP50Ms, res.ReadP99Ms = ms(percentile(lat.get, 50)), ms(percentile(lat.get, 99))
	lat.mu.Unlock()
	es, err := j.Entries("", 0)
	if err != nil {
		return nil, err
	}
	for _, e := range es {
		if e.State == agent.StateApplied {
			res.QueuesApplied++
		}
	}
	if o.Mode == agent.ModeShadow {
		recs, err := j.Recommendations("", 0, 0)
		if err != nil {
			return nil, err
		}
		res.Recommendations = len(recs)
	}
	verdict := "meets"
	if !(res.CoresFor10k < 1) {
		verdict = "misses"
	}
	res.Verdict = fmt.Sprintf("%s the goal: 10,000 queues at a %v interval would take %.2f cores of agent CPU (goal: under 1)",
		verdict, o.Interval, res.CoresFor10k)
	return res, nil
}

func printAgentBench(w io.Writer, r *agentBenchResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, f string, v ...any) { fmt.Fprintf(tw, "%s\t"+f+"\n", append([]any{k}, v...)...) }
	row("fabric", "%d switches (%d-%d ports each), %d ports, %d hosts", r.Switches, r.PortsPerSwitch[0], r.PortsPerSwitch[1], r.Ports, r.Hosts)
	row("queues under control", "%d (%d lossless per port); decided on per interval: mean %.0f, fewest %d",
		r.Queues, r.QueuesPerPort, r.QueuesObsMean, r.QueuesObsMin)
	row("agent", "%s, policy %s, telemetry %s, interval %v", r.Mode, r.Policy, r.Encoding, time.Duration(r.IntervalS*float64(time.Second)))
	row("measured", "%d control intervals in %.2f s wall (%.2f per interval); simulator advanced %.1f µs (timescale %g), behind pace %.1f µs",
		r.Intervals, r.WallS, r.TicksPerInterval, r.SimAdvancedUs, r.Timescale, r.SimLagUs)
	row("agent CPU per interval", "%.1f ms (%.3f cores)", r.AgentCPUPerIntervalMs, r.AgentCores)
	row("telemetry taken in", "%d queue samples (%.2f per queue per interval)", r.QueueSamples, r.SamplesPerQueueInterval)
	row("agent CPU per interval per 1,000 queues", "%.2f ms (process CPU per 1,000 queue samples)", r.AgentCPUPer1000QMs)
	row("switch side CPU per interval (child)", "%.1f ms (simulator + gNMI server, not the agent's)", r.SwitchCPUPerIntervalMs)
	row("Go heap live", "%.1f MB (%.1f MB before the agent); %.0f KB per 1,000 queues", float64(r.HeapLiveBytes)/1e6,
		float64(r.HeapBaseBytes)/1e6, r.HeapPer1000QB/1e3)
	row("decision latency", "mean %.1f ms, max %.1f ms (policy alone: mean %.1f ms)", r.DecisionMsMean, r.DecisionMsMax, r.DecideMsMean)
	if r.Mode == string(agent.ModeClosedLoop) {
		row("Sets", "%d (%d failed), %.1f queues each; change budget %d per interval; %d queues applied and read back",
			r.Sets, r.SetErrors, r.QueuesPerSet, r.ChangeBudget, r.QueuesApplied)
		row("Set latency", "p50 %.2f ms, p99 %.2f ms, max %.2f ms", r.SetP50Ms, r.SetP99Ms, r.SetMaxMs)
		row("read-back Get latency", "p50 %.2f ms, p99 %.2f ms", r.ReadP50Ms, r.ReadP99Ms)
	} else {
		row("recommendations stored", "%d", r.Recommendations)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, r.Verdict)
	return err
}

func newBenchAgentCmd() *cobra.Command {
	o := defaultAgentBenchOpts()
	var (
		serve, asJSON bool
		niceSwitches  bool
		mode, level   string
		cpuProfile    string
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Agent scale over gNMI: CPU and heap per 1,000 queues, decision and Set latency",
		Long: `Serve a generated fabric of simulated switches over gNMI on 127.0.0.1 (in a child process of this
binary, so that this process's CPU time and heap are the agent's alone), run the agent against every
switch at --interval, and report the queues under control, the agent's CPU time per interval (per
1,000 queues), its live Go heap, the decision latency (observations to the guard's plan) and the
latency of its gNMI Sets and read-back Gets, with a verdict against the goal of 10,000 queues per
agent in under one core.

The default fabric is 2 pods of 32 leaves x 18 spines with 14 hosts per leaf: 100 switches of 32
ports each, 2 lossless queues (priorities 3 and 4) per port, 6,400 queues, light cdf traffic. The
switches start at 1.5x the thresholds of the static policy's preset, so that in closed loop every
queue wants one change, made --change-budget queues per interval (default 64, the guardrails'
default). The simulated switches run at nice 19 (--nice-switches) so that on a small machine they,
not the agent, fall behind; their Set latency then includes waiting for the CPU.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if serve {
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				return serveBenchFabric(ctx, os.Stdin, cmd.OutOrStdout())
			}
			o.Mode = agent.Mode(mode)
			if err := o.LogLevel.UnmarshalText([]byte(level)); err != nil {
				return fmt.Errorf("--log-level: %q is not debug, info, warn or error", level)
			}
			o.Log = cmd.ErrOrStderr()
			o.InitialECN = benchInitialECN(o.Policy)
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			stopProfile, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stopProfile()
			r, err := runAgentBench(ctx, o, childCommand(ctx, niceSwitches, exe, "bench", "agent", "--serve"))
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(r)
			}
			return printAgentBench(cmd.OutOrStdout(), r)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Pods, "pods", o.Pods, "independent leaf-spine pods")
	f.IntVar(&o.Leaves, "leaves", o.Leaves, "leaves per pod (= ports of a spine)")
	f.IntVar(&o.Spines, "spines", o.Spines, "spines per pod")
	f.IntVar(&o.HostsPerLeaf, "hosts-per-leaf", o.HostsPerLeaf, "hosts per leaf (a leaf has hosts + spines ports)")
	f.Float64Var(&o.Load, "load", o.Load, "offered load of each cdf workload (two per pod, priorities 3 and 4)")
	f.Float64Var(&o.Timescale, "timescale", o.Timescale, "wall seconds per simulated second")
	f.DurationVar(&o.Step, "step", o.Step, "wall time between simulation steps")
	f.Uint64Var(&o.Seed, "seed", o.Seed, "simulation seed")
	f.DurationVar(&o.Interval, "interval", o.Interval, "sample and control interval")
	f.IntVar(&o.Intervals, "intervals", o.Intervals, "intervals measured")
	f.IntVar(&o.Warmup, "warmup", o.Warmup, "intervals before the measurement (the first has no rates)")
	f.StringVar(&mode, "mode", string(o.Mode), "agent mode: closed-loop or shadow")
	f.StringVar(&o.Policy, "policy", o.Policy, "policy: static:NAME, fixed:KMIN/KMAX/PMAX, schedule:..., adaptive, builtin[:prefer=P] or model:NAME[,prefer=P]")
	f.StringVar(&o.Encoding, "encoding", o.Encoding, "telemetry encoding: json_ietf, json or proto")
	f.IntVar(&o.ChangeBudget, "change-budget", o.ChangeBudget, "guardrail change budget per interval")
	f.StringVar(&level, "log-level", "warn", "agent log level (to stderr): debug, info, warn or error")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.BoolVar(&niceSwitches, "nice-switches", true, "run the simulated switches at the lowest CPU priority (nice 19), so the agent is not starved")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the agent process to this file")
	f.BoolVar(&serve, "serve", false, "internal: serve the fabric described in $"+benchServeEnv)
	f.MarkHidden("serve")
	return cmd
}

// childCommand runs exe with args, at the lowest CPU priority (nice 19)
// when nice is set and the system has the nice command: the switch side
// then yields the CPU to the agent on a small machine and falls behind
// instead of starving it.
func childCommand(ctx context.Context, nice bool, exe string, args ...string) *exec.Cmd {
	if nice {
		if n, err := exec.LookPath("nice"); err == nil {
			return exec.CommandContext(ctx, n, append([]string{"-n", "19", exe}, args...)...)
		}
	}
	return exec.CommandContext(ctx, exe, args...)
}

// benchInitialECN is the switches' starting setting: 1.5x the thresholds of
// the policy's preset (static:NAME), else of the hpcc preset, so that the
// policy changes every queue within the guard's max step of 2x.
func benchInitialECN(spec string) simenv.ECN {
	name, ok := strings.CutPrefix(spec, "static:")
	p, err := policy.Preset(name)
	if !ok || err != nil {
		p, _ = policy.Preset("hpcc")
	}
	s := p.Setting(units.RefRateBps)
	return simenv.ECN{KminBytes: s.KminBytes * 3 / 2, KmaxBytes: s.KmaxBytes * 3 / 2, Pmax: s.Pmax}
}

func init() { benchCmd.AddCommand(newBenchAgentCmd()) }
