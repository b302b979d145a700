package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/eval"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
)

// Prefix is the eval spec of a deployed loop: agent:FILE runs the agent as
// the configuration FILE sets it up.
const Prefix = "agent:"

// ShadowSuffix after agent:FILE (agent:FILE,shadow) runs the same
// configuration in shadow mode: nothing is set, and the loop figures say
// what it would have set.
const ShadowSuffix = "shadow"

// EvalRunner runs agent:FILE specs for eval (eval.Options.Loops). The
// configuration's durations (interval, sample-interval, min-hold, the
// stale-telemetry timers, the external-writer hold) are scaled to eval's
// control interval, so that a file written for 1 s decisions means the
// same number of intervals at eval's. The configuration's policy resolves
// with resolverFor(its registry:), as the agent run with that file finds
// its models ("" when it names none). With auditDir set, each run's audit
// log is written there as JSON lines (WriteAudit). hidePeer is eval's
// --hide-peer (Options.HidePeer).
func EvalRunner(resolverFor func(registry string) policy.Resolver, auditDir string, hidePeer bool) eval.LoopRunner {
	return func(sc eval.Scenario, spec string, seed uint64, interval simenv.Time) (*simenv.Sim, eval.LoopFigures, error) {
		path, mode, cfg, err := loadSpec(spec)
		if err != nil {
			return nil, eval.LoopFigures{}, err
		}
		sim, r, cfg, err := runScaled(sc, spec, cfg, seed, interval, resolverFor(cfg.Registry), hidePeer)
		if err != nil {
			return nil, eval.LoopFigures{}, err
		}
		if auditDir != "" {
			// the scenario's name made a file name: one of ../../x wrote
			// outside the folder given (eval --plot cleans it the same way)
			name := fmt.Sprintf("%s_%s_%d.jsonl", fileNameSafe.ReplaceAllString(sc.Name, "_"), strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))+mode, seed)
			write := func() error { return WriteAudit(filepath.Join(auditDir, name), r.Audit) }
			if mode == ShadowSuffix {
				// nothing is applied: what it would have set instead
				write = func() error { return writeLines(filepath.Join(auditDir, name), WouldChanges(r.Recommendations)) }
			}
			if err := write(); err != nil {
				return nil, eval.LoopFigures{}, err
			}
		}
		f := Figures(r, cfg.Interval, cfg.Guardrails.IdleUtil)
		if mode == "" && cfg.Mode == config.ModeClosedLoop && !cfg.Approve && cfg.Registry == "" {
			// a closed loop whose every change applies, its models
			// where eval's bare policies find theirs: eval pairs it
			// with its bare policy
			f.Bare = cfg.Policy
		}
		return sim, f, nil
	}
}

// loadSpec reads agent:FILE[,shadow]: the file, the mode suffix ("" or
// ShadowSuffix) and the configuration, in shadow mode with the suffix.
func loadSpec(spec string) (path, mode string, cfg *config.Config, err error) {
	path, mode, _ = strings.Cut(strings.TrimPrefix(spec, Prefix), ",")
	if mode != "" && mode != ShadowSuffix {
		return "", "", nil, fmt.Errorf("%q after the file: only %q (the same loop in shadow mode)", mode, ShadowSuffix)
	}
	if cfg, err = config.Load(path); err != nil {
		return "", "", nil, err
	}
	if mode == ShadowSuffix {
		cfg.Mode = config.ModeShadow
	}
	return path, mode, cfg, nil
}

// CheckSpec checks an agent:FILE[,shadow] spec as EvalRunner's runs would
// find it: the suffix, the configuration file, and its policy resolved
// with resolverFor(its registry:). eval calls it before any simulation,
// so that a bad file is said before the runs of other policies and the
// frontier's fixed settings have taken their time.
func CheckSpec(spec string, resolverFor func(registry string) policy.Resolver) error {
	_, _, cfg, err := loadSpec(spec)
	if err != nil {
		return err
	}
	if _, err := resolverFor(cfg.Registry).Lookup(cfg.Policy); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	return nil
}

// ConfigRunner runs, for eval, the loops named by the keys of cfgs (whole
// specs, under the prefix eval.Options.Loops registers the runner at),
// each as its configuration, already loaded, sets the agent up, with
// its policy resolved by res: train --twin judges a model as the agent
// would run it, with the agent's configuration and the model's policy.
func ConfigRunner(cfgs map[string]*config.Config, res policy.Resolver, hidePeer bool) eval.LoopRunner {
	return func(sc eval.Scenario, spec string, seed uint64, interval simenv.Time) (*simenv.Sim, eval.LoopFigures, error) {
		cfg, ok := cfgs[spec]
		if !ok {
			return nil, eval.LoopFigures{}, fmt.Errorf("loop: no configuration for %q", spec)
		}
		sim, r, cfg, err := runScaled(sc, spec, cfg, seed, interval, res, hidePeer)
		if err != nil {
			return nil, eval.LoopFigures{}, err
		}
		return sim, Figures(r, cfg.Interval, cfg.Guardrails.IdleUtil), nil
	}
}

// runScaled runs the loop cfg sets up (Scaled to interval) on sc with
// seed, and returns the finished simulation, the run and the
// configuration as run.
func runScaled(sc eval.Scenario, spec string, cfg *config.Config, seed uint64, interval simenv.Time, res policy.Resolver, hidePeer bool) (*simenv.Sim, Result, *config.Config, error) {
	cfg = Scaled(cfg, interval.Duration())
	simCfg := sc.Config
	simCfg.Seed = seed
	sim, err := simenv.New(simCfg)
	if err != nil {
		return nil, Result{}, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	r, err := Run(ctx, Options{Sim: simCfg, Engine: sim, Agent: cfg, Resolver: res, HidePeer: hidePeer})
	if err != nil {
		return nil, Result{}, nil, fmt.Errorf("%s: %w", spec, err)
	}
	return sim, r, cfg, nil
}

var fileNameSafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// WriteAudit writes audit as JSON lines to file (created with its folder).
func WriteAudit(file string, audit []core.AuditEntry) error { return writeLines(file, audit) }

// writeLines writes xs as JSON lines to file (created with its folder).
func writeLines[T any](file string, xs []T) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, e := range xs {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("loop audit: %w", err)
	}
	return os.WriteFile(file, b.Bytes(), 0o644)
}

// Scaled is cfg at control interval d: its interval and sample-interval d,
// and min-hold (both), the stale-telemetry timers, the external-writer
// hold and the rollback retry bar the same number of intervals as in cfg.
func Scaled(cfg *config.Config, d time.Duration) *config.Config {
	c := *cfg
	scale := func(x time.Duration) time.Duration {
		return time.Duration(float64(x) * float64(d) / float64(cfg.Interval))
	}
	g := c.Guardrails
	g.MinHold, g.StaleFreeze, g.StaleRevert, g.ExternalHold = scale(g.MinHold), scale(g.StaleFreeze), scale(g.StaleRevert), scale(g.ExternalHold)
	g.RollbackRetryAfter = scale(g.RollbackRetryAfter)
	if g.MinHoldTighten > 0 {
		g.MinHoldTighten = scale(g.MinHoldTighten)
	}
	c.Guardrails = g
	c.Interval, c.SampleInterval = d, d
	return &c
}

// Figures are a run's loop figures: the changes applied (env.Churn over
// the audit log: per queue per 100 intervals, flaps over 10 intervals,
// both also past the first eval.SettleIntervals), fallbacks, rollbacks,
// safety repairs (and those of a setting the loop had written, a repair
// included: XOFF fell to what the agent set), the guard's
// rejections by rule, and what the loop would
// set interval by interval (its recommendations: their changes, and the
// idle queue-intervals where it would keep what it runs; a queue is idle
// under idleUtil, 0.01 when 0).
//
// The decision at the run's end (after its last interval, when no traffic
// is left for a change to act on) is left out, as a bare policy makes
// none there: the figures count r.Intervals-1 decisions; with a tail
// (r.Tail), the last decision acts on it, and all r.Intervals count.
func Figures(r Result, interval time.Duration, idleUtil float64) eval.LoopFigures {
	f := eval.LoopFigures{Intervals: max(0, r.Intervals-1), Queues: r.Queues, Rejections: r.Rejections}
	iv := int64(interval)
	end := int64(r.Intervals)*iv - iv/2 // the decision at the run's end is at r.Intervals intervals
	if r.Tail > 0 {
		f.Intervals, end = r.Intervals, int64(r.Intervals)*iv+iv/2
	}
	var audit []core.AuditEntry
	for _, e := range r.Audit {
		if e.TimeNs < end {
			audit = append(audit, e)
		}
	}
	// The k-th decision is taken at k intervals (the first after one
	// interval's counters), so the first SettleIntervals decisions end at
	// SettleIntervals intervals: "after" starts past them, as a bare
	// policy's count does (its decisions numbered from 0).
	settled := eval.SettleIntervals*iv + iv/2
	churn := env.Churn{Window: env.FlapIntervals * iv, From: settled}
	set := map[env.QueueKey]env.Setting{} // what the loop last wrote to each queue
	for _, e := range audit {
		if !e.Took() {
			continue
		}
		if !e.Old.SameECN(e.New) { // a change of the ECN setting, as a bare policy's and shadow's are counted (not headroom or alpha alone)
			churn.Change(e.Key, e.TimeNs, e.Old.ECN(), e.New.ECN())
		}
		if s, ok := set[e.Key]; ok && e.Kind == core.KindRepair && s.SameECN(e.Old) {
			f.RepairsOfOwn++
		}
		set[e.Key] = e.New // the loop's own write, whatever its kind
	}
	f.Changes, f.ChangesAfter, f.Flaps, f.FlapsAfter = churn.Changes, churn.After, churn.Flaps, churn.FlapsAfter
	k := core.CountKinds(audit)
	f.Fallbacks, f.Rollbacks, f.Repairs = k.Fallbacks, k.Rollbacks, k.Repairs
	if idleUtil <= 0 {
		idleUtil = 0.01
	}
	moves := wouldMoves(r.Recommendations)
	for i := range r.Recommendations {
		x := &r.Recommendations[i]
		if x.TimeNs >= end {
			continue
		}
		if moves[i] && x.TimeNs >= settled {
			f.WouldChangesAfter++
		}
		if x.Valid && x.Metrics.Idle(idleUtil) {
			f.IdleIntervals++
			if !moves[i] {
				f.IdleHeld++
			}
		}
	}
	f.SetRates()
	return f
}

// wouldMoves reports, per recommendation of recs (in time order), whether
// what the loop would run on its queue moved from the queue's previous
// recommendation (from the switch's setting at the first).
func wouldMoves(recs []core.Recommendation) []bool {
	would := map[env.QueueKey]env.Setting{}
	out := make([]bool, len(recs))
	for i := range recs {
		x := &recs[i]
		w := x.WouldSet()
		p, ok := would[x.Key]
		if !ok {
			p = x.Current
		}
		out[i] = !p.SameECN(w)
		would[x.Key] = w
	}
	return out
}

// WouldChanges are the recommendations of recs at which what the loop
// would run moved: in shadow mode, the changes it would have made.
func WouldChanges(recs []core.Recommendation) []core.Recommendation {
	var out []core.Recommendation
	for i, m := range wouldMoves(recs) {
		if m {
			out = append(out, recs[i])
		}
	}
	return out
}
