package core

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// Core is the agent's decisions without the agent's I/O, as etcd's raft
// is a consensus without a network: the driver hands it one interval's
// observations and the policy's decisions (Tick) and gets back a Ready,
// everything it must do; it does that, then hands the outcomes back
// (Settle, Reconcile, Confirm). Core holds the guard and its
// memory; it has no clock (time comes in as nanoseconds), no goroutine, no
// file and no network, so every rule can be tested by calling it.
type Core struct {
	guard  *Guard
	shadow bool
	paused bool
	policy string
	reward func(env.Metrics) float64
	// awaiting are the queues whose change waits for its confirmed
	// commit to settle (AwaitCommit), until Reconcile judges it.
	awaiting map[env.QueueKey]bool
}

// Options are what a Core decides by.
type Options struct {
	// Guard is the guard's configuration (presets resolved).
	Guard GuardConfig
	// Shadow: recommend and give the guard's verdict on each, apply nothing.
	Shadow bool
	// Policy is the policy's name, recorded with each recommendation.
	Policy string
	// Reward scores an interval's metrics (nil: no score).
	Reward func(env.Metrics) float64
	// Memory is the guard's memory of each queue from before a restart
	// (the journal keeps it).
	Memory []QueueMemory
}

// New builds a core; the guard's configuration must validate.
func New(o Options) (*Core, error) {
	g, err := NewGuard(o.Guard)
	if err != nil {
		return nil, err
	}
	for _, m := range o.Memory {
		g.Restore(m)
	}
	g.Memories() // what was just restored is stored already
	return &Core{guard: g, shadow: o.Shadow, policy: o.Policy, reward: o.Reward}, nil
}

// AddTarget starts watching target's telemetry for staleness from nowNs.
func (c *Core) AddTarget(target string, nowNs int64) { c.guard.AddTarget(target, nowNs) }

// Seen notes telemetry from target at nowNs.
func (c *Core) Seen(target string, nowNs int64) { c.guard.Seen(target, nowNs) }

// Memories are the queues' memories changed since the last call, for the
// journal to keep.
func (c *Core) Memories() []QueueMemory { return c.guard.Memories() }

// Drop lets go of a change the driver will not apply (a rollback ordered
// during a rollback round), as a change not applied: the queue is judged
// again next interval, and a change of it waits min-hold from now (its
// rejection says the last change was not applied), as after a failed Set.
func (c *Core) Drop(ch Change, nowNs int64) { c.guard.Result(ch, NotApplied, env.Setting{}, nowNs) }

// Hold lets go of a change the driver holds back for an operator's
// approval: it leaves no trace, and the same decision is judged the same
// way next interval.
func (c *Core) Hold(ch Change) { c.guard.Discard(ch) }

// SetPaused pauses (or resumes) a closed loop: while paused, Tick decides
// and gives verdicts as in shadow mode, and its Changes are what would be
// applied. A change on probation is not judged while paused: a rollback
// found due then could not be made, and its probation would be over; the
// window waits, and is judged once the loop resumes.
func (c *Core) SetPaused(p bool) {
	if c.paused && !p {
		c.guard.ClearShadow()
	}
	c.paused = p
}

// Paused says whether the closed loop is paused.
func (c *Core) Paused() bool { return c.paused }

// Forget drops the guard's state of a queue no longer reported, unless a
// guardrail still needs it (Guard.Forget).
func (c *Core) Forget(k env.QueueKey, nowNs int64) bool { return c.guard.Forget(k, nowNs) }

// Guard is the core's guard (its memory, targets and read-back rule).
func (c *Core) Guard() *Guard { return c.guard }

// Interval is what one control interval decides from.
type Interval struct {
	NowNs int64
	// Observations are the newest observation of each queue, in key order.
	Observations []env.Observation
	// Decisions are the policy's, aligned with Observations; nil when the
	// policy failed (the guard still runs its rollback rules and watchdog).
	Decisions []policy.Decision
	// Missing is the telemetry each target lacks, named in the reasons.
	Missing map[string]env.Telemetry
	// Held: approve mode's Approvals.Holds, the tunes and fallbacks the
	// driver will hold for approval, which spend no change budget (nil:
	// not in approve mode).
	Held func(Change) bool
}

// Ready is everything the driver must do after an interval: keep and
// publish the recommendations (each with the guard's verdict in shadow
// mode), count and log the rejections and alarms, mark the frozen targets
// and, in closed loop, write the changes ahead, set them, read them back
// and hand the outcomes to Settle. In shadow mode Changes are what would
// be applied; the guard has let them go already.
type Ready struct {
	Recommendations []Recommendation
	Plan
}

// Tick runs one control interval. Decisions for queues whose switch
// exports no congestion signal become holds that say so; every
// recommendation is raised to its queue's lossless floor; then the guard
// judges the decisions. An error from the guard comes with the
// recommendations, which stand.
func (c *Core) Tick(in Interval) (Ready, error) {
	if len(in.Decisions) == len(in.Observations) {
		holdUndecidable(in.Observations, in.Decisions)
		holdIdle(in.Observations, in.Decisions, c.guard.cfg.IdleUtil)
	}
	rd := Ready{Recommendations: c.recommend(in)}
	plan, err := c.guard.Step(StepInput{NowNs: in.NowNs, Observations: in.Observations, Decisions: in.Decisions, Held: in.Held, Paused: c.paused && !c.shadow})
	if err != nil {
		return rd, err
	}
	rd.Plan = plan
	verdicts(rd.Recommendations, plan)
	if c.shadow || c.paused {
		for _, ch := range plan.Changes {
			c.guard.Shadowed(ch, in.NowNs) // nothing is set: what would be
		}
		for i := range rd.Recommendations {
			if s, ok := c.guard.Would(rd.Recommendations[i].Key); ok {
				rd.Recommendations[i].Would = &s
			}
		}
		note := " (shadow mode: nothing is written)"
		if !c.shadow {
			note = " (closed loop paused: nothing is written)"
		}
		for i := range rd.Alarms {
			rd.Alarms[i].Msg += note
		}
	}
	return rd, nil
}

// holdUndecidable makes every queue whose switch exports no congestion
// signal at all (no ECN marks, no queue length, no PFC frames: see
// env.Decidable) hold its setting, saying why: a policy cannot tell such a
// queue busy from idle.
func holdUndecidable(obs []env.Observation, decs []policy.Decision) {
	for i := range obs {
		if env.Decidable(obs[i].Missing) {
			continue
		}
		decs[i].Setting, decs[i].Action, decs[i].Confidence, decs[i].Held = obs[i].Current, env.ActionHold, 0, policy.HoldUndecided
		decs[i].Reason = "hold: too little telemetry to decide (the switch exports no ECN marks, no queue length and no PFC frames)"
	}
}

// holdIdle makes every queue whose interval shows utilisation below
// idleUtil and no ECN marks, pause or drops hold its setting, saying it is
// idle (idleUtil 0: off): such an interval says nothing about the setting,
// and a policy that moves it there moves it on noise.
func holdIdle(obs []env.Observation, decs []policy.Decision, idleUtil float64) {
	if idleUtil <= 0 {
		return
	}
	for i := range obs {
		m := &obs[i].Metrics
		if !obs[i].Valid || !m.Idle(idleUtil) || decs[i].Held != policy.HoldNone {
			continue
		}
		decs[i].Setting, decs[i].Action, decs[i].Confidence, decs[i].Held = obs[i].Current, env.ActionHold, 0, policy.HoldIdle
		decs[i].Reason = fmt.Sprintf("hold: idle (utilisation %.2g%%, below %.2g%%, no ECN marks, pause or drops)", m.Util*100, idleUtil*100)
	}
}

// recommend turns each decision into a recommendation: the telemetry its
// switch lacks named, the headroom never below the lossless floor, Pmax on
// the switches' step, the interval scored.
func (c *Core) recommend(in Interval) []Recommendation {
	recs := make([]Recommendation, len(in.Decisions))
	for i := range in.Decisions {
		o, d := &in.Observations[i], &in.Decisions[i]
		r := Recommendation{TimeNs: in.NowNs, Key: o.Key, Policy: c.policy, Current: o.Current,
			Recommended: d.Setting, Action: d.Action, Confidence: d.Confidence, Reason: d.Reason, Held: d.Held,
			Valid: o.Valid, Metrics: o.Metrics, RateBps: o.RateBps, Missing: o.Missing}
		if m := in.Missing[o.Key.Target]; m != 0 {
			r.Reason += " [without " + m.String() + "]"
		}
		if f := env.HeadroomFloor(o.MinHeadroomBytes, o.FloorEstimated, o.Current.HeadroomBytes); f > 0 && r.Recommended.HeadroomBytes > 0 && r.Recommended.HeadroomBytes < f {
			r.Recommended.HeadroomBytes = f // never below the lossless floor
		}
		if st := c.guard.cfg.PmaxStep; st > 0 && r.Recommended.Pmax > 0 {
			// as the switch can hold it (the guard sets it so): a Pmax of
			// 0.3% against a queue's 1% is no change, and was counted as one
			// in every interval (recommend_change, the target gauge) while
			// the dashboard said nothing would change
			if q := quantizePmax(r.Recommended.Pmax, st); q != r.Recommended.Pmax {
				// the reason names what the policy wanted: it is said so,
				// led by what is recommended on the step, as the audit log
				// labels "change:" and "wanted:" (a row read
				// "774KB/860KB/1% (hold)" for "pmax 1%→0.3%")
				r.Recommended.Pmax = q
				r.Reason = onPmaxStep(st, env.DescribeChange(r.Current, r.Recommended), r.Reason)
			}
		}
		if c.reward != nil && o.Valid {
			r.Reward = c.reward(o.Metrics)
		}
		recs[i] = r
	}
	return recs
}

// onPmaxStep is the reason of a recommendation whose Pmax is put on the
// switches' step: "on the switch's 1% Pmax step: no change; wanted: pmax
// 1%→0.3%: ...".
func onPmaxStep(step float64, change, wanted string) string {
	s := "on the switch's " + env.FormatPmax(step) + " Pmax step: " + change
	if wanted != "" {
		s += "; wanted: " + wanted
	}
	return s
}

// verdicts gives each recommendation the guard's verdict (the rule that
// rejects it, or the rules that clamp it, with what they allow); a safety
// repair replaces the recommendation and says so loudly.
func verdicts(recs []Recommendation, plan Plan) {
	verdict := map[env.QueueKey]string{}
	repairs := map[env.QueueKey]Change{}
	for _, r := range plan.Rejections {
		verdict[r.Key] = r.Rule
	}
	planned := map[env.QueueKey]env.Setting{}
	for _, ch := range plan.Changes {
		if len(ch.Clamped) > 0 {
			verdict[ch.Key] = "clamped:" + strings.Join(ch.Clamped, ",")
		}
		planned[ch.Key] = ch.New
		if ch.Kind == KindRepair {
			repairs[ch.Key] = ch
		}
	}
	for i := range recs {
		recs[i].Guard = verdict[recs[i].Key]
		if s, ok := planned[recs[i].Key]; ok {
			recs[i].Changes = true
			if s != recs[i].Recommended {
				recs[i].Allowed = &s
			}
		}
		if ch, ok := repairs[recs[i].Key]; ok {
			recs[i].Recommended, recs[i].Reason, recs[i].Guard = ch.New, "SAFETY: "+ch.Reason, string(KindRepair)
		}
	}
}

// Result is what became of one change the driver wrote ahead and set (or
// could not).
type Result struct {
	Change
	// Seq is the change's audit entry (0: none was written).
	Seq     uint64
	Outcome Outcome
	// Got is the setting read back.
	Got env.Setting
	Err error
	// Unknown: the Set failed and the read-back too, so nobody knows; the
	// audit entry stays open for Reconcile.
	Unknown bool
}

// ReadBack judges one target's Set by what the switch reports after it:
// applied where it reports the new setting, not applied where the Set
// failed and it does not, a mismatch otherwise. A failed read-back leaves
// the outcome unknown, after a failed Set or an answered one: its entry
// stays open and a later read judges it (an answered Set with its read
// failing, the switch gone, was audited as reading back zeros and rolled
// back, though the switch had taken it). A Set whose confirmed commit was not confirmed (ErrUnconfirmed)
// is not applied, whatever the switch runs until it reverts it.
func (c *Core) ReadBack(target string, cs []Change, setErr error, got map[env.QueueKey]env.Setting, readErr error) []Result {
	out := make([]Result, len(cs))
	for i, ch := range cs {
		out[i] = Result{Change: ch, Outcome: NotApplied}
		g, ok := got[ch.Key]
		if ok && !validSetting(g) {
			// a switch going down answers zeros: not a setting
			g, ok = env.Setting{}, false
		}
		switch JudgeSet(ch.New, ch.Old, setErr, g, ok, readErr, c.guard.ReadBackOK) {
		case SetUnconfirmed:
			out[i].Got = g
			out[i].Err = fmt.Errorf("set on %s: %w", target, setErr)
		case SetUnknown:
			out[i].Unknown = true
			if readErr != nil {
				out[i].Err = fmt.Errorf("set on %s: %v; read-back: %v", target, setErr, readErr)
			} else {
				out[i].Err = fmt.Errorf("set on %s: %v; read right after: %s; the Set may still land: judged once it no longer can", target, setErr, readDescribe(g, ok))
			}
		case SetUnread:
			// answered, and unverified: judged by a later read, as a Set
			// whose answer was lost (it was a mismatch against a setting
			// of zeros, and a rollback of a change the switch had taken)
			out[i].Unknown = true
			out[i].Err = fmt.Errorf("set on %s answered; its read-back failed (%v): judged by a later read", target, readErr)
		case SetApplied:
			out[i].Got, out[i].Outcome = g, Applied
		case SetFailed:
			out[i].Got = g
			out[i].Err = fmt.Errorf("set on %s: %w", target, setErr)
		default:
			out[i].Got, out[i].Outcome = g, Mismatch
		}
	}
	return out
}

// SetVerdict is what a Set and the read-back after it say of one change
// (JudgeSet).
type SetVerdict int

const (
	// SetApplied: the switch runs the change.
	SetApplied SetVerdict = iota
	// SetUnconfirmed: the Set's confirmed commit was not confirmed
	// (ErrUnconfirmed): not applied, whatever the switch runs until it
	// reverts it (or has).
	SetUnconfirmed
	// SetUnknown: the Set failed and the read-back too: nobody knows
	// whether the switch took it (its audit entry stays open).
	SetUnknown
	// SetUnread: the Set was answered, the read-back failed: the loop
	// judges it by a later read (Result.Unknown).
	SetUnread
	// SetFailed: the Set failed, and the switch does not run the change.
	SetFailed
	// SetMismatch: the Set was answered, and the switch runs something
	// else (or does not report the queue).
	SetMismatch
)

// JudgeSet is the one rule that judges a change's Set by its read-back,
// for the loop (ReadBack) and `agent rollback` alike: want is what the
// change must read back as, old what it was set from, g what the switch
// reports for its queue
// (reported false: nothing), match the read-back comparison (the guard's
// ReadBackOK, or ReadBackMatches without a guard). A headroom the switch
// refused is the caller's to take out first: the ECN change stands, and is
// judged with setErr nil and want without the headroom and alpha.
func JudgeSet(want, old env.Setting, setErr error, g env.Setting, reported bool, readErr error, match func(want, got env.Setting) bool) SetVerdict {
	switch {
	case errors.Is(setErr, ErrUnconfirmed):
		return SetUnconfirmed
	case readErr != nil && setErr != nil:
		return SetUnknown
	case readErr != nil:
		return SetUnread
	case reported && match(want, g):
		return SetApplied
	case errors.Is(setErr, ErrSetOutcomeUnknown):
		// the old setting read right after a Set that timed out is no
		// verdict: the switch may apply it later (one did 2 s after the
		// agent's 5 s deadline, audited as failed)
		return SetUnknown
	case setErr != nil && reported && validSetting(old) && !match(old, g):
		// refused, and the switch runs neither the old setting nor the
		// new: it took part of the Set (it was audited as failed, with no
		// alarm and no rollback, the queue left on a mix)
		return SetMismatch
	case setErr != nil:
		return SetFailed
	}
	return SetMismatch
}

// readDescribe says what a read of a queue found: its setting, or that
// the switch did not report it.
func readDescribe(g env.Setting, reported bool) string {
	if !reported {
		return "the queue not reported"
	}
	return g.Describe()
}

// ErrSetOutcomeUnknown marks a Set that ended without an answer saying
// whether the switch took it (a deadline, a cancel, a connection lost on
// the way): it may yet land, so its audit entry stays open until its
// AuditEntry.LandByNs and is judged then by what the switch runs.
var ErrSetOutcomeUnknown = errors.New("no answer says whether the switch took the Set")

// ErrUnconfirmed marks a Set whose confirmed commit (gNMI's commit
// confirmed extension) was not confirmed: the switch reverts it when its
// rollback duration ends, so it is not applied even while a read shows it.
var ErrUnconfirmed = errors.New("the commit was not confirmed: the switch reverts it when its rollback duration ends")

// Settled is what the driver does with a Result: resolve its audit entry
// (when Resolve) with State, Got, Msg and the queue's guard Memory; apply
// the Rollback the guard orders; raise the Alarm.
type Settled struct {
	Resolve  bool
	State    AuditState
	Got      *env.Setting
	Msg      string
	Memory   QueueMemory
	Rollback *Change
	Alarm    *Alarm
}

// Settle hands a result to the guard and says how its audit entry ends
// (dryRun: the change was journaled, never sent).
func (c *Core) Settle(r Result, dryRun bool, nowNs int64) Settled {
	var s Settled
	s.Rollback, s.Alarm = c.guard.Result(r.Change, r.Outcome, r.Got, nowNs)
	if r.Unknown && r.Seq != 0 && !dryRun {
		// held as a change in flight until Reconcile judges the entry: no
		// other Set to the queue meanwhile (a late Set would overwrite it)
		c.AwaitCommit(r.Key)
	}
	if r.Unknown || r.Seq == 0 {
		return s
	}
	s.Resolve, s.State = true, StateApplied
	switch {
	case dryRun:
		s.State = StateDryRun
	case r.Outcome == NotApplied:
		s.State = StateFailed
		if r.Err != nil {
			s.Msg = r.Err.Error()
		}
	case r.Outcome == Mismatch:
		s.State = StateMismatch
		if validSetting(r.Got) {
			s.Got = &r.Got
		} else {
			s.Msg = "the read-back after the Set does not report the queue" // not a setting of zeros
		}
	default:
		s.Got = &r.Got
		if r.Err != nil {
			s.Msg = r.Err.Error() // applied in part: what the switch refused
		}
	}
	s.Memory = c.guard.Memory(r.Key)
	return s
}

// WriteCheck is what a change meets on the switch when it is read just
// before the Set (read before write).
type WriteCheck int

const (
	// WriteGo: the switch runs the setting the change was computed from.
	WriteGo WriteCheck = iota
	// WriteDeferred: the switch could not be read; decided again later.
	WriteDeferred
	// WriteSkipped: the switch runs something else (it restarted, or
	// another wrote it): the change was computed on its past. What it
	// runs is the queue's new baseline.
	WriteSkipped
	// WriteStaleTelemetry: the switch runs what the agent set last, but
	// the telemetry the change was computed from says otherwise: the
	// telemetry is stale (an update lost), not another writer. Nothing is
	// written; the driver should resynchronise the target's telemetry.
	WriteStaleTelemetry
)

// Confirm judges a change against the setting the switch reports just
// before the Set (known false: it could not be read) and returns the change
// to write. No change is written that was computed from a setting the
// switch no longer runs (a restart between two telemetry samples, another
// writer): a rollback would write a setting of the switch's previous life,
// a tune would move from the wrong place, past max-step. A revert to the
// safe preset still goes, from what the switch runs. A change that does
// not go ahead is done with as far as the guard is concerned; what the
// switch runs is the queue's new baseline, unless it is what the agent set
// last (the change was computed on a sample older than that Set).
func (c *Core) Confirm(ch Change, cur env.Setting, known bool, nowNs int64) (Change, WriteCheck) {
	g := c.guard
	switch {
	case !known || !validSetting(cur): // zeros from a switch going down are no setting
		g.Result(ch, NotApplied, env.Setting{}, nowNs)
		return ch, WriteDeferred
	case g.ReadBackOK(ch.Old, cur):
		return ch, WriteGo
	case ch.Kind == KindRevert:
		ch.Old = cur
		ch.New.HeadroomBytes, ch.New.Alpha = cur.HeadroomBytes, cur.Alpha
		return ch, WriteGo
	}
	g.Result(ch, NotApplied, env.Setting{}, nowNs)
	if g.staleTelemetry(ch.Key, cur) {
		return ch, WriteStaleTelemetry
	}
	g.Adopt(ch.Key, cur, cur, nowNs)
	return ch, WriteSkipped
}

// NotExternal takes a read of queue k after the guard alarmed that another
// writer changed it (RuleExternal): when the switch runs the agent's own
// last setting (cur), the telemetry was stale (an ON_CHANGE update lost),
// no one else wrote it, and the guard takes the read as the queue's
// setting and lifts the yield. It reports whether it did.
func (c *Core) NotExternal(k env.QueueKey, cur env.Setting) bool {
	return validSetting(cur) && c.guard.staleTelemetry(k, cur)
}

// Resolution is how Reconcile ends an audit entry a crash left open.
type Resolution struct {
	Seq   uint64
	State AuditState
	Got   *env.Setting
	Msg   string
	// Note is for the log ("" none); Warn: at warning level.
	Note string
	Warn bool
	// Retry: the entry stays open for another attempt.
	Retry bool
	// Wait (with Retry): the entry's confirmed commit may still be
	// pending on the switch (AuditEntry.CommitPending); it is left as it
	// is, not resolved, and judged once the commit has settled.
	Wait bool
}

// Reconcile resolves one target's open audit entries by the settings the
// switch reports now: applied (the guard adopts the change, its hold
// counting from now), abandoned (the switch runs the old setting, or
// neither, which becomes the new baseline), superseded by a newer entry of
// the same queue, or left open when the switch does not report the queue,
// or when the entry's confirmed commit may still be pending (Wait: its
// read is no verdict until the switch has confirmed or reverted it).
// readNs is when the read of got was asked: a commit pending then may
// have been pending when the switch answered, however late the answer
// lands (nowNs).
func (c *Core) Reconcile(entries []AuditEntry, got map[env.QueueKey]env.Setting, readNs, nowNs int64) []Resolution {
	res := reconcile(entries, got, readNs, c.guard.ReadBackOK, func(k env.QueueKey, from, to env.Setting) {
		// The change took effect at some time up to now: its hold counts
		// from now, not from the intent.
		c.guard.Adopt(k, from, to, nowNs)
	})
	waits := map[env.QueueKey]bool{}
	for i, r := range res {
		waits[entries[i].Key] = waits[entries[i].Key] || r.Wait
		if r.Wait {
			c.AwaitCommit(entries[i].Key) // a change in flight until judged
		}
	}
	for k, w := range waits {
		if !w && c.awaiting[k] {
			delete(c.awaiting, k)
			c.guard.queue(k).pending = false // judged: the guard takes the queue back
		}
	}
	return res
}

// AwaitCommit holds queue k while the change of an open audit entry may
// still be pending on the switch: a confirmed commit (left by a crash:
// AuditEntry.CommitPending), or a Set without an answer that may still
// land (AuditEntry.MayLand). The guard takes it as a change in flight, so
// that it decides nothing on the queue and takes neither what the switch
// runs meanwhile (the change, which the switch may yet revert) nor the
// revert for another writer's doing, until Reconcile judges the entry.
func (c *Core) AwaitCommit(k env.QueueKey) {
	if c.awaiting == nil {
		c.awaiting = map[env.QueueKey]bool{}
	}
	c.awaiting[k] = true
	c.guard.queue(k).pending = true
}

// ReconcileOpen is Reconcile without a guard (a tool that runs while the
// agent does not, such as `ecntune agent rollback`): open entries resolved
// by the settings the switch reports in a read asked at readNs, as the
// agent would at its start.
func ReconcileOpen(entries []AuditEntry, got map[env.QueueKey]env.Setting, readNs int64) []Resolution {
	return reconcile(entries, got, readNs, ReadBackMatches, func(env.QueueKey, env.Setting, env.Setting) {})
}

// reconcile is Reconcile's judgement: match says whether the switch runs
// a setting, adopt hands the guard what a queue runs now (from: the
// setting a tune or fallback was judged against).
//
// An entry whose Set went as a confirmed commit is not judged while the
// commit may still be pending (before its RevertByNs): an agent killed
// between the Set and the confirm leaves a commit the switch reverts when
// its rollback duration ends, and one killed just after the confirm
// leaves one the switch keeps; a read shows the change in both. Taking
// that read as applied would have the audit log and the guard say a
// setting runs that the switch is about to drop. Cancelling the commit
// at the start instead would need its id, which the client makes as the
// Set goes out and which died with the process (nor would a cancel that
// does not reach the switch settle anything), so the entry waits: after
// RevertByNs the switch has settled the commit either way, and what it
// runs is the verdict: the new setting (the confirm had reached it), or
// the old one (never confirmed, reverted). The wait is bounded by the
// rollback duration the operator chose, and while the commit is pending
// the switch refuses other Sets anyway.
func reconcile(entries []AuditEntry, got map[env.QueueKey]env.Setting, readNs int64, match func(want, got env.Setting) bool, adopt func(k env.QueueKey, from, to env.Setting)) []Resolution {
	newest := map[env.QueueKey]uint64{}
	for _, e := range entries {
		newest[e.Key] = e.Seq
	}
	out := make([]Resolution, 0, len(entries))
	for _, e := range entries {
		g, present := got[e.Key]
		ok := present && validSetting(g) // zeros from a switch going down are no setting
		r := Resolution{Seq: e.Seq, State: StateAbandoned, Got: &g}
		if !ok {
			r.Got = nil
		}
		switch {
		case newest[e.Key] != e.Seq:
			r.Msg = "superseded by a later intent"
		case e.CommitPending(readNs):
			r.State, r.Got, r.Retry, r.Wait = e.State, nil, true, true
			r.Msg = fmt.Sprintf("its confirmed commit may still be pending on the switch: judged once the switch has confirmed or reverted it, after %s",
				time.Unix(0, e.RevertByNs).UTC().Format(time.RFC3339))
		case e.MayLand(readNs) && !(ok && match(e.New, g)):
			// a Set without an answer (its writer killed, or timed out)
			// may still land: the old setting now is no verdict (a
			// restarted agent called one not applied, tuned the queue, and
			// the late Set put it back)
			r.State, r.Got, r.Retry, r.Wait = e.State, nil, true, true
			r.Msg = fmt.Sprintf("its Set may still land on the switch: judged once it no longer can, after %s",
				time.Unix(0, e.LandByNs).UTC().Format(time.RFC3339Nano))
		case ok && match(e.New, g):
			r.State, r.Note = StateReconciled, "reconcile: change found applied"
			from := e.Old
			if e.Kind == KindRepair && e.FromPolicy && e.Least != nil {
				from = *e.Least // the policy's part on probation, as Result
			} else if e.Kind != KindTune && e.Kind != KindFallback {
				from = e.New
			}
			adopt(e.Key, from, e.New)
		case ok && match(e.Old, g):
			r.Msg, r.Note = "switch still runs the old setting", "reconcile: change found not applied"
			if e.RevertByNs != 0 {
				r.Msg = "switch runs the old setting: the Set did not take, or its commit was not confirmed and the switch reverted it"
			}
			adopt(e.Key, e.Old, e.Old)
		case ok:
			// The switch restarted (back at its startup configuration) or
			// someone else wrote it: Old is stale, what it runs is the new
			// baseline, judged next interval like any queue.
			r.Msg = "switch runs neither old nor new (restarted or written by another): its current setting is the new baseline"
			r.Note, r.Warn = "reconcile: switch runs neither the old nor the new setting; taking it as the new baseline", true
			adopt(e.Key, g, g)
		case present:
			r.State, r.Msg, r.Retry = StateUnreachable, "the switch reported zeros for this queue (a switch going down)", true
			r.Note, r.Warn = "reconcile: queue reported as zeros, will retry", true
		default:
			// the switch answered (a switch that cannot be read is not
			// reconciled) without the queue, past the time the Set could
			// land: retried for ever, it held every write to the switch
			r.Msg = "the switch's answer does not report this queue (a port renamed or removed, a queue unbound): the change is given up"
			r.Note, r.Warn = "reconcile: queue not reported by the switch; change given up", true
		}
		out = append(out, r)
	}
	return out
}

// AuditReason is a change's reason led by every knob it changes: the
// policy's own reason names what it recommended, which the guard may have
// clamped, and a rollback's names none. The two parts are labelled:
// "change: kmin 400KB→696.6KB, ...; wanted: kmin 400KB→900KB, ...: ..."
// for a tune or fallback (the policy's wish), "; why: ..." for the rest.
func AuditReason(c Change) string {
	d := env.DescribeChange(c.Old, c.New)
	if strings.HasPrefix(c.Reason, d+":") || c.Reason == d {
		return c.Reason
	}
	if c.Reason == "" {
		return d
	}
	label := "why"
	switch c.Kind {
	case KindTune, KindFallback, "":
		label = "wanted"
	}
	return "change: " + d + "; " + label + ": " + c.Reason // "change", not "applied": a failed or abandoned entry carries it too
}
