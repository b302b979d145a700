package bench

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/ecntune/ecntune/agent"
	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/gnmiclient"
	"github.com/ecntune/ecntune/agent/metrics"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// agentRun is the agent under measurement, built by agent.Open with probes
// around its policy (interval boundaries, decision times), its observer
// (queue samples taken in) and its switches (Set and read-back latency).
type agentRun struct {
	a      *agent.Agent
	probe  *tickProbe
	obs    *countingObserver
	lat    *latencies
	cancel context.CancelFunc
	runErr chan error
	done   bool // Run has returned and runErr was read
}

// agentConfig is the agent's configuration for the fabric the child
// serves: every switch a target, its lossless queues under control.
func agentConfig(o AgentOptions, h fabricHello, policyName, db string) *config.Config {
	g := core.DefaultGuardConfig(o.Interval)
	g.ChangeBudget = o.ChangeBudget
	// Two rules are relaxed, both because of the simulated switches, not
	// the agent: on a small machine the switch side can fall behind and
	// deliver a sample late, which must not trip the stale-telemetry
	// revert (it would set every queue at once, outside the budget); and
	// light traffic makes a queue's reward jump between intervals, which
	// must not read as a degradation to roll back.
	g.StaleFreeze, g.StaleRevert = 60*o.Interval, 120*o.Interval
	g.RollbackRewardDrop = 1e9
	g.Reward = config.DefaultReward()
	cfg := &config.Config{Mode: o.Mode, Policy: policyName, Interval: o.Interval, SampleInterval: o.Interval,
		DB: db, Owner: "bench", Guardrails: g}
	names := make([]string, 0, len(h.Switches))
	for n := range h.Switches {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cfg.Targets = append(cfg.Targets, config.Target{Name: n, Address: h.Addr, Insecure: true,
			Timeout: 10 * time.Second, RetryTimer: time.Second, Dialect: config.DialectOpenConfig, Encoding: o.Encoding,
			AllPorts: true, Queues: h.Lossless})
	}
	return cfg
}

// startAgent opens the agent (journal at db) on the child's fabric and
// starts it.
func startAgent(ctx context.Context, o AgentOptions, h fabricHello, pol policy.Policy, db string) (*agentRun, error) {
	m := metrics.NewInstruments()
	r := &agentRun{
		probe:  &tickProbe{Policy: pol, hist: histogramOf(m.DecisionLatency), ticks: make(chan int, 1024)},
		obs:    &countingObserver{Observer: env.NewObserver(env.ObserverConfig{})},
		lat:    &latencies{},
		runErr: make(chan error, 1),
	}
	actx, cancel := context.WithCancel(ctx)
	a, err := agent.Open(actx, agentConfig(o, h, pol.Name(), db), agent.Deps{
		Policy:      r.probe,
		Observer:    r.obs,
		Instruments: m,
		Logger:      slog.New(slog.NewTextHandler(o.Log, &slog.HandlerOptions{Level: o.LogLevel})),
		Dial: func(ctx context.Context, t config.Target, sample time.Duration) (agent.Switch, error) {
			s, err := gnmiclient.Dial(ctx, t, sample)
			if err != nil {
				return nil, err
			}
			return timedSwitch{Switch: s, rec: r.lat}, nil
		},
		SetTimeout:  10 * time.Second,
		LockTimeout: time.Second,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	r.a, r.cancel = a, cancel
	go func() { r.runErr <- a.Run(actx) }()
	return r, nil
}

// stop stops the agent and returns what Run returned (nil when it was
// already stopped).
func (r *agentRun) stop() error {
	if r.done {
		return nil
	}
	r.done = true
	r.cancel()
	return <-r.runErr
}

// close stops the agent and releases what Open opened.
func (r *agentRun) close() {
	r.stop()
	r.a.Close()
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

	mu      sync.Mutex
	n       int
	decide  []time.Duration
	queues  []int
	histN   []uint64
	histSum []float64
	// held counts, per call, the decisions held because the counters'
	// interval is outside the one the policy was validated for
	// (policy.HoldInterval): the policy's cost there is its hold path.
	held []int
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
	h := 0
	for i := range d {
		if d[i].Held == policy.HoldInterval {
			h++
		}
	}
	p.held = append(p.held, h)
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
