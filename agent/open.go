package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/gnmiclient"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/agent/metrics"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
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
	// SetTimeout bounds one Set plus its read-back (default 5 s).
	SetTimeout time.Duration
	// LockTimeout bounds the wait for the database's file lock (default
	// DefaultLockTimeout).
	LockTimeout time.Duration
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
		if pol, err = d.Resolver.Lookup(cfg.Policy); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
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
	j, err := journal.OpenJournal(cfg.DB, d.LockTimeout)
	if err != nil {
		return nil, err
	}
	opened = append(opened, j.Close)
	var sws []Switch
	for _, t := range cfg.Targets {
		s, err := d.Dial(ctx, t, cfg.SampleInterval)
		if err != nil {
			return nil, err
		}
		sws = append(sws, s)
		opened = append(opened, s.Close)
	}
	a, err = New(Options{Config: cfg, Policy: pol, Model: pol.Name(), Observer: d.Observer, Journal: j, Switches: sws,
		Instruments: d.Instruments, Logger: d.Logger, Clock: d.Clock, DryRun: d.DryRun, SetTimeout: d.SetTimeout})
	if err != nil {
		return nil, err
	}
	if cfg.Metrics != "" {
		ln, err := net.Listen("tcp", cfg.Metrics)
		if err != nil {
			return nil, fmt.Errorf("metrics: listen %s: %w", cfg.Metrics, err)
		}
		srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		opened = append(opened, srv.Close)
		d.Logger.Info("serving /metrics and /recommendations", "addr", ln.Addr().String())
	}
	a.release = release
	return a, nil
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
