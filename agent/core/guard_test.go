package core

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

const sec = int64(time.Second)

var (
	kA  = env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	kB  = env.QueueKey{Target: "leaf0", Port: "Ethernet1", Queue: 3}
	kC  = env.QueueKey{Target: "leaf1", Port: "Ethernet0", Queue: 3}
	cur = env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 100_000}
)

func testGuardConfig() GuardConfig {
	c := DefaultGuardConfig(time.Second)
	c.MinHold = 5 * time.Second
	c.StaleFreeze = 5 * time.Second
	c.StaleRevert = 30 * time.Second
	return c
}

func newTestGuard(t *testing.T, mod func(*GuardConfig)) *Guard {
	t.Helper()
	c := testGuardConfig()
	if mod != nil {
		mod(&c)
	}
	g, err := NewGuard(c)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func ob(k env.QueueKey, s env.Setting) env.Observation {
	return env.Observation{Key: k, RateBps: 100e9, Current: s, Valid: true, Metrics: env.Metrics{IntervalNs: sec, Util: 0.5}}
}

func dc(k env.QueueKey, s env.Setting, conf float64) policy.Decision {
	return policy.Decision{Key: k, Setting: s, Action: -1, Confidence: conf, Reason: "test"}
}

func step(t *testing.T, g *Guard, now int64, obs []env.Observation, decs []policy.Decision) Plan {
	t.Helper()
	p, err := g.Step(StepInput{NowNs: now, Observations: obs, Decisions: decs})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGuardDecisionRules(t *testing.T) {
	type tc struct {
		name    string
		mod     func(*GuardConfig)
		obs     func(o *env.Observation)
		want    env.Setting
		conf    float64
		expect  env.Setting // when a change is expected
		rule    string      // when a rejection is expected
		clamped []string
		none    bool // neither change nor rejection
	}
	cases := []tc{
		{name: "within all rules", want: env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.1}, conf: 0.9,
			expect: env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.1, HeadroomBytes: 100_000}},
		{name: "same as current", want: cur, conf: 0.9, none: true},
		{name: "same as current, headroom unmanaged", want: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}, conf: 0.9, none: true},
		{name: "max step up", want: env.Setting{KminBytes: 2_000_000, KmaxBytes: 10_000_000, Pmax: 0.9}, conf: 0.9,
			expect:  env.Setting{KminBytes: 800_000, KmaxBytes: 3_200_000, Pmax: 0.4, HeadroomBytes: 100_000},
			clamped: []string{RuleStep}},
		{name: "max step down", want: env.Setting{KminBytes: 10_000, KmaxBytes: 100_000, Pmax: 0.01}, conf: 0.9,
			expect:  env.Setting{KminBytes: 200_000, KmaxBytes: 800_000, Pmax: 0.1, HeadroomBytes: 100_000},
			clamped: []string{RuleStep}},
		{name: "bounds", mod: func(c *GuardConfig) {
			c.MaxStepRatio = 100
			c.Bounds[0].KmaxMax = 2_000_000
			c.Bounds[0].PmaxMax = 0.3
		}, want: env.Setting{KminBytes: 400_000, KmaxBytes: 5_000_000, Pmax: 0.9}, conf: 0.9,
			expect: env.Setting{KminBytes: 400_000, KmaxBytes: 2_000_000, Pmax: 0.3, HeadroomBytes: 100_000}, clamped: []string{RuleBounds}},
		{name: "bounds scale with rate", mod: func(c *GuardConfig) { c.MaxStepRatio = 100 },
			obs: func(o *env.Observation) {
				o.RateBps = 25e9
				o.Current = env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2}
			},
			want: env.Setting{KminBytes: 100_000, KmaxBytes: 12_000_000, Pmax: 0.2}, conf: 0.9,
			expect: env.Setting{KminBytes: 100_000, KmaxBytes: 3_000_000, Pmax: 0.2}, clamped: []string{RuleBounds}},
		{name: "kmax clamped below xoff", obs: func(o *env.Observation) { o.XoffBytes = 2_000_000 },
			want: env.Setting{KminBytes: 400_000, KmaxBytes: 3_000_000, Pmax: 0.2}, conf: 0.9, // to 90% of XOFF, a repair's margin
			expect: env.Setting{KminBytes: 400_000, KmaxBytes: 1_800_000, Pmax: 0.2, HeadroomBytes: 100_000}, clamped: []string{RuleOrder}},
		{name: "clamped within 5% of the current setting", obs: func(o *env.Observation) { o.XoffBytes = 1_800_000 },
			want: env.Setting{KminBytes: 400_000, KmaxBytes: 3_000_000, Pmax: 0.2}, conf: 0.9, // 1.6 MB → 1.62 MB: no Set
			rule: RuleOrder},
		{name: "xoff below kmax minimum", obs: func(o *env.Observation) { o.XoffBytes = 10_000 },
			want: env.Setting{KminBytes: 400_000, KmaxBytes: 1_000_000, Pmax: 0.2}, conf: 0.9, rule: RuleOrder},
		{name: "kmin not below kmax", want: env.Setting{KminBytes: 1_000_000, KmaxBytes: 1_000_000, Pmax: 0.2}, conf: 0.9, rule: RuleOrder},
		{name: "kmin gives way to the xoff clamp", mod: func(c *GuardConfig) { c.MaxStepRatio = 10 },
			obs:  func(o *env.Observation) { o.XoffBytes = 2_000_000 },
			want: env.Setting{KminBytes: 3_000_000, KmaxBytes: 4_000_000, Pmax: 0.2}, conf: 0.9,
			expect: env.Setting{KminBytes: 900_000, KmaxBytes: 1_800_000, Pmax: 0.2, HeadroomBytes: 100_000}, clamped: []string{RuleOrder}},
		// Kmax 1.6 MB runs under XOFF 1.7 MB (no repair); advice to raise it
		// is clamped under XOFF to 1.53 MB, which would mark earlier: held.
		{name: "advice to mark later clamped into marking earlier", mod: func(c *GuardConfig) { c.MaxStepRatio = 10 },
			obs:  func(o *env.Observation) { o.XoffBytes = 1_700_000 },
			want: env.Setting{KminBytes: 3_000_000, KmaxBytes: 4_000_000, Pmax: 0.2}, conf: 0.9, rule: RuleOrder},
		{name: "headroom floor", obs: func(o *env.Observation) { o.MinHeadroomBytes = 90_000 },
			want: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 60_000}, conf: 0.9,
			expect: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 90_000}, clamped: []string{RuleHeadroom}},
		{name: "low confidence holds", want: env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.1}, conf: 0.2, rule: RuleConfidence},
		{name: "low confidence falls back to preset", mod: func(c *GuardConfig) {
			c.LowConfidence = LowConfidencePreset
			c.Fallback = env.Setting{KminBytes: 300_000, KmaxBytes: 1_500_000, Pmax: 0.1}
		}, want: env.Setting{KminBytes: 5_000, KmaxBytes: 200_000, Pmax: 0.01}, conf: 0.2,
			expect: env.Setting{KminBytes: 300_000, KmaxBytes: 1_500_000, Pmax: 0.1, HeadroomBytes: 100_000}},
		{name: "invalid observation", obs: func(o *env.Observation) { o.Valid = false },
			want: env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.1}, conf: 0.9, rule: RuleInvalid},
		{name: "NaN pmax", want: env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: nanF()}, conf: 0.9, rule: RuleMalformed},
		{name: "negative kmin", want: env.Setting{KminBytes: -1, KmaxBytes: 2_000_000, Pmax: 0.1}, conf: 0.9, rule: RuleMalformed},
		{name: "pmax above one", want: env.Setting{KminBytes: 400_000, KmaxBytes: 2_000_000, Pmax: 1.5}, conf: 0.9, rule: RuleMalformed},
		{name: "switch reports garbage", obs: func(o *env.Observation) { o.Current = env.Setting{Pmax: -3} },
			want: env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.1}, conf: 0.9, rule: RuleMalformed},
		{name: "already at the bound", mod: func(c *GuardConfig) { c.Bounds[0].KmaxMax = 1_600_000 },
			want: env.Setting{KminBytes: 400_000, KmaxBytes: 3_000_000, Pmax: 0.2}, conf: 0.9, rule: RuleBounds},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newTestGuard(t, c.mod)
			o := ob(kA, cur)
			if c.obs != nil {
				c.obs(&o)
			}
			p := step(t, g, 10*sec, []env.Observation{o}, []policy.Decision{dc(kA, c.want, c.conf)})
			switch {
			case c.none:
				if len(p.Changes)+len(p.Rejections) != 0 {
					t.Fatalf("want nothing, got %+v", p)
				}
			case c.rule != "":
				if len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != c.rule {
					t.Fatalf("want rejection %s, got %+v", c.rule, p)
				}
			default:
				if len(p.Rejections) != 0 || len(p.Changes) != 1 {
					t.Fatalf("want one change, got %+v", p)
				}
				ch := p.Changes[0]
				if ch.New != c.expect {
					t.Fatalf("new setting %+v, want %+v", ch.New, c.expect)
				}
				if ch.Old != o.Current {
					t.Fatalf("old setting %+v, want %+v", ch.Old, o.Current)
				}
				if strings.Join(ch.Clamped, ",") != strings.Join(c.clamped, ",") {
					t.Fatalf("clamped by %v, want %v", ch.Clamped, c.clamped)
				}
			}
		})
	}
}

func nanF() float64 { z := 0.0; return z / z }

func TestGuardMinHoldAndProbation(t *testing.T) {
	g := newTestGuard(t, nil)
	want := env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2}
	p := step(t, g, 10*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, want, 0.9)})
	if len(p.Changes) != 1 {
		t.Fatalf("%+v", p)
	}
	// While pending, further decisions are ignored.
	p2 := step(t, g, 10*sec+1, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, cur, 0.9)})
	if len(p2.Changes)+len(p2.Rejections) != 0 {
		t.Fatalf("pending queue: %+v", p2)
	}
	g.Result(p.Changes[0], Applied, p.Changes[0].New, 10*sec)
	applied := p.Changes[0].New
	next := env.Setting{KminBytes: 600_000, KmaxBytes: 2_400_000, Pmax: 0.2}
	marking := ob(kA, applied) // the change in play
	marking.Metrics.MarkFrac = 0.1
	// Within the rollback window: probation.
	p = step(t, g, 11*sec, []env.Observation{marking}, []policy.Decision{dc(kA, next, 0.9)})
	if len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleProbation {
		t.Fatalf("want probation, got %+v", p)
	}
	p = step(t, g, 12*sec, []env.Observation{marking}, []policy.Decision{dc(kA, next, 0.9)})
	p = step(t, g, 13*sec, []env.Observation{marking}, []policy.Decision{dc(kA, next, 0.9)})
	// Probation over after 3 intervals, but hold time (5 s) not yet.
	if len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleHold {
		t.Fatalf("want min-hold, got %+v", p)
	}
	if lg, _ := g.LastGood(kA); lg != applied {
		t.Fatalf("last good %+v, want %+v after a clean window", lg, applied)
	}
	p = step(t, g, 15*sec, []env.Observation{ob(kA, applied)}, []policy.Decision{dc(kA, next, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].New.KminBytes != 600_000 {
		t.Fatalf("want change after hold, got %+v", p)
	}
	// A failed Set also restarts the hold time.
	g.Result(p.Changes[0], NotApplied, env.Setting{}, 15*sec)
	p = step(t, g, 16*sec, []env.Observation{ob(kA, applied)}, []policy.Decision{dc(kA, next, 0.9)})
	if len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleHold {
		t.Fatalf("want min-hold after failed set, got %+v", p)
	}
}

func TestGuardBudget(t *testing.T) {
	g := newTestGuard(t, func(c *GuardConfig) { c.ChangeBudget = 2 })
	want := env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2}
	obs := []env.Observation{ob(kA, cur), ob(kB, cur), ob(kC, cur)}
	decs := []policy.Decision{dc(kA, want, 0.6), dc(kB, want, 0.95), dc(kC, want, 0.8)}
	p := step(t, g, 10*sec, obs, decs)
	if len(p.Changes) != 2 || p.Changes[0].Key != kB || p.Changes[1].Key != kC {
		t.Fatalf("want the two most confident (B, C), got %+v", p.Changes)
	}
	if len(p.Rejections) != 1 || p.Rejections[0].Key != kA || p.Rejections[0].Rule != RuleBudget {
		t.Fatalf("want A rejected for budget, got %+v", p.Rejections)
	}
}

func TestGuardMisalignedInput(t *testing.T) {
	g := newTestGuard(t, nil)
	if _, err := g.Step(StepInput{NowNs: 1, Observations: []env.Observation{ob(kA, cur)}, Decisions: []policy.Decision{dc(kB, cur, 1)}}); err == nil {
		t.Fatal("want error for a decision about another queue")
	}
	if _, err := g.Step(StepInput{NowNs: 1, Observations: []env.Observation{ob(kA, cur)}, Decisions: []policy.Decision{}}); err == nil {
		t.Fatal("want error for a missing decision")
	}
}

// applyTune makes one change to kA at t=10 s, after MinBaselineIntervals
// measured at base, and applies it.
func applyTune(t *testing.T, g *Guard, base env.Metrics) env.Setting {
	t.Helper()
	o := ob(kA, cur)
	o.Metrics = base
	for i := range MinBaselineIntervals {
		step(t, g, int64(10-MinBaselineIntervals+i)*sec, []env.Observation{o}, nil)
	}
	want := env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000}
	p := step(t, g, 10*sec, []env.Observation{o}, []policy.Decision{dc(kA, want, 0.9)})
	if len(p.Changes) != 1 {
		t.Fatalf("%+v", p)
	}
	g.Result(p.Changes[0], Applied, want, 10*sec)
	return want
}

func TestGuardRollbackTriggers(t *testing.T) {
	base := env.Metrics{IntervalNs: sec, Util: 0.5, PauseRxFrac: 0.02}
	cases := []struct {
		name  string
		after []env.Metrics
		rule  string // "" = no rollback
		at    int    // interval index at which it fires
	}{
		{name: "clean window", after: []env.Metrics{base, base, base}},
		// drops where the baseline had none, in every interval of the window:
		// rolled back at its end, however small and uneven
		{name: "drops appear", after: []env.Metrics{{IntervalNs: sec, DropFrac: 1e-4, PauseRxFrac: 0.02}, {IntervalNs: sec, DropFrac: 3e-4, PauseRxFrac: 0.02}, {IntervalNs: sec, DropFrac: 1e-5, PauseRxFrac: 0.02}}, rule: RuleDrops, at: 2},
		// one interval of drops in the window: what the noise does too
		{name: "drops in one interval", after: []env.Metrics{base, {IntervalNs: sec, DropFrac: 1e-4, PauseRxFrac: 0.02}, base}},
		// pause and reward are judged on the whole window's mean (3 intervals)
		{name: "pause worsens", after: []env.Metrics{{IntervalNs: sec, PauseRxFrac: 0.2}, {IntervalNs: sec, PauseRxFrac: 0.2}, {IntervalNs: sec, PauseRxFrac: 0.2}}, rule: RulePause, at: 2},
		{name: "pause worsens on average", after: []env.Metrics{{IntervalNs: sec, Util: 0.6, PauseRxFrac: 0.068}, {IntervalNs: sec, Util: 0.6, PauseRxFrac: 0.08}, {IntervalNs: sec, Util: 0.6, PauseRxFrac: 0.08}}, rule: RulePause, at: 2},
		// the same mean rise, as spread over the window as it is large: within the noise
		{name: "pause worsens within the noise", after: []env.Metrics{{IntervalNs: sec, Util: 0.6, PauseRxFrac: 0.06}, {IntervalNs: sec, Util: 0.6, PauseRxFrac: 0.1}, {IntervalNs: sec, Util: 0.6, PauseRxFrac: 0.1}}},
		{name: "one noisy interval is not a rollback", after: []env.Metrics{{IntervalNs: sec, Util: 0.3, PauseRxFrac: 0.02}, base, base}},
		{name: "pause within tolerance", after: []env.Metrics{{IntervalNs: sec, Util: 0.5, PauseRxFrac: 0.06}, {IntervalNs: sec, Util: 0.5, PauseRxFrac: 0.06}, {IntervalNs: sec, Util: 0.5, PauseRxFrac: 0.06}}},
		// the change marks later: judged on the reward's queueing terms
		{name: "reward worsens", after: []env.Metrics{{IntervalNs: sec, Util: 0.5, PauseRxFrac: 0.02, AvgQueueFrac: 0.3}, {IntervalNs: sec, Util: 0.5, PauseRxFrac: 0.02, AvgQueueFrac: 0.3}, {IntervalNs: sec, Util: 0.5, PauseRxFrac: 0.02, AvgQueueFrac: 0.3}}, rule: RuleReward, at: 2},
		{name: "throughput a change marking later cannot cost", after: []env.Metrics{{IntervalNs: sec, Util: 0.2, PauseRxFrac: 0.02}, {IntervalNs: sec, Util: 0.3, PauseRxFrac: 0.02}, {IntervalNs: sec, Util: 0.3, PauseRxFrac: 0.02}}},
		{name: "degradation after the window is not a rollback", after: []env.Metrics{base, base, base, {IntervalNs: sec, DropFrac: 0.5}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newTestGuard(t, func(gc *GuardConfig) {
				gc.Reward = func(m env.Metrics) float64 { return m.Util - m.PauseRxFrac - m.AvgQueueFrac }
			})
			applied := applyTune(t, g, base)
			fired := -1
			for i, m := range c.after {
				o := ob(kA, applied)
				o.Metrics = m
				p := step(t, g, 11*sec+int64(i)*sec, []env.Observation{o}, nil)
				if len(p.Changes) > 0 {
					if fired >= 0 {
						t.Fatalf("second rollback at %d", i)
					}
					fired = i
					ch := p.Changes[0]
					if ch.Kind != KindRollback || ch.New != cur || ch.Old != applied {
						t.Fatalf("rollback %+v, want %+v -> %+v", ch, applied, cur)
					}
					if len(p.Alarms) != 1 || p.Alarms[0].Rule != c.rule {
						t.Fatalf("alarms %+v, want rule %s", p.Alarms, c.rule)
					}
					g.Result(ch, Applied, ch.New, 11*sec+int64(i)*sec)
				}
			}
			if c.rule == "" && fired >= 0 {
				t.Fatalf("unexpected rollback at %d", fired)
			}
			if c.rule != "" && fired != c.at {
				t.Fatalf("rollback at interval %d, want %d", fired, c.at)
			}
			lg, _ := g.LastGood(kA)
			if c.rule != "" && lg != cur {
				t.Fatalf("last good after rollback %+v, want %+v", lg, cur)
			}
			if c.rule == "" && lg != applied {
				t.Fatalf("last good %+v, want %+v", lg, applied)
			}
		})
	}
}

func TestGuardInvalidIntervalsDoNotCount(t *testing.T) {
	g := newTestGuard(t, nil)
	applied := applyTune(t, g, env.Metrics{IntervalNs: sec})
	for i := 0; i < 5; i++ {
		o := ob(kA, applied)
		o.Valid = false
		o.Metrics = env.Metrics{Reset: true, DropFrac: 0.9}
		if p := step(t, g, 11*sec+int64(i)*sec, []env.Observation{o}, nil); len(p.Changes) != 0 {
			t.Fatalf("invalid interval triggered %+v", p.Changes)
		}
	}
	if lg, _ := g.LastGood(kA); lg != cur {
		t.Fatalf("probation ended on invalid intervals: last good %+v", lg)
	}
}

func TestGuardReadBack(t *testing.T) {
	g := newTestGuard(t, nil)
	want := env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000}
	p := step(t, g, 10*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, want, 0.9)})
	got := env.Setting{KminBytes: 500_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 100_000}
	if g.ReadBackOK(want, got) {
		t.Fatal("read-back accepted a different kmax")
	}
	if !g.ReadBackOK(want, env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.204}) {
		t.Fatal("read-back refused pmax within tolerance with headroom unknown")
	}
	rb, alarm := g.Result(p.Changes[0], Mismatch, got, 10*sec)
	if rb == nil || alarm == nil || alarm.Rule != RuleReadBack {
		t.Fatalf("want rollback and alarm, got %+v %+v", rb, alarm)
	}
	if rb.Kind != KindReadBack || rb.Old != got || rb.New != cur {
		t.Fatalf("rollback %+v", rb)
	}
	// The rollback itself mismatching does not loop.
	rb2, alarm2 := g.Result(*rb, Mismatch, got, 10*sec)
	if rb2 != nil || alarm2 == nil {
		t.Fatalf("rollback of a rollback: %+v %+v", rb2, alarm2)
	}
	// Nor does the policy asking for it again: the switch that took part
	// of it would take the same part (a Set and its undo every interval,
	// 51 in 5 s); it is refused for retry-after, then tried again.
	g.Result(*rb, Applied, cur, 10*sec)
	for _, at := range []int64{20 * sec, 30 * sec} {
		p = step(t, g, at, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, want, 0.9)})
		if len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleRetry {
			t.Fatalf("at %ds: changes %+v, rejections %+v", at/sec, p.Changes, p.Rejections)
		}
	}
	p = step(t, g, 10*sec+int64(g.Config().RollbackRetryAfter), []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, want, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].New != want {
		t.Fatalf("after retry-after: changes %+v, rejections %+v", p.Changes, p.Rejections)
	}
}

// A switch that takes part of every Set (the first path of each: the
// other queues' paths none) reads back otherwise whatever the setting
// (the same tune was sent every interval when it took none, since nothing
// was left to undo): after RefusedTunes such tunes in a
// row the queue is not tuned for retry-after, with the alarm and the
// rejection saying why; a tune that reads back whole ends the count.
func TestGuardQueueWhoseTunesReadBackOtherwise(t *testing.T) {
	g := newTestGuard(t, nil)
	now := 10 * sec
	var alarm *Alarm
	for i := 0; i < RefusedTunes; i++ {
		want := env.Setting{KminBytes: 500_000 - int64(i)*200_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000} // not the first pushed further
		p := step(t, g, now, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, want, 0.9)})
		if len(p.Changes) != 1 {
			t.Fatalf("tune %d: changes %+v, rejections %+v", i, p.Changes, p.Rejections)
		}
		got := env.Setting{KminBytes: want.KminBytes, KmaxBytes: cur.KmaxBytes, Pmax: cur.Pmax, HeadroomBytes: cur.HeadroomBytes} // kmin taken, the rest not
		if i == 1 {
			got = cur // nothing taken: no read-back to write either
		}
		var rb *Change
		rb, alarm = g.Result(p.Changes[0], Mismatch, got, now)
		if rb != nil {
			g.Result(*rb, Applied, cur, now)
		}
		now += 6 * sec // past min-hold
	}
	if alarm == nil || !strings.Contains(alarm.Msg, "the switch has taken none of the last 2 settings set on this queue whole: no tune for") {
		t.Fatalf("alarm %+v", alarm)
	}
	other := env.Setting{KminBytes: 300_000, KmaxBytes: 900_000, Pmax: 0.05, HeadroomBytes: 100_000}
	p := step(t, g, now, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, other, 0.9)})
	if len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleReadBack ||
		!strings.Contains(p.Rejections[0].Reason, "the switch took none of the last 2 settings set on this queue whole") {
		t.Fatalf("a third setting: changes %+v, rejections %+v", p.Changes, p.Rejections)
	}
	p = step(t, g, now+int64(g.Config().RollbackRetryAfter), []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, other, 0.9)})
	if len(p.Changes) != 1 {
		t.Fatalf("after retry-after: changes %+v, rejections %+v", p.Changes, p.Rejections)
	}
}

func TestGuardWatchdog(t *testing.T) {
	g := newTestGuard(t, nil)
	g.AddTarget("leaf0", 0)
	g.AddTarget("leaf1", 0)
	o := ob(kA, cur)
	o.RateBps = 25e9
	step(t, g, 1*sec, []env.Observation{o, ob(kC, cur)}, nil)
	want := env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2}
	// leaf1 keeps reporting; leaf0 goes silent after t=1 s.
	for s := int64(2); s <= 5; s++ {
		p := step(t, g, s*sec, []env.Observation{ob(kC, cur)}, nil)
		if len(p.Frozen) != 0 {
			t.Fatalf("frozen at %d s: %v", s, p.Frozen)
		}
	}
	p := step(t, g, 6*sec, []env.Observation{ob(kC, cur)}, nil)
	if len(p.Frozen) != 1 || p.Frozen[0] != "leaf0" || len(p.Alarms) != 1 || p.Alarms[0].Rule != RuleStale {
		t.Fatalf("want leaf0 frozen at 6 s, got %+v", p)
	}
	// A decision for a frozen target is rejected (observation is stale).
	p = step(t, g, 7*sec, []env.Observation{o}, []policy.Decision{dc(kA, want, 0.9)})
	if len(p.Rejections) != 0 || len(p.Frozen) != 0 {
		// the observation itself counts as fresh telemetry: unfrozen
		t.Fatalf("fresh observation should unfreeze: %+v", p)
	}
	g2 := newTestGuard(t, nil)
	g2.AddTarget("leaf0", 0)
	step(t, g2, 1*sec, []env.Observation{o}, nil)
	g2.Seen("leaf0", 1*sec)
	p = step(t, g2, 6*sec+1, nil, nil)
	if len(p.Frozen) != 1 {
		t.Fatalf("want frozen, got %+v", p)
	}
	p = step(t, g2, 30*sec, nil, nil)
	if len(p.Changes) != 0 {
		t.Fatalf("revert before stale-revert: %+v", p.Changes)
	}
	p = step(t, g2, 31*sec+1, nil, nil)
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindRevert {
		t.Fatalf("want revert, got %+v", p)
	}
	safe := env.Setting{KminBytes: 262_144, KmaxBytes: 524_288, Pmax: 0.05, HeadroomBytes: 100_000}
	if p.Changes[0].New != safe {
		t.Fatalf("revert to %+v, want safe preset at 25G %+v", p.Changes[0].New, safe)
	}
	g2.Result(p.Changes[0], Applied, safe, 31*sec)
	if p = step(t, g2, 40*sec, nil, nil); len(p.Changes) != 0 {
		t.Fatalf("revert repeated: %+v", p.Changes)
	}
	// Telemetry resumes: unfrozen, alarm says so.
	o2 := ob(kA, safe)
	o2.RateBps = 25e9
	p = step(t, g2, 41*sec, []env.Observation{o2}, nil)
	if len(p.Frozen) != 0 || len(p.Alarms) != 1 || !strings.Contains(p.Alarms[0].Msg, "resumed") {
		t.Fatalf("want resumed, got %+v", p)
	}
}

func TestGuardFrozenRejects(t *testing.T) {
	g := newTestGuard(t, nil)
	g.AddTarget("leaf0", 0)
	step(t, g, 1*sec, []env.Observation{ob(kA, cur)}, nil)
	// An observation that arrives late (computed from old data) is still
	// processed with the target marked at the time of the step; simulate a
	// frozen target by calling decide directly after the watchdog fired.
	step(t, g, 7*sec, nil, nil)
	o := ob(kA, cur)
	_, rej := g.decide(7*sec, &o, &policy.Decision{Key: kA, Setting: env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2}, Confidence: 1})
	if rej == nil || rej.Rule != RuleStale {
		t.Fatalf("want stale rejection, got %+v", rej)
	}
}

func TestGuardAdopt(t *testing.T) {
	g := newTestGuard(t, nil)
	to := env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000}
	g.Adopt(kA, cur, to, 5*sec)
	o := ob(kA, to)
	o.Metrics.DropFrac = 0.01
	// no interval measured before the adopted change: a queue that drops
	// in every interval of the window goes back to its last known good
	var p Plan
	for i := range g.cfg.RollbackWindow {
		p = step(t, g, int64(6+i)*sec, []env.Observation{o}, nil)
		if i < g.cfg.RollbackWindow-1 && len(p.Changes) > 0 {
			t.Fatalf("rolled back at interval %d of the window of %d: %+v", i+1, g.cfg.RollbackWindow, p)
		}
	}
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindRollback || p.Changes[0].New != cur {
		t.Fatalf("adopted change not on probation: %+v", p)
	}
	if a := p.Alarms; len(a) != 1 || a[0].Rule != RuleDrops || !strings.Contains(a[0].Msg, "no interval measured before the change") {
		t.Fatalf("alarms %+v, want drops with no baseline", a)
	}
}

func TestGuardConfigValidate(t *testing.T) {
	cases := map[string]func(*GuardConfig){
		"guardrails.bounds":               func(c *GuardConfig) { c.Bounds = nil },
		"guardrails.bounds[0].kmin":       func(c *GuardConfig) { c.Bounds[0].KminMin = 10_000_000 },
		"guardrails.bounds[0].pmax":       func(c *GuardConfig) { c.Bounds[0].PmaxMax = 2 },
		"guardrails.max-step-ratio":       func(c *GuardConfig) { c.MaxStepRatio = 0.5 },
		"guardrails.change-budget":        func(c *GuardConfig) { c.ChangeBudget = 0 },
		"guardrails.min-confidence":       func(c *GuardConfig) { c.MinConfidence = 2 },
		"guardrails.low-confidence":       func(c *GuardConfig) { c.LowConfidence = "maybe" },
		"guardrails.rollback.window":      func(c *GuardConfig) { c.RollbackWindow = 0 },
		"guardrails.stale-revert":         func(c *GuardConfig) { c.StaleRevert = c.StaleFreeze },
		"guardrails.fallback-preset":      func(c *GuardConfig) { c.LowConfidence = LowConfidencePreset },
		"guardrails.safe-preset":          func(c *GuardConfig) { c.Safe = env.Setting{} },
		"guardrails.rollback.drop-frac":   func(c *GuardConfig) { c.RollbackDropFrac = -1 },
		"guardrails.rollback.reward-drop": func(c *GuardConfig) { c.RollbackRewardDrop = -1 },
	}
	for field, mod := range cases {
		c := testGuardConfig()
		mod(&c)
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), field) {
			t.Errorf("%s: got %v", field, err)
		}
	}
	if err := testGuardConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestGuardPmaxQuantized(t *testing.T) {
	g := newTestGuard(t, nil)
	// 0.125 is stored as 13 %: the guard allows 0.13, and a switch that
	// reports 0.13 afterwards is not asked again.
	want := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.125}
	p := step(t, g, 10*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, want, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].New.Pmax != 0.13 {
		t.Fatalf("%+v", p)
	}
	g2 := newTestGuard(t, nil)
	c2 := cur
	c2.Pmax = 0.13
	if p := step(t, g2, 10*sec, []env.Observation{ob(kA, c2)}, []policy.Decision{dc(kA, want, 0.9)}); len(p.Changes)+len(p.Rejections) != 0 {
		t.Fatalf("asked again for the same stored value: %+v", p)
	}
	if quantizePmax(0.001, 0.01) != 0.01 || quantizePmax(0.994, 0.01) != 0.99 || quantizePmax(0.3, 0) != 0.3 {
		t.Fatal("quantizePmax")
	}
}

func TestGuardExternalWriter(t *testing.T) {
	g := newTestGuard(t, func(c *GuardConfig) { c.ExternalHold = 20 * time.Second })
	applied := applyTune(t, g, env.Metrics{IntervalNs: sec, Util: 0.5})
	other := env.Setting{KminBytes: 1_000_000, KmaxBytes: 3_000_000, Pmax: 0.1, HeadroomBytes: 100_000}
	// One stale observation (telemetry lag) is not an external writer.
	p := step(t, g, 11*sec, []env.Observation{ob(kA, cur)}, nil)
	if len(p.Alarms) != 0 {
		t.Fatalf("alarm on one lagging observation: %+v", p.Alarms)
	}
	p = step(t, g, 12*sec, []env.Observation{ob(kA, applied)}, nil)
	p = step(t, g, 13*sec, []env.Observation{ob(kA, other)}, nil)
	if len(p.Alarms) != 0 {
		t.Fatalf("alarm after one differing observation: %+v", p.Alarms)
	}
	p = step(t, g, 14*sec, []env.Observation{ob(kA, other)}, []policy.Decision{dc(kA, applied, 0.9)})
	if len(p.Alarms) != 1 || p.Alarms[0].Rule != RuleExternal {
		t.Fatalf("want external-writer alarm, got %+v", p.Alarms)
	}
	if len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleExternal {
		t.Fatalf("the guard fights the other writer: %+v", p)
	}
	if lg, _ := g.LastGood(kA); lg != other {
		t.Fatalf("last good %+v, want the other writer's %+v", lg, other)
	}
	// Still yielding at 33 s, free again at 34 s.
	p = step(t, g, 33*sec, []env.Observation{ob(kA, other)}, []policy.Decision{dc(kA, applied, 0.9)})
	if len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleExternal {
		t.Fatalf("yield ended early: %+v", p)
	}
	p = step(t, g, 34*sec, []env.Observation{ob(kA, other)}, []policy.Decision{dc(kA, applied, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].New != applied {
		t.Fatalf("want a change after the yield, got %+v", p)
	}
}

func TestGuardReadBackShowsAnotherWriter(t *testing.T) {
	g := newTestGuard(t, func(c *GuardConfig) { c.ExternalHold = 20 * time.Second })
	want := env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000}
	p := step(t, g, 10*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, want, 0.9)})
	other := env.Setting{KminBytes: 150_000, KmaxBytes: 3_000_000, Pmax: 0.07, HeadroomBytes: 100_000}
	rb, alarm := g.Result(p.Changes[0], Mismatch, other, 10*sec)
	if rb != nil || alarm == nil || alarm.Rule != RuleExternal {
		t.Fatalf("want yield to another writer, got %+v %+v", rb, alarm)
	}
	p = step(t, g, 16*sec, []env.Observation{ob(kA, other)}, []policy.Decision{dc(kA, want, 0.9)})
	if len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleExternal {
		t.Fatalf("not yielding: %+v", p)
	}
}

// A change's probation is judged against the mean of the intervals before
// it, not the last one: a lucky interval just before the change does not
// make an ordinary one after it a loss.
func TestGuardRollbackBaselineIsTheWindowMean(t *testing.T) {
	g := newTestGuard(t, func(gc *GuardConfig) { gc.Reward = func(m env.Metrics) float64 { return m.Util - m.PauseRxFrac } })
	o := ob(kA, cur)
	for i := range 2 { // rewards 0.5, 0.5, then 0.8 in the change's interval: mean 0.6
		o.Metrics = env.Metrics{IntervalNs: sec, Util: 0.5}
		step(t, g, int64(8+i)*sec, []env.Observation{o}, nil)
	}
	want := env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000}
	o.Metrics = env.Metrics{IntervalNs: sec, Util: 0.8}
	p := step(t, g, 10*sec, []env.Observation{o}, []policy.Decision{dc(kA, want, 0.9)})
	if len(p.Changes) != 1 {
		t.Fatalf("%+v", p)
	}
	g.Result(p.Changes[0], Applied, want, 10*sec)
	after := ob(kA, want)
	for i := range 3 { // reward 0.55: 0.25 below the last interval, 0.05 below the mean (limit 0.1)
		after.Metrics = env.Metrics{IntervalNs: sec, Util: 0.55, MarkFrac: 0.1}
		if p := step(t, g, int64(11+i)*sec, []env.Observation{after}, nil); len(p.Changes) != 0 {
			t.Fatalf("interval %d after the change: rollback %+v", i, p.Changes)
		}
	}
	if lg, _ := g.LastGood(kA); lg != want {
		t.Fatalf("the change did not become last known good: %+v", lg)
	}
}

// Pmax clamped to the max step and then rounded to the switch's 1% stays
// within the step (0.29 → 0.145 rounded to 0.14 was a step of 2.07x).
func TestPmaxStepHoldsAfterRounding(t *testing.T) {
	for cp := 1; cp <= 100; cp++ {
		curP := float64(cp) / 100
		for _, want := range []float64{0.01, 1} {
			g := newTestGuard(t, func(c *GuardConfig) { c.MaxStepRatio = 2; c.Bounds[0].PmaxMin = 0.01 })
			c0 := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: curP, HeadroomBytes: 100_000}
			w := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: want}
			step(t, g, 10*sec, []env.Observation{ob(kA, c0)}, nil)
			p := step(t, g, 20*sec, []env.Observation{ob(kA, c0)}, []policy.Decision{dc(kA, w, 0.9)})
			for _, ch := range p.Changes {
				if r := math.Max(ch.New.Pmax/curP, curP/ch.New.Pmax); r > 2+1e-9 {
					t.Errorf("pmax %.2f asked %.2f: planned %.4f, a step of %.3fx past max-step-ratio 2", curP, want, ch.New.Pmax, r)
				}
				if math.Abs(ch.New.Pmax*100-math.Round(ch.New.Pmax*100)) > 1e-9 {
					t.Errorf("pmax %.2f asked %.2f: planned %.6f, off the 1%% grid", curP, want, ch.New.Pmax)
				}
			}
		}
	}
}

// A policy asking for ever more headroom gets no more than the buffer
// holds: each PG's XOFF plus headroom within the buffer, and the switch's
// lossless headroom in all within HeadroomBufferShare of it (it doubled
// per change, to 64 MiB on a 32 MiB switch). The floor still wins.
func TestHeadroomCeilingFromTheBuffer(t *testing.T) {
	g := newTestGuard(t, nil)
	keys := []env.QueueKey{}
	for p := 0; p < 8; p++ {
		keys = append(keys, env.QueueKey{Target: "leaf0", Port: fmt.Sprintf("Ethernet%d", p), Queue: 3})
	}
	cs := map[env.QueueKey]env.Setting{}
	for _, k := range keys {
		cs[k] = cur
	}
	obs := func() []env.Observation {
		var out []env.Observation
		for _, k := range keys {
			o := ob(k, cs[k])
			o.BufferBytes, o.XoffBytes, o.MinHeadroomBytes, o.HeadroomReported = 32<<20, 8<<20, 56_016, true
			out = append(out, o)
		}
		return out
	}
	now := int64(0)
	clipped := false
	for i := 0; i < 12; i++ {
		now += 10 * sec
		var ds []policy.Decision
		for _, k := range keys {
			w := cs[k]
			w.HeadroomBytes = 64 << 20
			ds = append(ds, dc(k, w, 0.9))
		}
		p := step(t, g, now, obs(), ds)
		for _, ch := range p.Changes {
			g.Result(ch, Applied, ch.New, now)
			cs[ch.Key] = ch.New
			clipped = clipped || strings.Contains(ch.Reason, "stays within 0.5 of its buffer")
		}
		for j := 0; j < 3; j++ { // through probation
			now += 10 * sec
			step(t, g, now, obs(), nil)
		}
	}
	var total int64
	for _, k := range keys {
		if h := cs[k].HeadroomBytes; h+8<<20 > 32<<20 {
			t.Errorf("%s: headroom %d B + XOFF 8 MiB past the 32 MiB buffer", k, h)
		}
		total += cs[k].HeadroomBytes
	}
	if total > 16<<20 || total < 15<<20 {
		t.Errorf("lossless headroom in all %d B, want up to (and near) half the 32 MiB buffer", total)
	}
	if !clipped {
		t.Error("no change says why its headroom was clipped")
	}
	// a floor above the ceiling still wins (a lossless PG needs it)
	g2 := newTestGuard(t, nil)
	o := ob(kA, env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2, HeadroomBytes: 10_000})
	o.BufferBytes, o.XoffBytes, o.MinHeadroomBytes, o.HeadroomReported = 64_000, 40_000, 30_000, true
	p := step(t, g2, 10*sec, []env.Observation{o}, nil)
	if len(p.Changes) != 1 || p.Changes[0].New.HeadroomBytes != 30_000 {
		t.Fatalf("floor above the ceiling: %+v", p.Changes)
	}
}

// Telemetry that still shows the setting before the agent's own Set is
// waited out under its own rule (confirming), not counted as another
// writer: external-writer rejections after every batch of the agent's
// Sets paged people for a writer that did not exist.
func TestLaggingTelemetryIsNotAnotherWriter(t *testing.T) {
	g := newTestGuard(t, func(c *GuardConfig) { c.MinHold = 0 })
	want := env.Setting{KminBytes: 300_000, KmaxBytes: 1_200_000, Pmax: 0.2, HeadroomBytes: cur.HeadroomBytes}
	step(t, g, 1*sec, []env.Observation{ob(kA, cur)}, nil)
	p := step(t, g, 2*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, want, 0.9)})
	if len(p.Changes) != 1 {
		t.Fatalf("tune: %+v", p)
	}
	g.Result(p.Changes[0], Applied, want, 2*sec)
	other := env.Setting{KminBytes: 200_000, KmaxBytes: 800_000, Pmax: 0.2, HeadroomBytes: cur.HeadroomBytes}
	p = step(t, g, 3*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, other, 0.9)}) // still the old setting
	if len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleConfirm || len(p.Alarms) != 0 {
		t.Fatalf("lagging telemetry: %+v", p)
	}
}

// A max-step ratio finer than the switch's 1% grid near the current Pmax
// (1.5 at 1%, 1.2 at 4-5%) still moves Pmax one step of the grid: on the
// grid alone the limits closed on the current value and Pmax never moved.
func TestPmaxMovesAStepUnderAFineRatio(t *testing.T) {
	for _, tc := range []struct{ ratio, cur, want, got float64 }{{1.5, 0.01, 0.2, 0.02}, {1.2, 0.04, 0.2, 0.05}, {1.2, 0.05, 0.01, 0.04}} {
		g := newTestGuard(t, func(c *GuardConfig) { c.MaxStepRatio = tc.ratio; c.Bounds[0].PmaxMin = 0.01 })
		c0 := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: tc.cur, HeadroomBytes: 100_000}
		w := c0
		w.Pmax = tc.want
		step(t, g, 10*sec, []env.Observation{ob(kA, c0)}, nil)
		p := step(t, g, 20*sec, []env.Observation{ob(kA, c0)}, []policy.Decision{dc(kA, w, 0.9)})
		if len(p.Changes) != 1 || math.Abs(p.Changes[0].New.Pmax-tc.got) > 1e-9 {
			t.Errorf("ratio %g: pmax %g asked %g: %+v", tc.ratio, tc.cur, tc.want, p)
		}
	}
}

// A change whose Set failed paces its retry by min-hold, as a change made
// (a switch failing every Set is not sent one every interval), and the
// rejection says the last change was not applied, not that it was made;
// a restart remembers which it was.
func TestFailedSetHoldSaysNotApplied(t *testing.T) {
	g := newTestGuard(t, nil) // min-hold 5 s
	want := cur
	want.KmaxBytes = 2_000_000
	p := step(t, g, 10*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, want, 0.9)})
	if len(p.Changes) != 1 {
		t.Fatalf("no tune: %+v", p)
	}
	g.Result(p.Changes[0], NotApplied, env.Setting{}, 10*sec)
	held := func(g *Guard, now int64) string {
		t.Helper()
		p := step(t, g, now, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, want, 0.9)})
		if len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleHold {
			t.Fatalf("a retry 1s after a failed Set: %+v, want it held by min-hold", p)
		}
		return p.Rejections[0].Reason
	}
	const says = "the last change, 1s ago, was not applied (its Set failed or was not sent): tried again 5s after it"
	if r := held(g, 11*sec); r != says {
		t.Fatalf("reason %q, want %q", r, says)
	}
	g2 := newTestGuard(t, nil)
	g2.Restore(g.Memory(kA))
	if r := held(g2, 11*sec); r != says {
		t.Fatalf("after a restart: reason %q, want %q", r, says)
	}
	if p := step(t, g, 15*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, want, 0.9)}); len(p.Changes) != 1 {
		t.Fatalf("the retry after min-hold: %+v", p)
	}
}
