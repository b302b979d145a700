package core

import (
	"math"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// probe runs a change of kA from cur to to after the baseline intervals
// before (one a second from t=1 s), applies it, then feeds the intervals
// after; it returns the plans of the intervals after.
func probe(t *testing.T, g *Guard, to env.Setting, before, after []env.Metrics) []Plan {
	t.Helper()
	now := int64(0)
	for _, m := range before {
		now += sec
		o := ob(kA, cur)
		o.Metrics = m
		step(t, g, now, []env.Observation{o}, nil)
	}
	now += sec
	p := step(t, g, now, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, to, 0.9)})
	if len(p.Changes) != 1 {
		t.Fatalf("no change: %+v", p)
	}
	g.Result(p.Changes[0], Applied, p.Changes[0].New, now)
	applied := p.Changes[0].New
	var out []Plan
	for _, m := range after {
		now += sec
		o := ob(kA, applied)
		o.Metrics = m
		p := step(t, g, now, []env.Observation{o}, nil)
		for _, c := range p.Changes {
			g.Result(c, Applied, c.New, now)
			applied = c.New
		}
		out = append(out, p)
	}
	return out
}

func rewardGuard(t *testing.T) *Guard {
	return newTestGuard(t, func(gc *GuardConfig) {
		gc.Reward = func(m env.Metrics) float64 { return m.Util }
		gc.MaxStepRatio = 2
	})
}

func rolledBack(ps []Plan) *Change {
	for _, p := range ps {
		for i := range p.Changes {
			if p.Changes[i].Kind == KindRollback {
				return &p.Changes[i]
			}
		}
	}
	return nil
}

func util(u float64, peakBytes float64) env.Metrics {
	return env.Metrics{IntervalNs: sec, Util: u, MaxDelayNs: peakBytes * 8 / 100e9 * 1e9}
}

// rewardFallCase is a change of kA whose Kmin (300 KB) a queue peaking at
// 500 KB reaches and one peaking at 100 KB does not, and four intervals
// before it at a reward of about 0.8 with the queue below both Kmin.
func rewardFallCase() (env.Setting, []env.Metrics) {
	to := cur
	to.KminBytes, to.KmaxBytes, to.Pmax = 300_000, 900_000, 0.1
	return to, []env.Metrics{util(0.8, 1e5), util(0.82, 1e5), util(0.78, 1e5), util(0.8, 1e5)}
}

// A reward that falls while the queue stays below both settings' Kmin
// (no marks, no pause) is the traffic's, not the setting's: no rollback.
// The same fall with the queue in the marking band rolls back, to the
// setting before the change exactly (past max-step), with its evidence.
func TestRollbackNeedsTheChangeInPlay(t *testing.T) {
	to, before := rewardFallCase()
	idle := []env.Metrics{util(0.3, 1e5), util(0.32, 1e5), util(0.28, 1e5)}
	if c := rolledBack(probe(t, rewardGuard(t), to, before, idle)); c != nil {
		t.Fatalf("rolled back a change that could not act: %+v", c)
	}
	busy := []env.Metrics{util(0.3, 5e5), util(0.32, 5e5), util(0.28, 5e5)}
	c := rolledBack(probe(t, rewardGuard(t), to, before, busy))
	if c == nil || c.New != cur {
		t.Fatalf("rollback %+v, want back to %+v at once", c, cur)
	}
	for _, s := range []string{"mean reward (throughput terms) 0.3", "over 3 intervals", "over the 5 before the change", "Welch's t 7.2 at 4.3 degrees of freedom", "in play in 3 of 3 intervals"} {
		if !strings.Contains(c.Reason, s) {
			t.Errorf("reason %q lacks %q", c.Reason, s)
		}
	}
}

// The window is the intervals in which the change was in play: one in
// play in one interval of three is not judged on the other two (the
// traffic's, not the setting's: no rollback, and not made good either);
// its fall in the next two intervals in play rolls it back, on those
// three. Nor is a fall judged against fewer than MinBaselineIntervals
// before the change (the reward's noise is not known from one or two).
func TestRollbackNeedsMostOfTheWindowAndABaseline(t *testing.T) {
	to, before := rewardFallCase()
	once := []env.Metrics{util(0.3, 5e5), util(0.32, 1e5), util(0.28, 1e5)}
	g := rewardGuard(t)
	if c := rolledBack(probe(t, g, to, before, once)); c != nil {
		t.Fatalf("rolled back a change in play in 1 of 3 intervals: %s", c.Reason)
	}
	if lg, _ := g.LastGood(kA); !g.queues[kA].onProbation || lg != cur {
		t.Fatalf("a change in play in 1 of 3 intervals: on probation %v, last good %s; want it still on probation", g.queues[kA].onProbation, lg.Describe())
	}
	twice := []env.Metrics{util(0.3, 5e5), util(0.32, 5e5), util(0.28, 1e5), util(0.3, 5e5)}
	if c := rolledBack(probe(t, rewardGuard(t), to, before, twice)); c == nil || !strings.Contains(c.Reason, "over 3 intervals in play") || !strings.Contains(c.Reason, "in play in 3 of 4 intervals") {
		t.Fatalf("rollback %+v, want one over the 3 intervals in play of 4", c)
	}
	busy := []env.Metrics{util(0.3, 5e5), util(0.32, 5e5), util(0.28, 5e5)}
	// probe measures one more interval before the change, at the change
	if c := rolledBack(probe(t, rewardGuard(t), to, before[:MinBaselineIntervals-2], busy)); c != nil {
		t.Fatalf("rolled back against %d intervals before the change: %s", MinBaselineIntervals-1, c.Reason)
	}
}

// A change that is not in play (the queue idle, under both Kmin, without
// marks, pause or drops) is not judged, nor made last known good: idle
// intervals say nothing of the setting. When the traffic comes back and
// the change hurts, it is rolled back. A queue that stays idle ends its
// probation undecided after ProbationPatience windows, saying so: the
// change stays, the setting before it stays the last known good, and the
// queue may be tuned again.
func TestProbationCountsIntervalsInPlay(t *testing.T) {
	loose := cur
	loose.KmaxBytes = 3_000_000 // marks later
	busy := func(pause float64) env.Metrics {
		return env.Metrics{IntervalNs: sec, Util: 0.9, MarkFrac: 0.05, PauseRxFrac: pause}
	}
	idle := env.Metrics{IntervalNs: sec, Util: 0.001}
	var before []env.Metrics
	for i := range BaselineIntervals {
		before = append(before, busy(0.01*float64(i%2)))
	}
	after := []env.Metrics{idle, idle, idle, busy(0.4), busy(0.4), busy(0.4)}
	c := rolledBack(probe(t, newTestGuard(t, nil), loose, before, after))
	if c == nil || !strings.Contains(c.Reason, "mean pause fraction 0.4") || !strings.Contains(c.Reason, "in play in 3 of 6 intervals") {
		t.Fatalf("pause 0.5%% → 40%% once the traffic came back after 3 idle intervals: rollback %+v, want one on the 3 in play", c)
	}

	g := newTestGuard(t, nil)
	quiet := make([]env.Metrics, ProbationPatience*g.cfg.RollbackWindow)
	for i := range quiet {
		quiet[i] = idle
	}
	ps := probe(t, g, loose, before, quiet)
	for i, p := range ps[:len(ps)-1] {
		if len(p.Alarms)+len(p.Changes) != 0 {
			t.Fatalf("idle interval %d: %+v", i+1, p)
		}
	}
	last := ps[len(ps)-1]
	if len(last.Alarms) != 1 || last.Alarms[0].Rule != RuleUndecided || !strings.Contains(last.Alarms[0].Msg, "in play in 0 of 30 intervals") {
		t.Fatalf("after %d idle intervals: alarms %+v, want the probation undecided", len(quiet), last.Alarms)
	}
	if lg, _ := g.LastGood(kA); g.queues[kA].onProbation || lg != cur {
		t.Fatalf("an undecided probation: on probation %v, last good %s; want it over, the setting before the change still the last good", g.queues[kA].onProbation, lg.Describe())
	}
	again := loose
	again.KmaxBytes = 2_500_000
	o := ob(kA, loose)
	o.Metrics = busy(0)
	if p := step(t, g, 100*sec, []env.Observation{o}, []policy.Decision{dc(kA, again, 0.9)}); len(p.Changes) != 1 {
		t.Fatalf("a tune after an undecided probation: %+v", p)
	}
}

// A fall within the reward's own noise is no evidence: no rollback; the
// same mean fall from a steady baseline to a steady window is. Nor is a
// window whose own spread is as large as its fall: three intervals know
// their spread poorly (the demo's one rollback before Welch's test, t 2.0
// at 2.4 degrees of freedom, a fall the noise makes one time in 12, is
// TestWelch's).
func TestRollbackNeedsSignificance(t *testing.T) {
	to := cur
	to.Pmax = 0.3
	noisy := []env.Metrics{util(0.9, 5e5), util(0.2, 5e5), util(0.95, 5e5), util(0.15, 5e5), util(0.9, 5e5), util(0.3, 5e5)}
	after := []env.Metrics{util(0.41, 5e5), util(0.39, 5e5), util(0.4, 5e5)}
	if c := rolledBack(probe(t, rewardGuard(t), to, noisy, after)); c != nil {
		t.Fatalf("rolled back on noise: %s", c.Reason)
	}
	steady := []env.Metrics{util(0.57, 5e5), util(0.58, 5e5), util(0.56, 5e5), util(0.57, 5e5), util(0.58, 5e5), util(0.56, 5e5)}
	c := rolledBack(probe(t, rewardGuard(t), to, steady, after))
	if c == nil || !strings.Contains(c.Reason, "one time in 200") {
		t.Fatalf("rollback %+v, want one on a significant fall", c)
	}
	spread := []env.Metrics{util(0.15, 5e5), util(0.4, 5e5), util(0.65, 5e5)}
	if c := rolledBack(probe(t, rewardGuard(t), to, steady, spread)); c != nil {
		t.Fatalf("rolled back on a window as spread as its fall: %s", c.Reason)
	}
}

// Welch's t and its degrees of freedom, against values worked by hand.
func TestWelch(t *testing.T) {
	a, b := momentsOf(3, 0.3773, 0.25), momentsOf(8, 0.6824, 0.12)
	tv, df := welch(0.6824-0.3773, a, b)
	if math.Abs(tv-2.03) > 0.01 || math.Abs(df-2.36) > 0.01 {
		t.Fatalf("t %.3f df %.3f, want 2.03 and 2.36", tv, df)
	}
	if ok, _, _, need := beyondNoise(0.6824-0.3773, a, b); ok || math.Abs(need-7.74) > 0.2 {
		t.Fatalf("the demo's rollback: beyond the noise %v, needed %.2f", ok, need)
	}
	if tv, df := welch(0.1, momentsOf(3, 0.5, 0), momentsOf(8, 0.6, 0)); !math.IsInf(tv, 1) || !math.IsInf(df, 1) {
		t.Fatalf("no spread: t %v df %v, want +Inf", tv, df)
	}
	if tv, df := welch(0.1, momentsOf(1, 0.5, 0), momentsOf(8, 0.6, 0.1)); math.Abs(tv-0.1/(0.1/math.Sqrt(8))) > 1e-9 || math.Abs(df-7) > 1e-9 {
		t.Fatalf("one value against eight: t %v df %v", tv, df)
	}
}

// A change is judged on what it can make worse. Marking earlier can cost
// throughput, not queueing: a queue that grows and pauses after it (the
// congestion it answered) is no rollback, a fall of throughput is. Marking
// later can cost queueing, not throughput: a fall of throughput after it
// (traffic that ended) is no rollback, a queue that grows is. The pause
// rule judges only changes that do not mark earlier.
func TestProbationJudgesWhatTheChangeCanWorsen(t *testing.T) {
	g := func() *Guard {
		return newTestGuard(t, func(gc *GuardConfig) {
			gc.Reward = func(m env.Metrics) float64 { return m.Util - m.AvgQueueFrac - m.PauseRxFrac }
			gc.MaxStepRatio = 2
		})
	}
	at := func(u, q, pause float64) env.Metrics {
		m := util(u, 5e5)
		m.AvgQueueFrac, m.PauseRxFrac = q, pause
		return m
	}
	before := []env.Metrics{at(0.8, 0.1, 0), at(0.82, 0.12, 0), at(0.78, 0.1, 0), at(0.8, 0.11, 0)}
	earlier, later := cur, cur
	earlier.KminBytes, earlier.KmaxBytes = 300_000, 900_000
	later.KminBytes, later.KmaxBytes = 600_000, 2_400_000
	cases := []struct {
		name  string
		to    env.Setting
		after []env.Metrics
		want  string // rule, "" for none
		terms string // in the evidence
	}{
		{"earlier, the queue grows and pauses", earlier, []env.Metrics{at(0.8, 2, 0.3), at(0.81, 2.5, 0.3), at(0.79, 2.2, 0.3)}, "", ""},
		{"earlier, throughput falls", earlier, []env.Metrics{at(0.3, 0.1, 0), at(0.32, 0.1, 0), at(0.28, 0.1, 0)}, RuleReward, "reward (throughput terms)"},
		{"later, throughput falls", later, []env.Metrics{at(0.3, 0.1, 0), at(0.32, 0.1, 0), at(0.28, 0.1, 0)}, "", ""},
		{"later, the queue grows", later, []env.Metrics{at(0.8, 2, 0), at(0.81, 2.5, 0), at(0.79, 2.2, 0)}, RuleReward, "reward (queueing terms)"},
		{"later, it pauses", later, []env.Metrics{at(0.8, 0.1, 0.3), at(0.81, 0.1, 0.3), at(0.79, 0.1, 0.3)}, RulePause, "pause fraction"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ch := rolledBack(probe(t, g(), c.to, before, c.after))
			switch {
			case c.want == "" && ch != nil:
				t.Fatalf("rolled back: %s", ch.Reason)
			case c.want != "" && ch == nil:
				t.Fatal("no rollback")
			case c.want != "" && !strings.Contains(ch.Reason, c.terms):
				t.Fatalf("reason %q lacks %q", ch.Reason, c.terms)
			}
		})
	}
	// a probation restored after a restart (its window starts again)
	// judges the same terms
	g1 := g()
	queue := []env.Metrics{at(0.8, 2, 0), at(0.81, 2.5, 0), at(0.79, 2.2, 0)}
	probe(t, g1, later, before, queue[:1])
	m := g1.Memory(kA)
	if m.Probation == nil || m.Probation.RewardTerms != "queueing" {
		t.Fatalf("memory's probation %+v, want queueing terms", m.Probation)
	}
	g2 := g()
	g2.Restore(m)
	var ps []Plan
	for i, q := range queue {
		o := ob(kA, later)
		o.Metrics = q
		ps = append(ps, step(t, g2, int64(20+i)*sec, []env.Observation{o}, nil))
	}
	if ch := rolledBack(ps); ch == nil || !strings.Contains(ch.Reason, "reward (queueing terms)") {
		t.Fatalf("after a restart: rollback %+v, want one on the queueing terms", ch)
	}
}

// After a rollback the policy's advice of the rolled-back setting is
// refused for retry-after (50 intervals by default), and the bar survives
// a restart through the queue's memory; a different setting is free.
func TestRetryAfterRollback(t *testing.T) {
	g := newTestGuard(t, func(gc *GuardConfig) { gc.MinHold = 0 })
	to := cur
	to.Pmax = 0.1
	// drops in each interval of the window, none before: rolled back at
	// its end (the change at 2 s, the rollback at 5 s)
	drops := env.Metrics{IntervalNs: sec, DropFrac: 0.01}
	ps := probe(t, g, to, []env.Metrics{util(0.5, 5e5)}, []env.Metrics{drops, drops, drops})
	if rolledBack(ps[2:]) == nil {
		t.Fatalf("no rollback at the window's end: %+v", ps)
	}
	at := int64(6 * sec)
	again := func(g *Guard, now int64, s env.Setting) Plan {
		return step(t, g, now, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, s, 0.9)})
	}
	p := again(g, at, to)
	if len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleRetry {
		t.Fatalf("retry within the bar: %+v", p)
	}
	other := cur
	other.Pmax = 0.15
	if p := again(g, at+sec, other); len(p.Changes) != 1 {
		t.Fatalf("another setting refused: %+v", p)
	}
	// a new guard restored from the memory keeps the bar
	g2 := newTestGuard(t, func(gc *GuardConfig) { gc.MinHold = 0 })
	g2.Restore(g.Memory(kA))
	if p := again(g2, at+2*sec, to); len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleRetry {
		t.Fatalf("bar lost across a restart: %+v", p)
	}
	if p := again(g2, 5*sec+50*sec, to); len(p.Changes) != 1 {
		t.Fatalf("bar outlived retry-after: %+v", p)
	}
}

// Shadow follows the closed loop's rules: a change let through becomes
// the loop's virtual setting; the same advice again is no change, other
// advice waits out min-hold from it; when the switch runs it, it is gone.
func TestShadowDecidesFromWhatItWouldRun(t *testing.T) {
	g := newTestGuard(t, nil) // min-hold 5 s
	x, y := cur, cur
	x.Pmax, y.Pmax = 0.1, 0.05
	p := step(t, g, 1*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, x, 0.9)})
	if len(p.Changes) != 1 {
		t.Fatalf("%+v", p)
	}
	g.Shadowed(p.Changes[0], 1*sec)
	if w, ok := g.Would(kA); !ok || w != x {
		t.Fatalf("would %+v %v, want %+v", w, ok, x)
	}
	if p := step(t, g, 2*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, x, 0.9)}); len(p.Changes)+len(p.Rejections) != 0 {
		t.Fatalf("the same advice again: %+v", p)
	}
	p = step(t, g, 3*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, y, 0.9)})
	if len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleHold {
		t.Fatalf("other advice within min-hold of the virtual change: %+v", p)
	}
	p = step(t, g, 7*sec, []env.Observation{ob(kA, cur)}, []policy.Decision{dc(kA, y, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].Old != x || p.Changes[0].New != y {
		t.Fatalf("after min-hold, from the virtual setting: %+v", p)
	}
	g.Shadowed(p.Changes[0], 7*sec)
	step(t, g, 8*sec, []env.Observation{ob(kA, y)}, nil) // the switch runs it now
	if _, ok := g.Would(kA); ok {
		t.Fatal("virtual setting kept after the switch took it")
	}
}

// XOFF moves with buffer use: the guard plans Kmax under the lowest XOFF
// of the recent intervals, not under a momentary high, so that its own
// change does not become the next interval's safety repair.
func TestKmaxPlannedUnderTheLowestRecentXoff(t *testing.T) {
	g := newTestGuard(t, nil)
	for i, x := range []int64{2_000_000, 3_000_000, 4_000_000} {
		o := ob(kA, cur)
		o.XoffBytes = x
		step(t, g, int64(i+1)*sec, []env.Observation{o}, nil)
	}
	o := ob(kA, cur)
	o.XoffBytes = 4_000_000
	want := cur
	want.KmaxBytes = 3_000_000 // under 90% of 4 MB now, not of the 2 MB of two intervals ago
	p := step(t, g, 4*sec, []env.Observation{o}, []policy.Decision{dc(kA, want, 0.9)})
	if len(p.Changes) != 1 || p.Changes[0].New.KmaxBytes != 1_800_000 {
		t.Fatalf("%+v, want kmax 1.8MB (90%% of the 2 MB XOFF seen 3 intervals ago)", p)
	}
}

// In shadow, a safety repair answers what the loop would run: once the
// repair is the virtual setting, the switch's own (still unrepaired)
// setting is not repaired again every interval.
func TestShadowRepairsOnce(t *testing.T) {
	g := newTestGuard(t, nil)
	o := ob(kA, cur)
	o.XoffBytes = 1_000_000 // kmax 1.6 MB is above it
	repairs := 0
	for i := int64(1); i <= 5; i++ {
		p := step(t, g, i*sec, []env.Observation{o}, nil)
		for _, c := range p.Changes {
			if c.Kind == KindRepair {
				repairs++
			}
			g.Shadowed(c, i*sec)
		}
	}
	if repairs != 1 {
		t.Fatalf("%d repairs of one bad setting in shadow, want 1", repairs)
	}
}

// A queue whose tunes read back otherwise RefusedTunes times in a row is
// not tuned for RollbackRetryAfter; that hold outlives a restart (the
// guard's memory in the agent's db), as every other guardrail does.
func TestRefusedHoldSurvivesRestart(t *testing.T) {
	mod := func(c *GuardConfig) { c.MinHold = 0 }
	g := newTestGuard(t, mod)
	o := ob(kA, cur)
	step(t, g, 1*sec, []env.Observation{o}, nil)
	wants := []env.Setting{
		{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2},
		{KminBytes: 300_000, KmaxBytes: 1_200_000, Pmax: 0.2},
		{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.3},
	}
	now := 2 * sec
	for i := 0; i < RefusedTunes; i++ {
		p := step(t, g, now, []env.Observation{o}, []policy.Decision{dc(kA, wants[i], 0.9)})
		if len(p.Changes) != 1 {
			t.Fatalf("tune %d: %+v", i, p)
		}
		g.Result(p.Changes[0], Mismatch, cur, now) // the switch took none of it
		now += sec
	}
	if p := step(t, g, now, []env.Observation{o}, []policy.Decision{dc(kA, wants[2], 0.9)}); len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleReadBack {
		t.Fatalf("same guard: want a read-back rejection, got %+v", p)
	}
	g2 := newTestGuard(t, mod)
	for _, m := range g.Memories() {
		g2.Restore(m)
	}
	now += sec
	step(t, g2, now, []env.Observation{o}, nil)
	now += sec
	if p := step(t, g2, now, []env.Observation{o}, []policy.Decision{dc(kA, wants[2], 0.9)}); len(p.Changes) != 0 || len(p.Rejections) != 1 || p.Rejections[0].Rule != RuleReadBack {
		t.Fatalf("after a restart, inside the %s hold: %+v", g.cfg.RollbackRetryAfter, p)
	}
	// after the hold, tunes go on
	now += int64(g.cfg.RollbackRetryAfter)
	if p := step(t, g2, now, []env.Observation{o}, []policy.Decision{dc(kA, wants[2], 0.9)}); len(p.Changes) != 1 {
		t.Fatalf("after the hold: %+v", p)
	}
}

// A tightening found applied at a restart's reconcile (the agent was
// killed between the Set and its result) is remembered as the loop's
// own tightening, so dwell-loosen protects it after the restart (it was
// loosened back 12 s after a kill -9 under dwell-loosen 15).
func TestReconciledTighteningKeepsDwellLoosen(t *testing.T) {
	gc := testGuardConfig()
	gc.DwellLoosen = 15
	c, err := New(Options{Guard: gc, Policy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c.AddTarget("leaf0", 0)
	tight := env.Setting{KminBytes: cur.KminBytes / 2, KmaxBytes: cur.KmaxBytes / 2, Pmax: cur.Pmax, HeadroomBytes: cur.HeadroomBytes}
	es := []AuditEntry{{Seq: 1, Target: "leaf0", Change: Change{Key: kA, Kind: KindTune, Old: cur, New: tight}, State: StateIntent}}
	res := c.Reconcile(es, map[env.QueueKey]env.Setting{kA: tight}, 10*sec, 10*sec)
	if res[0].State != StateReconciled {
		t.Fatalf("want reconciled, got %+v", res[0])
	}
	if m := c.Guard().Memory(kA); !m.Tightened {
		t.Fatalf("a tightening found applied at reconcile is not remembered as tightened: memory %+v (dwell-loosen will not hold its undoing)", m)
	}
}

// A change on probation is not judged while the closed loop is paused: a
// rollback found due then could not be made, and its probation would be
// over. The window waits and is judged once the loop resumes, for a change
// made before the pause and for one restored after a restart while paused.
func TestProbationWaitsOutAPause(t *testing.T) {
	loose := cur
	loose.KmaxBytes = 3_000_000
	dropping := func(s env.Setting) env.Observation {
		o := ob(kA, s)
		o.Metrics.MarkFrac, o.Metrics.DropFrac = 0.05, 0.05
		return o
	}
	further := loose // the policy's advice meanwhile, held by the probation
	further.KmaxBytes = 2_500_000
	run := func(t *testing.T, c *Core, now int64) {
		t.Helper()
		tick := func() Ready {
			now += sec
			rd, err := c.Tick(Interval{NowNs: now, Observations: []env.Observation{dropping(loose)}, Decisions: []policy.Decision{dc(kA, further, 0.9)}})
			if err != nil {
				t.Fatal(err)
			}
			return rd
		}
		c.SetPaused(true)
		for i := 0; i < 2*c.guard.cfg.RollbackWindow; i++ {
			rd := tick()
			if len(rd.Changes) != 0 {
				t.Fatalf("paused interval %d: would %s: %s", i+1, rd.Changes[0].Kind, rd.Changes[0].Reason)
			}
			if len(rd.Rejections) != 1 || !strings.Contains(rd.Rejections[0].Reason, "once the closed loop resumes") {
				t.Fatalf("paused interval %d: rejections %+v, want the probation's, waiting for the loop", i+1, rd.Rejections)
			}
		}
		if m := c.guard.Memory(kA); m.Probation == nil || m.LastGood != cur {
			t.Fatalf("after the pause: probation %+v, last good %s; want the change still on probation", m.Probation, m.LastGood.Describe())
		}
		c.SetPaused(false)
		for i := 0; i < c.guard.cfg.RollbackWindow; i++ {
			for _, ch := range tick().Changes {
				if ch.Kind == KindRollback && ch.New == cur {
					return
				}
			}
		}
		t.Fatalf("drops 0 → 5%% after the change: no rollback in the %d intervals after the resume", c.guard.cfg.RollbackWindow)
	}
	t.Run("made before the pause", func(t *testing.T) {
		c, err := New(Options{Guard: testGuardConfig(), Policy: "test"})
		if err != nil {
			t.Fatal(err)
		}
		c.AddTarget("leaf0", 0)
		now := int64(0)
		for i := 0; i < BaselineIntervals; i++ {
			now += sec
			o := ob(kA, cur)
			o.Metrics.MarkFrac = 0.05
			if _, err := c.Tick(Interval{NowNs: now, Observations: []env.Observation{o}, Decisions: []policy.Decision{dc(kA, cur, 0.9)}}); err != nil {
				t.Fatal(err)
			}
		}
		now += sec
		rd, err := c.Tick(Interval{NowNs: now, Observations: []env.Observation{ob(kA, cur)}, Decisions: []policy.Decision{dc(kA, loose, 0.9)}})
		if err != nil || len(rd.Changes) != 1 {
			t.Fatalf("no tune: %+v %v", rd.Plan, err)
		}
		c.Settle(Result{Change: rd.Changes[0], Seq: 1, Outcome: Applied, Got: loose}, false, now)
		run(t, c, now)
	})
	t.Run("restored after a restart while paused", func(t *testing.T) {
		mem := QueueMemory{Key: kA, Changed: true, LastChangeNs: 10 * sec, LastGood: cur, Expect: &loose,
			Probation: &Probation{From: cur, To: loose, N: BaselineIntervals, HaveBase: true, RewardTerms: "queueing"}}
		c, err := New(Options{Guard: testGuardConfig(), Policy: "test", Memory: []QueueMemory{mem}})
		if err != nil {
			t.Fatal(err)
		}
		c.AddTarget("leaf0", 10*sec)
		run(t, c, 10*sec)
	})
}

// A port whose speed changes during a probation (a link renegotiated at
// 25G) ends the probation undecided, saying why: the window is no longer
// judged against a baseline at the old speed. The change stays, not made
// last known good, and a later change is judged against intervals at the
// new speed only.
func TestSpeedChangeEndsProbation(t *testing.T) {
	g := newTestGuard(t, nil)
	at := func(s env.Setting, rate, pause float64) env.Observation {
		o := ob(kA, s)
		o.RateBps = rate
		o.Metrics.MarkFrac, o.Metrics.PauseRxFrac = 0.05, pause
		return o
	}
	now := int64(0)
	for i := range BaselineIntervals {
		now += sec
		step(t, g, now, []env.Observation{at(cur, 100e9, 0.01*float64(i%2))}, nil)
	}
	loose := cur
	loose.KminBytes = 500_000
	now += sec
	p := step(t, g, now, []env.Observation{at(cur, 100e9, 0)}, []policy.Decision{dc(kA, loose, 0.9)})
	if len(p.Changes) != 1 {
		t.Fatalf("no tune: %+v", p)
	}
	g.Result(p.Changes[0], Applied, loose, now)
	var alarms []Alarm
	for i := range 3 {
		now += sec
		p = step(t, g, now, []env.Observation{at(loose, 25e9, 0.3+0.01*float64(i))}, nil)
		for _, c := range p.Changes {
			t.Fatalf("after the port went 100G→25G: %s: %s", c.Kind, c.Reason)
		}
		alarms = append(alarms, p.Alarms...)
	}
	if len(alarms) != 1 || alarms[0].Rule != RuleUndecided || !strings.Contains(alarms[0].Msg, "speed went 100Gbps→25Gbps") {
		t.Fatalf("alarms %+v, want one saying the probation ended with the speed change", alarms)
	}
	if lg, _ := g.LastGood(kA); g.queues[kA].onProbation || lg != cur {
		t.Fatalf("on probation %v, last good %s; want the probation over, the setting before the change the last good", g.queues[kA].onProbation, lg.Describe())
	}
	if n := len(g.queues[kA].recent); n != 2 {
		t.Fatalf("%d KPIs kept, want the 2 intervals at 25G after the speed change", n)
	}
}

// Drops are judged as pause is: on the window's mean against the
// baseline's, beyond the limit and the noise. A queue whose drops swing
// 1%-3% before a change is not rolled back on an interval of 2.1% after
// it, nor on a window within that spread, whichever way the change went;
// a window well above it rolls the change back, whichever way it went.
func TestDropsJudgedAgainstTheirNoise(t *testing.T) {
	swing := make([]env.Metrics, BaselineIntervals)
	for i := range swing {
		swing[i] = env.Metrics{IntervalNs: sec, Util: 0.5, MarkFrac: 0.1, DropFrac: []float64{0.01, 0.03}[i%2]}
	}
	drops := func(fs ...float64) []env.Metrics {
		ms := make([]env.Metrics, len(fs))
		for i, f := range fs {
			ms[i] = env.Metrics{IntervalNs: sec, Util: 0.5, MarkFrac: 0.1, DropFrac: f}
		}
		return ms
	}
	tighter, looser := cur, cur
	tighter.KmaxBytes, looser.KmaxBytes = 1_200_000, 2_000_000
	for _, to := range []env.Setting{tighter, looser} {
		if c := rolledBack(probe(t, newTestGuard(t, nil), to, swing, drops(0.021, 0.03, 0.01))); c != nil {
			t.Errorf("%s: rolled back within the baseline's spread: %s", env.DescribeChange(cur, to), c.Reason)
		}
	}
	for _, to := range []env.Setting{tighter, looser} {
		ps := probe(t, newTestGuard(t, nil), to, swing, drops(0.09, 0.1, 0.11))
		if rolledBack(ps[:2]) != nil {
			t.Fatalf("%s: rolled back before the window's end: %+v", env.DescribeChange(cur, to), ps)
		}
		c := rolledBack(ps)
		if c == nil || c.New != cur || !strings.Contains(c.Reason, "mean drop fraction 0.1 ") || !strings.Contains(c.Reason, "Welch's t") {
			t.Fatalf("%s, drops 2%% to 10%%: rollback %+v, want back to %s with the test", env.DescribeChange(cur, to), c, cur.Describe())
		}
	}
}

// A queue that dropped in none of the intervals before a change and drops
// in every interval of its window is rolled back at the window's end,
// however its drops vary (Welch's t knows no spread of a baseline of
// zeros); drops in some intervals only are left to the test.
func TestDropsWhereThereWereNone(t *testing.T) {
	clean := make([]env.Metrics, BaselineIntervals)
	for i := range clean {
		clean[i] = env.Metrics{IntervalNs: sec, Util: 0.5, MarkFrac: 0.1}
	}
	looser := cur
	looser.KmaxBytes = 2_000_000
	m := func(drop float64) env.Metrics {
		return env.Metrics{IntervalNs: sec, Util: 0.5, MarkFrac: 0.1, DropFrac: drop}
	}
	ps := probe(t, newTestGuard(t, nil), looser, clean, []env.Metrics{m(0.001), m(0.2), m(0.01)})
	if rolledBack(ps[:2]) != nil {
		t.Fatalf("rolled back before the window's end: %+v", ps)
	}
	c := rolledBack(ps[2:])
	if c == nil || c.New != cur {
		t.Fatalf("drops in every interval after none: rollback %+v, want back to %s", c, cur.Describe())
	}
	for _, s := range []string{"in each of the 3 intervals in play", "drop fraction 0.001 to 0.2", "none in the 8 intervals before the change"} {
		if !strings.Contains(c.Reason, s) {
			t.Errorf("reason %q does not say %q", c.Reason, s)
		}
	}
	if c := rolledBack(probe(t, newTestGuard(t, nil), looser, clean, []env.Metrics{m(0.001), m(0), m(0.01)})); c != nil {
		t.Errorf("drops in 2 of 3 intervals rolled back: %s", c.Reason)
	}
}

// A probation restored after a restart keeps its baseline's drop spread
// (Probation.DropSD): the window is judged against it as before.
func TestDropSpreadSurvivesARestart(t *testing.T) {
	swing := make([]env.Metrics, BaselineIntervals)
	for i := range swing {
		swing[i] = env.Metrics{IntervalNs: sec, Util: 0.5, MarkFrac: 0.1, DropFrac: []float64{0.01, 0.03}[i%2]}
	}
	looser := cur
	looser.KmaxBytes = 2_000_000
	g := newTestGuard(t, nil)
	probe(t, g, looser, swing, nil)
	m := g.Memory(kA)
	if p := m.Probation; p == nil || p.Drop < 0.015 || p.DropSD < 0.01 {
		t.Fatalf("memory's probation %+v: want the baseline's drop near 2%% and its sd above 1%%", m.Probation)
	}
	g2 := newTestGuard(t, nil)
	g2.Restore(m)
	// a window as steady as 3%: beyond the noise only for a baseline
	// without spread
	for i, f := range []float64{0.03, 0.03, 0.03} {
		o := ob(kA, looser)
		o.Metrics = env.Metrics{IntervalNs: sec, Util: 0.5, MarkFrac: 0.1, DropFrac: f}
		if p := step(t, g2, int64(20+i)*sec, []env.Observation{o}, nil); len(p.Changes) != 0 {
			t.Fatalf("restored probation rolled back within the baseline's spread: %+v", p.Changes)
		}
	}
	if lg, _ := g2.LastGood(kA); lg != looser {
		t.Fatalf("last good %s, want the change %s made good", lg.Describe(), looser.Describe())
	}
}

// An interval whose telemetry still shows the setting before the change
// (the switch's view lags the Set) is not in the change's window: a
// queue that drops in every interval showing the change is rolled back.
func TestWindowSkipsTelemetryBeforeTheChange(t *testing.T) {
	g := newTestGuard(t, nil)
	looser := cur
	looser.KmaxBytes = 2_000_000
	probe(t, g, looser, nil, nil)
	now := int64(10 * sec)
	lag := ob(kA, cur)
	lag.Metrics.MarkFrac = 0.1
	if p := step(t, g, now, []env.Observation{lag}, nil); len(p.Changes)+len(p.Alarms) != 0 {
		t.Fatalf("lagging telemetry: %+v", p)
	}
	var p Plan
	for range g.cfg.RollbackWindow {
		now += sec
		o := ob(kA, looser)
		o.Metrics.MarkFrac, o.Metrics.DropFrac = 0.1, 0.01
		p = step(t, g, now, []env.Observation{o}, nil)
	}
	if len(p.Changes) != 1 || p.Changes[0].Kind != KindRollback || p.Changes[0].New != cur {
		t.Fatalf("drops in every interval showing the change: %+v, want a rollback to %s", p, cur.Describe())
	}
}

// A probation that has measured a window's worth of intervals without its
// change in play holds no verdict, but it does not freeze the queue: a
// new change may replace it (the setting proven before stays the last
// known good). Before a window's worth it may not. (Counting only intervals
// in play, the probation held the queue for up to ProbationPatience
// windows: on validation the demo's loop went 0.970 -> 1.049.)
func TestUnplayedProbationMayBeSuperseded(t *testing.T) {
	loose := cur
	loose.KmaxBytes = 3_000_000
	busy := env.Metrics{IntervalNs: sec, Util: 0.9, MarkFrac: 0.05}
	idle := env.Metrics{IntervalNs: sec, Util: 0.001}
	var before []env.Metrics
	for range BaselineIntervals {
		before = append(before, busy)
	}
	again := loose
	again.KmaxBytes = 2_500_000
	for _, c := range []struct {
		idle  int
		allow bool
	}{{1, false}, {2, true}} { // and the interval of the new decision: 2 or 3 measured
		g := newTestGuard(t, nil)
		quiet := make([]env.Metrics, c.idle)
		for i := range quiet {
			quiet[i] = idle
		}
		probe(t, g, loose, before, quiet)
		o := ob(kA, loose)
		o.Metrics = idle
		p := step(t, g, 100*sec, []env.Observation{o}, []policy.Decision{dc(kA, again, 0.9)})
		if got := len(p.Changes) == 1; got != c.allow {
			t.Fatalf("after %d intervals not in play (window %d): changes %+v, rejections %+v; want allowed %v", c.idle, g.cfg.RollbackWindow, p.Changes, p.Rejections, c.allow)
		}
		if lg, _ := g.LastGood(kA); lg != cur {
			t.Fatalf("last good %s, want the setting before the unplayed change", lg.Describe())
		}
	}
}
