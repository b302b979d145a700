package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/gnmiclient"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// The switch I/O of a closed loop runs one flight per target at a time, on
// a goroutine of its own, so that a slow or hung switch holds up only its
// own queues: they stay pending in the guard until its flight returns, and
// changes for a target with a flight under way wait (RuleBusy). Every
// decision stays on the driver's goroutine: a flight only reads and writes
// the switch and hands back what it saw (ioDone), which the driver judges
// with the core. A change goes through three stages:
//
//  1. read before write (stageConfirm): the switch's current setting,
//     which must be the one the change was computed from (core.Confirm):
//     no Set is computed on a switch's past (a restart between two
//     samples, another writer);
//  2. write ahead: the audit intent, on the driver's goroutine;
//  3. set and read back (stageSet), judged by core.ReadBack and settled.
//
// A read-back mismatch orders a rollback to the last known good setting,
// set (stageSet) in a second round with no further round after it.
// Reconciling entries a crash or a lost answer left open reads the switch
// the same way (stageReconcile).
type ioStage int

const (
	stageConfirm ioStage = iota
	stageSet
	stageReconcile
	stageVerify // a read of queues the guard thinks another writer changed
)

// ioDone is one target's flight and what it brought back.
type ioDone struct {
	target  string
	stage   ioStage
	changes []core.Change     // stageConfirm, stageSet
	seqs    []uint64          // stageSet: their audit entries
	second  bool              // read-back rollbacks: no further round
	entries []core.AuditEntry // stageReconcile
	askedNs int64             // stageReconcile: the agent's clock as the read was asked
	keys    []env.QueueKey    // stageVerify
	start   time.Time

	got    map[env.QueueKey]env.Setting
	err    error // the read's
	setErr error // stageSet: the Set's

	token   int64             // the Gate's fencing token (Options.Gate)
	written []core.AuditEntry // stageSet: the intents, for Gate.Fence
	fenced  bool              // stageSet: the Gate refused; nothing was sent
}

// Gate says whether this agent may write a switch, and fences each write:
// a member of a fleet (agent/fleet.Node) writes only the switches it owns,
// and a deposed owner can start no write. Nil: every switch is the
// agent's.
type Gate interface {
	// Writable: the agent may start a write to target now; token fences
	// it.
	Writable(target string, now time.Time) (token int64, ok bool)
	// Fence records the intents of a write under token before the Set,
	// and fails when the agent no longer owns target.
	Fence(ctx context.Context, target string, token int64, intents []core.AuditEntry) error
}

// RuleNotOwner is the reason a change waits: another agent of the fleet
// owns the switch (or this one may not write it yet: Gate).
const RuleNotOwner = "not-owner"

// RuleBusy is the reason a change waits: its target's last Set or read has
// not returned yet.
const RuleBusy = "target-busy"

// RuleSetBackoff is the reason a change waits: its target's last Sets
// failed, and writes back off (setBackoff).
const RuleSetBackoff = "set-backoff"

// setFailures counts one target's Sets in a row that failed.
type setFailures struct {
	n       int
	last    string // the last error
	untilNs int64  // no write before (unix ns)
	said    int64  // untilNs of the backoff last logged
}

// Set failures in a row before a target's writes back off, and the
// longest wait.
const (
	setFailsBeforeBackoff = 2
	maxSetBackoff         = 5 * time.Minute
)

// setFailed (callers hold a.mu) counts a Set the switch answered with an error: from the
// second in a row the target's writes wait, one interval, then twice as
// long each time, up to maxSetBackoff (a switch refusing every Set was
// sent one every few seconds, each a checkpoint and a config save on
// SONiC). An answer that says nothing of the outcome (core.ErrSetOutcomeUnknown)
// is no failure: its queues wait for their landing anyway.
func (a *Agent) setFailed(target string, err error, nowNs int64) {
	if a.setFails == nil {
		a.setFails = map[string]*setFailures{}
	}
	f := a.setFails[target]
	if f == nil {
		f = &setFailures{}
		a.setFails[target] = f
	}
	f.n++
	f.last = err.Error()
	if f.n >= setFailsBeforeBackoff {
		wait := a.cfg.Interval << min(f.n-setFailsBeforeBackoff, 20)
		f.untilNs = nowNs + int64(min(wait, maxSetBackoff))
	}
}

// setSucceeded ends a target's run of failed Sets. Callers hold a.mu.
func (a *Agent) setSucceeded(target string) {
	if f := a.setFails[target]; f != nil {
		if f.n >= setFailsBeforeBackoff {
			a.log.Info("Sets succeed again", "target", target, "failed_before", f.n)
		}
		delete(a.setFails, target)
	}
}

// setBackoff says until when (unix ns) target's writes wait after failed
// Sets (0: they do not), logging each new wait once.
func (a *Agent) setBackoff(target string, nowNs int64) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.setFails[target]
	if f == nil || nowNs >= f.untilNs {
		return 0
	}
	if f.said != f.untilNs {
		f.said = f.untilNs
		a.log.Warn("writes back off: the switch failed the last Sets", "target", target, "failed_in_a_row", f.n,
			"next_try_in", time.Duration(f.untilNs-nowNs).Round(time.Millisecond), "last_error", f.last)
	}
	return f.untilNs
}

// deferProblem says, for /healthz, that target's changes have waited for
// longer than config.HealthStaleIntervals intervals because the switch
// cannot be read before a write (a switch too slow for the set timeout, or
// whose Gets fail: its telemetry may look fine). Callers hold a.mu.
func (a *Agent) deferProblem(target string, now time.Time) string {
	ti := a.tinfo[target]
	if ti == nil || ti.deferSince.IsZero() {
		return ""
	}
	// a deferred change is held min-hold before it is tried (and read)
	// again: deferrals that stopped that long ago are over
	if now.Sub(ti.deferLast) > a.cfg.Guardrails.MinHold+2*a.cfg.Interval {
		return ""
	}
	if age := now.Sub(ti.deferSince); age > config.HealthStaleIntervals*a.cfg.Interval {
		return fmt.Sprintf("%s: no change written for %s: the switch cannot be read before a write (%v); the read (bindings, then profiles) must fit in the set timeout %s",
			target, age.Round(time.Second), ti.deferErr, a.setTimeout(target))
	}
	return ""
}

// setFailureProblem is the health problem of target's failed Sets ("" none).
// Callers hold a.mu.
func (a *Agent) setFailureProblem(target string) string {
	f := a.setFails[target]
	if f == nil || f.n < setFailsBeforeBackoff {
		return ""
	}
	return fmt.Sprintf("%s: the last %d Sets failed (%s): writes back off, up to %s between tries", target, f.n, f.last, maxSetBackoff)
}

// apply sets a batch of changes (written ahead, read back, settled) and
// waits for the flights as Options.IOWait says. first: the interval's
// batch (LastChanges), whose read-back mismatches get a rollback round.
func (a *Agent) apply(ctx context.Context, changes []core.Change, first bool) {
	var held map[string]bool // targets whose changes wait (busy, not owned, a commit pending)
	if first {
		// the interval's batch, even an empty one ("changed in the last
		// interval" must not show an old batch), less the changes held
		// below (it counted them as made)
		defer func() {
			a.mu.Lock()
			a.lastPlan = a.lastPlan[:0]
			for _, c := range changes {
				if !held[c.Key.Target] {
					a.lastPlan = append(a.lastPlan, c)
				}
			}
			a.mu.Unlock()
		}()
	}
	hold := func(target, rule string, cs []core.Change) {
		if held == nil {
			held = map[string]bool{}
		}
		held[target] = true
		for _, c := range cs {
			a.core.Hold(c)
		}
		a.drop(rule, cs...)
		a.o.Instruments.Rejections.WithLabelValues(rule).Add(float64(len(cs)))
	}
	byTarget := map[string][]core.Change{}
	for _, c := range changes {
		byTarget[c.Key.Target] = append(byTarget[c.Key.Target], c)
	}
	for _, target := range slices.Sorted(maps.Keys(byTarget)) {
		cs := byTarget[target]
		sw := a.switches[target]
		switch {
		case a.o.DryRun || sw == nil:
			a.write(ctx, target, cs, !first)
		case a.setBackoff(target, a.o.Clock().UnixNano()) > 0:
			hold(target, RuleSetBackoff, cs)
		case a.commitWait[target] > a.o.Clock().UnixNano():
			// said once, when the wait began (awaitCommits)
			hold(target, RuleCommitPending, cs)
		case a.busy[target]:
			hold(target, RuleBusy, cs)
			a.log.Warn("changes wait: the target's last Set or read has not returned", "target", target, "changes", len(cs))
		case !a.writable(target):
			hold(target, RuleNotOwner, cs)
		case !needsConfirm(cs):
			a.write(ctx, target, cs, !first)
		default:
			a.fly(ctx, ioDone{target: target, stage: stageConfirm, changes: cs, second: !first})
		}
	}
	a.waitIO(ctx, a.ioWait)
}

// deadliner is a Gate whose writes must land by a deadline (a fleet
// member's: before its lease can have expired, agent/fleet Node.Deadline).
type deadliner interface{ Deadline() time.Time }

// setTimeout bounds one Set and its read-back on target: its set-timeout,
// else the agent's.
func (a *Agent) setTimeout(target string) time.Duration {
	if t := a.targets[target].SetTimeout; t > 0 {
		return t
	}
	return a.o.SetTimeout
}

// writeContext bounds one flight's switch I/O by the set timeout, and a
// write's also by the Gate's deadline: a member whose lease may be gone
// has no write on the wire (the fleet's safety, agent/fleet Config.Safe).
func (a *Agent) writeContext(ctx context.Context, target string, write bool) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.setTimeout(target))
	if dl, ok := a.o.Gate.(deadliner); ok && write {
		dctx, dcancel := context.WithDeadline(cctx, dl.Deadline())
		return dctx, func() { dcancel(); cancel() }
	}
	return cctx, cancel
}

// mayStillWrite says whether a write that follows a flight (a Set after
// its read, a rollback after its read-back) may start now: not once the
// agent stops or an operator has paused the closed loop, nor once the
// Gate no longer lets it write the target (writable, which renews the
// token the write carries).
func (a *Agent) mayStillWrite(target string) bool {
	if a.stopping || a.paused() {
		return false
	}
	if a.o.DryRun || a.switches[target] == nil {
		return true
	}
	if !a.writable(target) {
		a.o.Instruments.Rejections.WithLabelValues(RuleNotOwner).Inc()
		return false
	}
	return true
}

// writable asks the Gate (if any) whether the agent may write target now,
// keeping the token for the write.
func (a *Agent) writable(target string) bool {
	if a.o.Gate == nil {
		return true
	}
	tok, ok := a.o.Gate.Writable(target, a.o.Clock())
	if a.keeper() != nil && !a.adoptedUnder(target, tok) {
		ok = false // not before the guard has what the previous owner kept
	}
	if a.tokens == nil {
		a.tokens = map[string]int64{}
	}
	a.tokens[target] = tok
	return ok
}

// needsConfirm: every change but a read-back rollback (computed from the
// read-back just made) is read before it is written.
func needsConfirm(cs []core.Change) bool {
	for _, c := range cs {
		if c.Kind != core.KindReadBack {
			return true
		}
	}
	return false
}

// fly starts one target's flight.
func (a *Agent) fly(ctx context.Context, d ioDone) {
	if a.busy == nil {
		a.busy = map[string]bool{}
	}
	a.busy[d.target] = true
	a.inFlight++
	sw := a.switches[d.target]
	go func() {
		d.start = time.Now()
		cctx, cancel := a.writeContext(ctx, d.target, d.stage == stageSet)
		defer cancel()
		switch d.stage {
		case stageSet:
			if a.o.Gate != nil {
				if err := a.o.Gate.Fence(cctx, d.target, d.token, d.written); err != nil {
					d.setErr, d.fenced = err, true
					break // a deposed owner sends nothing
				}
				if f := a.cfg.Fleet; f != nil {
					cctx = gnmiclient.WithFence(cctx, gnmipath.Fence{Writer: f.Member, Token: d.token})
				}
			}
			settings := make(map[env.QueueKey]env.Setting, len(d.changes))
			for _, c := range d.changes {
				settings[c.Key] = c.New
			}
			d.setErr = sw.Apply(cctx, settings)
			// Read back in any case: after a failed Set the switch says
			// whether it took the change after all (a timeout may hide
			// a success).
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), a.setTimeout(d.target))
			defer rcancel()
			d.got, d.err = sw.Read(rctx, keysOf(d.changes))
			a.settleCommit(ctx, sw, &d)
		case stageConfirm:
			d.got, d.err = sw.Read(cctx, keysOf(d.changes))
		case stageReconcile:
			keys := make([]env.QueueKey, len(d.entries))
			for i, e := range d.entries {
				keys[i] = e.Key
			}
			d.got, d.err = sw.Read(cctx, keys)
		case stageVerify:
			d.got, d.err = sw.Read(cctx, d.keys)
		}
		a.ioc <- d // buffered for one flight per target: never blocks
	}()
}

func keysOf(cs []core.Change) []env.QueueKey {
	keys := make([]env.QueueKey, len(cs))
	for i, c := range cs {
		keys[i] = c.Key
	}
	return keys
}

// waitIO lands flights until none is under way, or for at most max (0:
// until none is; lockstep and tests, where Sets take effect before time
// goes on). Flights still out land later (Run's loop, landIO).
func (a *Agent) waitIO(ctx context.Context, max time.Duration) {
	var deadline <-chan time.Time
	if max > 0 {
		t := time.NewTimer(max)
		defer t.Stop()
		deadline = t.C
	}
	for a.inFlight > 0 {
		select {
		case d := <-a.ioc:
			a.land(ctx, d)
		case <-deadline:
			return
		}
	}
}

// finishIO sees through the Sets under way as Run ends (their outcomes
// journaled), sending nothing new.
func (a *Agent) finishIO(ctx context.Context) {
	a.stopping = true
	a.waitIO(context.WithoutCancel(ctx), 0)
	a.stopping = false
}

// land takes a flight back on the driver's goroutine and starts what comes
// next.
func (a *Agent) land(ctx context.Context, d ioDone) {
	a.busy[d.target] = false
	a.inFlight--
	switch d.stage {
	case stageConfirm:
		cs := a.confirmed(d)
		if len(cs) > 0 && !a.mayStillWrite(d.target) {
			// the read took a while: no Set once the agent stops, an
			// operator paused the loop or the switch was handed over; the
			// queues are free again
			for _, c := range cs {
				a.core.Hold(c)
			}
			rule := RuleNotOwner
			switch {
			case a.stopping:
				rule = "stopping"
			case a.paused():
				rule = "paused"
			}
			a.drop(rule, cs...)
			cs = nil
		}
		if len(cs) > 0 {
			a.write(ctx, d.target, cs, d.second)
		}
	case stageSet:
		a.setLanded(ctx, d)
	case stageReconcile:
		a.reconciled(d.target, d.entries, d.askedNs, d.got, d.err)
	case stageVerify:
		a.verified(d)
	}
}

// verifyExternal reads the queues the guard found changed by another
// writer (rule external-writer, from two intervals of telemetry): a
// telemetry stall that lost the switch's ON_CHANGE updates shows the
// setting before the agent's last change, and the guard yielded the
// queues for a minute on that (20 false alarms after a 40 s stall). A
// target with a flight under way is read by that flight's own checks.
func (a *Agent) verifyExternal(ctx context.Context, alarms []core.Alarm) {
	for _, al := range alarms {
		if al.Rule == core.RuleExternal && al.Key != nil && a.switches[al.Target] != nil {
			if a.toVerify == nil {
				a.toVerify = map[string][]env.QueueKey{}
			}
			a.toVerify[al.Target] = append(a.toVerify[al.Target], *al.Key)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(a.toVerify)) {
		if !a.busy[t] { // else at the next interval
			a.fly(ctx, ioDone{target: t, stage: stageVerify, keys: a.toVerify[t]})
			delete(a.toVerify, t)
		}
	}
}

// verified takes the read of queues alarmed as changed by another writer:
// those that run the agent's own last setting were the telemetry's doing
// (core.Core.NotExternal): the yield is lifted and the target's telemetry
// rebuilt.
func (a *Agent) verified(d ioDone) {
	if d.err != nil {
		return // the alarm stands
	}
	stale := 0
	for _, k := range d.keys {
		if cur, ok := d.got[k]; ok && a.core.NotExternal(k, cur) {
			stale++
			a.log.Warn("not another writer after all: the switch runs the agent's own setting, its telemetry missed the change; yield lifted",
				"queue", k.String(), "runs", cur.Describe())
		}
	}
	if stale > 0 {
		a.resync(d.target)
	}
}

// confirmed judges a flight's read before write: the changes that go
// ahead, the others deferred (unreadable) or skipped (computed on a
// setting the switch no longer runs).
func (a *Agent) confirmed(d ioDone) []core.Change {
	nowNs := a.o.Clock().UnixNano()
	var out []core.Change
	stale := false
	defer func() {
		if stale {
			a.resync(d.target)
		}
	}()
	var deferred []core.Change
	defer func() { a.logDeferred(d.target, deferred, d.err) }()
	if d.err == nil {
		a.mu.Lock()
		a.info(d.target).deferSince = time.Time{} // read: writes go again
		a.mu.Unlock()
	}
	for _, c := range d.changes {
		if c.Kind == core.KindReadBack {
			out = append(out, c)
			continue
		}
		cur, ok := d.got[c.Key]
		c, verdict := a.core.Confirm(c, cur, ok && d.err == nil, nowNs)
		switch verdict {
		case core.WriteGo:
			out = append(out, c)
		case core.WriteDeferred:
			deferred = append(deferred, c)
			a.drop("switch-unread", c)
		case core.WriteStaleTelemetry:
			stale = true
			a.drop("stale-telemetry", c)
			a.log.Warn("change not written: the switch runs the setting the agent set last, its telemetry says otherwise (an update lost); resynchronising the target's telemetry",
				"queue", c.Key.String(), "kind", c.Kind, "telemetry", c.Old.Describe(), "runs", cur.Describe())
		case core.WriteSkipped:
			a.o.Instruments.Rejections.WithLabelValues("stale-setting").Inc()
			a.drop("stale-setting", c)
			a.log.Warn("change not written: the switch no longer runs the setting it was computed from (restarted or written by another); its current setting is the new baseline",
				"queue", c.Key.String(), "kind", c.Kind, "expected", c.Old.Describe(), "runs", cur.Describe(), "differs", core.SettingDiff(c.Old, cur))
		}
	}
	return out
}

// logDeferred says which changes of target were deferred as its switch
// could not be read before the write: one line per batch, then at most
// every TelemetryRepeat with how many since (an unreachable switch gave
// one warning per queue per interval: 372 in 18 s for 20 queues).
func (a *Agent) logDeferred(target string, cs []core.Change, err error) {
	if len(cs) == 0 {
		return
	}
	now := a.o.Clock()
	a.mu.Lock()
	ti := a.info(target)
	ti.deferN += len(cs)
	if ti.deferSince.IsZero() {
		ti.deferSince = now
	}
	ti.deferLast, ti.deferErr = now, err
	n := ti.deferN
	due := now.Sub(ti.deferLogged) >= TelemetryRepeat
	if due {
		ti.deferLogged, ti.deferN = now, 0
	}
	a.mu.Unlock()
	if due {
		a.log.Warn("changes deferred: cannot read the switch's current setting before writing (said again at most once a minute)",
			"target", target, "changes", n, "e.g.", cs[0].Key.String(), "err", err)
	}
}

// Resyncer is a Switch whose telemetry can be rebuilt from scratch
// (gnmiclient.Switch.Resync).
type Resyncer interface{ Resync() }

// resync rebuilds a target's telemetry found stale, counted as an alarm.
func (a *Agent) resync(target string) {
	a.o.Instruments.Alarms.WithLabelValues("stale-telemetry").Inc()
	if r, ok := a.switches[target].(Resyncer); ok {
		r.Resync()
	}
}

// write journals the intent of one target's changes, then sets them (a
// flight), or, in a dry run or for a target without a switch, settles them
// as not applied. Without a write-ahead record there is no Set.
func (a *Agent) write(ctx context.Context, target string, cs []core.Change, second bool) {
	sw := a.switches[target]
	written, err := a.intend(target, sw, cs)
	nowNs := a.o.Clock().UnixNano()
	if err != nil {
		a.log.Error("audit log", "target", target, "err", err)
		for _, c := range cs {
			a.settle(core.Result{Change: c, Outcome: core.NotApplied, Err: err}, nowNs)
		}
		return
	}
	if a.o.DryRun || sw == nil {
		for i, c := range cs {
			a.log.Info("dry run: would set", "queue", c.Key.String(), "kind", c.Kind, "old", c.Old, "new", c.New, "reason", c.Reason)
			a.settle(core.Result{Change: c, Seq: written[i].Seq, Outcome: core.NotApplied}, nowNs)
		}
		return
	}
	seqs := make([]uint64, len(written))
	for i, e := range written {
		seqs[i] = e.Seq
	}
	a.fenced(written)
	a.fly(ctx, ioDone{target: target, stage: stageSet, changes: cs, seqs: seqs, second: second, token: a.tokens[target], written: written})
}

// setLanded judges a Set by its read-back and settles each change; the
// rollbacks the core orders after a mismatch go out in a second round.
func (a *Agent) setLanded(ctx context.Context, d ioDone) {
	if d.fenced {
		nowNs := a.o.Clock().UnixNano()
		a.o.Instruments.Rejections.WithLabelValues(RuleNotOwner).Add(float64(len(d.changes)))
		for i, c := range d.changes {
			a.settle(core.Result{Change: c, Seq: d.seqs[i], Outcome: core.NotApplied, Err: fmt.Errorf("not sent: %w", d.setErr)}, nowNs)
		}
		return
	}
	cs, setErr := d.changes, d.setErr
	var refused *gnmipath.HeadroomError
	if herr := (*gnmipath.HeadroomError)(nil); errors.As(setErr, &herr) {
		refused = herr
		// The ECN changes went through; the switch refused the headroom.
		// Judge the ECN change on its own, and say so loudly.
		a.o.Instruments.Alarms.WithLabelValues("headroom-refused").Inc()
		msg := "headroom Set refused; ECN change applied without it"
		if errors.Is(herr, core.ErrSetOutcomeUnknown) {
			msg = "headroom Set not answered (it may still land); ECN change applied"
		}
		a.log.Warn(msg, "target", d.target, "err", herr)
		cs = slices.Clone(cs)
		for i := range cs {
			cs[i].New = readBackWant(cs[i].New, true)
		}
		setErr = nil
	}
	a.mu.Lock()
	switch {
	case setErr != nil && !errors.Is(setErr, core.ErrSetOutcomeUnknown):
		a.setFailed(d.target, setErr, a.o.Clock().UnixNano())
	case setErr == nil:
		a.setSucceeded(d.target)
	}
	a.mu.Unlock()
	switch {
	case setErr != nil:
		a.o.Instruments.Sets.WithLabelValues("error").Inc()
	case d.err != nil:
		a.o.Instruments.SetLatency.Observe(time.Since(d.start).Seconds())
		a.o.Instruments.Sets.WithLabelValues("readback-error").Inc()
	default:
		a.o.Instruments.SetLatency.Observe(time.Since(d.start).Seconds())
		a.o.Instruments.Sets.WithLabelValues("ok").Inc()
	}
	results := a.core.ReadBack(d.target, cs, setErr, d.got, d.err) // in the order of cs
	for i := range results {
		results[i].Seq = d.seqs[i]
		if refused != nil && results[i].Outcome == core.Applied && d.changes[i].New.HeadroomBytes != results[i].Got.HeadroomBytes {
			// the audit says what was applied: not the headroom asked for
			results[i].Err = errors.New(headroomRefused(d.changes[i].New.HeadroomBytes, results[i].Got.HeadroomBytes, headroomErrorOf(refused, results[i].Key)))
		}
	}
	sort.Slice(results, func(i, j int) bool { return env.QueueKeyLess(results[i].Key, results[j].Key) })
	nowNs := a.o.Clock().UnixNano()
	var second []core.Change
	for i := range results {
		if rb := a.settle(results[i], nowNs); rb != nil {
			second = append(second, *rb)
		}
	}
	if len(second) > 0 && (d.second || !a.mayStillWrite(d.target)) {
		for _, rb := range second {
			a.core.Drop(rb, nowNs)
		}
		second = nil
	}
	if len(second) > 0 {
		a.write(ctx, d.target, second, true)
	}
}

// intend writes the audit entries of one target's changes ahead of the
// Set (sw nil: a target without a switch, no paths).
func (a *Agent) intend(target string, sw Switch, cs []core.Change) ([]core.AuditEntry, error) {
	entries := make([]core.AuditEntry, len(cs))
	nowNs := a.o.Clock().UnixNano()
	for i, c := range cs {
		var paths []string
		if sw != nil {
			paths = sw.SetPaths([]env.QueueKey{c.Key})
		}
		entries[i] = core.AuditEntry{TimeNs: nowNs, Target: target, Paths: paths, Model: a.o.Model, Owner: a.cfg.Owner,
			Change: core.Change{Key: c.Key, Kind: c.Kind, Old: c.Old, New: c.New, Wanted: c.Wanted, Reason: core.AuditReason(c), ApprovedBy: c.ApprovedBy}}
		if a.o.DryRun {
			entries[i].State = core.StateDryRun
		}
		if sw != nil && !a.o.DryRun {
			// a Set that times out may land later: no verdict before
			// then (core.AuditEntry.MayLand)
			entries[i].LandByNs = nowNs + int64(2*a.setTimeout(target))
		}
		if rd := a.targets[target].CommitConfirmed; rd > 0 && sw != nil && !a.o.DryRun {
			// the flight's Set is bounded by the set timeout (writeContext)
			entries[i].RevertByNs = revertBy(nowNs, a.setTimeout(target), rd)
		}
		if f := a.cfg.Fleet; f != nil {
			entries[i].Writer, entries[i].Token = f.Member, a.tokens[target]
		}
	}
	return a.o.Journal.Intent(entries)
}

// settle accounts for one result: counters and log, then the core, then
// the journal (whoever sees the entry resolved in the audit log also sees
// it counted; an unknown outcome stays open for Reconcile). It returns the
// rollback the core orders.
func (a *Agent) settle(r core.Result, nowNs int64) *core.Change {
	switch r.Outcome {
	case core.Applied:
		a.o.Instruments.Applied(r.Key, r.New)
		if r.Kind != core.KindTune && r.Kind != core.KindFallback {
			a.o.Instruments.Rollbacks.WithLabelValues(string(r.Kind)).Inc()
		}
		a.log.Info("applied", "queue", r.Key.String(), "kind", r.Kind, "kmin", r.New.KminBytes,
			"kmax", r.New.KmaxBytes, "pmax", r.New.Pmax, "reason", r.Reason)
	case core.NotApplied:
		if r.Err != nil && !r.Unknown { // an unknown outcome is said below, not as a failure too
			a.log.Warn("set failed", "queue", r.Key.String(), "kind", r.Kind, "err", r.Err)
		}
	}
	if r.Unknown {
		a.pending = true
		a.log.Warn("set outcome unknown, left for reconcile", "queue", r.Key.String(), "err", r.Err)
	}
	s := a.core.Settle(r, a.o.DryRun, nowNs)
	if s.Resolve {
		// The guard's memory of the queue goes with the audit entry.
		if err := a.o.Journal.Resolve(r.Seq, s.State, s.Got, s.Msg, nowNs, s.Memory); err != nil {
			a.log.Error("audit log", "err", err)
		}
		if e, ok := a.fleet.open[r.Seq]; ok {
			delete(a.fleet.open, r.Seq)
			a.resolvedEntry(e, s.State, s.Got, s.Msg, nowNs)
		}
	}
	if s.Alarm != nil {
		a.o.Instruments.Alarms.WithLabelValues(s.Alarm.Rule).Inc()
		a.log.Warn(s.Alarm.Msg, "target", s.Alarm.Target, "rule", s.Alarm.Rule, "queue", r.Key.String())
	}
	return s.Rollback
}

// Reconcile resolves audit entries a crash left without a result: it reads
// each target's switch and lets the core judge each entry
// (core.Reconcile): applied, abandoned, or left for another attempt. The
// targets are read in parallel and waited for (at the start of Run).
func (a *Agent) Reconcile(ctx context.Context) error {
	if err := a.reconcileAsync(ctx); err != nil {
		return err
	}
	a.waitIO(ctx, 0)
	return nil
}

// reconcileAsync starts a reconcile flight for each target with open
// entries and no flight under way (one with a flight is left for later).
func (a *Agent) reconcileAsync(ctx context.Context) error {
	pend, err := a.o.Journal.Pending()
	if err != nil {
		return err
	}
	a.pending = false
	byTarget := map[string][]core.AuditEntry{}
	open := make(map[uint64]bool, len(pend))
	for _, e := range pend {
		byTarget[e.Target] = append(byTarget[e.Target], e)
		open[e.Seq] = true
	}
	for seq := range a.landRead {
		if !open[seq] {
			delete(a.landRead, seq) // resolved
		}
	}
	nowNs := a.o.Clock().UnixNano()
	for _, t := range slices.Sorted(maps.Keys(byTarget)) {
		es := a.awaitLanding(byTarget[t], nowNs)
		if len(es) == 0 {
			continue
		}
		switch {
		case a.switches[t] == nil:
			a.log.Warn("reconcile: audit entries for a target not in the configuration left pending", "target", t, "entries", len(es))
		case a.awaitCommits(t, es, nowNs):
			a.pending = true // read once the switch has settled the commits
		case a.busy[t]:
			a.pending = true // its own flight first
		default:
			a.fly(ctx, ioDone{target: t, stage: stageReconcile, entries: es, askedNs: nowNs})
		}
	}
	return nil
}

// awaitLanding holds the queues of open entries whose Set may still land
// (core.AuditEntry.MayLand, not a confirmed commit: awaitCommits has
// those) as changes in flight, and returns those to read now: each such
// entry is read once a set timeout (a Set that landed is found applied),
// not every interval, for the read's flight makes the whole target busy,
// every change to it held (the entries stay pending, read again later).
func (a *Agent) awaitLanding(es []core.AuditEntry, nowNs int64) []core.AuditEntry {
	out := es[:0:0]
	for _, e := range es {
		if e.MayLand(nowNs) && e.RevertByNs == 0 {
			a.core.AwaitCommit(e.Key)
			if nowNs < a.landRead[e.Seq] {
				a.pending = true
				continue
			}
			if a.landRead == nil {
				a.landRead = map[uint64]int64{}
			}
			a.landRead[e.Seq] = nowNs + int64(a.setTimeout(e.Target))
		} else if a.landRead != nil {
			delete(a.landRead, e.Seq)
		}
		out = append(out, e)
	}
	return out
}

// awaitCommits notes, for target t, the open entries es whose confirmed
// commit may still be pending on the switch at nowNs (left by a crash
// between a Set and its confirm, or just after the confirm: only the
// switch knows which until the commit's rollback duration has run out,
// core.AuditEntry.CommitPending). The target is not written until the
// last of them has settled (RuleCommitPending): the switch refuses other
// Sets while a commit is pending, and what the queue runs is not known;
// the guard holds their queues as changes in flight (core.AwaitCommit).
// It says whether every entry of es waits (nothing to read yet).
func (a *Agent) awaitCommits(t string, es []core.AuditEntry, nowNs int64) bool {
	var until int64
	waiting := 0
	for _, e := range es {
		if e.CommitPending(nowNs) {
			waiting++
			until = max(until, e.RevertByNs)
			a.core.AwaitCommit(e.Key)
		}
	}
	if waiting == 0 {
		return false
	}
	if a.commitWait == nil {
		a.commitWait = map[string]int64{}
	}
	if a.commitWait[t] != until {
		a.log.Warn("open audit entries have a confirmed commit that may still be pending on the switch (its writer stopped, or lost the answer, before it settled): "+
			"they are judged, and the target written, once the switch has confirmed or reverted it",
			"target", t, "entries", waiting, "until", time.Unix(0, until).UTC().Format(time.RFC3339Nano))
	}
	a.commitWait[t] = until
	return waiting == len(es)
}

// reconciled resolves one target's open entries by what its switch
// reports in a read asked at askedNs (core.Reconcile).
func (a *Agent) reconciled(t string, es []core.AuditEntry, askedNs int64, got map[env.QueueKey]env.Setting, err error) {
	nowNs := a.o.Clock().UnixNano()
	if errors.Is(err, gnmipath.ErrNotReported) {
		// the switch answered: the queues it does not report are judged
		// (they held every write to the switch, retried as unreachable)
		got, err = map[env.QueueKey]env.Setting{}, nil
	}
	if err != nil {
		a.pending = true
		a.log.Warn("reconcile: cannot read switch, will retry", "target", t, "err", err)
		for _, e := range es {
			if e.State != core.StateUnreachable {
				_ = a.o.Journal.Resolve(e.Seq, core.StateUnreachable, nil, err.Error(), nowNs)
			}
		}
		return
	}
	for i, r := range a.core.Reconcile(es, got, askedNs, nowNs) {
		a.pending = a.pending || r.Retry
		if r.Wait {
			continue // left as it is until its commit has settled (awaitCommits)
		}
		_ = a.o.Journal.Resolve(r.Seq, r.State, r.Got, r.Msg, nowNs)
		a.resolvedEntry(es[i], r.State, r.Got, r.Msg, nowNs)
		switch {
		case r.Note == "":
		case r.Warn:
			a.log.Warn(r.Note, "queue", es[i].Key.String(), "seq", r.Seq)
		default:
			a.log.Info(r.Note, "queue", es[i].Key.String(), "seq", r.Seq)
		}
	}
}
