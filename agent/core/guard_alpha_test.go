package core

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// curA is cur on a switch that reports the PG's alpha (SONiC: 1/8).
var curA = env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 100_000, Alpha: 0.125}

func TestGuardAlpha(t *testing.T) {
	withAlpha := func(s env.Setting, a float64) env.Setting { s.Alpha = a; return s }
	ecn := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2} // the current ECN setting
	moved := env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2}
	// Non-default guardrails (guardrails.alpha in the file).
	upTo2 := func(c *GuardConfig) { c.AlphaMax = 2 }
	narrow := func(c *GuardConfig) { c.AlphaMin, c.AlphaMax, c.AlphaMaxStep = 1.0/16, 1, 2 }
	frozen := func(c *GuardConfig) { c.AlphaMaxStep = 1 }
	zero := func(c *GuardConfig) { c.AlphaMin, c.AlphaMax, c.AlphaMaxStep = 0, 0, 0 } // 0: the defaults
	cases := []struct {
		name    string
		mod     func(*GuardConfig)
		current env.Setting
		want    env.Setting
		expect  *env.Setting // a change to this
		clamped []string
		rule    string // a rejection by this rule
		why     string // in the change's or rejection's reason
	}{
		{name: "within the limits", current: curA, want: withAlpha(ecn, 0.25),
			expect: ptr(withAlpha(curA, 0.25))},
		{name: "policy leaves alpha alone", current: curA, want: moved,
			expect: ptr(env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000, Alpha: 0.125})},
		{name: "step up clipped to x4", current: curA, want: withAlpha(ecn, 2),
			expect: ptr(withAlpha(curA, 0.5)), clamped: []string{RuleStep}, why: "alpha 1/8→2 clipped to 1/2: it moves at most by a factor of 4 per change"},
		{name: "step down clipped to /4", current: curA, want: withAlpha(ecn, 1.0/64),
			expect: ptr(withAlpha(curA, 1.0/32)), clamped: []string{RuleStep}, why: "factor of 4"},
		{name: "above the bounds", current: curA, want: withAlpha(ecn, 16), rule: RuleBounds, why: "alpha 16, outside the allowed 1/64..8"},
		{name: "below the bounds: the ECN change stands, alpha kept", current: curA, want: withAlpha(moved, 1.0/128),
			expect: ptr(withAlpha(env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000}, 0.125)), why: "alpha kept: policy asked for alpha 1/128"},
		{name: "NaN", current: curA, want: withAlpha(moved, nanF()), rule: RuleMalformed, why: "alpha NaN"},
		{name: "negative", current: curA, want: withAlpha(moved, -1), rule: RuleMalformed},
		{name: "current outside the bounds, kept", current: withAlpha(curA, 1.0/256), want: withAlpha(moved, 1.0/256),
			expect: ptr(env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000, Alpha: 1.0 / 256})},
		{name: "current outside the bounds, moves in", current: withAlpha(curA, 1.0/256), want: withAlpha(ecn, 1.0/16),
			expect: ptr(withAlpha(curA, 1.0/64)), clamped: []string{RuleStep}},
		{name: "unknown alpha left alone", current: cur, want: withAlpha(moved, 0.5),
			expect: ptr(env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000}), why: "alpha left alone"},
		{name: "unknown alpha, nothing else to do", current: cur, want: withAlpha(ecn, 0.5), rule: RuleBounds, why: "alpha left alone"},

		{name: "max 2: alpha 4 above the bounds", mod: upTo2, current: withAlpha(curA, 1), want: withAlpha(ecn, 4),
			rule: RuleBounds, why: "policy asked for alpha 4, outside the allowed 1/64..2"},
		{name: "max 2: alpha 2 allowed", mod: upTo2, current: withAlpha(curA, 1), want: withAlpha(ecn, 2),
			expect: ptr(withAlpha(curA, 2))},
		{name: "max 2: alpha 8 refused, not clipped; the ECN change stands", mod: upTo2, current: curA, want: withAlpha(moved, 8),
			expect: ptr(withAlpha(env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000}, 0.125)), why: "alpha kept: policy asked for alpha 8, outside the allowed 1/64..2"},
		{name: "min 1/16: alpha 1/32 below the bounds", mod: narrow, current: curA, want: withAlpha(ecn, 1.0/32),
			rule: RuleBounds, why: "alpha 1/32, outside the allowed 1/16..1"},
		{name: "step 2: clipped to x2", mod: narrow, current: curA, want: withAlpha(ecn, 1),
			expect: ptr(withAlpha(curA, 0.25)), clamped: []string{RuleStep}, why: "alpha 1/8→1 clipped to 1/4: it moves at most by a factor of 2 per change"},
		{name: "step 2: clipped to /2", mod: narrow, current: withAlpha(curA, 1), want: withAlpha(ecn, 1.0/16),
			expect: ptr(withAlpha(curA, 0.5)), clamped: []string{RuleStep}, why: "factor of 2"},
		{name: "current outside narrow bounds, kept", mod: narrow, current: withAlpha(curA, 4), want: withAlpha(moved, 4),
			expect: ptr(env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000, Alpha: 4})},
		{name: "step 1: alpha frozen, ECN still moves", mod: frozen, current: curA, want: withAlpha(moved, 0.25),
			expect: ptr(env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000, Alpha: 0.125}), clamped: []string{RuleStep}, why: "factor of 1"},
		{name: "step 1: alpha alone, nothing to do", mod: frozen, current: curA, want: withAlpha(ecn, 0.25), rule: RuleStep, why: "equals the current one"},
		{name: "zero limits are the defaults", mod: zero, current: curA, want: withAlpha(ecn, 16), rule: RuleBounds, why: "outside the allowed 1/64..8"},
		{name: "zero step is the default", mod: zero, current: curA, want: withAlpha(ecn, 2),
			expect: ptr(withAlpha(curA, 0.5)), clamped: []string{RuleStep}, why: "factor of 4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newTestGuard(t, c.mod)
			p := step(t, g, 10*sec, []env.Observation{ob(kA, c.current)}, []policy.Decision{dc(kA, c.want, 0.9)})
			if c.rule != "" {
				if len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != c.rule || !strings.Contains(p.Rejections[0].Reason, c.why) {
					t.Fatalf("want rejection %s with %q, got %+v", c.rule, c.why, p)
				}
				return
			}
			if len(p.Rejections) != 0 || len(p.Changes) != 1 {
				t.Fatalf("want one change, got %+v", p)
			}
			ch := p.Changes[0]
			if ch.New != *c.expect {
				t.Fatalf("new setting %+v, want %+v", ch.New, *c.expect)
			}
			if strings.Join(ch.Clamped, ",") != strings.Join(c.clamped, ",") || !strings.Contains(ch.Reason, c.why) {
				t.Fatalf("clamped by %v (%q), want %v (%q)", ch.Clamped, ch.Reason, c.clamped, c.why)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// The alpha limits are checked where they are in force: 0 is the default,
// anything else must be a usable range and a power-of-two step.
func TestGuardConfigAlphaLimits(t *testing.T) {
	bad := []struct {
		mod  func(*GuardConfig)
		want string
	}{
		{func(c *GuardConfig) { c.AlphaMin = -1 }, "guardrails.alpha.min: -1 must be a finite number > 0"},
		{func(c *GuardConfig) { c.AlphaMin = nanF() }, "guardrails.alpha.min: NaN"},
		{func(c *GuardConfig) { c.AlphaMin = math.Inf(1) }, "guardrails.alpha.min: +Inf"},
		{func(c *GuardConfig) { c.AlphaMax = 1.0 / 128 }, "guardrails.alpha.max: 1/128 is below alpha.min 1/64"},
		{func(c *GuardConfig) { c.AlphaMin, c.AlphaMax = 1, 0.5 }, "guardrails.alpha.max: 1/2 is below alpha.min 1"},
		{func(c *GuardConfig) { c.AlphaMax = -2 }, "guardrails.alpha.max: -2 is below alpha.min 1/64"},
		{func(c *GuardConfig) { c.AlphaMax = math.Inf(1) }, "guardrails.alpha.max: +Inf must be a finite number"},
		{func(c *GuardConfig) { c.AlphaMaxStep = 0.5 }, "guardrails.alpha.max-step: 0.5 must be a finite number >= 1"},
		{func(c *GuardConfig) { c.AlphaMaxStep = -4 }, "guardrails.alpha.max-step: -4"},
		{func(c *GuardConfig) { c.AlphaMaxStep = 3 }, "guardrails.alpha.max-step: 3 must be a power of two"},
	}
	for _, b := range bad {
		c := testGuardConfig()
		b.mod(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), b.want) {
			t.Errorf("got %v, want %q...", err, b.want)
		}
		if _, err := NewGuard(c); err == nil {
			t.Errorf("NewGuard accepted %q", b.want)
		}
	}
	for _, mod := range []func(*GuardConfig){
		func(c *GuardConfig) { c.AlphaMin, c.AlphaMax, c.AlphaMaxStep = 0, 0, 0 },
		func(c *GuardConfig) { c.AlphaMin, c.AlphaMax, c.AlphaMaxStep = 0.5, 0.5, 1 },
		func(c *GuardConfig) { c.AlphaMin, c.AlphaMax, c.AlphaMaxStep = 0.1, 3, 8 },
	} {
		c := testGuardConfig()
		mod(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	var zero GuardConfig
	if lo, hi, st := zero.AlphaLimits(); lo != DefaultAlphaMin || hi != DefaultAlphaMax || st != DefaultAlphaMaxStep {
		t.Errorf("zero limits are %g..%g step %g, want the defaults", lo, hi, st)
	}
}

// Read-back compares alpha when both sides know it; a rollback and the
// stale-telemetry revert restore or keep it.
func TestGuardAlphaReadBackAndRollback(t *testing.T) {
	g := newTestGuard(t, func(gc *GuardConfig) { gc.Reward = func(m env.Metrics) float64 { return m.Util - m.PauseRxFrac } })
	want := curA
	want.Alpha = 0.5
	if g.ReadBackOK(want, curA) {
		t.Fatal("read-back accepted alpha 1/8 for 1/2")
	}
	unknown := want
	unknown.Alpha = 0
	if !g.ReadBackOK(want, unknown) || !ReadBackMatches(want, unknown) || ReadBackMatches(want, curA) {
		t.Fatal("alpha compared when the switch does not report it, or not compared when it does")
	}

	base := env.Metrics{IntervalNs: sec, Util: 0.5, PauseRxFrac: 0.02}
	o := ob(kA, curA)
	o.Metrics = base
	for i := range int64(MinBaselineIntervals) {
		step(t, g, (10-MinBaselineIntervals+i)*sec, []env.Observation{o}, nil)
	}
	p := step(t, g, 10*sec, []env.Observation{o}, []policy.Decision{dc(kA, want, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].New != want {
		t.Fatalf("%+v", p)
	}
	g.Result(p.Changes[0], Applied, want, 10*sec)
	o = ob(kA, want)
	o.Metrics = env.Metrics{IntervalNs: sec, PauseRxFrac: 0.3}
	for i := range int64(3) { // pause is judged on the probation window's mean
		p = step(t, g, (11+i)*sec, []env.Observation{o}, nil)
	}
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindRollback || p.Changes[0].New != curA {
		t.Fatalf("rollback %+v, want back to %+v", p.Changes, curA)
	}
	g.Result(p.Changes[0], Applied, curA, 13*sec)

	// Stale telemetry: the safe preset keeps the PG's alpha.
	p = step(t, g, 13*sec+int64(time.Minute), nil, nil)
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindRevert || p.Changes[0].New.Alpha != curA.Alpha {
		t.Fatalf("revert %+v", p.Changes)
	}
}

// The read-back and another-writer alarms name every knob that differs,
// alpha included when both sides know it.
func TestGuardAlarmsNameAlpha(t *testing.T) {
	want := curA
	want.Alpha = 0.5

	// Read-back after a Set: the switch kept alpha 1/8.
	g := newTestGuard(t, nil)
	p := step(t, g, 10*sec, []env.Observation{ob(kA, curA)}, []policy.Decision{dc(kA, want, 0.9)})
	if len(p.Changes) != 1 {
		t.Fatalf("%+v", p)
	}
	_, a := g.Result(p.Changes[0], Mismatch, curA, 10*sec)
	if a == nil || a.Rule != RuleReadBack || !strings.Contains(a.Msg, "alpha 1/2→1/8") {
		t.Fatalf("read-back alarm %+v, want it to name alpha 1/2→1/8", a)
	}
	// A switch that does not report alpha: only what differs is named.
	g = newTestGuard(t, nil)
	p = step(t, g, 10*sec, []env.Observation{ob(kA, curA)}, []policy.Decision{dc(kA, want, 0.9)})
	noAlpha := curA
	noAlpha.Alpha, noAlpha.KmaxBytes = 0, 1_700_000
	_, a = g.Result(p.Changes[0], Mismatch, noAlpha, 10*sec)
	if a == nil || strings.Contains(a.Msg, "alpha") || !strings.Contains(a.Msg, "kmax 1.6MB→1.7MB") {
		t.Fatalf("read-back alarm %+v, want kmax named and alpha not", a)
	}

	// Another writer sets alpha 1/4 after the agent's 1/2.
	g = newTestGuard(t, nil)
	p = step(t, g, 10*sec, []env.Observation{ob(kA, curA)}, []policy.Decision{dc(kA, want, 0.9)})
	g.Result(p.Changes[0], Applied, want, 10*sec)
	other := want
	other.Alpha = 0.25
	step(t, g, 11*sec, []env.Observation{ob(kA, other)}, nil)
	p = step(t, g, 12*sec, []env.Observation{ob(kA, other)}, nil)
	if len(p.Alarms) != 1 || p.Alarms[0].Rule != RuleExternal || !strings.Contains(p.Alarms[0].Msg, "alpha 1/2→1/4") {
		t.Fatalf("alarms %+v, want another writer naming alpha 1/2→1/4", p.Alarms)
	}
}

// An unsure decision that holds the ECN and moves only alpha is held, not
// replaced by the fallback preset (which stands in for an unsure ECN
// change); a +alpha= rule on a held queue is sure of its alpha.
func TestGuardAlphaOnHold(t *testing.T) {
	preset := func(c *GuardConfig) {
		c.LowConfidence = LowConfidencePreset
		c.Fallback = env.Setting{KminBytes: 200_000, KmaxBytes: 800_000, Pmax: 0.1}
	}
	o := ob(kA, curA)
	onlyAlpha := curA
	onlyAlpha.Alpha = 0.25
	p := step(t, newTestGuard(t, preset), 10*sec, []env.Observation{o}, []policy.Decision{dc(kA, onlyAlpha, 0.1)})
	if len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleConfidence {
		t.Fatalf("an unsure alpha-only decision: %+v, want a confidence rejection", p)
	}
	rule, err := policy.NewAlpha(holdPolicy{}, "hold+alpha=1/4", "1/4")
	if err != nil {
		t.Fatal(err)
	}
	p = step(t, newTestGuard(t, preset), 10*sec, []env.Observation{o}, rule.Decide([]env.Observation{o}))
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindTune || p.Changes[0].New != onlyAlpha {
		t.Fatalf("a held queue under +alpha=1/4: %+v, want alpha 1/4 and the ECN kept", p)
	}
}

// holdPolicy holds every queue (confidence 0), as a policy that cannot act.
type holdPolicy struct{}

func (holdPolicy) Name() string { return "hold" }
func (holdPolicy) Decide(obs []env.Observation) []policy.Decision {
	out := make([]policy.Decision, len(obs))
	for i, o := range obs {
		out[i] = policy.Decision{Key: o.Key, Setting: o.Current, Action: env.ActionHold, Reason: "hold: test"}
	}
	return out
}
