package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/eval"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
)

// Prefix is the eval spec of a deployed loop: agent:FILE runs the agent as
// the configuration FILE sets it up.
const Prefix = "agent:"

// EvalRunner runs agent:FILE specs for eval (eval.Options.Loops). The
// configuration's durations (interval, sample-interval, min-hold, the
// stale-telemetry timers, the external-writer hold) are scaled to eval's
// control interval, so that a file written for 1 s decisions means the
// same number of intervals at eval's; policies resolve with resolver.
// With auditDir set, each run's audit log is written there as JSON lines
// (WriteAudit).
func EvalRunner(resolver policy.Resolver, auditDir string) eval.LoopRunner {
	return func(sc eval.Scenario, spec string, seed uint64, interval simenv.Time) (*simenv.Sim, eval.LoopFigures, error) {
		path := strings.TrimPrefix(spec, Prefix)
		cfg, err := config.Load(path)
		if err != nil {
			return nil, eval.LoopFigures{}, err
		}
		cfg = Scaled(cfg, interval.Duration())
		simCfg := sc.Config
		simCfg.Seed = seed
		sim, err := simenv.New(simCfg)
		if err != nil {
			return nil, eval.LoopFigures{}, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		r, err := Run(ctx, Options{Sim: simCfg, Engine: sim, Agent: cfg, Resolver: resolver})
		if err != nil {
			return nil, eval.LoopFigures{}, fmt.Errorf("%s: %w", spec, err)
		}
		if auditDir != "" {
			name := fmt.Sprintf("%s_%s_%d.jsonl", sc.Name, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), seed)
			if err := WriteAudit(filepath.Join(auditDir, name), r.Audit); err != nil {
				return nil, eval.LoopFigures{}, err
			}
		}
		return sim, Figures(r, cfg.Interval), nil
	}
}

// WriteAudit writes audit as JSON lines to file (created with its folder).
func WriteAudit(file string, audit []core.AuditEntry) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, e := range audit {
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
// and min-hold, the stale-telemetry timers, the external-writer hold and
// the rollback retry bar
// the same number of intervals as in cfg.
func Scaled(cfg *config.Config, d time.Duration) *config.Config {
	c := *cfg
	scale := func(x time.Duration) time.Duration {
		return time.Duration(float64(x) * float64(d) / float64(cfg.Interval))
	}
	g := c.Guardrails
	g.MinHold, g.StaleFreeze, g.StaleRevert, g.ExternalHold = scale(g.MinHold), scale(g.StaleFreeze), scale(g.StaleRevert), scale(g.ExternalHold)
	g.RollbackRetryAfter = scale(g.RollbackRetryAfter)
	c.Guardrails = g
	c.Interval, c.SampleInterval = d, d
	return &c
}

// Figures are a run's loop figures: changes applied (per queue per 100
// intervals), flaps (core.Flaps over 10 intervals), fallbacks, rollbacks
// and safety repairs.
func Figures(r Result, interval time.Duration) eval.LoopFigures {
	f := eval.LoopFigures{Intervals: r.Intervals, Queues: r.Queues}
	for _, e := range r.Audit {
		if e.State != core.StateApplied {
			continue
		}
		f.Changes++
		switch e.Kind {
		case core.KindFallback:
			f.Fallbacks++
		case core.KindRollback, core.KindReadBack:
			f.Rollbacks++
		case core.KindRepair:
			f.Repairs++
		}
	}
	for _, n := range core.Flaps(r.Audit, int64(core.FlapIntervals*interval)) {
		f.Flaps += n
	}
	if r.Queues > 0 && r.Intervals > 0 {
		f.ChangesPerQueuePer100 = float64(f.Changes) / float64(r.Queues) * 100 / float64(r.Intervals)
	}
	return f
}
