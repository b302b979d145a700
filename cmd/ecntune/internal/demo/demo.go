// Package demo runs ecntune end to end in one process: a simulated fabric
// served as gNMI switches (simswitch), its traffic repeating so that it
// never goes quiet, and the agent on those switches in shadow mode (or, with
// ClosedLoop, applying its recommendations through the guardrails), with
// the agent's HTTP endpoints (dashboard at /, /recommendations, /changes,
// /metrics, /healthz) on one address. `ecntune demo` is its command.
//
// Start builds and starts it all; Run serves until its context ends, then
// stops the agent, the HTTP server and the switches, and returns once
// every goroutine it started has returned.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ecntune/ecntune/agent"
	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simswitch"
)

// Config says what to run.
type Config struct {
	// Scenario is the simulation (a loaded scenario). Its workloads
	// repeat every Duration unless Once is set.
	Scenario simenv.Config
	// Once runs the scenario's traffic once, as simswitch does by
	// default: after Duration the fabric is idle and /healthz says so.
	Once bool
	// Listen is the HTTP address of the agent's endpoints (default
	// 127.0.0.1:9273; port 0 picks a free one, see Demo.URL).
	Listen string
	// GNMIListen is the simulated switches' gNMI address (default
	// 127.0.0.1:0).
	GNMIListen string
	// Timescale is wall seconds per simulated second (default 1000).
	Timescale float64
	// Interval is the agent's control interval (default 1s, at least
	// agent.MinInterval).
	Interval time.Duration
	// ClosedLoop applies the recommendations through the guardrails
	// instead of only recording them.
	ClosedLoop bool
	// Policy is the agent's policy spec (default builtin).
	Policy string
	// Resolver resolves Policy (model:NAME needs its Models).
	Resolver policy.Resolver
	// DB is the agent's database; "" is a file in a temporary directory
	// removed when the demo stops.
	DB string
	// Logger receives the agent's and the switches' logs (default: none).
	Logger *slog.Logger
}

// Demo is a running demo.
type Demo struct {
	cfg    Config
	srv    *simswitch.Server
	agent  *agent.Agent
	agCfg  *config.Config
	http   *http.Server
	ln     net.Listener
	url    string
	gnmi   string
	tmpDir string
	start  time.Time
	sim0   simenv.Time

	mu    sync.Mutex
	first *FirstRecommendation
}

// FirstRecommendation is when the agent's first recommendations appeared,
// counted from Start.
type FirstRecommendation struct {
	Wall      time.Duration `json:"-"`
	Simulated simenv.Time   `json:"-"`
	Queues    int           `json:"queues"`
	// WallNs and SimulatedNs are Wall and Simulated in nanoseconds (JSON).
	WallNs      int64 `json:"wall_ns"`
	SimulatedNs int64 `json:"simulated_ns"`
}

// Status is what GET /demo answers: the simulated fabric's state.
type Status struct {
	Scenario       string               `json:"scenario"`
	Mode           string               `json:"mode"`
	Policy         string               `json:"policy"`
	Switches       int                  `json:"switches"`
	GNMI           string               `json:"gnmi"`
	Timescale      float64              `json:"timescale"`
	SimulatedNs    int64                `json:"simulated_ns"`
	BehindNs       int64                `json:"behind_ns"`
	Loop           bool                 `json:"loop"`
	ScenarioNs     int64                `json:"scenario_duration_ns"`
	ScenarioEnded  bool                 `json:"scenario_ended"`
	FirstRecommend *FirstRecommendation `json:"first_recommendation,omitempty"`
}

// Start starts the simulated switches, the agent and its HTTP endpoints.
// The switches' simulation runs from here; the agent subscribes when Run
// is called. On an error everything started is stopped.
func Start(ctx context.Context, cfg Config) (_ *Demo, err error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:9273"
	}
	if cfg.GNMIListen == "" {
		cfg.GNMIListen = "127.0.0.1:0"
	}
	if cfg.Timescale == 0 {
		cfg.Timescale = 1000
	}
	if !(cfg.Timescale > 0) {
		return nil, fmt.Errorf("timescale %g: must be > 0 (wall seconds per simulated second)", cfg.Timescale)
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	if cfg.Interval < config.MinInterval {
		return nil, fmt.Errorf("interval %s: below the agent's minimum of %s", cfg.Interval, config.MinInterval)
	}
	if cfg.Policy == "" {
		cfg.Policy = "builtin"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Scenario.Duration <= 0 {
		return nil, errors.New("scenario: no duration")
	}
	sim := cfg.Scenario
	sim.Loop = !cfg.Once
	d := &Demo{cfg: cfg, start: time.Now()}
	defer func() {
		if err != nil {
			d.stop()
		}
	}()
	if cfg.DB == "" {
		if d.tmpDir, err = os.MkdirTemp("", "ecntune-demo-"); err != nil {
			return nil, err
		}
		cfg.DB = d.tmpDir + string(os.PathSeparator) + "demo.db"
		d.cfg.DB = cfg.DB
	}
	log := cfg.Logger
	d.srv, d.gnmi, err = simswitch.Start(ctx, simswitch.Config{Sim: sim, Listen: cfg.GNMIListen, Timescale: cfg.Timescale,
		Logf: func(f string, a ...any) { log.Info(fmt.Sprintf(f, a...)) }})
	if err != nil {
		return nil, fmt.Errorf("simulated switches: %w", err)
	}
	d.sim0, _ = d.srv.Status()
	yml := agentYAML(d.srv, d.gnmi, cfg)
	if d.agCfg, err = config.Parse([]byte(yml)); err != nil {
		return nil, fmt.Errorf("the demo's agent configuration: %w\n%s", err, yml)
	}
	if d.agent, err = agent.Open(ctx, d.agCfg, agent.Deps{Resolver: cfg.Resolver, Logger: log}); err != nil {
		return nil, err
	}
	d.agent.AddHealthCheck(func() []string {
		if !d.srv.Ended() {
			return nil
		}
		return []string{fmt.Sprintf("simulated fabric: scenario %s ended at simulated %v; no traffic since (run the demo without --once)",
			d.cfg.Scenario.Name, d.srv.End())}
	})
	if d.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	d.url = "http://" + d.ln.Addr().String() + "/"
	// The agent's bounds: a few connections at once, none idle or slow for
	// long, so that the endpoint's clients cannot take the descriptors the
	// switches' connections need.
	d.http, d.ln = agent.NewHTTPServer(d.ln, d.Handler(), agent.HTTPLimits{})
	return d, nil
}

// agentYAML is the agent's configuration for the simulated fabric: every
// switch a target on the one gNMI address, every port, the lossless
// queues, the fabric ports as simswitch knows them, and guardrail bounds
// for every link rate of the fabric (those of examples/agent-closed-loop.yaml
// at 100 Gb/s, scaled with the rate).
func agentYAML(srv *simswitch.Server, gnmiAddr string, cfg Config) string {
	var b strings.Builder
	mode := "shadow"
	if cfg.ClosedLoop {
		mode = "closed-loop"
	}
	q := []string{}
	for _, p := range srv.LosslessPriorities() {
		q = append(q, fmt.Sprint(p))
	}
	fmt.Fprintf(&b, "mode: %s\npolicy: %q\ninterval: %s\nsample-interval: %s\ndb: %q\nmetrics: \"\"\nowner: ecntune-demo\nretention: 10m\nstore-recommendations: true\n",
		mode, cfg.Policy, cfg.Interval, cfg.Interval, cfg.DB)
	b.WriteString("targets:\n")
	rates := map[float64]bool{}
	for _, sw := range srv.Switches() {
		fabric := simswitch.FabricPorts(sw)
		for i := range fabric {
			fabric[i] = fmt.Sprintf("%q", fabric[i])
		}
		fmt.Fprintf(&b, "  %s:\n    address: %q\n    insecure: true\n    dialect: openconfig\n    encoding: proto\n    timeout: 5s\n    retry-timer: 1s\n    ports: \"*\"\n    queues: [%s]\n    fabric-ports: [%s]\n",
			sw.Name, gnmiAddr, strings.Join(q, ", "), strings.Join(fabric, ", "))
		for _, p := range sw.Ports {
			rates[p.RateBps] = true
		}
	}
	rs := make([]float64, 0, len(rates))
	for r := range rates {
		rs = append(rs, r)
	}
	sort.Float64s(rs)
	b.WriteString("guardrails:\n  bounds:\n")
	for _, r := range rs {
		s := r / units.RefRateBps
		by := func(v float64) string { return fmt.Sprintf("%dB", max(int64(v*s), 1)) }
		fmt.Fprintf(&b, "    - {rate: %s, kmin: [%s, %s], kmax: [%s, %s], pmax: [0.01, 1.0]}\n",
			units.FormatRate(r), by(5e3), by(5e6), by(20e3), by(12e6))
	}
	b.WriteString("  max-step-ratio: 2\n  min-hold: 5s\n  change-budget: 32\n  min-confidence: 0.1\n" +
		"  low-confidence: hold\n  dwell: 3\n  idle-util: 0.01\n  fallback-preset: hpcc\n  safe-preset: sonic-default\n" +
		"  rollback: {window: 3, drop-frac: 0, pause-increase: 0.05, reward-drop: 0.3}\n")
	return b.String()
}

// URL is the address of the agent's endpoints, e.g. http://127.0.0.1:9273/.
func (d *Demo) URL() string { return d.url }

// GNMI is the simulated switches' gNMI address.
func (d *Demo) GNMI() string { return d.gnmi }

// Agent is the demo's agent.
func (d *Demo) Agent() *agent.Agent { return d.agent }

// Switches is the demo's simulated-switch server.
func (d *Demo) Switches() *simswitch.Server { return d.srv }

// AgentConfig is the configuration the demo runs the agent with.
func (d *Demo) AgentConfig() *config.Config { return d.agCfg }

// First returns when the first recommendations appeared (nil: not yet).
func (d *Demo) First() *FirstRecommendation {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.first == nil {
		return nil
	}
	f := *d.first
	return &f
}

// Status is the state GET /demo serves.
func (d *Demo) Status() Status {
	now, lag := d.srv.Status()
	mode := "shadow"
	if d.cfg.ClosedLoop {
		mode = "closed-loop"
	}
	return Status{Scenario: d.cfg.Scenario.Name, Mode: mode, Policy: d.cfg.Policy, Switches: len(d.srv.Switches()),
		GNMI: d.gnmi, Timescale: d.cfg.Timescale, SimulatedNs: now.Duration().Nanoseconds(), BehindNs: lag.Duration().Nanoseconds(),
		Loop: !d.cfg.Once, ScenarioNs: d.cfg.Scenario.Duration.Duration().Nanoseconds(), ScenarioEnded: d.srv.Ended(),
		FirstRecommend: d.First()}
}

// Handler serves the agent's endpoints and GET /demo (Status as JSON).
// The agent's health (/healthz and the dashboard's pill) also fails once
// a scenario run with Once has ended (see Start).
func (d *Demo) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", d.agent.Handler())
	mux.HandleFunc("/demo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(d.Status())
	})
	return mux
}

// Run serves the HTTP endpoints and runs the agent until ctx ends, then
// stops everything (the agent, the HTTP server, the switches, the
// temporary database) and returns when all of it has stopped. onFirst,
// when not nil, is called once when the first recommendations appear.
func (d *Demo) Run(ctx context.Context, onFirst func(FirstRecommendation)) error {
	defer d.stop()
	var wg sync.WaitGroup
	httpErr := make(chan error, 1)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := d.http.Serve(d.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			httpErr <- err
		}
	}()
	wctx, cancel := context.WithCancel(ctx)
	go func() {
		defer wg.Done()
		d.watchFirst(wctx, onFirst)
	}()
	agentErr := make(chan error, 1)
	go func() { agentErr <- d.agent.Run(wctx) }()
	var err error
	select {
	case err = <-agentErr:
		cancel()
	case err = <-httpErr:
		cancel()
		<-agentErr
	case <-ctx.Done():
		cancel()
		err = <-agentErr
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = d.http.Shutdown(sctx)
	scancel()
	wg.Wait()
	return err
}

// watchFirst waits for the agent's first recommendations and records
// when they came.
func (d *Demo) watchFirst(ctx context.Context, onFirst func(FirstRecommendation)) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		recs := d.agent.Recommendations("")
		if len(recs) == 0 {
			continue
		}
		now, _ := d.srv.Status()
		f := FirstRecommendation{Wall: time.Since(d.start), Simulated: now - d.sim0, Queues: len(recs)}
		f.WallNs, f.SimulatedNs = f.Wall.Nanoseconds(), f.Simulated.Duration().Nanoseconds()
		d.mu.Lock()
		d.first = &f
		d.mu.Unlock()
		if onFirst != nil {
			onFirst(f)
		}
		return
	}
}

// stop releases what Start started, in reverse order.
func (d *Demo) stop() {
	if d.http != nil {
		d.http.Close()
	}
	if d.ln != nil {
		d.ln.Close() // when Serve never ran
	}
	if d.agent != nil {
		d.agent.Close()
	}
	if d.srv != nil {
		d.srv.Close()
	}
	if d.tmpDir != "" {
		os.RemoveAll(d.tmpDir)
	}
}

// Describe is the few lines the command prints at start: what runs where.
func (d *Demo) Describe() []string {
	mode := "shadow mode (recommends, never writes)"
	if d.cfg.ClosedLoop {
		mode = "closed loop (applies recommendations through the guardrails)"
	}
	traffic := fmt.Sprintf("repeating every %v of simulated time", d.cfg.Scenario.Duration)
	if d.cfg.Once {
		traffic = fmt.Sprintf("once: idle after %v of simulated time", d.cfg.Scenario.Duration)
	}
	var rates []string
	seen := map[string]bool{}
	for _, sw := range d.srv.Switches() {
		for _, p := range sw.Ports {
			if r := units.FormatRate(p.RateBps); !seen[r] {
				seen[r] = true
				rates = append(rates, r)
			}
		}
	}
	slices.Sort(rates)
	return []string{
		fmt.Sprintf("scenario %s: %d switches (links %s), traffic %s", d.cfg.Scenario.Name, len(d.srv.Switches()), strings.Join(rates, ", "), traffic),
		fmt.Sprintf("simulated switches on gNMI %s, timescale %g (1 s of wall time = %v simulated)", d.gnmi, d.cfg.Timescale,
			simenv.FromDuration(time.Second)/simenv.Time(d.cfg.Timescale)),
		fmt.Sprintf("agent in %s, policy %s, every %s", mode, d.cfg.Policy, d.cfg.Interval),
		fmt.Sprintf("open %s  (the dashboard; also /recommendations, /changes, /metrics, /healthz, /demo)", d.url),
	}
}
