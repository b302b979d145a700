package core

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/policy"
)

// RateBounds are the allowed ranges of a queue's setting at one link rate.
// Ports at other rates use the entry of the nearest rate, its byte figures
// scaled linearly with the rate.
type RateBounds struct {
	RateBps          float64
	KminMin, KminMax int64
	KmaxMin, KmaxMax int64
	PmaxMin, PmaxMax float64
}

// LowConfidenceAction says what the guard does with a decision whose
// confidence is below GuardConfig.MinConfidence.
type LowConfidenceAction string

const (
	LowConfidenceHold   LowConfidenceAction = "hold"   // keep the current setting
	LowConfidencePreset LowConfidenceAction = "preset" // fall back to GuardConfig.Fallback
)

// Guard rules, as they appear in rejections, clamps and metrics.
const (
	RuleMalformed  = "malformed"
	RuleInvalid    = "invalid-observation"
	RuleConfidence = "confidence"
	RuleBounds     = "bounds"
	RuleStep       = "max-step"
	RuleHold       = "min-hold"
	RuleBudget     = "budget"
	RuleOrder      = "kmin<kmax<xoff"
	RuleHeadroom   = "headroom-floor"
	RuleProbation  = "probation"
	// RuleUndecided: a probation ended without a verdict (its change
	// seldom in play: ProbationPatience; the port's speed changed under
	// it); the change stays, not made last known good.
	RuleUndecided = "probation-undecided"
	RuleDwell     = "dwell"
	RulePending   = "pending"
	RuleStale     = "stale-freeze"
	RuleRevert    = "stale-revert"
	RuleDrops     = "rollback-drops"
	RulePause     = "rollback-pause"
	RuleReward    = "rollback-reward"
	RuleReadBack  = "read-back"
	RuleExternal  = "external-writer"
	RuleRetry     = "rollback-retry"
	// RuleConfirm: the switch reported, once, another setting than the
	// agent set (telemetry that still lags its own Set, mostly): no change
	// before the next interval tells lag from another writer
	// (RuleExternal, from two in a row).
	RuleConfirm = "confirming"
)

// ChangeKind says why a change is made.
type ChangeKind string

const (
	KindTune      ChangeKind = "tune"      // the policy's decision, through the guard
	KindFallback  ChangeKind = "fallback"  // low confidence: the fallback preset
	KindRollback  ChangeKind = "rollback"  // KPIs worsened: back to last known good
	KindRevert    ChangeKind = "revert"    // telemetry stale: the safe preset
	KindReadBack  ChangeKind = "read-back" // the switch did not report what was set
	KindReconcile ChangeKind = "reconcile" // a restart found a half-done change
	KindManual    ChangeKind = "manual"    // ecntune agent rollback
	// KindRepair moves a queue that is outside the invariants back inside
	// them: headroom up to the lossless floor, Kmax (and Kmin) below the
	// PG's XOFF. A safety repair goes ahead of the policy's changes and is
	// not held back by min-hold, the change budget, probation or another
	// writer's hold.
	KindRepair ChangeKind = "repair"
)

// RepairXoffShare is where a repair puts Kmax, and the most any planned
// Kmax may be: this share of the PG's XOFF, since XOFF moves with buffer
// use (env.KmaxXoffShare).
const RepairXoffShare = env.KmaxXoffShare

// Default alpha (a lossless PG's dynamic-threshold factor) limits, the
// guardrails' AlphaMin, AlphaMax and AlphaMaxStep when those are 0: a
// policy asking for an alpha outside 1/64..8 is rejected, and alpha moves
// at most by a factor of 4 per change. A queue whose alpha is unknown (0:
// the switch exports none) keeps it unmanaged whatever the limits.
const (
	DefaultAlphaMin     = policy.AlphaMin
	DefaultAlphaMax     = policy.AlphaMax
	DefaultAlphaMaxStep = 4.0
)

// GuardConfig holds the guardrails.
type GuardConfig struct {
	Bounds       []RateBounds
	MaxStepRatio float64 // each knob moves at most by this factor per change (>= 1)
	// LeastRepairs keeps every safety repair the least safe move, never
	// the policy's setting (repairTowards): approve mode, where the
	// policy's settings wait for an operator and repairs do not.
	LeastRepairs  bool
	MinHold       time.Duration // minimum time between changes of one queue
	ChangeBudget  int           // tune/fallback changes allowed per step across the fabric
	MinConfidence float64
	LowConfidence LowConfidenceAction
	// Dwell is how many intervals in a row the policy must recommend the
	// same change before the guard lets it through (1: at once), so that a
	// recommendation that alternates is never applied.
	Dwell int
	// Tighten fast, loosen slowly. A tune whose ECN marks earlier than the
	// current setting (a lower Kmax, else a lower Kmin, else a higher
	// Pmax; headroom and alpha unchanged) needs MinConfidenceTighten and
	// waits MinHoldTighten after the queue's last change; one that marks
	// later, where the loop's own last change of the queue marked earlier
	// (a tune, a fallback or a safety repair), must be recommended
	// DwellLoosen intervals in a row: undoing its own tightening is where
	// a loop oscillates; a loosening from the operator's setting, or on
	// from the loop's own loosening, needs only Dwell. A negative
	// MinConfidenceTighten or MinHoldTighten, or a DwellLoosen of 0, is
	// MinConfidence, MinHold or Dwell. The policy's advice to mark earlier
	// comes as a queue's traffic gathers (an incast building, a port
	// turning into a hot spot), often while it is still unsure, and
	// costs at most some throughput, which a rollback answers; advice to
	// mark later trades the small flows' tail for throughput and, if
	// wrong, costs the tail at the next burst: it must persist. On the
	// validation scenarios (policy/builtin/validation, 6 seeds), the
	// builtin model's loop with one rule for both directions (confidence
	// 0.1, min-hold 5) was 1.12 in geometric-mean frontier ratio against
	// the bare model's 0.98; tightening at once (0, 0) and loosening after
	// 10 or 15 intervals in a row, 0.99-1.00; the same with dwell-loosen
	// only after the loop's own tightening, 0.94 (docs/model/loop-eval.txt).
	// DwellLoosen's row counts only intervals in which the tight setting
	// acts (see dwell).
	MinConfidenceTighten float64
	MinHoldTighten       time.Duration
	DwellLoosen          int
	// TightenUnsureFor: MinConfidenceTighten applies only in the first
	// TightenUnsureFor busy intervals of a queue's traffic (from the first
	// the guard sees, or after an idle row as long); a queue that has
	// settled tightens on MinConfidence like any change (0: always). An
	// operator's trade of fewer changes for some of the model's gain: on
	// the validation scenarios (6 seeds), 10 cut the changes per queue per
	// 100 intervals past the first 10 from 0.83-3.70 to 0.09-2.78 and cost
	// 9% in geometric-mean frontier ratio (0.936 -> 1.023; 0.72 -> 1.02
	// on the 25G 3:1 fabric), since the late, unsure tightenings around
	// bursts are much of the gain; over 100 intervals (4 seeds) it was
	// 0.988 against 0.971, with 0.02-0.79 changes past the first 10
	// against 0.34-1.16 (docs/model/loop-eval.txt).
	TightenUnsureFor int
	// IdleUtil: a queue whose interval shows utilisation below it and no
	// ECN marks, pause or drops holds its setting, saying it is idle
	// (0: off); an idle queue tells a policy nothing about its setting.
	IdleUtil float64
	Fallback env.Setting // at units.RefRateBps; used by LowConfidencePreset
	Safe     env.Setting // at units.RefRateBps; used by the stale-revert watchdog

	// Rollback: after a tune or fallback change, the next RollbackWindow
	// valid intervals in which the change is in play are watched (at most
	// ProbationPatience×RollbackWindow valid intervals in all). A window's
	// mean drop fraction above the baseline's by RollbackDropFrac (or drops
	// above it in each of its intervals after a baseline without drops),
	// a mean pause fraction above the baseline by RollbackPauseIncrease, or
	// a mean reward below the baseline by RollbackRewardDrop, each beyond
	// the noise (probation.go), rolls the queue back to its last known good
	// setting. A change that survives the window becomes last known good.
	RollbackWindow        int
	RollbackDropFrac      float64
	RollbackPauseIncrease float64
	RollbackRewardDrop    float64
	// RollbackRetryAfter: a setting rolled back on a queue is not tuned
	// to again on that queue for this long (RuleRetry), so that the
	// policy's next recommendation of it is not a flap.
	RollbackRetryAfter time.Duration
	// Reward scores an interval (env.Reward with the weights in use); nil
	// disables the reward rule.
	Reward func(env.Metrics) float64

	StaleFreeze time.Duration // no telemetry for this long: no changes
	StaleRevert time.Duration // no telemetry for this long: revert to Safe

	// ExternalHold: when a queue the agent set reports another setting for
	// two intervals in a row, someone else writes it (another agent, an
	// operator). The guard adopts that setting, raises an alarm and leaves
	// the queue alone for this long instead of fighting over it.
	ExternalHold time.Duration

	ReadBackPmaxTol float64 // read-back accepts Pmax within this
	// PmaxStep is the resolution switches store Pmax at (both gNMI
	// dialects carry whole percent: 0.01); allowed settings are rounded to
	// it so that what is set reads back the same. 0: no rounding.
	PmaxStep float64

	// Alpha limits (see AlphaLimits): a policy asking for an alpha outside
	// AlphaMin..AlphaMax is rejected, and alpha moves at most by a factor
	// of AlphaMaxStep per change, a power of two since SONiC stores alpha
	// as its log2 (dynamic_th). 0: DefaultAlphaMin, DefaultAlphaMax,
	// DefaultAlphaMaxStep.
	AlphaMin, AlphaMax, AlphaMaxStep float64
}

// AlphaLimits returns the alpha limits in force: AlphaMin, AlphaMax and
// AlphaMaxStep, each its default when 0.
func (c GuardConfig) AlphaLimits() (lo, hi, step float64) {
	lo, hi, step = c.AlphaMin, c.AlphaMax, c.AlphaMaxStep
	if lo == 0 {
		lo = DefaultAlphaMin
	}
	if hi == 0 {
		hi = DefaultAlphaMax
	}
	if step == 0 {
		step = DefaultAlphaMaxStep
	}
	return lo, hi, step
}

// quantizePmax rounds p to a multiple of step (at least one step).
func quantizePmax(p, step float64) float64 { return env.QuantizePmax(p, step) }

// pmaxStepIn is the smallest multiple of step within [lo, hi] (at least
// one step), or 0 when there is none.
func pmaxStepIn(lo, hi, step float64) float64 {
	q := math.Max(step, math.Ceil(lo/step-1e-9)*step)
	q = math.Round(q*1e9) / 1e9
	if q > hi+1e-12 {
		return 0
	}
	return q
}

// DefaultSafePreset names the preset (policy.Preset) the stale-revert
// watchdog reverts to unless the configuration names another.
const DefaultSafePreset = "sonic-default"

// defaultSafe is DefaultSafePreset at units.RefRateBps.
func defaultSafe() env.Setting {
	p, err := policy.Preset(DefaultSafePreset)
	if err != nil {
		panic("agent: " + err.Error()) // a programming error: the preset table lost it
	}
	return p.Setting(units.RefRateBps)
}

// DefaultGuardConfig returns conservative guardrails for a control interval.
func DefaultGuardConfig(interval time.Duration) GuardConfig {
	if interval <= 0 {
		interval = time.Second
	}
	return GuardConfig{
		Bounds: []RateBounds{{
			RateBps: units.RefRateBps,
			KminMin: 5_000, KminMax: 5_000_000,
			KmaxMin: 20_000, KmaxMax: 12_000_000,
			PmaxMin: 0.005, PmaxMax: 1,
		}},
		MaxStepRatio:          2,
		MinHold:               5 * interval,
		Dwell:                 1,
		ChangeBudget:          64,
		MinConfidence:         0.5,
		MinConfidenceTighten:  -1,
		MinHoldTighten:        -1,
		LowConfidence:         LowConfidenceHold,
		Safe:                  defaultSafe(),
		RollbackWindow:        3,
		RollbackDropFrac:      0,
		RollbackPauseIncrease: 0.05,
		RollbackRewardDrop:    0.1,
		RollbackRetryAfter:    50 * interval,
		StaleFreeze:           5 * interval,
		StaleRevert:           30 * interval,
		ExternalHold:          60 * interval,
		ReadBackPmaxTol:       0.005,
		PmaxStep:              env.PmaxStep,
		AlphaMin:              DefaultAlphaMin,
		AlphaMax:              DefaultAlphaMax,
		AlphaMaxStep:          DefaultAlphaMaxStep,
	}
}

// Validate checks the guardrails; errors name the guardrails field.
func (c GuardConfig) Validate() error {
	if err := c.ValidateRules(); err != nil {
		return err
	}
	if err := checkPreset("fallback-preset", c.Fallback, c.LowConfidence == LowConfidencePreset); err != nil {
		return err
	}
	return checkPreset("safe-preset", c.Safe, true)
}

// ValidateRules checks the rules a configuration file gives.
func (c GuardConfig) ValidateRules() error {
	var errs []error
	if len(c.Bounds) == 0 {
		errs = append(errs, fmt.Errorf("guardrails.bounds: at least one entry is required"))
	}
	for i, b := range c.Bounds {
		f := fmt.Sprintf("guardrails.bounds[%d]", i)
		switch {
		case !(b.RateBps > 0):
			errs = append(errs, fmt.Errorf("%s.rate: must be positive", f))
		case b.KminMin < 0 || b.KminMin > b.KminMax:
			errs = append(errs, fmt.Errorf("%s.kmin: [%s, %s] is not a range (want 0 <= min <= max)", f, units.FormatBytes(b.KminMin), units.FormatBytes(b.KminMax)))
		case b.KmaxMin <= 0 || b.KmaxMin > b.KmaxMax:
			errs = append(errs, fmt.Errorf("%s.kmax: [%s, %s] is not a range (want 0 < min <= max)", f, units.FormatBytes(b.KmaxMin), units.FormatBytes(b.KmaxMax)))
		case b.KminMin >= b.KmaxMax:
			errs = append(errs, fmt.Errorf("%s: kmin minimum %s leaves no room below kmax maximum %s", f, units.FormatBytes(b.KminMin), units.FormatBytes(b.KmaxMax)))
		case !(b.PmaxMin > 0) || !(b.PmaxMin <= b.PmaxMax) || !(b.PmaxMax <= 1):
			errs = append(errs, fmt.Errorf("%s.pmax: [%g, %g] is not a range within (0, 1]", f, b.PmaxMin, b.PmaxMax))
		case c.PmaxStep > 0 && !(pmaxStepIn(b.PmaxMin, b.PmaxMax, c.PmaxStep) > 0):
			errs = append(errs, fmt.Errorf("%s.pmax: [%g, %g] holds no multiple of the switches' pmax resolution %g (pmax-step): widen it", f, b.PmaxMin, b.PmaxMax, c.PmaxStep))
		}
	}
	if !(c.MaxStepRatio >= 1) || math.IsInf(c.MaxStepRatio, 0) {
		errs = append(errs, fmt.Errorf("guardrails.max-step-ratio: %g must be a finite number >= 1", c.MaxStepRatio))
	}
	if c.MinHold < 0 {
		errs = append(errs, fmt.Errorf("guardrails.min-hold: must not be negative"))
	}
	if c.ChangeBudget < 1 {
		errs = append(errs, fmt.Errorf("guardrails.change-budget: %d must be at least 1", c.ChangeBudget))
	}
	if !(c.MinConfidence >= 0 && c.MinConfidence <= 1) {
		errs = append(errs, fmt.Errorf("guardrails.min-confidence: %g must be within [0, 1]", c.MinConfidence))
	}
	if c.LowConfidence != LowConfidenceHold && c.LowConfidence != LowConfidencePreset {
		errs = append(errs, fmt.Errorf("guardrails.low-confidence: %q is not allowed (want hold or preset)", c.LowConfidence))
	}
	if c.Dwell < 1 {
		errs = append(errs, fmt.Errorf("guardrails.dwell: %d must be at least 1 interval", c.Dwell))
	}
	if c.TightenUnsureFor < 0 {
		errs = append(errs, fmt.Errorf("guardrails.tighten-unsure-for: %d must not be negative (0: always)", c.TightenUnsureFor))
	}
	if c.DwellLoosen < 0 {
		errs = append(errs, fmt.Errorf("guardrails.dwell-loosen: %d must not be negative (0: dwell)", c.DwellLoosen))
	}
	if !(c.MinConfidenceTighten <= 1) || math.IsNaN(c.MinConfidenceTighten) {
		errs = append(errs, fmt.Errorf("guardrails.min-confidence-tighten: %g must be within [0, 1]", c.MinConfidenceTighten))
	}
	if !(c.IdleUtil >= 0 && c.IdleUtil < 1) {
		errs = append(errs, fmt.Errorf("guardrails.idle-util: %g must be in [0, 1)", c.IdleUtil))
	}
	if c.RollbackWindow < 1 {
		errs = append(errs, fmt.Errorf("guardrails.rollback.window: %d must be at least 1 interval", c.RollbackWindow))
	}
	if !(c.RollbackDropFrac >= 0 && c.RollbackDropFrac < 1) {
		errs = append(errs, fmt.Errorf("guardrails.rollback.drop-frac: %g must be within [0, 1)", c.RollbackDropFrac))
	}
	if !(c.RollbackPauseIncrease >= 0 && c.RollbackPauseIncrease <= 1) {
		errs = append(errs, fmt.Errorf("guardrails.rollback.pause-increase: %g must be within [0, 1]", c.RollbackPauseIncrease))
	}
	if !(c.RollbackRewardDrop >= 0) || math.IsInf(c.RollbackRewardDrop, 0) {
		errs = append(errs, fmt.Errorf("guardrails.rollback.reward-drop: %g must be a finite number >= 0", c.RollbackRewardDrop))
	}
	if c.RollbackRetryAfter < 0 {
		errs = append(errs, fmt.Errorf("guardrails.rollback.retry-after: must not be negative"))
	}
	if c.StaleFreeze <= 0 {
		errs = append(errs, fmt.Errorf("guardrails.stale-freeze: must be positive"))
	}
	if c.StaleRevert <= c.StaleFreeze {
		errs = append(errs, fmt.Errorf("guardrails.stale-revert: %s must be longer than stale-freeze %s", c.StaleRevert, c.StaleFreeze))
	}
	if c.ExternalHold < 0 {
		errs = append(errs, fmt.Errorf("guardrails.external-hold: must not be negative"))
	}
	if !(c.ReadBackPmaxTol >= 0 && c.ReadBackPmaxTol < 1) {
		errs = append(errs, fmt.Errorf("guardrails.readback-pmax-tolerance: %g must be within [0, 1)", c.ReadBackPmaxTol))
	}
	if !(c.PmaxStep >= 0 && c.PmaxStep <= 0.1) {
		errs = append(errs, fmt.Errorf("guardrails.pmax-step: %g must be within [0, 0.1]", c.PmaxStep))
	}

	// every value the agent cannot use, not only the first
	return errors.Join(append(errs, c.validateAlpha())...)
}

// validateAlpha checks the alpha limits in force (AlphaLimits).
func (c GuardConfig) validateAlpha() error {
	lo, hi, step := c.AlphaLimits()
	switch {
	case !(lo > 0) || math.IsInf(lo, 0):
		return fmt.Errorf("guardrails.alpha.min: %g must be a finite number > 0", lo)
	case math.IsNaN(hi) || math.IsInf(hi, 0):
		return fmt.Errorf("guardrails.alpha.max: %g must be a finite number", hi)
	case hi < lo:
		return fmt.Errorf("guardrails.alpha.max: %s is below alpha.min %s: want min <= max", alphaLimitString(hi), alphaLimitString(lo))
	case !(step >= 1) || math.IsInf(step, 0):
		return fmt.Errorf("guardrails.alpha.max-step: %g must be a finite number >= 1", step)
	case !isPowerOfTwo(step):
		return fmt.Errorf("guardrails.alpha.max-step: %g must be a power of two (1, 2, 4, 8...): SONiC stores alpha as its log2 (dynamic_th), "+
			"so alpha clipped by another factor could not be set", step)
	}
	return nil
}

// alphaLimitString is a as env.FormatAlpha writes it (1/64), or as a
// plain number when env.FormatAlpha would call it unknown.
func alphaLimitString(a float64) string {
	if a > 0 && !math.IsInf(a, 0) {
		return env.FormatAlpha(a)
	}
	return fmt.Sprint(a)
}

// isPowerOfTwo reports whether x is 2^n for a whole n.
func isPowerOfTwo(x float64) bool {
	frac, _ := math.Frexp(x)
	return x > 0 && frac == 0.5
}

func checkPreset(name string, s env.Setting, required bool) error {
	if !required && s == (env.Setting{}) {
		return nil
	}
	if s.KminBytes < 0 || s.KmaxBytes <= s.KminBytes || !(s.Pmax > 0 && s.Pmax <= 1) {
		return fmt.Errorf("guardrails.%s: kmin %d B, kmax %d B, pmax %g is not a valid setting (want 0 <= kmin < kmax, pmax in (0, 1])",
			name, s.KminBytes, s.KmaxBytes, s.Pmax)
	}
	return nil
}

// BoundsFor returns the bounds that apply at rateBps.
func (c GuardConfig) BoundsFor(rateBps float64) RateBounds {
	best := -1
	bestDist := math.Inf(1)
	for i, b := range c.Bounds {
		d := math.Abs(math.Log(b.RateBps) - math.Log(math.Max(rateBps, 1)))
		if d < bestDist {
			best, bestDist = i, d
		}
	}
	b := c.Bounds[best]
	if rateBps <= 0 || b.RateBps == rateBps {
		return b
	}
	f := rateBps / b.RateBps
	sc := func(x int64) int64 { return int64(math.Round(float64(x) * f)) }
	return RateBounds{RateBps: rateBps,
		KminMin: sc(b.KminMin), KminMax: sc(b.KminMax),
		KmaxMin: sc(b.KmaxMin), KmaxMax: sc(b.KmaxMax),
		PmaxMin: b.PmaxMin, PmaxMax: b.PmaxMax}
}

// Change is one queue's setting change the guard allows (or orders).
type Change struct {
	Key        env.QueueKey `json:"key"`
	Kind       ChangeKind   `json:"kind"`
	Old        env.Setting  `json:"old"`
	New        env.Setting  `json:"new"`
	Confidence float64      `json:"confidence,omitempty"`
	Reason     string       `json:"reason"`
	Clamped    []string     `json:"clamped,omitempty"` // rules that adjusted the wanted setting
	// Wanted is set on a rollback the rules had to shape: the setting it
	// returns to, as it was before the change, which the switch ran.
	Wanted *env.Setting `json:"wanted,omitempty"`
	// ApprovedBy names the operator who approved the change (approve
	// mode: Approvals).
	ApprovedBy string `json:"approved_by,omitempty"`
	// FromPolicy is set on a repair that went where the policy pointed
	// (repairTowards): its setting is the agent's choice, so it starts
	// min-hold as a tune does, and what it changes beyond the least
	// repair (Least) is on probation as a tune's change is.
	FromPolicy bool `json:"from_policy,omitempty"`
	// Least is set with FromPolicy: the least repair, the switch's
	// setting brought inside the invariants and nothing more. It is the
	// safe setting the policy's part is judged against, and the one a
	// rollback returns to (never the setting outside the invariants).
	Least *env.Setting `json:"least,omitempty"`
}

// Rejection is a decision the guard did not let through.
type Rejection struct {
	Key    env.QueueKey `json:"key"`
	Rule   string       `json:"rule"`
	Wanted env.Setting  `json:"wanted"`
	Reason string       `json:"reason"`
}

// Alarm is something an operator must hear about.
type Alarm struct {
	Target string        `json:"target"`
	Key    *env.QueueKey `json:"key,omitempty"`
	Rule   string        `json:"rule"`
	Msg    string        `json:"msg"`
}

// Plan is the guard's answer for one step.
type Plan struct {
	Changes    []Change
	Rejections []Rejection
	Alarms     []Alarm
	Frozen     []string // targets whose telemetry is stale
	// Baselines are the queues whose switch restarted (their counters
	// went back and the setting they run is no longer the one they ran):
	// the setting they run now is taken as the new baseline.
	Baselines []Baseline
}

// Baseline is a queue whose switch restarted: it ran Was (what the agent
// set, or its last known good) and runs Now, its startup configuration,
// which the guard takes as the queue's baseline and last known good.
// Why is the observation's Problem: the counter that went back.
type Baseline struct {
	Key env.QueueKey
	Was env.Setting
	Now env.Setting
	Why string
}

// StepInput is what the guard decides from. Decisions, when given, are
// aligned with Observations (same length and order, as policy.Policy
// returns them).
type StepInput struct {
	NowNs        int64
	Observations []env.Observation
	Decisions    []policy.Decision
	// Held reports, in approve mode, whether a tune or fallback will be
	// held for an operator's approval rather than applied (Approvals.Holds):
	// such a change spends none of the change budget, which bounds what is
	// written in an interval (nil: every change is applied).
	Held func(Change) bool
	// Paused: the closed loop is paused (Core.SetPaused), so no rollback
	// could be made: a change on probation is not judged, and its window
	// waits for the loop to resume (the intervals meanwhile still count
	// in the queue's recent KPIs, the baseline of a later change).
	Paused bool
}

type queueState struct {
	key     env.QueueKey
	rate    float64
	current env.Setting
	xoff    int64
	// xoffs are the XOFF of the last XoffMemoryIntervals observations: a
	// dynamic threshold moves with buffer use, and the guard plans Kmax
	// under where it falls (xoffFloor), not under a momentary high.
	// buffer is the switch's shared buffer (0: unknown).
	xoffs  env.LowWater
	buffer int64
	// xoffWiden widens the XOFF margin (xoffShare) once for each repair
	// of a setting the agent wrote (a repair's included) that XOFF fell
	// to, up to MaxXoffWiden; calmN counts the intervals since the last,
	// and after XoffMemoryIntervals of them it narrows by one again.
	// widenFrom is the setting the last widening repair answered (a
	// repair planned again for it widens nothing more).
	xoffWiden   int
	calmN       int
	widenFrom   env.Setting
	minHeadroom int64
	// floorEstimated: minHeadroom is ecntune's estimate, not the switch's
	// own floor (env.QueueSample.FloorEstimated): a headroom the switch
	// runs below it is reported, not repaired.
	floorEstimated bool
	// floorNoted: the headroom below an estimated floor was reported
	// (once, until the headroom or the floor moves past it again).
	floorNoted bool
	// headroomReported: the switch reports the headroom, so 0 is 0 B
	// (env.QueueSample.HeadroomReported).
	headroomReported bool
	lastGood         env.Setting

	lastChangeNs int64
	// lastNotApplied: the change at lastChangeNs was not applied (its Set
	// failed, or was not sent): min-hold paces the retry, and says so.
	lastNotApplied bool
	changed        bool
	pending        bool

	expect    env.Setting // what the agent last set (when expectSet)
	expectSet bool
	// ownSet is what the agent itself set last (ownSetOK), kept when
	// expect is dropped for another writer: a read showing it proves the
	// telemetry wrong, not the writer (Core.Confirm).
	ownSet   env.Setting
	ownSetOK bool
	// distrust: a read proved the telemetry's setting of the queue stale
	// (Core.Confirm): it is not taken as the current setting, nor as
	// another writer's, until it shows expect again.
	distrust  bool
	mismatchN int   // consecutive observations that differ from expect
	yieldNs   int64 // leave the queue alone until then (external writer)
	// refusedN counts the queue's tunes in a row that read back otherwise
	// (the switch took part of them, or none); from RefusedTunes on, the
	// queue is not tuned until refusedUntilNs.
	refusedN       int
	refusedUntilNs int64

	// dwellWant is the change the policy recommended in the last intervals
	// in a row, dwellN how many (0: it holds).
	dwellWant env.Setting
	dwellN    int
	// tightened: the loop's own last change of the queue (made or, in
	// shadow mode, virtual: a tune, a fallback, a safety repair under a
	// falling XOFF) marked earlier than the setting it replaced; a change
	// that marks later then needs DwellLoosen.
	tightened bool
	// busyN counts the queue's busy intervals since its traffic began (the
	// first the guard saw, or the first after idleN reached
	// TightenUnsureFor), idleN its idle intervals in a row; settled: busyN
	// passed TightenUnsureFor.
	busyN, idleN int
	settled      bool

	// recent are the KPIs of the last RollbackWindow measured intervals,
	// oldest first: a change's probation is judged against their mean.
	recent         []kpi
	onProbation    bool
	probationFrom  env.Setting
	probationTo    env.Setting
	probationBase  base
	probationWatch watch

	// virtual is what the loop would run on the queue in shadow mode (or
	// while paused): the last change the guard let through, from
	// virtualNs, until the switch runs it or reports another change. The
	// guard decides from it as a closed loop would from the change made.
	virtual    env.Setting
	virtualSet bool
	virtualNs  int64

	// retryBlocked is the setting last rolled back on the queue: a tune
	// back to it is refused until retryUntilNs (RollbackRetryAfter).
	retryBlocked env.Setting
	retryFrom    env.Setting
	retryUntilNs int64
}

type targetState struct {
	lastDataNs int64
	frozen     bool
	reverted   bool
	// headroom is the lossless PGs' headroom summed over the queues of
	// this step's observations (and the raises planned in it so far),
	// buffer the switch's shared buffer (0: unknown): HeadroomBufferShare.
	headroom, buffer int64
}

// HeadroomBufferShare is how much of a switch's buffer the headroom of all
// its lossless PGs together may take: the guard raises no PG's headroom
// past it (nor a PG's XOFF plus headroom past the buffer). XOFF plus
// headroom must fit the buffer the PG can get (switch-knobs §2), and every
// byte of headroom reserved is a byte the shared pool (and so XOFF, and
// Kmax under it) loses; a policy asking floor×10 on every PG of a 64-port
// switch would reserve more than its buffer. A total above it already (the
// switch's own configuration) is left as it is.
const HeadroomBufferShare = 0.5

// Guard holds the guardrails' state. It is deterministic and does no I/O:
// every method takes the time it should consider as now. It is not safe for
// concurrent use.
type Guard struct {
	cfg     GuardConfig
	queues  map[env.QueueKey]*queueState
	targets map[string]*targetState
	dirty   map[env.QueueKey]bool // queues whose memory changed (Memories)
	paused  bool                  // this step's StepInput.Paused
	// baselines: this step's queues whose switch restarted (Plan.Baselines)
	baselines []Baseline
}

// NewGuard returns a guard with validated guardrails.
func NewGuard(cfg GuardConfig) (*Guard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Guard{cfg: cfg, queues: map[env.QueueKey]*queueState{}, targets: map[string]*targetState{}}, nil
}

// Config returns the guardrails.
func (g *Guard) Config() GuardConfig { return g.cfg }

// AddTarget puts a target under the watchdog from nowNs on, as though
// telemetry had arrived then.
func (g *Guard) AddTarget(target string, nowNs int64) {
	if _, ok := g.targets[target]; !ok {
		g.targets[target] = &targetState{lastDataNs: nowNs}
	}
}

// Seen notes that telemetry from target arrived at nowNs.
func (g *Guard) Seen(target string, nowNs int64) {
	t := g.targets[target]
	if t == nil {
		t = &targetState{}
		g.targets[target] = t
	}
	if nowNs > t.lastDataNs {
		t.lastDataNs = nowNs
	}
}

// LastGood returns the last known good setting of a queue.
func (g *Guard) LastGood(k env.QueueKey) (env.Setting, bool) {
	q := g.queues[k]
	if q == nil {
		return env.Setting{}, false
	}
	return q.lastGood, true
}

// Adopt restores a queue's state after a restart: from is its last known
// good setting, to what the switch runs now after a change at changedNs.
// When from != to the change is put on probation again.
func (g *Guard) Adopt(k env.QueueKey, from, to env.Setting, changedNs int64) {
	if !validSetting(from) || !validSetting(to) {
		return // never a baseline of zeros from a switch going down
	}
	q := g.queue(k)
	q.lastGood = from
	q.current = to
	q.changed = true
	q.lastChangeNs, q.lastNotApplied = changedNs, false
	q.expect, q.expectSet, q.mismatchN = to, true, 0
	q.onProbation = !SameSetting(from, to, 1e-9)
	if q.onProbation {
		// as Result's Applied: a tightening found applied at a restart is
		// the loop's own, which dwell-loosen keeps from being undone at once
		q.tightened = marksEarlier(to, from)
	}
	q.probationFrom, q.probationTo = from, to
	q.probationBase, q.probationWatch = base{}, watch{haveReward: true}
}

func (g *Guard) queue(k env.QueueKey) *queueState {
	q := g.queues[k]
	if q == nil {
		q = &queueState{key: k}
		g.queues[k] = q
	}
	return q
}

// MinMoveShare is the least relative move of Kmin or Kmax a change the
// guardrails clamped must make to be worth a Set: a clamped setting
// within it of the current one, with the same Pmax, headroom and alpha,
// is not applied.
const MinMoveShare = 0.05

// nearSetting reports whether a and b have the same Pmax, headroom and
// alpha and Kmin and Kmax within share of each other's.
func nearSetting(a, b env.Setting, share float64) bool {
	near := func(x, y int64) bool {
		return x > 0 && y > 0 && math.Abs(float64(x-y)) <= share*float64(max(x, y))
	}
	return near(a.KminBytes, b.KminBytes) && near(a.KmaxBytes, b.KmaxBytes) && math.Abs(a.Pmax-b.Pmax) <= 1e-9 &&
		a.HeadroomBytes == b.HeadroomBytes && sameAlpha(a.Alpha, b.Alpha)
}

// SameSetting compares two settings, Pmax within pmaxTol.
func SameSetting(a, b env.Setting, pmaxTol float64) bool {
	return a.KminBytes == b.KminBytes && a.KmaxBytes == b.KmaxBytes &&
		math.Abs(a.Pmax-b.Pmax) <= pmaxTol && a.HeadroomBytes == b.HeadroomBytes && sameAlpha(a.Alpha, b.Alpha)
}

// SettingDiff names every knob that differs between a setting set and
// one a switch reports (env.DescribeChange: kmin, kmax, pmax, headroom,
// alpha), headroom and alpha only when both sides know them and alpha
// beyond sameAlpha's rounding.
func SettingDiff(set, got env.Setting) string {
	if set.HeadroomBytes == 0 || got.HeadroomBytes == 0 {
		got.HeadroomBytes = set.HeadroomBytes
	}
	if set.Alpha == 0 || got.Alpha == 0 || sameAlpha(set.Alpha, got.Alpha) {
		got.Alpha = set.Alpha
	}
	return env.DescribeChange(set, got)
}

// sameAlpha compares two alphas (0: unknown, equal only to 0).
func sameAlpha(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// ReadBackOK reports whether a setting read back from a switch matches the
// one that was set (headroom and alpha are compared only when both are
// known).
func (g *Guard) ReadBackOK(set, got env.Setting) bool {
	if set.HeadroomBytes > 0 && got.HeadroomBytes > 0 && set.HeadroomBytes != got.HeadroomBytes {
		return false
	}
	if set.Alpha > 0 && got.Alpha > 0 && !sameAlpha(set.Alpha, got.Alpha) {
		return false
	}
	return set.KminBytes == got.KminBytes && set.KmaxBytes == got.KmaxBytes &&
		math.Abs(set.Pmax-got.Pmax) <= g.cfg.ReadBackPmaxTol+1e-12
}

func validSetting(s env.Setting) bool {
	return s.KminBytes >= 0 && s.KmaxBytes > 0 && s.HeadroomBytes >= 0 &&
		!math.IsNaN(s.Pmax) && s.Pmax > 0 && s.Pmax <= 1 &&
		s.Alpha >= 0 && !math.IsInf(s.Alpha, 0) // NaN fails >= 0
}

// Step runs every rule once: it ingests the observations (rollback checks),
// runs the stale-telemetry watchdog, and turns the decisions into allowed
// changes and rejections. Changes it returns are pending until Result is
// called for them.
func (g *Guard) Step(in StepInput) (Plan, error) {
	var plan Plan
	if in.Decisions != nil && len(in.Decisions) != len(in.Observations) {
		return plan, fmt.Errorf("guard: %d decisions for %d observations", len(in.Decisions), len(in.Observations))
	}
	for i := range in.Decisions {
		if in.Decisions[i].Key != in.Observations[i].Key {
			return plan, fmt.Errorf("guard: decision %d is for %s, observation for %s", i, in.Decisions[i].Key, in.Observations[i].Key)
		}
	}
	now := in.NowNs
	g.paused = in.Paused
	g.baselines = nil
	for _, t := range g.targets {
		t.headroom, t.buffer = 0, 0
	}
	for i := range in.Observations {
		o := &in.Observations[i]
		g.Seen(o.Key.Target, now)
		t := g.targets[o.Key.Target]
		t.headroom += max(o.Current.HeadroomBytes, 0)
		t.buffer = max(t.buffer, o.BufferBytes)
	}
	// A queue gets at most one change per plan: a rollback, repair or
	// revert makes it pending at once, and its decision waits.
	planned := map[env.QueueKey]Change{}
	for i := range in.Observations {
		c, a := g.ingest(now, &in.Observations[i])
		if c == nil && a == nil {
			c, a = g.repair(now, &in.Observations[i])
			if c != nil && in.Decisions != nil {
				g.repairTowards(c, &in.Decisions[i])
			}
		}
		if c != nil {
			plan.Changes = append(plan.Changes, *c)
			g.queue(c.Key).pending = true // before the watchdog looks
		}
		if a != nil {
			plan.Alarms = append(plan.Alarms, *a)
		}
	}
	plan.Baselines = g.baselines
	g.watchdog(now, &plan)
	for _, c := range plan.Changes {
		planned[c.Key] = c
	}

	var cands []Change
	for i := range in.Decisions {
		if d := &in.Decisions[i]; planned[d.Key].FromPolicy {
			continue // the repair went where the decision pointed
		} else if c, ok := planned[d.Key]; ok {
			plan.Rejections = append(plan.Rejections, Rejection{Key: d.Key, Rule: RulePending, Wanted: d.Setting,
				Reason: fmt.Sprintf("a %s of this queue goes first", c.Kind)})
			continue
		}
		c, rej := g.decide(now, &in.Observations[i], &in.Decisions[i])
		if rej != nil {
			plan.Rejections = append(plan.Rejections, *rej)
		}
		if c != nil {
			cands = append(cands, *c)
			if t := g.targets[c.Key.Target]; t != nil && c.New.HeadroomBytes > c.Old.HeadroomBytes {
				t.headroom += c.New.HeadroomBytes - max(c.Old.HeadroomBytes, 0)
			}
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].Confidence != cands[j].Confidence {
			return cands[i].Confidence > cands[j].Confidence
		}
		return env.QueueKeyLess(cands[i].Key, cands[j].Key)
	})
	budgetWhy := ""
	spent := 0
	for _, c := range cands {
		if in.Held != nil && NeedsApproval(c.Kind) && in.Held(c) {
			// waits for an operator: listed as pending, written by no one
			plan.Changes = append(plan.Changes, c)
			continue
		}
		if spent >= g.cfg.ChangeBudget {
			if budgetWhy == "" {
				budgetWhy = fmt.Sprintf("change budget of %d per interval used up", g.cfg.ChangeBudget)
			}
			plan.Rejections = append(plan.Rejections, Rejection{Key: c.Key, Rule: RuleBudget, Wanted: c.New, Reason: budgetWhy})
			continue
		}
		spent++
		plan.Changes = append(plan.Changes, c)
	}
	for _, c := range plan.Changes {
		g.queue(c.Key).pending = true
	}
	return plan, nil
}

// XoffMemoryIntervals is how long the guard remembers a PG's XOFF: its
// lowest, and its highest (its value with the least of the buffer in
// use), for xoffFloor.
const XoffMemoryIntervals = 64

// xoffFloor is where the guard expects q's XOFF to fall to (0: unknown):
// the lowest XOFF of the last XoffMemoryIntervals, or less. XOFF is a
// dynamic threshold, alpha times the free shared buffer B, so a queue
// filling up to it lowers it to X/(1+alpha) from its value X with the
// queue empty. alpha is at least X/B (the free buffer is at most B): from
// the highest XOFF remembered, the floor is X·B/(B+X). On the 800G
// stars (alpha 1/8) XOFF fell 13-22% from its idle value as incasts
// filled queues, past the repair's 10% margin, and the guard repaired its
// own settings; several queues filling at once lower it further, which
// the lowest XOFF remembered answers after the first time.
func (q *queueState) xoffFloor() int64 {
	low := q.xoffs.Low(q.xoff)
	if low <= 0 || q.buffer <= 0 {
		return low
	}
	x := float64(q.xoffs.High(q.xoff))
	return min(low, int64(x*float64(q.buffer)/(float64(q.buffer)+x)))
}

// MaxXoffWiden is how many times the XOFF margin of a queue widens
// (xoffShare): 10% of XOFF, then 20% and 40% after repairs of the guard's
// own settings.
const MaxXoffWiden = 2

// xoffShare is the share of q's XOFF floor a planned Kmax may reach:
// RepairXoffShare, with its margin doubled for each repair of the agent's
// own setting XOFF fell to (xoffWiden). A PG whose XOFF falls past the
// margin as its pool fills (incast400-longcable: the pool's headroom
// leaves 3.5 MB of a 12 MB buffer, and XOFF fell 432 KB→121 KB as 16 PGs
// filled it) would otherwise have its repair repaired at every new low:
// six repairs a queue, 375→230→169→145→128→109 KB.
func (q *queueState) xoffShare() float64 {
	return 1 - (1-RepairXoffShare)*float64(int(1)<<min(max(q.xoffWiden, 0), MaxXoffWiden))
}

// kmaxCeiling is the most Kmax planned on q may be (0: XOFF unknown):
// xoffShare of where XOFF falls to (xoffFloor).
func (q *queueState) kmaxCeiling() int64 {
	x := q.xoffFloor()
	if x <= 0 {
		return x
	}
	return int64(float64(x) * q.xoffShare())
}

// ingest updates a queue from its observation and runs the rollback rules
// (not while paused: a probation is judged when its rollback can be made).
func (g *Guard) ingest(now int64, o *env.Observation) (*Change, *Alarm) {
	q := g.queue(o.Key)
	var speed *Alarm
	if o.RateBps > 0 && q.rate > 0 && o.RateBps != q.rate {
		speed = g.speedChanged(q, o)
	}
	if o.RateBps > 0 {
		q.rate = o.RateBps
	}
	q.xoff = o.XoffBytes
	q.xoffs.N = XoffMemoryIntervals
	q.xoffs.Note(o.XoffBytes)
	q.buffer = o.BufferBytes
	if q.xoffWiden > 0 {
		if q.calmN++; q.calmN >= XoffMemoryIntervals {
			// XOFF has not reached the agent's setting for as long as its
			// low is remembered: the margin narrows a step
			q.xoffWiden, q.calmN = q.xoffWiden-1, 0
			g.touch(q)
		}
	}
	q.minHeadroom, q.floorEstimated = o.MinHeadroomBytes, o.FloorEstimated
	q.headroomReported = o.HeadroomReported
	if ext := g.follow(now, q, o); ext != nil {
		return nil, ext
	}
	if !o.Valid || speed != nil {
		return nil, speed // the interval of a speed change is of both speeds: not kept
	}
	k := kpi{drop: o.Metrics.DropFrac, pause: o.Metrics.PauseRxFrac}
	if g.cfg.Reward != nil {
		k.reward, k.haveReward = rewardsOf(g.cfg.Reward, o.Metrics)
	}
	if math.IsNaN(k.drop) || math.IsNaN(k.pause) {
		return nil, nil
	}
	defer g.noteKPI(q, k)
	if !q.onProbation || q.pending || g.paused {
		return nil, nil
	}
	return g.judgeProbation(now, q, o, k)
}

// speedChanged takes a change of q's port speed (the link renegotiated,
// or a breakout): the KPIs kept are of the old speed, no baseline of the
// new one, and a change on probation is no longer judged against them
// (its probation ends undecided, as a switch restart ends it: the change
// stays, not made last known good). The alarm says so (nil when no
// probation was open).
func (g *Guard) speedChanged(q *queueState, o *env.Observation) *Alarm {
	q.recent = q.recent[:0]
	if !q.onProbation || q.pending {
		return nil
	}
	q.onProbation = false
	g.touch(q)
	k := o.Key
	return &Alarm{Target: k.Target, Key: &k, Rule: RuleUndecided,
		Msg: fmt.Sprintf("probation of %s ended undecided: the port's speed went %s→%s during it, and its baseline was measured at %s; the change stays, not made last known good (%s)",
			env.DescribeChange(q.probationFrom, q.probationTo), units.FormatRate(q.rate), units.FormatRate(o.RateBps), units.FormatRate(q.rate), q.lastGood.Describe())}
}

// follow takes what the switch reports of q: a restarted switch's setting
// as the new baseline, the current setting, and another writer's change,
// which it adopts and yields to (the alarm it returns).
func (g *Guard) follow(now int64, q *queueState, o *env.Observation) *Alarm {
	if o.Metrics.Reset && !q.pending && validSetting(o.Current) && q.changed && !g.stillRuns(q, o.Current) {
		// The switch restarted (its counters went back and its setting is
		// no longer the one it had): it runs its startup configuration,
		// not what the agent set. What it has now is the baseline; a
		// change on probation is gone with the restart. (Counters cleared
		// with the setting kept are only an interval not measured.)
		g.baselines = append(g.baselines, Baseline{Key: o.Key, Was: g.ran(q), Now: o.Current, Why: o.Problem})
		q.current, q.lastGood = o.Current, o.Current
		q.onProbation, q.expectSet, q.mismatchN = false, false, 0
		g.touch(q)
	}
	var ext *Alarm
	if q.distrust && validSetting(o.Current) {
		if !g.ReadBackOK(q.expect, o.Current) {
			return nil // still the stale view: the read is the truth
		}
		q.distrust = false
	}
	if !q.pending && validSetting(o.Current) {
		if q.virtualSet && (SameSetting(o.Current, q.virtual, g.cfg.ReadBackPmaxTol) || (validSetting(q.current) && !SameSetting(o.Current, q.current, g.cfg.ReadBackPmaxTol))) {
			q.virtualSet = false // the switch runs it now, or was changed by someone
		}
		q.current = o.Current
		if q.lastGood == (env.Setting{}) || (!q.expectSet && !q.onProbation && q.mismatchN == 0 && !q.virtualSet &&
			!SameSetting(q.lastGood, o.Current, g.cfg.ReadBackPmaxTol)) {
			// a queue the agent has no setting of its own on runs what
			// its operator set: that is its last known good, not what it
			// ran when the agent first saw it
			q.lastGood = o.Current
			g.touch(q)
		}
		if q.expectSet && !g.ReadBackOK(q.expect, o.Current) {
			q.mismatchN++
			if q.mismatchN >= 2 {
				// Someone else writes this queue: adopt, alarm, yield.
				k := o.Key
				ext = &Alarm{Target: k.Target, Key: &k, Rule: RuleExternal,
					Msg: fmt.Sprintf("queue changed by another writer (agent set → switch runs: %s): yielding for %s",
						SettingDiff(q.expect, o.Current), g.cfg.ExternalHold)}
				q.expectSet, q.mismatchN, q.onProbation = false, 0, false
				q.lastGood = o.Current
				q.yieldNs = now + int64(g.cfg.ExternalHold)
				g.touch(q)
			}
		} else {
			q.mismatchN = 0
		}
	}
	return ext
}

// ran is what the guard holds that q's switch runs: the setting it last
// reported, else (a memory restored at the agent's start, nothing read
// yet) what the agent set on it, the change on probation's, or its last
// known good.
func (g *Guard) ran(q *queueState) env.Setting {
	switch {
	case validSetting(q.current):
		return q.current
	case q.expectSet:
		return q.expect
	case q.onProbation:
		return q.probationTo
	}
	return q.lastGood
}

// stillRuns says whether got is the setting q's switch ran before (ran):
// what the agent set is read back within the read-back tolerance.
func (g *Guard) stillRuns(q *queueState, got env.Setting) bool {
	if !validSetting(q.current) && q.expectSet {
		return g.ReadBackOK(q.expect, got)
	}
	return SameSetting(got, g.ran(q), g.cfg.ReadBackPmaxTol)
}

// repair returns the change that moves queue o back inside the
// invariants when its current setting is outside them, with an alarm: a
// lossless PG's headroom below its floor comes up to the floor, a Kmax at
// or above the PG's XOFF goes down to RepairXoffShare of it (within the
// bounds; Kmin below it). Nothing while a change of the queue is pending,
// its target is frozen, its setting is unknown or another writer holds it
// (the alarm still sounds: two writers must not fight over a repair).
func (g *Guard) repair(now int64, o *env.Observation) (*Change, *Alarm) {
	q := g.queue(o.Key)
	if q.pending || !validSetting(q.current) {
		return nil, nil
	}
	if t := g.targets[o.Key.Target]; t != nil && t.frozen {
		return nil, nil
	}
	cur := q.current
	if q.virtualSet {
		cur = q.virtual // shadow: what the loop would run is what a repair answers
	}
	out := cur
	var why []string
	rule := ""
	below := q.minHeadroom > 0 && (cur.HeadroomBytes > 0 || q.headroomReported) && cur.HeadroomBytes < q.minHeadroom
	if !below || !q.floorEstimated {
		q.floorNoted = false
	}
	if below && !(q.floorEstimated && q.floorNoted) {
		rule = RuleHeadroom
		if q.floorEstimated {
			q.floorNoted = true
			// ecntune's IEEE worst case, from a cable length and MTU:
			// the vendor may size headroom by a tighter rule of its
			// own. Say so; leave the switch's headroom as it is.
			why = append(why, "headroom "+units.FormatBytes(cur.HeadroomBytes)+" is below the lossless floor "+units.FormatBytes(q.minHeadroom)+
				" estimated from the cable length and MTU (IEEE 802.1Qbb worst case): left as the switch has it; check the cable length and MTU")
		} else {
			out.HeadroomBytes = q.minHeadroom
			why = append(why, "headroom "+units.FormatBytes(cur.HeadroomBytes)+" is below the lossless floor "+units.FormatBytes(q.minHeadroom)+": restoring the floor")
		}
	}
	if q.xoff > 0 && cur.KmaxBytes >= q.xoff {
		b := g.cfg.BoundsFor(q.rate)
		// XOFF fell to a setting the agent wrote (a repair's included):
		// the margin that setting kept did not hold; widen it
		own := q.virtualSet || (q.expectSet && g.ReadBackOK(q.expect, cur))
		widened := ""
		if own && q.xoffWiden < MaxXoffWiden && !SameSetting(cur, q.widenFrom, 1e-9) {
			q.xoffWiden++
			q.widenFrom, q.calmN = cur, 0
			g.touch(q)
			widened = fmt.Sprintf(" (XOFF fell to the agent's own setting: kmax kept %.0f%% under where XOFF falls to, from %.0f%%)",
				100*(1-q.xoffShare()), 100*(1-RepairXoffShare)*float64(int(1)<<(q.xoffWiden-1)))
		} else if own {
			q.calmN = 0
		}
		kmax := min(q.kmaxCeiling(), b.KmaxMax)
		if kmax < b.KmaxMin && b.KmaxMin < q.xoff {
			kmax = b.KmaxMin
		}
		if kmax >= b.KmaxMin && kmax < cur.KmaxBytes {
			out.KmaxBytes = kmax
			if out.KminBytes >= kmax {
				// the least move: kmin down in kmax's proportion
				out.KminBytes = max(b.KminMin, int64(float64(kmax)*float64(cur.KminBytes)/float64(cur.KmaxBytes)))
				if out.KminBytes >= kmax { // kmin was not below kmax to begin with
					out.KminBytes = max(b.KminMin, kmax/2)
				}
			}
			if out.KminBytes < kmax {
				if rule == "" {
					rule = RuleOrder
				}
				why = append(why, "kmax "+units.FormatBytes(cur.KmaxBytes)+" is not below XOFF "+units.FormatBytes(q.xoff)+" (ECN must mark before PFC pauses): kmax to "+units.FormatBytes(kmax)+widened)
			} else {
				out.KmaxBytes, out.KminBytes = cur.KmaxBytes, cur.KminBytes
			}
		}
		if out.KmaxBytes >= q.xoff {
			if rule == "" {
				rule = RuleOrder
			}
			why = append(why, "kmax "+units.FormatBytes(cur.KmaxBytes)+" is not below XOFF "+units.FormatBytes(q.xoff)+" and no kmax within the bounds is")
		}
	}
	if len(why) == 0 {
		return nil, nil
	}
	k := o.Key
	msg := strings.Join(why, "; ")
	al := &Alarm{Target: k.Target, Key: &k, Rule: rule, Msg: msg}
	if SameSetting(out, cur, 1e-9) {
		return nil, al // nothing within the bounds repairs it: say so
	}
	if now < q.yieldNs || q.mismatchN > 0 {
		al.Msg += " (not repaired while another writer holds the queue)"
		return nil, al
	}
	q.onProbation = false
	return &Change{Key: k, Kind: KindRepair, Old: cur, New: out, Reason: "safety repair: " + msg}, al
}

// repairTowards makes repair c go where the policy's decision d points
// when d is sure enough (MinConfidence) and its setting, shaped by the
// guardrails (bounds, Kmax under XOFF with the repair's margin, the
// headroom floor; not the max step, which a repair does not keep
// either), is a safe one: a queue that must change now changes once, to
// the policy's setting, rather than to the least safe move and then, a
// dwell later, to the policy's (ai400's Kmax 25.6 MB above an XOFF of
// 7.8 MB: two repairs as XOFF fell, then the model's tune 6 intervals
// in). Otherwise c stays the least move.
func (g *Guard) repairTowards(c *Change, d *policy.Decision) {
	q := g.queue(c.Key)
	if g.cfg.LeastRepairs || d.Key != c.Key || math.IsNaN(d.Confidence) || d.Confidence < g.cfg.MinConfidence || !validSetting(d.Setting) ||
		c.New.HeadroomBytes != c.Old.HeadroomBytes {
		return // a headroom repair restores the floor and nothing else
	}
	real := q.current
	q.current = c.Old // shape works from what the repair answers
	defer func() { q.current = real }()
	want := g.complete(d.Setting, c.Old)
	if lo, hi, _ := g.cfg.AlphaLimits(); !sameAlpha(want.Alpha, c.Old.Alpha) && (want.Alpha < lo || want.Alpha > hi) {
		want.Alpha = c.Old.Alpha
	}
	if !validSetting(want) || want.KminBytes >= want.KmaxBytes || SameSetting(want, c.Old, 1e-9) {
		return
	}
	out, clamped, notes, rej := g.shape(q, want, math.Inf(1))
	if rej != nil || SameSetting(out, c.New, 1e-9) {
		return
	}
	least := c.New
	c.New, c.Confidence, c.FromPolicy, c.Least = out, d.Confidence, true, &least
	// what the policy wanted and what is written, which the guardrails
	// may have moved (a Kmax under the XOFF margin, Kmin under Kmax)
	c.Reason += "; towards the policy's setting rather than the least repair " + least.Describe() + ": wanted " + want.Describe()
	if !SameSetting(out, want, 1e-9) {
		c.Reason += ", written " + out.Describe() + " (" + strings.Join(clamped, ", ")
		if notes != "" {
			c.Reason += "; " + notes
		}
		c.Reason += ")"
	}
	c.Reason += "; the change beyond the least repair is on probation (" + d.Reason + ")"
}

func (g *Guard) watchdog(now int64, plan *Plan) {
	names := make([]string, 0, len(g.targets))
	for n := range g.targets {
		names = append(names, n)
	}
	slices.SortFunc(names, env.NaturalCompare)
	for _, n := range names {
		t := g.targets[n]
		age := time.Duration(now - t.lastDataNs)
		if age < g.cfg.StaleFreeze {
			if t.frozen {
				plan.Alarms = append(plan.Alarms, Alarm{Target: n, Rule: RuleStale, Msg: "telemetry resumed: changes allowed again"})
			}
			t.frozen, t.reverted = false, false
			continue
		}
		if !t.frozen {
			plan.Alarms = append(plan.Alarms, Alarm{Target: n, Rule: RuleStale,
				Msg: fmt.Sprintf("no telemetry for %s: settings frozen", age)})
		}
		t.frozen = true
		plan.Frozen = append(plan.Frozen, n)
		if age < g.cfg.StaleRevert {
			continue
		}
		if !t.reverted {
			t.reverted = true
			plan.Alarms = append(plan.Alarms, Alarm{Target: n, Rule: RuleRevert,
				Msg: fmt.Sprintf("no telemetry for %s: reverting to the safe preset", age)})
		}
		// Every interval until telemetry resumes, each queue not yet on
		// the safe preset: a revert the agent held (its target busy with
		// another flight, a confirmed commit pending) or that failed, and
		// a queue whose change was in flight, are planned again, not
		// dropped after the first try.
		for _, q := range g.sortedQueues(n) {
			q.onProbation = false
			if q.pending || !validSetting(q.current) {
				continue
			}
			preset := g.cfg.Safe.ScaledTo(q.rate)
			preset.HeadroomBytes = q.current.HeadroomBytes
			preset.Alpha = q.current.Alpha
			preset.Pmax = quantizePmax(preset.Pmax, g.cfg.PmaxStep)
			// Shaped as every write is (in one step, as a rollback): within
			// the bounds, Pmax on the switch's step, Kmax under the PG's
			// XOFF with the repair's margin, so that the revert is never
			// repaired once telemetry resumes.
			safe, clamped, _, rej := g.shape(q, preset, math.Inf(1))
			if rej != nil {
				safe = q.current // the shaped preset is what runs already
			}
			if SameSetting(safe, q.current, 1e-9) || (q.virtualSet && SameSetting(safe, q.virtual, 1e-9)) {
				continue // there already (in shadow mode or paused: would be)
			}
			c := Change{Key: q.key, Kind: KindRevert, Old: q.current, New: safe, Clamped: clamped,
				Reason: fmt.Sprintf("telemetry stale for %s: safe preset", age)}
			if len(clamped) > 0 {
				c.Wanted = &preset
				c.Reason += fmt.Sprintf(" %s as allowed (%s)", preset.Describe(), strings.Join(clamped, ", "))
			}
			plan.Changes = append(plan.Changes, c)
		}
	}
}

func (g *Guard) sortedQueues(target string) []*queueState {
	var qs []*queueState
	for k, q := range g.queues {
		if k.Target == target {
			qs = append(qs, q)
		}
	}
	sort.Slice(qs, func(i, j int) bool { return env.QueueKeyLess(qs[i].key, qs[j].key) })
	return qs
}

// decide runs the rules on one decision: admit (may the queue change now,
// and to what) then shape (the wanted setting made an allowed one). It
// returns a candidate change, a rejection, or neither (the decision keeps
// the current setting).
func (g *Guard) decide(now int64, o *env.Observation, d *policy.Decision) (*Change, *Rejection) {
	q := g.queue(o.Key)
	if q.virtualSet {
		// Shadow: decide from what the loop would run, not from what the
		// switch runs.
		real := q.current
		q.current = q.virtual
		defer func() { q.current = real }()
		if (d.Action == env.ActionHold || d.Held != policy.HoldNone) && d.Setting.SameECN(real) {
			// The policy keeps what it saw the switch run (it holds, or
			// the queue is idle): in shadow mode that keeps what the loop
			// would run, not a change back to the switch's setting.
			kept := *d
			kept.Setting = q.virtual
			d = &kept
		}
	}
	g.busy(q, o, d)
	g.dwell(q, o, d)
	w, rej := g.admit(now, q, o, d)
	if w == nil {
		return nil, rej
	}
	ratio := g.cfg.MaxStepRatio
	if w.kind == KindTune {
		// Advice that persisted n intervals moves as far as n changes of
		// one interval's advice could: in one change, not a staircase of
		// them (n at most MaxDwellFactor·Dwell, see earnedDwell).
		ratio = math.Pow(ratio, float64(min(q.dwellN, g.maxDwell())))
	}
	out, clamped, notes, rej := g.shape(q, w.setting, ratio)
	if rej != nil {
		return nil, rej
	}
	if len(clamped) > 0 && nearSetting(out, q.current, MinMoveShare) {
		// What the guardrails allow of the advice hardly differs from what
		// runs: a Set for it changes nothing a queue would notice, and as
		// XOFF's low water drifts each interval it would be a staircase of
		// such Sets (the 800G star: 14 changes per queue per 100 intervals,
		// Kmin 2.562→2.573→2.543 MB).
		return nil, &Rejection{Key: q.key, Rule: clamped[len(clamped)-1], Wanted: w.setting,
			Reason: fmt.Sprintf("the allowed setting %s is within %.0f%% of the current one", out.Describe(), MinMoveShare*100)}
	}
	if len(clamped) > 0 && marksEarlier(q.current, w.setting) && marksEarlier(out, q.current) {
		// Advice to mark later that the guardrails would turn into marking
		// earlier (a Kmax wanted at XOFF, planned under where XOFF falls):
		// not the advice, and not a safety need either (a repair answers a
		// Kmax that reaches XOFF). The queue keeps its setting.
		return nil, &Rejection{Key: q.key, Rule: clamped[len(clamped)-1], Wanted: w.setting,
			Reason: fmt.Sprintf("advice to mark later; what the guardrails allow of it, %s, marks earlier", out.Describe())}
	}
	if w.kind == KindTune {
		if rej := g.retryRefused(now, q, out); rej != nil {
			return nil, rej
		}
	}
	reason := w.reason
	if notes != "" {
		reason += " (" + notes + ")"
	}
	return &Change{Key: o.Key, Kind: w.kind, Old: q.current, New: out, Confidence: d.Confidence, Reason: reason, Clamped: clamped}, nil
}

// wish is a decision admit let through: the setting wanted (the policy's,
// completed from the current one, or the fallback preset), the kind of
// change and its reason.
type wish struct {
	setting env.Setting
	kind    ChangeKind
	reason  string
}

// admit decides whether queue q may change now, and to what: not while a
// change is pending, its target's telemetry is stale, the current or the
// wanted setting is malformed, the interval was not measured, another
// writer holds the queue, the last change is on probation, the confidence
// is too low (or the fallback preset instead), or within the minimum hold
// time. A nil wish with no rejection keeps the current setting.
func (g *Guard) admit(now int64, q *queueState, o *env.Observation, d *policy.Decision) (*wish, *Rejection) {
	w := &wish{setting: d.Setting, kind: KindTune, reason: d.Reason}
	rej := func(rule, why string) (*wish, *Rejection) {
		return nil, &Rejection{Key: o.Key, Rule: rule, Wanted: w.setting, Reason: why}
	}
	if q.pending {
		return nil, nil // a rollback or revert is already under way
	}
	if t := g.targets[o.Key.Target]; t != nil && t.frozen {
		return rej(RuleStale, "telemetry of the target is stale")
	}
	cur := q.current
	if !validSetting(cur) {
		return rej(RuleMalformed, "the switch reports no valid current setting")
	}
	w.setting = g.complete(w.setting, cur)
	if SameSetting(w.setting, cur, 1e-9) {
		return nil, nil
	}
	wanted := w.setting
	if !validSetting(wanted) || math.IsNaN(d.Confidence) {
		return rej(RuleMalformed, fmt.Sprintf("policy %q asked for kmin %d B, kmax %d B, pmax %g, headroom %d B, alpha %g",
			d.Reason, wanted.KminBytes, wanted.KmaxBytes, wanted.Pmax, wanted.HeadroomBytes, wanted.Alpha))
	}
	if lo, hi, _ := g.cfg.AlphaLimits(); !sameAlpha(wanted.Alpha, cur.Alpha) && (wanted.Alpha < lo || wanted.Alpha > hi) {
		// the alpha part is refused and alpha kept; the ECN part of the
		// decision stands (nothing else to do: a rejection)
		why := fmt.Sprintf("policy asked for alpha %s, outside the allowed %s..%s",
			env.FormatAlpha(wanted.Alpha), env.FormatAlpha(lo), env.FormatAlpha(hi))
		kept := w.setting
		kept.Alpha = cur.Alpha
		if SameSetting(kept, cur, 1e-9) {
			return rej(RuleBounds, why) // Wanted: what the policy asked
		}
		wanted.Alpha, w.setting = cur.Alpha, kept
		w.reason += "; alpha kept: " + why
	}
	if wanted.KminBytes >= wanted.KmaxBytes {
		return rej(RuleOrder, "policy asked for kmin "+units.FormatBytes(wanted.KminBytes)+" not below kmax "+units.FormatBytes(wanted.KmaxBytes))
	}
	if !o.Valid {
		return rej(RuleInvalid, "the interval could not be measured (first sample or counter reset)")
	}
	if now < q.yieldNs {
		return rej(RuleExternal, fmt.Sprintf("another writer changed this queue; yielding for %s more", time.Duration(q.yieldNs-now)))
	}
	if now < q.refusedUntilNs {
		return rej(RuleReadBack, fmt.Sprintf("the switch took none of the last %d settings set on this queue whole (read back otherwise); tuning again in %s",
			q.refusedN, time.Duration(q.refusedUntilNs-now)))
	}
	if q.mismatchN > 0 {
		return rej(RuleConfirm, "the switch reports another setting than the agent set (its telemetry may lag the Set): confirming before any change")
	}
	if q.onProbation && !g.supersedable(q) {
		why := fmt.Sprintf("the last change is watched for %d more intervals in play", g.cfg.RollbackWindow-q.probationWatch.n())
		if g.paused {
			why += " once the closed loop resumes (not judged while paused: its rollback could not be made)"
		}
		return rej(RuleProbation, why)
	}
	tightens, loosens := marksEarlier(wanted, cur), marksEarlier(cur, wanted)
	minConf, hold := g.cfg.MinConfidence, g.cfg.MinHold
	// settled: MinConfidenceTighten would apply but the queue has settled
	// (TightenUnsureFor)
	settled := tightens && g.cfg.MinConfidenceTighten >= 0 && g.cfg.TightenUnsureFor > 0 && q.settled
	if tightens && g.cfg.MinConfidenceTighten >= 0 && !settled {
		minConf = g.cfg.MinConfidenceTighten
	}
	if d.Confidence < minConf {
		if g.cfg.LowConfidence == LowConfidenceHold || wanted.SameECN(cur) {
			// the fallback preset stands in for an unsure ECN change, not
			// for an unsure headroom or alpha change alone
			why := fmt.Sprintf("confidence %.3g below %.3g", d.Confidence, minConf)
			if settled && g.cfg.MinConfidenceTighten < minConf {
				why += fmt.Sprintf(" (the queue has settled: busy more than %d intervals, tighten-unsure-for)", g.cfg.TightenUnsureFor)
			}
			return rej(RuleConfidence, why)
		}
		w.kind = KindFallback
		w.setting = g.cfg.Fallback.ScaledTo(q.rate)
		w.setting.HeadroomBytes = cur.HeadroomBytes
		w.setting.Alpha = cur.Alpha
		w.setting.Pmax = quantizePmax(w.setting.Pmax, g.cfg.PmaxStep)
		w.reason = fmt.Sprintf("confidence %.3g below %.3g: fallback preset", d.Confidence, minConf)
		if SameSetting(w.setting, cur, 1e-9) {
			return nil, nil
		}
	}
	if w.kind == KindTune && tightens && g.cfg.MinHoldTighten >= 0 {
		hold = g.cfg.MinHoldTighten
	}
	if q.virtualSet && now-q.virtualNs < int64(hold) {
		return rej(RuleHold, fmt.Sprintf("would have changed %s ago, minimum %s", time.Duration(now-q.virtualNs), hold))
	}
	if q.changed && now-q.lastChangeNs < int64(hold) {
		if q.lastNotApplied {
			return rej(RuleHold, fmt.Sprintf("the last change, %s ago, was not applied (its Set failed or was not sent): tried again %s after it", time.Duration(now-q.lastChangeNs), hold))
		}
		return rej(RuleHold, fmt.Sprintf("last change %s ago, minimum %s", time.Duration(now-q.lastChangeNs), hold))
	}
	need, what := g.dwellNeeded(cur, w.setting), "a change this large"
	if loosens && q.tightened && g.cfg.DwellLoosen > need {
		need, what = g.cfg.DwellLoosen, "a change that marks later"
	}
	if w.kind == KindTune && q.dwellN < need {
		return rej(RuleDwell, fmt.Sprintf("recommended %d of the %d intervals in a row %s needs", q.dwellN, need, what))
	}
	return w, nil
}

// RefusedTunes is how many tunes of a queue in a row must read back
// otherwise (the switch took part of each, or none) before the queue is
// left untuned for RollbackRetryAfter: a switch that drops part of every
// Set was sent a new setting and its undo every interval.
const RefusedTunes = 2

// MaxDwellFactor bounds how long a large move waits: with Dwell above 1, a
// tune needs its advice to persist Dwell intervals, or as many as the move
// takes at MaxStepRatio per interval, at most MaxDwellFactor·Dwell (beyond
// that, it moves that far and goes on from there).
const MaxDwellFactor = 2

func (g *Guard) maxDwell() int {
	if g.cfg.Dwell <= 1 {
		return 1 // dwell 1: every change at once
	}
	return MaxDwellFactor * g.cfg.Dwell
}

// dwellNeeded is how many intervals in a row the advice cur→want must
// persist: Dwell, or the number of MaxStepRatio steps its largest knob
// moves (Kmin, Kmax, Pmax, headroom), up to maxDwell. Waiting for large
// moves makes them one change instead of a staircase.
func (g *Guard) dwellNeeded(cur, want env.Setting) int {
	r := g.cfg.MaxStepRatio
	if r <= 1 {
		return g.cfg.Dwell
	}
	f := 1.0
	ratio := func(a, b float64) {
		if a > 0 && b > 0 {
			f = math.Max(f, math.Max(a/b, b/a))
		}
	}
	ratio(float64(cur.KminBytes), float64(want.KminBytes))
	ratio(float64(cur.KmaxBytes), float64(want.KmaxBytes))
	ratio(cur.Pmax, want.Pmax)
	ratio(float64(cur.HeadroomBytes), float64(want.HeadroomBytes))
	steps := int(math.Ceil(math.Log(f)/math.Log(r) - 1e-9))
	return min(max(g.cfg.Dwell, steps), g.maxDwell())
}

// dwell counts the intervals in a row the policy has recommended the same
// change for q (GuardConfig.Dwell). An idle interval breaks the row: advice
// from before a lull is not advice about the traffic after it (the demo's
// cyclic traffic, with lulls not breaking rows: loosenings completed as the
// next burst began and were undone within 10 s; 175 changes and 9 flaps in 5
// minutes, against 119 and 6). So does, for advice to undo the loop's own
// tightening, an interval in which the tight setting does not act (the
// queue stays under its Kmin without marks, pause or drops): a setting that
// does not act costs nothing, and advice from such an interval is about
// traffic other than the one it was set for (policy/builtin/validation, 6
// seeds: the same frontier ratios; changes per queue per 100 intervals past
// the first 10 on the 800G star 2.78 -> 1.94, elsewhere equal or lower).
func (g *Guard) dwell(q *queueState, o *env.Observation, d *policy.Decision) {
	want := g.complete(d.Setting, q.current)
	switch {
	case !validSetting(want) || SameSetting(want, q.current, 1e-9):
		q.dwellN = 0
	case q.tightened && g.cfg.DwellLoosen > 0 && marksEarlier(q.current, want) && !reaches(o, q.current.KminBytes):
		q.dwellN = 0
	case q.dwellN > 0 && SameSetting(want, q.dwellWant, 1e-9):
		q.dwellN++
	default:
		q.dwellWant, q.dwellN = want, 1
	}
}

// busy counts q's busy and idle intervals (TightenUnsureFor): past
// TightenUnsureFor busy ones the queue has settled, until an idle row as
// long starts its traffic over. Settling, and starting over, is kept in
// the guard's memory.
func (g *Guard) busy(q *queueState, o *env.Observation, d *policy.Decision) {
	n := g.cfg.TightenUnsureFor
	if !o.Valid || n == 0 {
		return
	}
	if d.Held == policy.HoldIdle {
		q.idleN++
		if q.idleN >= n && (q.busyN > 0 || q.settled) {
			if q.settled {
				g.touch(q)
			}
			q.busyN, q.settled = 0, false
		}
		return
	}
	q.idleN = 0
	q.busyN++
	if q.busyN > n && !q.settled {
		q.settled = true
		g.touch(q)
	}
}

// complete fills what a decision leaves alone (headroom and alpha 0) from
// the current setting and puts Pmax on the configured step.
func (g *Guard) complete(s, cur env.Setting) env.Setting {
	if s.HeadroomBytes == 0 {
		s.HeadroomBytes = cur.HeadroomBytes
	}
	if s.Alpha == 0 {
		s.Alpha = cur.Alpha // 0: the policy leaves alpha alone
	}
	if s.Pmax > 0 && s.Pmax <= 1 {
		s.Pmax = quantizePmax(s.Pmax, g.cfg.PmaxStep)
	}
	return s
}

// clamps lists the rules that adjusted a setting, each once, in order.
type clamps []string

func (c *clamps) note(rule string) {
	for _, x := range *c {
		if x == rule {
			return
		}
	}
	*c = append(*c, rule)
}

// clamp keeps v within [lo, hi], noting rule when it moves v.
func (c *clamps) clamp(v, lo, hi int64, rule string) int64 {
	if v < lo {
		c.note(rule)
		return lo
	}
	if v > hi {
		c.note(rule)
		return hi
	}
	return v
}

// shape turns the setting admitted for queue q into an allowed one: each
// knob within the max step of the current setting, then within the bounds
// at the port's rate (Pmax at the switch's resolution), Kmin < Kmax < XOFF,
// headroom at least the lossless minimum, and alpha within the alpha
// limits' max step of the current one and within their bounds (left alone
// when the current one is unknown). It returns the setting, the rules that
// adjusted it and what was done to alpha (notes, for the reason), or a
// rejection when no allowed setting differs from the current one.
func (g *Guard) shape(q *queueState, wanted env.Setting, ratio float64) (env.Setting, []string, string, *Rejection) {
	var notes []string
	rej := func(rule, why string) (env.Setting, []string, string, *Rejection) {
		if len(notes) > 0 {
			why += " (" + strings.Join(notes, "; ") + ")"
		}
		return env.Setting{}, nil, "", &Rejection{Key: q.key, Rule: rule, Wanted: wanted, Reason: why}
	}
	var c clamps
	out := g.limitStep(q.current, wanted, ratio, &c)
	out.Alpha = g.shapeAlpha(q.current.Alpha, wanted.Alpha, &c, &notes)
	b := g.cfg.BoundsFor(q.rate)
	out = g.clampToBounds(out, b, &c)
	// ECN before PFC: Kmax below the PG's XOFF when known, with the margin
	// a repair keeps (XOFF moves with buffer use): the guard's own change
	// never makes the next interval's repair.
	if x, ceil := q.xoffFloor(), q.kmaxCeiling(); x > 0 && out.KmaxBytes > ceil {
		out.KmaxBytes = ceil
		c.note(RuleOrder)
		if out.KmaxBytes < b.KmaxMin {
			return rej(RuleOrder, fmt.Sprintf("XOFF %d B leaves no kmax within bounds (kmax minimum %d B)", x, b.KmaxMin))
		}
	}
	if out.KminBytes >= out.KmaxBytes {
		// Kmin gives way (beyond its max step if need be): order first.
		out.KminBytes = max(b.KminMin, out.KmaxBytes/2)
		c.note(RuleOrder)
		if out.KminBytes >= out.KmaxBytes {
			return rej(RuleOrder, "kmin minimum "+units.FormatBytes(b.KminMin)+" leaves no room below kmax "+units.FormatBytes(out.KmaxBytes))
		}
	}
	// Headroom raised no further than the buffer holds (HeadroomBufferShare).
	if cur := q.current.HeadroomBytes; out.HeadroomBytes > cur && cur > 0 {
		if ceil, why := g.headroomCeiling(q); ceil > 0 && out.HeadroomBytes > max(ceil, cur) {
			out.HeadroomBytes = max(ceil, cur)
			c.note(RuleHeadroom)
			notes = append(notes, "headroom "+units.FormatBytes(wanted.HeadroomBytes)+" clipped to "+units.FormatBytes(out.HeadroomBytes)+": "+why)
		}
	}
	// Headroom never below the computed lossless minimum (an estimated
	// one: never below the switch's own headroom either, if lower; on
	// probation, the headroom before the change watched counts as the
	// switch's own, so that a rollback restores it).
	own := q.current.HeadroomBytes
	if q.onProbation && q.probationFrom.HeadroomBytes > 0 && q.probationFrom.HeadroomBytes < own {
		own = q.probationFrom.HeadroomBytes
	}
	if f := env.HeadroomFloor(q.minHeadroom, q.floorEstimated, own); f > 0 && out.HeadroomBytes > 0 && out.HeadroomBytes < f {
		out.HeadroomBytes = f
		c.note(RuleHeadroom)
	}
	if SameSetting(out, q.current, 1e-9) {
		rule := RuleBounds
		if len(c) > 0 {
			rule = c[len(c)-1]
		}
		return rej(rule, "the allowed setting equals the current one")
	}
	return out, c, strings.Join(notes, "; "), nil
}

// headroomCeiling is the most headroom q's PG may be given (0: no bound
// known) and why: XOFF plus headroom within the switch's buffer, and the
// switch's lossless headroom in all within HeadroomBufferShare of it
// (counting this step's observations and the raises planned so far).
func (g *Guard) headroomCeiling(q *queueState) (int64, string) {
	t := g.targets[q.key.Target]
	if t == nil || t.buffer <= 0 {
		return 0, ""
	}
	ceil := int64(0)
	why := ""
	if q.xoff > 0 && q.xoff < t.buffer {
		ceil, why = t.buffer-q.xoff, "XOFF "+units.FormatBytes(q.xoff)+" plus headroom must fit the buffer "+units.FormatBytes(t.buffer)
	}
	share := int64(HeadroomBufferShare * float64(t.buffer))
	if room := share - (t.headroom - max(q.current.HeadroomBytes, 0)); ceil == 0 || room < ceil {
		ceil = max(room, 1)
		why = fmt.Sprintf("the switch's lossless headroom in all (%s with this PG's) stays within %g of its buffer %s",
			units.FormatBytes(t.headroom), HeadroomBufferShare, units.FormatBytes(t.buffer))
	}
	return ceil, why
}

// shapeAlpha is the alpha shape allows from cur towards want, within the
// guardrails' AlphaLimits: at most a factor of the max step away from cur
// (RuleStep) and not beyond the bounds unless cur already is (RuleBounds);
// cur when cur is unknown (0) or want is 0. notes says what was clipped
// and why.
func (g *Guard) shapeAlpha(cur, want float64, c *clamps, notes *[]string) float64 {
	if sameAlpha(cur, want) || want <= 0 {
		return cur
	}
	if cur <= 0 {
		*notes = append(*notes, "alpha left alone: the switch reports none")
		return cur
	}
	minA, maxA, maxStep := g.cfg.AlphaLimits()
	out := want
	if hi, lo := cur*maxStep, cur/maxStep; out > hi || out < lo {
		out = math.Min(math.Max(out, lo), hi)
		c.note(RuleStep)
		*notes = append(*notes, fmt.Sprintf("alpha %s→%s clipped to %s: it moves at most by a factor of %g per change",
			env.FormatAlpha(cur), env.FormatAlpha(want), env.FormatAlpha(out), maxStep))
	}
	b := out
	if out > maxA && out > cur {
		b = math.Max(maxA, cur)
	} else if out < minA && out < cur {
		b = math.Min(minA, cur)
	}
	if b != out {
		c.note(RuleBounds)
		*notes = append(*notes, fmt.Sprintf("alpha %s clipped to %s: allowed %s..%s",
			env.FormatAlpha(out), env.FormatAlpha(b), env.FormatAlpha(minA), env.FormatAlpha(maxA)))
		out = b
	}
	return out
}

// limitStep moves each knob of wanted at most a factor r (MaxStepRatio, or
// its power Dwell for a tune) away from its value in cur (a byte knob that
// is not yet set moves freely).
func (g *Guard) limitStep(cur, wanted env.Setting, r float64, c *clamps) env.Setting {
	if math.IsInf(r, 1) {
		return wanted
	}
	step := func(old, v int64) int64 {
		if old <= 0 {
			return v
		}
		return c.clamp(v, int64(math.Ceil(float64(old)/r)), int64(math.Floor(float64(old)*r)), RuleStep)
	}
	out := wanted
	out.KminBytes = step(cur.KminBytes, out.KminBytes)
	out.KmaxBytes = step(cur.KmaxBytes, out.KmaxBytes)
	out.HeadroomBytes = step(cur.HeadroomBytes, out.HeadroomBytes)
	lo, hi := cur.Pmax/r, math.Min(1, cur.Pmax*r)
	if st := g.cfg.PmaxStep; st > 0 {
		// the limits on the switch's resolution, inside the step: the
		// rounding in clampToBounds then cannot carry Pmax past them
		// (0.29 clamped to 0.145 rounded to 0.14, a step of 2.07x)
		if l := math.Round(math.Ceil(lo/st-1e-9)*st*1e9) / 1e9; l <= cur.Pmax+1e-12 {
			lo = l
		}
		if h := math.Round(math.Floor(hi/st+1e-9)*st*1e9) / 1e9; h >= cur.Pmax-1e-12 && h >= st {
			hi = h
		}
		// a ratio finer than the grid near cur (1.5 at 1%, 1.2 at 5%)
		// still moves one step of the switch's resolution: on the grid
		// alone the limits closed on cur and Pmax never moved
		if lo >= cur.Pmax-1e-12 && cur.Pmax-st >= st-1e-12 {
			lo = math.Round((cur.Pmax-st)*1e9) / 1e9
		}
		if hi <= cur.Pmax+1e-12 && cur.Pmax+st <= 1+1e-12 {
			hi = math.Round((cur.Pmax+st)*1e9) / 1e9
		}
	}
	if out.Pmax < lo-1e-12 {
		out.Pmax = lo
		c.note(RuleStep)
	} else if out.Pmax > hi+1e-12 {
		out.Pmax = hi
		c.note(RuleStep)
	}
	return out
}

// clampToBounds keeps Kmin, Kmax and Pmax of s within b, Pmax rounded to
// the switch's resolution (PmaxStep) without leaving b.
func (g *Guard) clampToBounds(s env.Setting, b RateBounds, c *clamps) env.Setting {
	s.KminBytes = c.clamp(s.KminBytes, b.KminMin, b.KminMax, RuleBounds)
	s.KmaxBytes = c.clamp(s.KmaxBytes, b.KmaxMin, b.KmaxMax, RuleBounds)
	if s.Pmax < b.PmaxMin {
		s.Pmax = b.PmaxMin
		c.note(RuleBounds)
	} else if s.Pmax > b.PmaxMax {
		s.Pmax = b.PmaxMax
		c.note(RuleBounds)
	}
	if st := g.cfg.PmaxStep; st > 0 {
		// Round to the switch's resolution, staying within the bounds
		// (Validate makes sure they hold a multiple of it).
		p := quantizePmax(s.Pmax, st)
		for p > b.PmaxMax+1e-12 && p-st >= st-1e-12 {
			p -= st
		}
		if p < b.PmaxMin-1e-12 {
			p = pmaxStepIn(b.PmaxMin, b.PmaxMax, st)
		}
		if p > 0 && p <= 1 {
			s.Pmax = math.Round(p*1e9) / 1e9
		}
	}
	return s
}

// staleTelemetry takes a read showing that queue k runs what the agent set
// last (cur) while its telemetry says otherwise: the sample was old or
// lost an update, and no other writer changed the queue. The read is the
// queue's setting, distrusted telemetry is ignored until it agrees, a
// yield for another writer is lifted, and the agent's change, whose
// probation a false "another writer" ended, is judged again. It reports
// false, changing nothing, when cur is not the agent's own last setting.
func (g *Guard) staleTelemetry(k env.QueueKey, cur env.Setting) bool {
	q := g.queue(k)
	if !q.ownSetOK || !g.ReadBackOK(q.ownSet, cur) {
		return false
	}
	q.current, q.mismatchN, q.yieldNs = cur, 0, 0
	q.expect, q.expectSet, q.distrust = cur, true, true
	if !q.onProbation && SameSetting(q.probationTo, cur, g.cfg.ReadBackPmaxTol) && !SameSetting(q.probationFrom, cur, 1e-9) {
		q.onProbation, q.lastGood, q.probationWatch = true, q.probationFrom, watch{haveReward: true}
		g.touch(q)
	}
	return true
}

// Forget drops what the guard keeps of queue k (it is no longer reported),
// unless a guardrail still needs it: a change pending or on probation, a
// hold, another writer's hold or a rollback's bar not yet over. Its memory
// in the journal stays. It reports whether k was forgotten.
func (g *Guard) Forget(k env.QueueKey, nowNs int64) bool {
	q := g.queues[k]
	if q == nil {
		return true
	}
	if q.pending || q.onProbation || nowNs < q.yieldNs || nowNs < q.retryUntilNs || nowNs < q.refusedUntilNs ||
		(q.changed && nowNs-q.lastChangeNs < int64(g.cfg.MinHold)) {
		return false
	}
	delete(g.queues, k)
	delete(g.dirty, k)
	return true
}

// ForgetTarget drops what the guard keeps of a target this agent no
// longer serves (its switch went to another member of a fleet): the
// watchdog's clock, and every queue of it without a change in flight (one
// in flight is forgotten once settled, as queues are). Served again, the
// target starts afresh from the memory its owners kept.
func (g *Guard) ForgetTarget(target string) {
	delete(g.targets, target)
	for k, q := range g.queues {
		if k.Target == target && !q.pending {
			delete(g.queues, k)
			delete(g.dirty, k)
		}
	}
}

// Shadowed takes a change from Step that shadow mode (or a paused loop)
// will not make as the loop's virtual setting of its queue: later
// decisions are judged from it, its min-hold runs from now, and Would
// reports it, so that shadow follows the closed loop's rules (a change
// the same as the virtual setting is none).
func (g *Guard) Shadowed(c Change, nowNs int64) {
	q := g.queue(c.Key)
	q.pending = false
	base := q.current
	if q.virtualSet {
		base = q.virtual
	}
	if !SameSetting(c.New, base, 1e-9) {
		q.tightened = marksEarlier(c.New, base)
		q.virtual, q.virtualSet = c.New, true
		if c.Kind != KindRepair || c.FromPolicy { // as Result: a repair starts no hold
			q.virtualNs = nowNs
		}
	}
}

// Would is what the loop would run on queue k in shadow mode, when it
// differs from what the switch runs (Shadowed).
func (g *Guard) Would(k env.QueueKey) (env.Setting, bool) {
	q := g.queues[k]
	if q == nil || !q.virtualSet {
		return env.Setting{}, false
	}
	return q.virtual, true
}

// ClearShadow forgets every virtual setting (a paused loop resumes:
// decisions start again from what the switches run).
func (g *Guard) ClearShadow() {
	for _, q := range g.queues {
		q.virtualSet = false
	}
}

// Discard forgets a change from Step that will not be made: unlike Result
// with NotApplied it leaves no trace, so the same decision is judged the
// same way next time.
func (g *Guard) Discard(c Change) {
	if q := g.queues[c.Key]; q != nil {
		q.pending = false
	}
}

// fieldsFrom reports whether every knob of got equals that knob in a or b
// (a switch that applied part of a change shows such a mix).
func fieldsFrom(got, a, b env.Setting) bool {
	eqP := func(x, y float64) bool { return math.Abs(x-y) <= 0.005+1e-12 }
	return (got.KminBytes == a.KminBytes || got.KminBytes == b.KminBytes) &&
		(got.KmaxBytes == a.KmaxBytes || got.KmaxBytes == b.KmaxBytes) &&
		(eqP(got.Pmax, a.Pmax) || eqP(got.Pmax, b.Pmax)) &&
		(got.Alpha == 0 || sameAlpha(got.Alpha, a.Alpha) || sameAlpha(got.Alpha, b.Alpha))
}

// Outcome is what became of a change the guard allowed.
type Outcome int

const (
	Applied    Outcome = iota // set, and read back as set
	NotApplied                // not set (Set failed, dry run, shadow)
	Mismatch                  // set, but read back differently
)

// Result tells the guard what became of a change from Step. For a
// Mismatch it returns the rollback to the last known good setting, which
// the caller applies (and reports with Result in turn).
func (g *Guard) Result(c Change, out Outcome, got env.Setting, nowNs int64) (*Change, *Alarm) {
	q := g.queue(c.Key)
	defer g.touch(q)
	q.pending = false
	q.changed = true
	if c.Kind != KindRepair || c.FromPolicy {
		// A safety repair answers what the agent did not do (another
		// writer's setting, a buffer change): it starts no hold, or the
		// model's own change would wait min-hold behind every repair of
		// a setting it never chose. One that took the policy's setting
		// is the agent's choice, and does. So does one not applied (its
		// Set failed): the retry waits min-hold, not the next interval
		// (with a target's backoff, a switch failing every Set is not
		// sent one every interval).
		q.lastChangeNs, q.lastNotApplied = nowNs, out == NotApplied
	}
	switch out {
	case Applied:
		q.current = c.New
		q.expect, q.expectSet, q.mismatchN = c.New, true, 0
		q.ownSet, q.ownSetOK = c.New, true
		q.tightened = marksEarlier(c.New, c.Old)
		if c.Kind == KindTune || c.Kind == KindFallback {
			q.refusedN = 0
		}
		switch {
		case c.Kind == KindTune || c.Kind == KindFallback:
			q.startProbation(c.Old, c.New) // Old: as the switch reported it
		case c.Kind == KindRepair && c.FromPolicy && c.Least != nil && !SameSetting(*c.Least, c.New, 1e-9):
			// The repair alone is safe and good at once; the policy's part
			// beyond it is judged as a tune's change, and rolled back to
			// the repair alone.
			q.lastGood = *c.Least
			q.startProbation(*c.Least, c.New)
		default:
			q.onProbation = false
			q.lastGood = c.New
		}
		return nil, nil
	case Mismatch:
		if validSetting(got) {
			q.current = got
		}
		q.expectSet = false
		k := c.Key
		a := &Alarm{Target: c.Key.Target, Key: &k, Rule: RuleReadBack,
			Msg: "switch reports a different setting from the one set (set → reported: " + SettingDiff(c.New, got) + ")"}
		if !validSetting(got) {
			a.Msg = "the switch's read-back after the Set does not report the queue (" + c.New.Describe() + " set)"
		}
		if (c.Kind == KindTune || c.Kind == KindFallback) && (!validSetting(got) || fieldsFrom(got, c.Old, c.New)) {
			// The switch took part of the setting, or none: asked again,
			// it answers the same (a Set and its undo every interval).
			// The setting is not tried again for RollbackRetryAfter, as
			// one rolled back on probation (retryRefused); a queue whose
			// tunes keep reading back otherwise is not tuned for as long.
			q.retryBlocked, q.retryFrom, q.retryUntilNs = c.New, c.Old, nowNs+int64(g.cfg.RollbackRetryAfter)
			if q.refusedN++; q.refusedN >= RefusedTunes {
				q.refusedUntilNs = nowNs + int64(g.cfg.RollbackRetryAfter)
				a.Msg += fmt.Sprintf("; the switch has taken none of the last %d settings set on this queue whole: no tune for %s", q.refusedN, g.cfg.RollbackRetryAfter)
			}
		}
		// Back to where the change started: a tune's or fallback's Old
		// (what the switch ran, an operator's setting included), a
		// policy's repair's least repair; for the rest (a rollback, a
		// revert, a least repair) the last known good, as Old is what
		// they moved away from.
		back := q.lastGood
		switch {
		case c.Kind == KindTune || c.Kind == KindFallback:
			back = c.Old
		case c.Kind == KindRepair && c.FromPolicy && c.Least != nil:
			back = *c.Least
		}
		if c.Kind == KindReadBack || !validSetting(back) || SameSetting(back, got, g.cfg.ReadBackPmaxTol) {
			return nil, a // already there, or a rollback that failed: no loop
		}
		if validSetting(got) && !fieldsFrom(got, c.Old, c.New) {
			// Neither what was there nor what was set, nor a mix of the
			// two: another writer got in between. Yield, do not fight.
			a.Rule = RuleExternal
			a.Msg += fmt.Sprintf(": another writer; yielding for %s", g.cfg.ExternalHold)
			q.lastGood = got
			q.onProbation = false
			q.yieldNs = nowNs + int64(g.cfg.ExternalHold)
			return nil, a
		}
		q.pending = true
		q.onProbation = false
		from := got
		if !validSetting(got) {
			from = c.New // unknown: what was set is the best guess
		}
		why := "read-back mismatch: back to the setting the change started from"
		if c.Kind != KindTune && c.Kind != KindFallback {
			why = "read-back mismatch: back to last known good"
		}
		return &Change{Key: c.Key, Kind: KindReadBack, Old: from, New: back, Reason: why}, a
	}
	return nil, nil
}

// ReadBackMatches compares a wanted setting with one read back: bytes
// exactly, Pmax at whole-percent resolution, headroom and alpha only when
// both know them.
func ReadBackMatches(want, got env.Setting) bool {
	if want.HeadroomBytes > 0 && got.HeadroomBytes > 0 && want.HeadroomBytes != got.HeadroomBytes {
		return false
	}
	if want.Alpha > 0 && got.Alpha > 0 && !sameAlpha(want.Alpha, got.Alpha) {
		return false
	}
	return want.KminBytes == got.KminBytes && want.KmaxBytes == got.KmaxBytes &&
		math.Abs(quantizePmax(want.Pmax, env.PmaxStep)-quantizePmax(got.Pmax, env.PmaxStep)) < 1e-9
}

// marksEarlier reports whether ECN under a marks earlier than under b,
// with the same headroom and alpha: a lower Kmax, else a lower Kmin, else
// a higher Pmax.
func marksEarlier(a, b env.Setting) bool {
	switch {
	case a.HeadroomBytes != b.HeadroomBytes || !sameAlpha(a.Alpha, b.Alpha):
		return false
	case a.KmaxBytes != b.KmaxBytes:
		return a.KmaxBytes < b.KmaxBytes
	case a.KminBytes != b.KminBytes:
		return a.KminBytes < b.KminBytes
	}
	return a.Pmax > b.Pmax
}
