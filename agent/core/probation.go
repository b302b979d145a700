package core

import (
	"fmt"
	"math"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
)

// A change's probation. After a tune or fallback change the guard watches
// the queue for RollbackWindow measured intervals and compares them with
// the BaselineIntervals before the change. Drops, pause and reward roll
// back only on evidence: the window's mean must be worse
// than the baseline's by more than the configured limit, and beyond the
// noise: Welch's t of the difference of the two means above the one-sided
// RollbackConfidence quantile of Student's t at the Welch–Satterthwaite
// degrees of freedom (the reward of a busy queue moves by tenths from one
// interval to the next with the traffic alone, and a window of 3
// intervals knows its own spread poorly: 2 standard errors, the rule
// before, is a fall the noise makes one time in 11 to 14 at 2-3 degrees
// of freedom; the demo rolled back on 2.0, val-leafspine25-3to1-hadoop on
// 2.2; drops were judged on one interval against the baseline's mean, and
// a queue whose drops swing 1%-3% was rolled back on 2.1%), measured
// against at least
// MinBaselineIntervals before the change (the noise of fewer is unknown).
// The window is the intervals in which the change was in play: an ECN
// change acts only on a queue that reaches the lower of the two Kmin, or
// marks, or is paused. A queue whose traffic fell while its queue stayed
// below both settings' Kmin says nothing about the setting, so such an
// interval neither counts in the window nor brings its end nearer (a
// change passed an idle window and became last known good, never tried:
// when the traffic came back, pause 1% to 40%, nothing rolled it back);
// a probation seldom in play ends undecided (ProbationPatience). Nor
// does an interval whose telemetry still shows the setting before the
// change (the switch's view lags the Set): it is not the change's. Measured
// on the validation scenarios (6 seeds), a window in play in 1 of 3
// intervals or a baseline of one interval made most of the loop's
// rollbacks, each a flap (hadoop-400g: 0.5 rollbacks a run, 0 after).
//
// The confidence is one fall in 200 from the noise, not one in 40: a
// probation is one test among the twenty or so a run of a fabric makes
// (every queue's first move, and many a later one), so one in 40 a test
// rolled back a sound change in some runs. On validation (8 scenarios,
// 30 seeds, examples/eval-agent-builtin.yaml) one in 40 rolled back 9
// times in 240 runs, each a flap; one in 200 keeps the 5 with t of 3.8
// to 6.5 and drops the 4 with t of 3.0-3.5 (and one of 7.6 at 2 degrees
// of freedom); the four runs' small-flow p99 the same or lower, their
// large-flow goodput -5% to +3%.
//
// A probation is not judged while the closed loop is paused
// (StepInput.Paused): a rollback found due then could not be made and its
// probation would be over, the harmful setting kept after the resume with
// nothing left to judge it. Its window waits, and is judged once the loop
// resumes.
//
// A queue that dropped in none of the intervals before the change (a
// lossless queue does not drop), or a change with no interval measured
// before it (one adopted at a restart), is rolled back at the window's end
// when it dropped above the limit in every interval of the window,
// however its drops vary: Welch's t knows no spread of a baseline of
// zeros. Drops in only some intervals of the window are left to Welch's
// t: one interval of drops among a clean baseline and window is what
// noise does too.
//
// A change is judged on what it can make worse. One that marks earlier
// (lower Kmax, Kmin or higher Pmax) can cost throughput and marks on an
// idle link, not queueing: its probation judges the reward's throughput
// and over-mark terms and not the pause rule. One that marks later can
// cost queueing, pause and drops, not throughput: its probation judges
// the reward's queue, pause and drop terms. Other changes (headroom,
// alpha) are judged on the whole reward. Why: a policy marks earlier as
// congestion gathers, so the intervals after such a change queue more
// than those before it whatever the setting (val-leafspine25-3to1-hadoop
// seed 23: a spine queue tightened to 81 KB/90 KB as its traffic rose;
// its average queue went from 0-5 to 16 reference BDPs, and after the
// rollback to 174 KB/194 KB it was 19: the traffic, not the setting).
// The drop rules judge every change: drops in a lossless queue are the
// fault the guard must never explain away, and with the noise test a
// change is rolled back for them only on evidence.
const (
	BaselineIntervals    = 8
	MinBaselineIntervals = 4
	RollbackConfidence   = 0.995
)

type kpi struct {
	drop, pause float64
	reward      [rewardParts]float64 // by rewardPart
	haveReward  bool
}

// rewardPart is which terms of the reward a change's probation judges.
type rewardPart uint8

const (
	rewardAll        rewardPart = iota // every term
	rewardThroughput                   // throughput and over-mark: what marking earlier can cost
	rewardQueueing                     // queue, pause and drops: what marking later can cost
	rewardParts
)

// String names the part as a probation's evidence and memory give it.
func (p rewardPart) String() string {
	switch p {
	case rewardThroughput:
		return "throughput"
	case rewardQueueing:
		return "queueing"
	}
	return ""
}

// parseRewardPart is String's inverse ("" and unknown names: every term).
func parseRewardPart(s string) rewardPart {
	for p := rewardThroughput; p < rewardParts; p++ {
		if p.String() == s {
			return p
		}
	}
	return rewardAll
}

// partFor is the part of the reward a change from→to is judged on.
func partFor(from, to env.Setting) rewardPart {
	switch {
	case marksEarlier(to, from):
		return rewardThroughput
	case marksEarlier(from, to):
		return rewardQueueing
	}
	return rewardAll
}

// rewardsOf scores m whole and split: the throughput part is the reward of
// m without its queueing (env.Metrics.WithoutQueueing), the queueing part
// the rest.
func rewardsOf(reward func(env.Metrics) float64, m env.Metrics) ([rewardParts]float64, bool) {
	var r [rewardParts]float64
	r[rewardAll] = reward(m)
	r[rewardThroughput] = reward(m.WithoutQueueing())
	r[rewardQueueing] = r[rewardAll] - r[rewardThroughput]
	for _, x := range r {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return r, false
		}
	}
	return r, true
}

// moments are a running count, mean and sum of squared deviations
// (Welford), for a mean and its standard error.
type moments struct {
	n        int
	mean, m2 float64
}

func (m *moments) add(x float64) {
	m.n++
	d := x - m.mean
	m.mean += d / float64(m.n)
	m.m2 += d * (x - m.mean)
}

// sd is the sample standard deviation (0 below two values).
func (m moments) sd() float64 {
	if m.n < 2 {
		return 0
	}
	return math.Sqrt(m.m2 / float64(m.n-1))
}

// momentsOf rebuilds moments from a count, mean and standard deviation.
func momentsOf(n int, mean, sd float64) moments {
	m := moments{n: n, mean: mean}
	if n > 1 {
		m.m2 = sd * sd * float64(n-1)
	}
	return m
}

// welch is Welch's t of the difference d of the means of a and b and its
// Welch–Satterthwaite degrees of freedom (+Inf and +Inf when neither
// varies; a group of one value adds no variance).
func welch(d float64, a, b moments) (t, df float64) {
	var v, den float64
	for _, m := range []moments{a, b} {
		if m.n < 2 {
			continue
		}
		s := m.sd() * m.sd() / float64(m.n)
		v += s
		den += s * s / float64(m.n-1)
	}
	if v == 0 {
		return math.Inf(1), math.Inf(1)
	}
	return d / math.Sqrt(v), v * v / den
}

// beyondNoise reports whether a worsening d of the means of win over
// before is beyond the noise, with Welch's t, its degrees of freedom and
// the t it needed.
func beyondNoise(d float64, win, before moments) (ok bool, t, df, need float64) {
	t, df = welch(d, win, before)
	if math.IsInf(df, 1) {
		need = distuv.UnitNormal.Quantile(RollbackConfidence)
	} else {
		need = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(RollbackConfidence)
	}
	return t > need, t, df, need
}

// base is what a probation compares with: the KPIs of the measured
// intervals before the change. Its reward counts only when every interval
// had one.
type base struct {
	ok                  bool
	drop, pause, reward moments
	haveReward          bool
	part                rewardPart // which terms reward holds
}

func baselineOf(ks []kpi, part rewardPart) base {
	if len(ks) == 0 {
		return base{part: part}
	}
	b := base{ok: true, haveReward: true, part: part}
	for _, k := range ks {
		b.drop.add(k.drop)
		b.pause.add(k.pause)
		b.reward.add(k.reward[part])
		b.haveReward = b.haveReward && k.haveReward
	}
	return b
}

// watch is what a probation has measured so far: the drops, pause and reward of
// the intervals in which the change was in play (its window), and how many
// intervals were measured in all.
type watch struct {
	drop, pause, reward moments
	haveReward          bool
	seen                int
	dropped             int     // intervals of the window with drops above the limit
	dropLo, dropHi      float64 // the window's least and most drop fraction
}

// n is how many intervals of the window the change was in play in.
func (w watch) n() int { return w.pause.n }

// supersedable reports whether a new change of q may replace the change on
// probation: its probation has measured a window's worth of intervals
// (RollbackWindow) with fewer of them in play, so it holds no verdict yet
// and may wait long for one. Only the verdict waits for the change to be in
// play; the queue is not frozen meanwhile (it was, for up to
// ProbationPatience×RollbackWindow intervals, when the window began to count
// intervals in play alone: validation's geometric-mean frontier ratio of the
// demo's loop went 0.970 -> 1.049, val-leafspine-ws-50 0.57 -> 0.96, as the
// loosened queues stayed under their new Kmin and kept their settings for
// the whole run). The replaced change is not made last known good: the
// setting proven before it stays the one a rollback of the new change
// returns to. Not while the closed loop is paused (nothing is judged then).
func (g *Guard) supersedable(q *queueState) bool {
	w := q.probationWatch
	return !g.paused && !q.pending && w.seen >= g.cfg.RollbackWindow && w.n() < g.cfg.RollbackWindow
}

// ProbationPatience bounds a probation whose change is seldom in play: after
// ProbationPatience×RollbackWindow measured intervals with fewer than
// RollbackWindow of them in play, it ends undecided (RuleUndecided). The
// change stays (nothing says it hurts) but is not made last known good
// (nothing says it is good): the setting before it stays the one a
// read-back failure goes back to, and the queue may be tuned again. A
// queue idle for good would otherwise hold its probation, and every tune
// behind it, open for good, and be judged at last against a baseline of
// traffic long gone.
const ProbationPatience = 10

// noteKPI keeps k among q's recent KPIs (the last
// max(RollbackWindow, BaselineIntervals)).
func (g *Guard) noteKPI(q *queueState, k kpi) {
	if n := max(g.cfg.RollbackWindow, BaselineIntervals); len(q.recent) >= n {
		q.recent = append(q.recent[:0], q.recent[len(q.recent)-n+1:]...)
	}
	q.recent = append(q.recent, k)
}

// startProbation puts q's change from→to on probation against its recent
// KPIs.
func (q *queueState) startProbation(from, to env.Setting) {
	q.onProbation = true
	q.probationFrom, q.probationTo = from, to
	q.probationBase = baselineOf(q.recent, partFor(from, to))
	q.probationWatch = watch{haveReward: true}
}

// inPlay reports whether q's change on probation could act in o's
// interval: always for a headroom or alpha change; for an ECN change when
// the queue marked, was paused or dropped, or its peak reached the lower
// Kmin of the two settings, or when the switch exports no queue length.
func inPlay(q *queueState, o *env.Observation) bool {
	from, to := q.probationFrom, q.probationTo
	if from.HeadroomBytes != to.HeadroomBytes || !sameAlpha(from.Alpha, to.Alpha) {
		return true
	}
	return reaches(o, min(from.KminBytes, to.KminBytes))
}

// reaches reports whether ECN with a Kmin of kmin could act in o's
// interval: the queue marked, was paused or dropped, or its peak reached
// kmin, or the switch exports no queue length.
func reaches(o *env.Observation, kmin int64) bool {
	m := o.Metrics
	if m.MarkFrac > 0 || m.PauseRxFrac > 0 || m.DropFrac > 0 {
		return true
	}
	if o.Missing.Has(env.TelMaxQueue|env.TelAvgQueue|env.TelCurQueue) || o.RateBps <= 0 {
		return true
	}
	peak := m.MaxDelayNs * o.RateBps / 8e9
	return peak >= float64(kmin)
}

// judgeProbation counts one more interval of q's change on probation with
// its KPIs k: a rollback (with its alarm) when they are worse than before
// the change beyond the rules, the change made good after the window.
func (g *Guard) judgeProbation(now int64, q *queueState, o *env.Observation, k kpi) (*Change, *Alarm) {
	w := &q.probationWatch
	w.seen++
	if inPlay(q, o) && (!validSetting(o.Current) || SameSetting(o.Current, q.probationTo, g.cfg.ReadBackPmaxTol)) {
		// an interval whose telemetry still shows the setting before the
		// change (the switch's view lags the Set) is not the change's
		if w.drop.n == 0 || k.drop < w.dropLo {
			w.dropLo = k.drop
		}
		w.dropHi = max(w.dropHi, k.drop)
		w.drop.add(k.drop)
		if k.drop > g.cfg.RollbackDropFrac {
			w.dropped++
		}
		w.pause.add(k.pause)
		w.reward.add(k.reward[q.probationBase.part])
		w.haveReward = w.haveReward && k.haveReward
	}
	rule, why := g.rollbackRule(q)
	if rule != "" {
		return g.rollback(now, q, o, rule, why)
	}
	switch {
	case w.n() >= g.cfg.RollbackWindow:
		q.onProbation = false
		q.lastGood = q.probationTo
		g.touch(q)
	case w.seen >= ProbationPatience*g.cfg.RollbackWindow:
		q.onProbation = false
		g.touch(q)
		key := o.Key
		return nil, &Alarm{Target: key.Target, Key: &key, Rule: RuleUndecided,
			Msg: fmt.Sprintf("probation of %s ended undecided: the change was in play in %d of %d intervals (the queue stayed below kmin %s without marks, pause or drops), %d needed; it stays, not made last known good (%s)",
				env.DescribeChange(q.probationFrom, q.probationTo), w.n(), w.seen, units.FormatBytes(min(q.probationFrom.KminBytes, q.probationTo.KminBytes)),
				g.cfg.RollbackWindow, q.lastGood.Describe())}
	}
	return nil, nil
}

// rollbackRule is the rule q's probation breaks, with its evidence (""
// when none), once the window is full: drops, pause and reward on the
// whole window, beyond the limit and the noise (beyondNoise); pause not
// for a change that marks earlier (drops for every change). A queue that dropped in none
// of the intervals before the change (or whose baseline was not measured)
// and drops in every interval of the window, above the limit, is rolled
// back whatever the spread of its drops (noDropsBefore).
func (g *Guard) rollbackRule(q *queueState) (string, string) {
	b, w := q.probationBase, q.probationWatch
	if w.n() < g.cfg.RollbackWindow {
		return "", ""
	}
	played := fmt.Sprintf("; the change was in play in %d of %d intervals", w.n(), w.seen)
	if why := g.noDropsBefore(b, w); why != "" {
		return RuleDrops, why + played
	}
	if !b.ok || b.pause.n < MinBaselineIntervals {
		return "", ""
	}
	// worse reports the evidence when the window's mean is worse than the
	// baseline's by d, beyond the limit and the noise ("" when not).
	worse := func(what string, win, before moments, d, limit float64) string {
		if !(d > limit) {
			return ""
		}
		ok, t, df, need := beyondNoise(d, win, before)
		if !ok {
			return ""
		}
		return fmt.Sprintf("mean %s %.4g (sd %.2g) over %d intervals in play, %.4g (sd %.2g) over the %d before the change: %.3g worse (limit %.4g), Welch's t %.1f at %.1f degrees of freedom, above the %.1f of a fall the noise makes one time in %.0f",
			what, win.mean, win.sd(), win.n, before.mean, before.sd(), before.n, d, limit, t, df, need, 1/(1-RollbackConfidence)) + played
	}
	if why := worse("drop fraction", w.drop, b.drop, w.drop.mean-b.drop.mean, g.cfg.RollbackDropFrac); why != "" {
		return RuleDrops, why
	}
	if b.part != rewardThroughput {
		if why := worse("pause fraction", w.pause, b.pause, w.pause.mean-b.pause.mean, g.cfg.RollbackPauseIncrease); why != "" {
			return RulePause, why
		}
	}
	if !w.haveReward || !b.haveReward {
		return "", ""
	}
	what := "reward"
	if b.part != rewardAll {
		what = "reward (" + b.part.String() + " terms)"
	}
	if why := worse(what, w.reward, b.reward, b.reward.mean-w.reward.mean, g.cfg.RollbackRewardDrop); why != "" {
		return RuleReward, why
	}
	return "", ""
}

// noDropsBefore is the evidence that a change made a queue that did not
// drop drop ("" when none): no drop in any interval before it (or no
// interval measured before it, as for a change adopted at a restart), and
// a drop above the limit in every interval of its window. A lossless
// queue does not drop; Welch's t knows no spread of a baseline of zeros,
// and the window's own spread is no reason to keep a change after which
// every interval lost packets.
func (g *Guard) noDropsBefore(b base, w watch) string {
	if b.drop.mean != 0 || w.dropped < w.n() {
		return ""
	}
	before := fmt.Sprintf("none in the %d intervals before the change", b.drop.n)
	if b.drop.n == 0 {
		before = "no interval measured before the change"
	}
	return fmt.Sprintf("drops above the limit %.4g in each of the %d intervals in play (drop fraction %.4g to %.4g, mean %.4g), %s",
		g.cfg.RollbackDropFrac, w.n(), w.dropLo, w.dropHi, w.drop.mean, before)
}

// rollback returns q to the setting before its change on probation: that
// setting itself, the last known good, not a step towards it (max-step
// limits untried moves), within the bounds, XOFF and headroom rules of
// now. The setting rolled back from is not tried again on q for
// RollbackRetryAfter.
func (g *Guard) rollback(now int64, q *queueState, o *env.Observation, rule, why string) (*Change, *Alarm) {
	k := o.Key
	al := &Alarm{Target: o.Key.Target, Key: &k, Rule: rule, Msg: "rollback to the setting before the change: " + why}
	back, clamped, _, rej := g.shape(q, q.probationFrom, math.Inf(1))
	q.onProbation = false
	q.retryBlocked, q.retryFrom, q.retryUntilNs = q.probationTo, q.probationFrom, now+int64(g.cfg.RollbackRetryAfter)
	g.touch(q)
	if rej != nil {
		al.Msg += " (" + rej.Reason + ": nothing to roll back)"
		return nil, al
	}
	c := &Change{Key: o.Key, Kind: KindRollback, Old: q.current, New: back, Clamped: clamped, Reason: al.Msg}
	if len(clamped) > 0 {
		// The setting before the change breaks a rule now (XOFF moves
		// with buffer use): what is applied is that setting, shaped.
		w := q.probationFrom
		c.Wanted = &w
		c.Reason += " (as allowed now: " + strings.Join(clamped, ", ") + ")"
	}
	return c, al
}

// retryRefused is the rejection of a tune of q to out while a rollback
// bars it (nil otherwise): out is the setting rolled back from, or goes
// further the same way (pushedFurther).
func (g *Guard) retryRefused(now int64, q *queueState, out env.Setting) *Rejection {
	if now >= q.retryUntilNs {
		return nil
	}
	what := "was rolled back on this queue"
	switch {
	case SameSetting(out, q.retryBlocked, g.cfg.ReadBackPmaxTol):
	case pushedFurther(q.retryFrom, q.retryBlocked, out):
		what = "goes further than kmin " + units.FormatBytes(q.retryBlocked.KminBytes) + ", kmax " +
			units.FormatBytes(q.retryBlocked.KmaxBytes) + ", pmax " + env.FormatPmax(q.retryBlocked.Pmax) + ", which was rolled back on this queue"
	default:
		return nil
	}
	return &Rejection{Key: q.key, Rule: RuleRetry, Wanted: out,
		Reason: fmt.Sprintf("kmin %s, kmax %s, pmax %s %s; not tried again for %s",
			units.FormatBytes(out.KminBytes), units.FormatBytes(out.KmaxBytes), env.FormatPmax(out.Pmax), what, time.Duration(q.retryUntilNs-now))}
}

// pushedFurther reports whether out pushes the harmful change from→to
// further: every ECN knob that change moved, out moves from "from" the
// same way at least as far (and it moved one at least).
func pushedFurther(from, to, out env.Setting) bool {
	moved := false
	further := func(f, t, o float64) bool {
		switch {
		case t == f:
			return true
		case t > f:
			moved = true
			return o >= t
		default:
			moved = true
			return o <= t
		}
	}
	ok := further(float64(from.KminBytes), float64(to.KminBytes), float64(out.KminBytes)) &&
		further(float64(from.KmaxBytes), float64(to.KmaxBytes), float64(out.KmaxBytes)) &&
		further(from.Pmax, to.Pmax, out.Pmax)
	return ok && moved
}
