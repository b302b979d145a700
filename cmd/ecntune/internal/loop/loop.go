// Package loop runs the agent as deployed (its configuration: policy,
// guardrails, device) against a scenario's switches served by simswitch,
// with simulated time and the agent in lockstep: time advances one control
// interval, the agent reads the counters over gNMI, decides, and its Sets
// and read-backs take effect before time goes on. A run is deterministic
// for a seed and independent of the machine's load.
package loop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ecntune/ecntune/agent"
	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/metrics"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simswitch"
)

// Options are one deployed-loop run.
type Options struct {
	// Sim is the scenario, seeded.
	Sim simenv.Config
	// Engine, when set, is Sim built (simenv.New), which the caller keeps
	// to read the finished simulation.
	Engine *simenv.Sim
	// Agent is the agent's configuration; its targets are replaced by the
	// fabric's switches (taking the first target's queues, device and
	// encoding when it has one), its database by a temporary one and its
	// HTTP endpoint is off. Its Interval is the control interval, and
	// SampleInterval must equal it.
	Agent *config.Config
	// Resolver resolves Agent.Policy (model:NAME needs its Models).
	Resolver policy.Resolver
	// Intervals is how many control intervals to run (0: as many as the
	// scenario's duration holds).
	Intervals int
	// Logger (default: discard).
	Logger *slog.Logger
	// Timeout bounds the wait for one interval's telemetry (default 30 s).
	Timeout time.Duration
	// DB, when set, is where the agent's database is written and kept
	// (it must not exist yet); by default a temporary one, removed.
	DB string
	// HidePeer gives the agent no port's peer (eval --hide-peer: as a
	// target without fabric-ports). Otherwise each switch's fabric-ports
	// are the simulated fabric's, as an operator writes them (or, when
	// the configuration's target says fabric-ports: lldp, the agent
	// discovers them from the switches' LLDP neighbours): the peers the
	// bare policies are told, so that a loop and its bare policy read the
	// same observations.
	HidePeer bool
}

// Result is what a run leaves: the flows and counters of the simulation
// and the agent's audit log.
type Result struct {
	Flows []simenv.FlowRecord
	Stats simenv.Stats
	Audit []core.AuditEntry
	// Recommendations are every interval's, oldest first.
	Recommendations []core.Recommendation
	// Rejections are the decisions the guard refused, by rule.
	Rejections map[string]int
	// Intervals is how many decisions the agent took, the one at the run's
	// end included when there is one (Tail 0): it reads and stores the
	// last interval's telemetry, as in production, and acts on nothing.
	Intervals int
	// Tail is the scenario's rest after the last whole interval, shorter
	// than one (its duration not a multiple of the interval): run after
	// the last decision, which acts on it, as a bare policy's last
	// decision acts on its run's short last interval; no sample falls in
	// it, so no decision is taken at its end.
	Tail simenv.Time
	// Queues is how many queues the agent decided in the last interval.
	Queues int
}

// Run runs the deployed loop.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.check(); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Sampling as fast as the interval asks: simulated time has no floor.
	sc := simswitch.Config{Sim: o.Sim, Dialect: gnmipath.Dialect(dialectOf(o.Agent)), Listen: "127.0.0.1:0", Lockstep: true,
		MinSampleInterval: time.Microsecond, Logf: func(string, ...any) {}}
	if o.Engine != nil {
		sc.Engine = o.Engine
	}
	srv, addr, err := simswitch.Start(ctx, sc)
	if err != nil {
		return Result{}, fmt.Errorf("simulated switches: %w", err)
	}
	defer srv.Close()
	db := o.DB
	if db == "" {
		dir, err := os.MkdirTemp("", "ecntune-loop-")
		if err != nil {
			return Result{}, err
		}
		defer os.RemoveAll(dir)
		db = filepath.Join(dir, "agent.db")
	} else if _, err := os.Stat(db); err == nil {
		return Result{}, fmt.Errorf("loop: %s exists: the run's database must be a new one", db)
	}
	cfg := o.agentConfig(srv, addr, db)
	clock := func() time.Time { now, _ := srv.Status(); return time.Unix(0, 0).Add(now.Duration()) }
	ins := metrics.NewInstruments()
	// AnyInterval: a policy that holds at eval's interval is measured
	// holding, as eval measures it bare (held_for_interval), not an error
	// that ends the whole eval
	a, err := agent.Open(ctx, cfg, agent.Deps{Resolver: o.Resolver, Logger: o.Logger, Clock: clock, Instruments: ins,
		AnyInterval: true})
	if err != nil {
		return Result{}, err
	}
	defer a.Close()
	n, tail, err := o.steps(ctx, a, srv)
	if err != nil {
		return Result{}, err
	}
	r, err := o.result(ctx, a, srv, n)
	if err != nil {
		return r, err
	}
	r.Tail = tail
	r.Rejections, err = rejections(ins)
	return r, err
}

// rejections reads the guard's rejections by rule from the agent's
// instruments.
func rejections(ins *metrics.Instruments) (map[string]int, error) {
	mfs, err := ins.Registry.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, mf := range mfs {
		if !strings.HasSuffix(mf.GetName(), "agent_guardrail_rejections_total") {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "rule" {
					out[l.GetValue()] += int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return out, nil
}

// check fills defaults and refuses what cannot run in lockstep.
func (o *Options) check() error {
	if o.Agent == nil {
		return errors.New("loop: no agent configuration")
	}
	if o.Agent.Interval <= 0 || o.Agent.SampleInterval != o.Agent.Interval {
		return fmt.Errorf("loop: the agent's interval (%s) and sample-interval (%s) must be equal: one sample a control interval",
			o.Agent.Interval, o.Agent.SampleInterval)
	}
	if o.Intervals <= 0 {
		o.Intervals = int(o.Sim.Duration.Duration() / o.Agent.Interval)
	}
	if o.Intervals <= 0 {
		return fmt.Errorf("loop: the scenario (%s) is shorter than one interval (%s)", o.Sim.Duration.Duration(), o.Agent.Interval)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	return nil
}

// dialectOf is the dialect of the configuration's first target
// (openconfig when none is given).
func dialectOf(c *config.Config) string {
	if len(c.Targets) > 0 && c.Targets[0].Dialect != "" {
		return c.Targets[0].Dialect
	}
	return config.DialectOpenConfig
}

// agentConfig is o.Agent with one target a switch of the fabric at addr,
// its database at db and no HTTP endpoint.
func (o *Options) agentConfig(srv *simswitch.Server, addr, db string) *config.Config {
	cfg := *o.Agent
	tmpl := config.Target{Queues: []int{3}, Dialect: dialectOf(o.Agent), Encoding: "json_ietf"}
	if len(o.Agent.Targets) > 0 {
		tmpl = o.Agent.Targets[0]
	}
	cfg.Targets = nil
	for _, sw := range srv.Switches() {
		t := tmpl
		t.Name, t.Address, t.Insecure, t.AllPorts, t.Ports = sw.Name, addr, true, true, nil
		t.Timeout, t.RetryTimer = 10*time.Second, 100*time.Millisecond
		t.AlignSamples = true // every group sampled at the same simulated times
		// The template's fabric-ports name one switch's ports of the
		// fabric it was written for: each switch gets its own.
		t.FabricPorts, t.PeersKnown = nil, false
		switch {
		case o.HidePeer:
			t.DiscoverPeers = false
		case !t.DiscoverPeers:
			t.FabricPorts, t.PeersKnown = simswitch.FabricPorts(sw), true
		}
		cfg.Targets = append(cfg.Targets, t)
	}
	cfg.DB, cfg.Metrics = db, ""
	store := true // every interval's recommendations, for the loop figures
	cfg.StoreRecommendations = &store
	return &cfg
}

// steps runs the intervals: advance, await every switch's telemetry of
// the new time, decide and set. The decision after the last interval,
// at the run's end, acts on no traffic (a bare policy makes none there):
// the agent still takes it, so that it reads and stores the last
// interval's telemetry as in production, and Figures leaves it out. The
// run covers what a bare policy's does (simenv/gym): it ends once the
// fabric is idle, and a scenario whose duration is not a whole number of
// intervals runs its rest after the last decision (the tail returned),
// which then acts on it; the loop had run 9 ms of a 10 ms scenario at a
// 3 ms interval (15 of 75 flows unfinished), the bare policy all of it.
func (o *Options) steps(ctx context.Context, a *agent.Agent, srv *simswitch.Server) (n int, tail simenv.Time, err error) {
	l := a.StartLockstep(ctx)
	defer l.Stop()
	// Every switch's first snapshot (its initial dump) before time moves:
	// a subscription that began after a step would wait for the next.
	now, _ := srv.Status()
	if err := l.Await(ctx, simswitch.SimTimestamp(now), o.Timeout); err != nil {
		return 0, 0, fmt.Errorf("subscribing: %w", err)
	}
	step := simenv.FromDuration(o.Agent.Interval)
	for i := 0; i < o.Intervals; i++ {
		now, err := srv.Advance(ctx, step)
		if err != nil {
			return i, 0, err
		}
		if err := l.Await(ctx, simswitch.SimTimestamp(now), o.Timeout); err != nil {
			return i, 0, fmt.Errorf("interval %d: %w", i+1, err)
		}
		if err := l.Step(ctx); err != nil {
			return i, 0, fmt.Errorf("interval %d: %w", i+1, err)
		}
		idle, err := srv.Idle(ctx)
		if err != nil {
			return i + 1, 0, err
		}
		if idle {
			return i + 1, 0, nil // that decision was the run's end
		}
	}
	if rest := o.Sim.Duration - simenv.Time(o.Intervals)*step; rest > 0 && rest < step {
		if _, err := srv.Advance(ctx, rest); err != nil {
			return o.Intervals, 0, err
		}
		tail = rest
	}
	return o.Intervals, tail, nil
}

// result collects the flows, counters and audit log of a finished run.
func (o *Options) result(ctx context.Context, a *agent.Agent, srv *simswitch.Server, n int) (Result, error) {
	r := Result{Intervals: n, Queues: len(a.Recommendations(""))}
	var err error
	if r.Flows, err = srv.Flows(ctx); err != nil {
		return r, err
	}
	if r.Stats, err = srv.Stats(ctx); err != nil {
		return r, err
	}
	if r.Audit, err = a.Journal().Entries("", 0); err != nil {
		return r, err
	}
	err = a.Journal().EachRecommendation(0, func(x *core.Recommendation) error {
		r.Recommendations = append(r.Recommendations, *x)
		return nil
	})
	return r, err
}
