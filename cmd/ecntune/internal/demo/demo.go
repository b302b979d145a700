// Package demo runs ecntune end to end in one process: a simulated fabric
// served as gNMI switches (simswitch), its traffic repeating so that it
// never goes quiet, and the agent on those switches in shadow mode (or, with
// ClosedLoop, applying its recommendations through the guardrails), with
// the agent's HTTP endpoints (dashboard at /, /recommendations, /changes,
// /metrics, /healthz) on one address. `ecntune demo` is its command.
//
// With Config.Fleet it runs several agents instead, a fleet on an embedded
// etcd (agent/fleet): each its own endpoints and db, each writing only the
// switches it owns (fleet.go).
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
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ecntune/ecntune/agent"
	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/etcdrun"
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
	// Fleet, 2 or more, runs that many agents in closed loop as a fleet
	// on an embedded etcd (members a, b, c…): see fleet.go. ClosedLoop
	// is implied; DB, when given, is the pattern of their dbs (x.db:
	// x-a.db, x-b.db…).
	Fleet int
	// FleetKillAfter, with Fleet, stops the last agent after that long
	// (it leaves the fleet): its switches fail over to the others.
	FleetKillAfter time.Duration
	// Events receives, with Fleet, one line whenever the placement
	// changes (who owns which switches) or an agent stops (nil: none).
	Events func(string)
}

// Demo is a running demo.
type Demo struct {
	cfg    Config
	srv    *simswitch.Server
	agents []*member // the one agent, or the fleet's, in member order
	etcd   *etcdrun.Cluster
	etcdC  *clientv3.Client // the demo's own view of the fleet (placement)
	gnmi   string
	tmpDir string
	start  time.Time
	sim0   simenv.Time

	mu    sync.Mutex
	first *FirstRecommendation
}

// member is one of the demo's agents with its HTTP endpoints.
type member struct {
	id      string // fleet member id ("" alone)
	agent   *agent.Agent
	cfg     *config.Config
	cfgPath string // a fleet's: its configuration, in the temporary directory
	http    *http.Server
	ln      net.Listener
	url     string
	cancel  context.CancelFunc // ends its Run (set by Run)
	killed  atomic.Bool        // stopped on purpose (FleetKillAfter)
}

// Member is one agent of the demo as the command shows it.
type Member struct {
	ID     string `json:"id,omitempty"` // fleet member id ("" alone)
	URL    string `json:"url"`
	DB     string `json:"db"`
	Config string `json:"config,omitempty"` // a fleet's: its configuration file
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
	// Agents are the fleet's agents (Config.Fleet; none alone).
	Agents []Member `json:"agents,omitempty"`
}

// Start starts the simulated switches, the agent (or, with Fleet, the
// embedded etcd and the fleet's agents) and their HTTP endpoints. The
// switches' simulation runs from here; the agents subscribe when Run is
// called. On an error everything started is stopped.
func Start(ctx context.Context, cfg Config) (_ *Demo, err error) {
	if cfg, err = withDefaults(cfg); err != nil {
		return nil, err
	}
	sim := cfg.Scenario
	sim.Loop = !cfg.Once
	d := &Demo{cfg: cfg, start: time.Now()}
	defer func() {
		if err != nil {
			d.stop()
		}
	}()
	if cfg.DB == "" || cfg.Fleet > 1 {
		if d.tmpDir, err = os.MkdirTemp("", "ecntune-demo-"); err != nil {
			return nil, err
		}
	}
	if cfg.DB == "" && cfg.Fleet < 2 {
		d.cfg.DB = filepath.Join(d.tmpDir, "demo.db")
	}
	log := cfg.Logger
	d.srv, d.gnmi, err = simswitch.Start(ctx, simswitch.Config{Sim: sim, Listen: cfg.GNMIListen, Timescale: cfg.Timescale,
		Logf: func(f string, a ...any) { log.Info(fmt.Sprintf(f, a...)) }})
	if err != nil {
		return nil, fmt.Errorf("simulated switches: %w", err)
	}
	d.sim0, _ = d.srv.Status()
	if cfg.Fleet > 1 {
		err = d.startFleet(ctx)
	} else {
		m := &member{}
		d.agents = []*member{m}
		err = d.open(ctx, m, agentYAML(d.srv, d.gnmi, d.cfg, nil))
	}
	if err != nil {
		return nil, err
	}
	if err = d.listen(); err != nil {
		return nil, err
	}
	return d, nil
}

// withDefaults fills cfg's defaults in and checks it.
func withDefaults(cfg Config) (Config, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:9273"
	}
	if cfg.GNMIListen == "" {
		cfg.GNMIListen = "127.0.0.1:0"
	}
	if cfg.Timescale == 0 {
		cfg.Timescale = 1000
	}
	if err := simswitch.CheckTimescale(cfg.Timescale); err != nil {
		return cfg, fmt.Errorf("timescale %g: %w", cfg.Timescale, err)
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	if cfg.Interval < config.MinInterval {
		return cfg, fmt.Errorf("interval %s: below the agent's minimum of %s", cfg.Interval, config.MinInterval)
	}
	if cfg.Policy == "" {
		cfg.Policy = policy.DefaultSpec
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Scenario.Duration <= 0 {
		return cfg, errors.New("scenario: no duration")
	}
	if cfg.Fleet == 1 || cfg.Fleet < 0 || cfg.Fleet > maxFleet {
		return cfg, fmt.Errorf("fleet %d: a fleet is 2 to %d agents", cfg.Fleet, maxFleet)
	}
	if cfg.Fleet > 1 {
		cfg.ClosedLoop = true // the demo's fleet shows writers, each its own switches
	} else if cfg.FleetKillAfter != 0 {
		return cfg, errors.New("fleet kill-after: only with a fleet")
	}
	return cfg, nil
}

// open opens m's agent on the configuration yml, its health failing once
// a scenario run with Once has ended.
func (d *Demo) open(ctx context.Context, m *member, yml string) (err error) {
	if m.cfg, err = config.Parse([]byte(yml)); err != nil {
		return fmt.Errorf("the demo's agent configuration, built from its flags (--policy, --interval, ...): %w", err)
	}
	log := d.cfg.Logger
	if m.id != "" {
		log = log.With("agent", m.id)
	}
	// The simulated switches start afresh at their defaults on every
	// start: a kept --db remembers the settings the agent gave the last
	// ones, which they no longer run. Told so, the agent takes their
	// defaults as the baseline, as it does a switch seen restarting (not
	// as another writer's: every queue yielded for a minute).
	var restarted []string
	for _, t := range m.cfg.Targets {
		restarted = append(restarted, t.Name)
	}
	if m.agent, err = agent.Open(ctx, m.cfg, agent.Deps{Resolver: d.cfg.Resolver, Logger: log, Restarted: restarted,
		CounterSpan: simswitch.Simulated(d.cfg.Interval, d.cfg.Timescale).Duration()}); err != nil {
		return err
	}
	m.agent.AddHealthCheck(func() []string {
		if !d.srv.Ended() {
			return nil
		}
		return []string{fmt.Sprintf("simulated fabric: scenario %s ended at simulated %v; no traffic since (run the demo without --once)",
			d.cfg.Scenario.Name, d.srv.End())}
	})
	m.agent.AddHealthCheck(func() []string {
		_, lag := d.srv.Status()
		if p := behindProblem(lag, d.cfg.Interval, d.cfg.Timescale); p != "" {
			return []string{p}
		}
		return nil
	})
	return nil
}

// behindWallLimit is how much wall time a simulation may fall behind real
// time before the demo is unhealthy: a busy machine makes a lag of
// seconds that the simulation makes up (the browser test's demo, beside a
// loaded CI run, lagged 81 intervals of 200 ms and caught up); a minute is
// a machine short of CPU for the scenario.
const behindWallLimit = time.Minute

// behindProblem says that the simulation is behind real time by lag, when
// that is more than config.HealthStaleIntervals of the agent's intervals
// (iv of wall time at timescale) and more than behindWallLimit of wall
// time: its switches' counters then span less than an interval, and the
// agent holds or misreads them ("" otherwise).
func behindProblem(lag simenv.Time, iv time.Duration, timescale float64) string {
	per := simswitch.Simulated(iv, timescale)
	if per <= 0 || lag <= config.HealthStaleIntervals*per || time.Duration(float64(iv)*float64(lag)/float64(per)) <= behindWallLimit {
		return ""
	}
	return fmt.Sprintf("simulated fabric: the simulation is %v of simulated time behind real time (%.0f of the agent's %v intervals at timescale %g): "+
		"the machine is short of CPU for it, and the switches' counters span less than an interval; free CPU, raise --timescale or run a smaller --scenario",
		lag.Duration(), float64(lag)/float64(per), iv, timescale)
}

// listen opens every agent's HTTP endpoints: the first on Listen, the
// others on the ports after it (or any free port when taken or when
// Listen's port is 0).
func (d *Demo) listen() error {
	host, port, err := net.SplitHostPort(d.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", d.cfg.Listen, err)
	}
	p, _ := strconv.Atoi(port)
	for i, m := range d.agents {
		var ln net.Listener
		if i == 0 {
			if ln, err = net.Listen("tcp", d.cfg.Listen); err != nil {
				if errors.Is(err, syscall.EADDRINUSE) {
					return fmt.Errorf("listen %s: %w (another process has the port: give --listen %s to take any free one, or another port)",
						d.cfg.Listen, err, net.JoinHostPort(host, "0"))
				}
				return fmt.Errorf("listen %s: %w", d.cfg.Listen, err)
			}
		} else {
			if p > 0 {
				ln, _ = net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p+i)))
			}
			if ln == nil {
				if ln, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
					return fmt.Errorf("listen %s: %w", host, err)
				}
			}
		}
		m.url = "http://" + ln.Addr().String() + "/"
		// The agent's bounds: a few connections at once, none idle or
		// slow for long, so that the endpoint's clients cannot take the
		// descriptors the switches' connections need.
		m.http, m.ln = agent.NewHTTPServer(ln, d.handler(m), agent.HTTPLimits{})
	}
	return nil
}

// agentYAML is the agent's configuration for the simulated fabric: every
// switch a target on the one gNMI address, every port, the lossless
// queues, the fabric ports as simswitch knows them, and guardrail bounds
// for every link rate of the fabric (those of examples/agent-closed-loop.yaml
// at 100 Gb/s, scaled with the rate, none below one MTU).
// With fm it is that fleet member's: its own db and owner, and the fleet
// key.
func agentYAML(srv *simswitch.Server, gnmiAddr string, cfg Config, fm *fleetMember) string {
	var b strings.Builder
	mode := "shadow"
	if cfg.ClosedLoop {
		mode = "closed-loop"
	}
	db, owner := cfg.DB, "ecntune-demo"
	if fm != nil {
		db, owner = fm.db, "ecntune-demo-"+fm.id
	}
	q := []string{}
	for _, p := range srv.LosslessPriorities() {
		q = append(q, fmt.Sprint(p))
	}
	fmt.Fprintf(&b, "mode: %s\npolicy: %q\ninterval: %s\nsample-interval: %s\ndb: %q\nmetrics: \"\"\nowner: %s\nretention: 10m\nstore-recommendations: true\n",
		mode, cfg.Policy, cfg.Interval, cfg.Interval, db, owner)
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
		// never below one MTU: a slow port's scaled Kmin floor (1.25KB at
		// 25 Gb/s) is crossed by a single packet, and the configuration
		// the demo wrote would be warned about as if the user had
		by := func(v float64) string { return fmt.Sprintf("%dB", max(int64(v*s), env.MTUBytes)) }
		fmt.Fprintf(&b, "    - {rate: %s, kmin: [%s, %s], kmax: [%s, %s], pmax: [0.01, 1.0]}\n",
			units.FormatRate(r), by(5e3), by(5e6), by(20e3), by(12e6))
	}
	// tighten fast, loosen slowly: examples/eval-agent-builtin.yaml says why
	b.WriteString("  max-step-ratio: 1000\n  min-hold: 5s\n  min-hold-tighten: 0s\n  change-budget: 32\n" +
		"  min-confidence: 0.1\n  min-confidence-tighten: 0\n  low-confidence: hold\n  dwell: 1\n  dwell-loosen: 15\n" +
		"  idle-util: 0.01\n  fallback-preset: hpcc\n  safe-preset: sonic-default\n" +
		"  rollback: {window: 3, drop-frac: 0, pause-increase: 0.05, reward-drop: 0.3}\n")
	if fm != nil {
		b.WriteString(fm.yaml())
	}
	return b.String()
}

// URL is the address of the agent's endpoints, e.g. http://127.0.0.1:9273/
// (a fleet's: its first agent's; Members lists them all).
func (d *Demo) URL() string { return d.agents[0].url }

// GNMI is the simulated switches' gNMI address.
func (d *Demo) GNMI() string { return d.gnmi }

// Agent is the demo's agent (a fleet's: its first).
func (d *Demo) Agent() *agent.Agent { return d.agents[0].agent }

// Switches is the demo's simulated-switch server.
func (d *Demo) Switches() *simswitch.Server { return d.srv }

// AgentConfig is the configuration the demo runs the agent with (a
// fleet's: its first agent's).
func (d *Demo) AgentConfig() *config.Config { return d.agents[0].cfg }

// Members are the demo's agents, in member order (one alone).
func (d *Demo) Members() []Member {
	out := make([]Member, len(d.agents))
	for i, m := range d.agents {
		out[i] = Member{ID: m.id, URL: m.url, DB: m.cfg.DB, Config: m.cfgPath}
	}
	return out
}

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
	st := Status{Scenario: d.cfg.Scenario.Name, Mode: mode, Policy: d.cfg.Policy, Switches: len(d.srv.Switches()),
		GNMI: d.gnmi, Timescale: d.cfg.Timescale, SimulatedNs: now.Duration().Nanoseconds(), BehindNs: lag.Duration().Nanoseconds(),
		Loop: !d.cfg.Once, ScenarioNs: d.cfg.Scenario.Duration.Duration().Nanoseconds(), ScenarioEnded: d.srv.Ended(),
		FirstRecommend: d.First()}
	if d.cfg.Fleet > 1 {
		st.Agents = d.Members()
	}
	return st
}

// Handler serves the (first) agent's endpoints and GET /demo (Status as
// JSON). The agent's health (/healthz and the dashboard's pill) also
// fails once a scenario run with Once has ended (see Start).
func (d *Demo) Handler() http.Handler { return d.handler(d.agents[0]) }

func (d *Demo) handler(m *member) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", m.agent.Handler())
	mux.HandleFunc("/demo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(d.Status())
	})
	return mux
}

// memberEnd is an agent's Run returning.
type memberEnd struct {
	m   *member
	err error
}

// Run serves the HTTP endpoints and runs the agents until ctx ends, then
// stops everything (the agents, the HTTP servers, the etcd, the switches,
// the temporary files) and returns when all of it has stopped. onFirst,
// when not nil, is called once when the first recommendations appear.
// An agent's Run ending (other than one stopped on purpose, see
// FleetKillAfter) ends the demo with its error.
func (d *Demo) Run(ctx context.Context, onFirst func(FirstRecommendation)) error {
	defer d.stop()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	httpErr := make(chan error, len(d.agents))
	ended := make(chan memberEnd, len(d.agents))
	for _, m := range d.agents {
		var mctx context.Context
		mctx, m.cancel = context.WithCancel(wctx)
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := m.http.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				httpErr <- err
			}
		}()
		go func() {
			defer wg.Done()
			ended <- memberEnd{m, m.agent.Run(mctx)}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.watchFirst(wctx, onFirst)
	}()
	d.runFleet(wctx, &wg)
	err := d.await(ctx, cancel, ended, httpErr)
	for _, m := range d.agents {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = m.http.Shutdown(sctx)
		scancel()
	}
	wg.Wait()
	return err
}

// await waits until every agent's Run has returned: the first to end
// (but one stopped on purpose), an HTTP server's failure or ctx's end
// cancels the others. It returns the first error.
func (d *Demo) await(ctx context.Context, cancel context.CancelFunc, ended <-chan memberEnd, httpErr <-chan error) error {
	var err error
	keep := func(e error) {
		if err == nil {
			err = e
		}
	}
	done := ctx.Done()
	for live := len(d.agents); live > 0; {
		select {
		case e := <-ended:
			live--
			if e.m.killed.Load() {
				d.retire(e.m, e.err)
				continue
			}
			keep(e.err)
			cancel()
		case e := <-httpErr:
			keep(e)
			cancel()
		case <-done:
			done = nil
			cancel()
		}
	}
	return err
}

// watchFirst waits for the agents' first recommendations and records
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
		n := 0 // a fleet's agents decide for the switches they own
		for _, m := range d.agents {
			if !m.killed.Load() {
				n += len(m.agent.Recommendations(""))
			}
		}
		if n == 0 {
			continue
		}
		now, _ := d.srv.Status()
		f := FirstRecommendation{Wall: time.Since(d.start), Simulated: now - d.sim0, Queues: n}
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

// stop releases what Start started, in reverse order: the agents (at once:
// a fleet's leave it, each revoking its lease) before the etcd they
// leave and the switches they subscribe to.
func (d *Demo) stop() {
	var wg sync.WaitGroup
	for _, m := range d.agents {
		if m.http != nil {
			m.http.Close()
		}
		if m.ln != nil {
			m.ln.Close() // when Serve never ran
		}
		if m.agent != nil {
			wg.Add(1)
			go func() { defer wg.Done(); m.agent.Close() }()
		}
	}
	wg.Wait()
	if d.etcdC != nil {
		d.etcdC.Close()
	}
	if d.etcd != nil {
		d.etcd.Close()
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
	lines := []string{
		fmt.Sprintf("scenario %s: %s (links %s), traffic %s", d.cfg.Scenario.Name, units.Count(len(d.srv.Switches()), "switch"), strings.Join(rates, ", "), traffic),
		fmt.Sprintf("simulated switches on gNMI %s, timescale %g (1 s of wall time = %v simulated)", d.gnmi, d.cfg.Timescale,
			simswitch.Simulated(time.Second, d.cfg.Timescale)),
	}
	if d.cfg.Fleet > 1 {
		return append(lines, d.describeFleet(mode)...)
	}
	return append(lines,
		fmt.Sprintf("agent in %s, policy %s, every %s", mode, d.cfg.Policy, d.cfg.Interval),
		fmt.Sprintf("open %s  (the dashboard; also /recommendations, /changes, /metrics, /healthz, /demo)", d.URL()))
}
