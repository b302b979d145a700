package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/gnmiclient"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/agent/metrics"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/policy/builtin"
)

// DefaultLockTimeout bounds the wait for the agent database's file lock: a
// second agent (or `agent rollback`) on the same database fails after it.
const DefaultLockTimeout = 2 * time.Second

// Deps are what the caller of Open supplies beyond the configuration. The
// zero value runs Config.Policy (without model:NAME) on the targets of the
// configuration over gNMI.
type Deps struct {
	// Policy, when set, is the policy to run (Config.Policy is then not
	// resolved); otherwise Open resolves Config.Policy with Resolver.
	Policy policy.Policy
	// Resolver resolves Config.Policy; its Models load model:NAME (the
	// zero Resolver resolves every other spec).
	Resolver policy.Resolver
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Dial connects to one target (default DialSwitch); a caller may wrap
	// the switch it returns, e.g. to time its Sets.
	Dial func(ctx context.Context, t config.Target, sampleInterval time.Duration) (Switch, error)
	// Observer turns snapshots into observations (default env.NewObserver
	// with its defaults).
	Observer Observer
	// Instruments are the Prometheus series (default NewInstruments()).
	Instruments *metrics.Instruments
	// Clock (default time.Now).
	Clock func() time.Time
	// DryRun runs the closed loop without Sets: the guardrails run and the
	// audit log says what would be set.
	DryRun bool
	// Restarted: Options.Restarted.
	Restarted []string
	// SetTimeout bounds one Set plus its read-back (default 5 s).
	SetTimeout time.Duration
	// LockTimeout bounds the wait for the database's file lock (default
	// DefaultLockTimeout).
	LockTimeout time.Duration
	// HTTP bounds the HTTP endpoint; a zero field takes its default
	// (MaxConns: Config.MetricsMaxConns).
	HTTP HTTPLimits
	// CounterSpan is the span of the switches' time one interval's
	// counters cover, when it is not Config.Interval: a simulated fabric
	// run at a timescale (the demo's 1 s at 1000 is 1 ms). Open refuses a
	// policy whose learned models act at other decision intervals than
	// it (checkIntervals); 0: Config.Interval.
	CounterSpan time.Duration
	// AnyInterval skips that check: eval's loops measure a policy at the
	// interval eval runs, its holds and all, as eval measures it bare.
	AnyInterval bool
}

// HTTPLimits bound an HTTP endpoint of the agent so that its clients
// cannot take the descriptors the control loop needs for the switches:
// at most MaxConns connections are served at once, and every connection
// ends when it is idle or slow for longer than its timeout.
type HTTPLimits struct {
	// MaxConns is how many connections are served at once; the next ones
	// wait in the kernel's accept queue, holding no descriptor of the
	// process, until one closes.
	MaxConns int
	// ReadHeaderTimeout bounds the wait for a request's headers,
	// ReadTimeout the reading of a whole request, WriteTimeout the
	// request and its response, and IdleTimeout the wait for the next
	// request on a kept-alive connection.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
}

// Defaults of HTTPLimits' timeouts. Requests are a line and a few headers
// (POST /approve a short form), so 5 s for the headers and 30 s for the
// whole request are generous; a response is at most a page of the audit
// log or a dashboard page, written in well under 60 s; a dashboard polls
// every few seconds, so a connection idle for 30 s is closed, freeing its
// place under the cap.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 30 * time.Second
)

// NewHTTPServer returns a server for h with lim's timeouts (its zero
// fields at their defaults, MaxConns at config.DefaultMetricsMaxConns), and
// ln limited to lim.MaxConns connections at once, to be served with
// srv.Serve(limited).
func NewHTTPServer(ln net.Listener, h http.Handler, lim HTTPLimits) (srv *http.Server, limited net.Listener) {
	lim = lim.withDefaults(0)
	rl := newReclaimListener(ln, lim.MaxConns)
	srv = &http.Server{Handler: h, ReadHeaderTimeout: lim.ReadHeaderTimeout, ReadTimeout: lim.ReadTimeout,
		WriteTimeout: lim.WriteTimeout, IdleTimeout: lim.IdleTimeout, ConnState: rl.connState}
	return srv, rl
}

// withDefaults fills the zero fields of l: MaxConns with maxConns, or
// config.DefaultMetricsMaxConns when that is not positive either.
func (l HTTPLimits) withDefaults(maxConns int) HTTPLimits {
	if maxConns <= 0 {
		maxConns = config.DefaultMetricsMaxConns
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.MaxConns <= 0 {
		l.MaxConns = maxConns
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.ReadTimeout, DefaultReadTimeout)
	def(&l.WriteTimeout, DefaultWriteTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	return l
}

// Open builds an agent from a configuration (as ParseConfig or LoadConfig
// return it): it resolves the policy, opens the journal at Config.DB,
// connects to every target, and, when Config.Metrics names an
// address, serves Handler there. Close releases all of it; on an error
// Open releases what it opened before returning.
func Open(ctx context.Context, cfg *config.Config, d Deps) (a *Agent, err error) {
	if cfg == nil {
		return nil, errors.New("agent: no configuration")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Dial == nil {
		d.Dial = func(ctx context.Context, t config.Target, sample time.Duration) (Switch, error) {
			s, err := gnmiclient.Dial(ctx, t, sample)
			if err != nil {
				return nil, err
			}
			return s, nil
		}
	}
	if d.Observer == nil {
		d.Observer = env.NewObserver(env.ObserverConfig{})
	}
	if d.LockTimeout <= 0 {
		d.LockTimeout = DefaultLockTimeout
	}
	for _, n := range cfg.Notes {
		d.Logger.Info("configuration: " + n)
	}
	for _, w := range cfg.Warnings {
		d.Logger.Warn("configuration: " + w)
	}
	pol := d.Policy
	if pol == nil {
		// the registry's models pinned to the versions they name now: the
		// audit log and the recommendations then say which ran (they said
		// model:NAME@promoted whatever was promoted)
		at := ""
		if cfg.PolicyAt != "" {
			at = cfg.PolicyAt + ": "
		}
		spec, err := policy.PinModels(cfg.Policy, d.Resolver.Models)
		if err != nil {
			return nil, fmt.Errorf("%spolicy %s: %w", at, cfg.Policy, err)
		}
		if spec != cfg.Policy {
			d.Logger.Info("policy "+cfg.Policy+" runs "+spec+": a model promoted later runs from the agent's next start", "registry", cfg.Registry)
		}
		if pol, err = d.Resolver.Lookup(spec); err != nil {
			return nil, fmt.Errorf("%spolicy: %w", at, err)
		}
	}
	if !d.AnyInterval {
		if err := checkIntervals(cfg, pol, d.CounterSpan); err != nil {
			return nil, err
		}
	}
	var opened []func() error // released in reverse order
	release := func() error {
		var errs []error
		for i := len(opened) - 1; i >= 0; i-- {
			errs = append(errs, opened[i]())
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	// The metrics address first: a port taken is said before the agent db
	// is made (an agent that could not listen left a new, empty db).
	var ln net.Listener
	if cfg.Metrics != "" {
		if ln, err = net.Listen("tcp", cfg.Metrics); err != nil {
			return nil, fmt.Errorf("metrics: listen %s: %w", cfg.Metrics, err)
		}
		opened = append(opened, func() error {
			if err == nil {
				return nil // the HTTP server has it, and closes it
			}
			return ln.Close()
		})
	}
	_, statErr := os.Stat(cfg.DB)
	j, err := journal.OpenJournal(cfg.DB, d.LockTimeout)
	if err != nil {
		return nil, err
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		// made here: taken away again if the agent does not start
		opened = append(opened, func() error {
			if err == nil {
				return nil
			}
			return os.Remove(cfg.DB)
		})
	}
	opened = append(opened, j.Close)
	sws, gate, err := connect(ctx, cfg, d, &opened)
	if err != nil {
		return nil, err
	}
	a, err = New(Options{Config: cfg, Policy: pol, Model: pol.Name(), Observer: d.Observer, Journal: j, Switches: sws,
		Instruments: d.Instruments, Logger: d.Logger, Clock: d.Clock, DryRun: d.DryRun, SetTimeout: d.SetTimeout, Gate: gate,
		Restarted: d.Restarted})
	if err != nil {
		return nil, err
	}
	if ln != nil {
		srv, lln := NewHTTPServer(ln, a.Handler(), d.HTTP.withDefaults(cfg.MetricsMaxConns))
		go srv.Serve(lln)
		opened = append(opened, srv.Close)
		d.Logger.Info("serving /metrics and /recommendations", "addr", ln.Addr().String())
	}
	if fp, ok := gate.(fleetPauser); ok {
		fp.FollowPause(a.fleetPause) // the fleet's pause, now and as it changes
	}
	a.release = release
	return a, nil
}

// connect dials every target and, with a fleet configured, joins it (the
// member gates the writes); what it opens is added to opened.
func connect(ctx context.Context, cfg *config.Config, d Deps, opened *[]func() error) ([]Switch, Gate, error) {
	var sws []Switch
	for _, t := range cfg.Targets {
		s, err := d.Dial(ctx, t, cfg.SampleInterval)
		if err != nil {
			return nil, nil, err
		}
		sws = append(sws, s)
		*opened = append(*opened, s.Close)
	}
	if cfg.Fleet == nil || d.DryRun {
		return sws, nil, nil
	}
	n, leave, err := joinFleet(ctx, cfg, d.SetTimeout, d.Logger)
	if err != nil {
		return nil, nil, err
	}
	*opened = append(*opened, leave)
	return sws, n, nil
}

// Close releases what Open opened (the HTTP endpoint, the switches, the
// journal), after Run has returned. It does nothing for an agent from New,
// whose parts belong to its caller.
func (a *Agent) Close() error {
	if a.release == nil {
		return nil
	}
	r := a.release
	a.release = nil
	return r()
}

// Journal returns the agent's journal (the audit log and recommendations).
func (a *Agent) Journal() *journal.Journal { return a.o.Journal }

// checkIntervals refuses pol when a learned model it runs acts at other
// decision intervals than the agent's (span, or cfg.Interval when 0):
// that model holds every queue it decides, every interval, which the
// agent said once in its log (a model ecntune train made at 200µs acts
// from 20µs to 2ms, the agent decides every 100ms or more).
func checkIntervals(cfg *config.Config, pol policy.Policy, span time.Duration) error {
	what := fmt.Sprintf("the agent's interval is %v", cfg.Interval)
	if span <= 0 {
		span = cfg.Interval
	} else {
		what = fmt.Sprintf("the switches' counters span %v per interval (the agent's %v)", span, cfg.Interval)
	}
	for _, b := range policy.IntervalBounds(pol) {
		if !b.Excludes(span) {
			continue
		}
		at := ""
		if cfg.PolicyAt != "" {
			at = cfg.PolicyAt + ": "
		}
		part := ""
		if b.Policy != pol.Name() {
			part = "its part "
		}
		other := fmt.Sprintf("or run another policy (builtin acts at %s)", policy.IntervalBound{Lo: builtin.ValidatedIntervalMin, Hi: builtin.ValidatedIntervalMax}.Range())
		if strings.HasPrefix(b.Policy, policy.BuiltinSpec) {
			other = "or an interval inside them, or another policy (static:NAME, fixed:KMIN/KMAX/PMAX)"
		}
		return fmt.Errorf("%spolicy %s: %s%s acts at decision intervals %s only and holds every queue at any other, and %s: "+
			"validate the model at %v (ecntune eval --interval %v --policy %s on scenarios of at least 20 intervals), "+
			"then record the intervals it holds up at with its training command and --validated-interval MIN-MAX (ecntune models show gives the command); %s",
			at, pol.Name(), part, b.Policy, b.Range(), what, span, span, b.Policy, other)
	}
	return nil
}
