package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// UndoBaseline is the toNs of UndoPlan that restores every queue as it
// was before the agent's first change to it.
const UndoBaseline int64 = 1

// UndoPlan works out from the audit log the changes that put target's
// queues back as they were at toNs: per queue, the Old of the earliest
// applied change after toNs (UndoBaseline: the earliest of all). With
// toNs <= 0 it undoes the last change to each queue when the agent made
// it forward (a tune, a fallback): a queue whose last change backs out
// (BacksOut: the guard's rollback, read-back or revert, a safety repair, a
// manual rollback, plain, --to or baseline) is left alone, so that run
// twice, or after --to baseline, or after the guard rolled a change back,
// a plain rollback finds nothing to do instead of re-applying a change.
// Change.Old is what the log says the queue runs now. entries are oldest
// first (an agent's log in Seq order, a fleet's merged audit in the
// order etcd recorded it: MergeFleetAudit): their order, not their Seq, says which change
// came first, as the Seqs of different members' logs do not compare.
func UndoPlan(entries []core.AuditEntry, target string, toNs int64) []core.Change {
	type acc struct {
		first, last     core.AuditEntry
		firstAt, lastAt int // positions in entries
		have            bool
		repairs         []core.AuditEntry
		repairsAt       []int
	}
	per := map[env.QueueKey]*acc{}
	for i, e := range entries {
		if e.Target != target || (e.State != core.StateApplied && e.State != core.StateReconciled) {
			continue
		}
		a := per[e.Key]
		if a == nil {
			a = &acc{}
			per[e.Key] = a
		}
		if toNs > 0 && e.TimeNs >= toNs && !a.have {
			a.first, a.firstAt, a.have = e, i, true
		}
		a.last, a.lastAt = e, i
		if e.Kind == core.KindRepair {
			// a safety repair is never undone (it put the queue back
			// inside the invariants: headroom at the lossless floor,
			// Kmax under XOFF); a restore from before it keeps what it
			// repaired (keepRepairs)
			a.repairs, a.repairsAt = append(a.repairs, e), append(a.repairsAt, i)
		}
	}
	var out []core.Change
	for k, a := range per {
		var restore env.Setting
		var why string
		var from int // the position of the change undone: repairs from it on are kept
		switch {
		case toNs <= 0 && !BacksOut(a.last.Kind):
			// The queue's last change is the agent's step forward. After
			// one that backs out there is nothing of the agent's left to
			// undo: undoing it would write back the setting the guard (or
			// the operator) had just backed out of, and undoing an older
			// change again would re-apply one.
			restore, from = a.last.Old, a.lastAt
			why = fmt.Sprintf("undo audit entry %s (%s)", entryName(a.last), a.last.Kind)
		case toNs == UndoBaseline && a.have:
			restore, from = a.first.Old, a.firstAt
			why = fmt.Sprintf("back to the baseline: the setting before the first change, audit entry %s at %s", entryName(a.first),
				time.Unix(0, a.first.TimeNs).UTC().Format(time.RFC3339))
		case toNs > 0 && a.have:
			restore, from = a.first.Old, a.firstAt
			why = fmt.Sprintf("back to the setting before audit entry %s at %s", entryName(a.first),
				time.Unix(0, a.first.TimeNs).UTC().Format(time.RFC3339))
		default:
			continue
		}
		if kept := keepRepairs(&restore, a.repairs, a.repairsAt, from); kept != "" {
			why += "; " + kept
		}
		if core.SameSetting(restore, a.last.New, 1e-9) {
			continue // already there
		}
		out = append(out, core.Change{Key: k, Kind: core.KindManual, Old: a.last.New, New: restore, Reason: why})
	}
	sort.Slice(out, func(i, j int) bool { return env.QueueKeyLess(out[i].Key, out[j].Key) })
	return out
}

// BacksOut says whether a change of kind k backs a queue out of a setting
// rather than moving it forward: the guard's rollback, read-back and
// revert, a safety repair and a manual rollback. A plain `agent rollback`
// leaves a queue whose last change backs out alone.
func BacksOut(k core.ChangeKind) bool {
	switch k {
	case core.KindRollback, core.KindReadBack, core.KindRevert, core.KindRepair, core.KindManual:
		return true
	}
	return false
}

// entryName names an audit entry in a plan's reason: its Seq, and in a
// fleet the member whose audit log holds it under that Seq ("7 of member
// b").
func entryName(e core.AuditEntry) string {
	if e.Writer == "" {
		return strconv.FormatUint(e.Seq, 10)
	}
	return fmt.Sprintf("%d of member %s", e.Seq, e.Writer)
}

// MergeFleetAudit is the audit a fleet member's undo plan is built from:
// the fleet's audit of its switches in etcd (every member's entries, so a
// switch's changes by its previous owners too) with this member's own
// log, oldest first. An entry in both (the same intent time, writer and
// queue) is counted once: the local one, unless it is still open where
// the fleet's is resolved (another owner judged it since).
//
// The order is the one etcd recorded the entries in (their Rev, as
// ReadAudit reads them), not their times: each member stamps its entries
// by its own clock, and a member whose clock is behind would have its
// later change taken for the first (a rollback to the baseline restoring
// the wrong setting, a plain one undoing the wrong change). An entry of
// the local log the fleet's does not hold (trimmed) goes right after the
// entry before it in the log that the fleet's holds, as the log's order
// says; where none is before it, by its time among the fleet's entries,
// though not after the first entry of the log the fleet's holds. Entries
// with no revision (written outside a fleet, or none read) come first,
// in time order.
func MergeFleetAudit(local, fleetAudit []core.AuditEntry) []core.AuditEntry {
	type id struct {
		t int64
		w string
		k env.QueueKey
	}
	idOf := func(e core.AuditEntry) id { return id{e.TimeNs, e.Writer, e.Key} }
	inFleet := make(map[id]core.AuditEntry, len(fleetAudit))
	for _, e := range fleetAudit {
		inFleet[idOf(e)] = e
	}
	// byTime is the newest revision of the fleet's entries stamped no
	// later than t (0: none)
	byTime := func(t int64) int64 {
		var r int64
		for _, f := range fleetAudit {
			if f.TimeNs <= t && f.Rev > r {
				r = f.Rev
			}
		}
		return r
	}
	// ranked is an entry with where it goes: by rev (0: none, by time
	// before every entry with one), then, for the entries of the local
	// log the fleet's lacks, by sub: before (< 0) or after the entry of
	// rev, in the log's order
	type ranked struct {
		e   core.AuditEntry
		rev int64
		sub int
	}
	out := make([]ranked, 0, len(local)+len(fleetAudit))
	seen := map[id]bool{}
	var before []int // local entries the fleet's lacks, before its first one it holds
	var rev int64    // the newest Rev of the local entries the fleet's holds so far
	for n, e := range local {
		k := idOf(e)
		seen[k] = true
		f, ok := inFleet[k]
		switch {
		case ok:
			if e.Open() && !f.Open() {
				e = f
			}
			e.Rev = f.Rev
			out = append(out, ranked{e: e, rev: f.Rev})
			if f.Rev > rev { // an entry taken over from another owner may be older than the log's last
				for i, at := range before {
					if out[at].rev >= f.Rev {
						out[at].rev, out[at].sub = f.Rev, i-len(before)
					}
				}
				before, rev = nil, f.Rev
			}
		case e.Writer == "":
			out = append(out, ranked{e: e}) // outside a fleet
		case rev > 0:
			out = append(out, ranked{e: e, rev: rev, sub: n + 1})
		default:
			before = append(before, len(out))
			out = append(out, ranked{e: e, rev: byTime(e.TimeNs), sub: n + 1})
		}
	}
	for _, e := range fleetAudit {
		if k := idOf(e); !seen[k] {
			seen[k] = true
			out = append(out, ranked{e: e, rev: e.Rev})
		}
	}
	// one writer's entries of one time keep their log's order
	slices.SortStableFunc(out, func(a, b ranked) int {
		if c := cmp.Compare(a.rev, b.rev); c != 0 {
			return c
		}
		if a.rev > 0 {
			if c := cmp.Compare(a.sub, b.sub); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.e.TimeNs, b.e.TimeNs)
	})
	es := make([]core.AuditEntry, len(out))
	for i, r := range out {
		es[i] = r.e
	}
	return es
}

// keepRepairs bounds a restored setting by the safety repairs after the
// change it undoes (Seq >= from): headroom no lower than a repair raised it
// to, Kmax (and Kmin) no higher than a repair lowered it to, so that an
// undo never puts a lossless queue back below its PFC floor or its Kmax
// above XOFF. at holds each repair's position in the audit (oldest first),
// from the position of the change undone. It says what it kept, "" if
// nothing.
func keepRepairs(s *env.Setting, repairs []core.AuditEntry, at []int, from int) string {
	var kept []string
	for i, r := range repairs {
		if at[i] < from {
			continue
		}
		bound := false
		if r.New.HeadroomBytes > r.Old.HeadroomBytes && s.HeadroomBytes < r.New.HeadroomBytes {
			s.HeadroomBytes, bound = r.New.HeadroomBytes, true
		}
		if r.New.KmaxBytes > 0 && r.New.KmaxBytes < r.Old.KmaxBytes && s.KmaxBytes > r.New.KmaxBytes {
			s.KmaxBytes, bound = r.New.KmaxBytes, true
			if s.KminBytes > r.New.KminBytes {
				s.KminBytes = r.New.KminBytes
			}
		}
		if bound {
			kept = append(kept, entryName(r))
		}
	}
	if len(kept) == 0 {
		return ""
	}
	return "keeping the safety repair of audit entry " + strings.Join(kept, ", ")
}

// ReconcileOpen resolves target's open audit entries (a Set journaled but
// never judged: the agent stopped or crashed in between, or could not read
// the switch) by what sw runs now, as the agent does at its start
// (core.ReconcileOpen), so that an undo plan counts a change the switch
// took. It returns the entries it resolved, and those whose confirmed
// commit may still be pending on the switch (Wait: left open, their state
// unchanged, saying until when); queues the switch does not report stay
// open.
// With dryRun it judges them and writes nothing.
func ReconcileOpen(ctx context.Context, j *journal.Journal, sw Switch, now func() time.Time, dryRun bool) ([]core.Resolution, error) {
	pend, err := j.Pending()
	if err != nil {
		return nil, err
	}
	var open []core.AuditEntry
	var keys []env.QueueKey
	for _, e := range pend {
		if e.Target == sw.Name() {
			open = append(open, e)
			keys = append(keys, e.Key)
		}
	}
	if len(open) == 0 {
		return nil, nil
	}
	asked := now().UnixNano() // a commit pending as the read is asked may be pending when it is answered
	got, err := sw.Read(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("target %s: reading the queues of %d open audit entries: %w", sw.Name(), len(open), err)
	}
	var done []core.Resolution
	for _, r := range core.ReconcileOpen(open, got, asked) {
		if r.Wait {
			done = append(done, r) // said, not resolved
			continue
		}
		if r.Retry {
			continue
		}
		if dryRun {
			done = append(done, r)
			continue
		}
		if err := j.Resolve(r.Seq, r.State, r.Got, r.Msg, now().UnixNano()); err != nil {
			return done, fmt.Errorf("audit entry %d: %w", r.Seq, err)
		}
		done = append(done, r)
	}
	return done, nil
}

// SortManual sorts manual changes by what the queues run (cur, as read):
// to write (Old then what the queue runs, where it was read), skipped (Old
// set, and the queue runs another: ApplyManual's rule) and already there
// (the queue runs New), the last two with Old what the queue runs.
func SortManual(changes []core.Change, cur map[env.QueueKey]env.Setting) (todo, skipped, there []core.Change) {
	for _, c := range changes {
		g, ok := cur[c.Key]
		if !ok {
			todo = append(todo, c)
			continue
		}
		moved := c.Old != (env.Setting{}) && !core.ReadBackMatches(c.Old, g)
		c.Old = g
		switch {
		case core.ReadBackMatches(c.New, g):
			there = append(there, c)
		case moved:
			skipped = append(skipped, c)
		default:
			todo = append(todo, c)
		}
	}
	return todo, skipped, there
}

// ApplyManual journals (write-ahead) and applies changes to one switch
// outside the control loop, as `ecntune agent rollback` does: it reads the
// switch first so that Old is what the switch really runs, skips queues
// already there, sets the rest in one Set, reads back and records results.
// A change whose Old is set was computed from that setting (an undo: what
// the audit log says the agent left there): a queue that runs another (the
// switch restarted, another writer) is left alone and returned in skipped
// with Old what it runs, as the loop leaves a change computed from a
// setting the switch no longer runs (core.Confirm): a write there would
// not undo the agent's change but overwrite what replaced it. A change
// with Old unset is written whatever the queue runs.
func ApplyManual(ctx context.Context, j *journal.Journal, sw Switch, changes []core.Change, owner string, now func() time.Time) (written []core.AuditEntry, skipped []core.Change, err error) {
	return ApplyManualShared(ctx, j, sw, changes, owner, now, nil)
}

// ManualShare takes a manual change's audit entries to a fleet's audit in
// etcd (agent/fleet RecordManual), as the loop's go there (Gate.Fence,
// Record): the member named their Writer (in this agent's log too, so
// that MergeFleetAudit counts an entry of both once), and Put, which
// writes them (their intents before the Set, again once resolved) or
// fails, fenced or unanswered.
//
// Put also takes the guard's memory of the queues a result changed (nil
// with the intents), to go to the fleet's with the results: based on
// Memory's, the fleet's memory of the switch (its owners' latest; nil:
// this agent's db alone), so that the switch's next owner expects what
// the manual change left there and holds it as the loop holds its own.
type ManualShare struct {
	Member string
	Put    func(ctx context.Context, target string, es []core.AuditEntry, mems []core.QueueMemory) error
	Memory func(ctx context.Context, target string) ([]core.QueueMemory, error)
}

// ApplyManualShared is ApplyManual in a fleet (share; nil: none): the
// intents reach the fleet's audit before the Set, which is not sent when
// they cannot (a rollback beside a member that took the switch, or an
// etcd that does not answer: its entries fail, saying so), and the
// results after. A result the fleet did not take is an error naming the
// entries; they stay open there, for the switch's next owner to judge by
// the switch's read-back.
func ApplyManualShared(ctx context.Context, j *journal.Journal, sw Switch, changes []core.Change, owner string, now func() time.Time, share *ManualShare) (written []core.AuditEntry, skipped []core.Change, err error) {
	if len(changes) == 0 {
		return nil, nil, nil
	}
	keys := make([]env.QueueKey, len(changes))
	for i, c := range changes {
		keys[i] = c.Key
	}
	cur, err := sw.Read(ctx, keys)
	if err != nil {
		return nil, nil, fmt.Errorf("target %s: reading current settings: %w", sw.Name(), err)
	}
	todo, skipped, _ := SortManual(changes, cur)
	if len(todo) == 0 {
		return nil, skipped, nil
	}
	setCtx := ctx
	var revert int64
	if r, ok := sw.(rollbackDurationer); ok && r.RollbackDuration() > 0 {
		// A confirmed commit: its intent says when the switch has settled
		// it, should this process die before its confirm (the agent's
		// next start waits until then to judge it), and the Set is
		// bounded so that it holds: by ctx's deadline, or by the rollback
		// duration (a Set that takes longer could not be confirmed in
		// time anyway).
		bound := r.RollbackDuration()
		if dl, ok := ctx.Deadline(); ok {
			bound = max(time.Until(dl), 0)
		}
		var cancel context.CancelFunc
		setCtx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
		revert = revertBy(now().UnixNano(), bound, r.RollbackDuration())
	}
	// a Set without an answer may still land until twice its bound after
	// the intent (core.AuditEntry.MayLand): the agent's next start judges
	// it after that, not at once
	setBound := 5 * time.Second
	if dl, ok := setCtx.Deadline(); ok {
		setBound = max(time.Until(dl), 0)
	}
	entries := make([]core.AuditEntry, len(todo))
	for i, c := range todo {
		t := now().UnixNano()
		entries[i] = core.AuditEntry{TimeNs: t, Target: sw.Name(), Paths: sw.SetPaths([]env.QueueKey{c.Key}),
			Change: core.Change{Key: c.Key, Kind: c.Kind, Old: c.Old, New: c.New, Reason: core.AuditReason(c)}, Model: "manual", Owner: owner,
			RevertByNs: revert, LandByNs: t + int64(2*setBound)}
		if share != nil {
			entries[i].Writer = share.Member
		}
	}
	// the guard's memory of each queue, which the results update: this
	// agent's, and in a fleet the fleet's over it (read before anything
	// is written: an etcd that does not answer fails the change here)
	mems := map[env.QueueKey]core.QueueMemory{}
	if ms, merr := j.GuardMemory(); merr == nil {
		for _, m := range ms {
			mems[m.Key] = m
		}
	}
	if share != nil && share.Memory != nil {
		ms, merr := share.Memory(ctx, sw.Name())
		if merr != nil {
			return nil, skipped, fmt.Errorf("target %s: nothing sent: the fleet's guard memory of the switch was not read: %w", sw.Name(), merr)
		}
		for _, m := range ms {
			mems[m.Key] = m
		}
	}
	written, err = j.Intent(entries)
	if err != nil {
		return nil, skipped, err
	}
	settings := map[env.QueueKey]env.Setting{}
	for _, c := range todo {
		settings[c.Key] = c.New
	}
	var setErr error
	shared := share != nil
	if shared {
		if perr := share.Put(ctx, sw.Name(), written, nil); perr != nil {
			// as a deposed owner's: nothing is sent
			setErr, shared = fmt.Errorf("not sent: the fleet's audit did not take its intent: %w", perr), false
		}
	}
	if setErr == nil {
		setErr = sw.Apply(setCtx, settings)
	}
	// Read back in any case, as the loop does: a failed Set may have been
	// taken (its answer lost), and a refused headroom leaves the ECN
	// change standing.
	got, rerr := sw.Read(ctx, keys)
	setErr, got, rerr = settleManualCommit(ctx, sw, written, setErr, got, rerr)
	// The guard's memory of each queue changed: what it expects the switch
	// to run is what this change left there, so that the agent's next
	// start does not take the operator's rollback for another writer's
	// change (an alarm and a yield per queue), and its hold counts from
	// it, so that the loop does not undo it at once.
	var firstErr error
	var changed []core.QueueMemory
	for i, e := range written {
		st, gp, msg := judgeManual(e, setErr, got, rerr)
		if st != core.StateApplied && firstErr == nil {
			firstErr = fmt.Errorf("target %s: %s: %s", sw.Name(), e.Key, msg)
		}
		if st == core.StateIntent {
			continue // neither the Set nor the read answered: open, for a reconcile
		}
		nowNs := now().UnixNano()
		var mem []core.QueueMemory
		if st == core.StateApplied && gp != nil {
			m, ok := mems[e.Key]
			if !ok {
				m = core.QueueMemory{Key: e.Key}
			}
			set := *gp
			m.Expect, m.LastGood, m.Probation = &set, set, nil
			m.Changed, m.LastChangeNs = true, max(m.LastChangeNs, nowNs)
			mem = append(mem, m)
			changed = append(changed, m)
		}
		if err := j.Resolve(e.Seq, st, gp, msg, nowNs, mem...); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("audit entry %d: %w", e.Seq, err)
		}
		written[i].State, written[i].Got, written[i].Error, written[i].ResultNs = st, gp, msg, nowNs
	}
	if shared {
		// the results, as the loop's Record: an entry left open (neither
		// the Set nor the read answered) stays open there too
		var resolved []core.AuditEntry
		for _, e := range written {
			if e.State != core.StateIntent {
				resolved = append(resolved, e)
			}
		}
		if perr := share.Put(ctx, sw.Name(), resolved, changed); perr != nil && len(resolved) > 0 {
			perr = fmt.Errorf("target %s: the fleet's audit did not take the results of audit entries %s (they are in this agent's log; "+
				"the fleet's holds them open, and the switch's next owner judges them by the switch's read-back): %w", sw.Name(), seqsOf(resolved), perr)
			firstErr = errors.Join(firstErr, perr)
		}
	}
	return written, skipped, firstErr
}

// seqsOf lists the sequence numbers of es: "3, 4".
func seqsOf(es []core.AuditEntry) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = strconv.FormatUint(e.Seq, 10)
	}
	return strings.Join(s, ", ")
}

// settleManualCommit ends a manual change's confirmed commit (a target
// with commit-confirmed) as the loop does (endCommit): confirmed when every
// change read back as set, cancelled otherwise; when it was not confirmed
// the changes are not applied (core.ErrUnconfirmed), read again.
func settleManualCommit(ctx context.Context, sw Switch, written []core.AuditEntry, setErr error, got map[env.QueueKey]env.Setting, rerr error) (error, map[env.QueueKey]env.Setting, error) {
	c, ok := sw.(Committer)
	if !ok {
		return setErr, got, rerr
	}
	refused := errors.As(setErr, new(*gnmipath.HeadroomError))
	asSet := func() bool { // the read shows every change
		if rerr != nil {
			return false
		}
		for _, e := range written {
			if g, ok := got[e.Key]; !ok || !core.ReadBackMatches(readBackWant(e.New, refused), g) {
				return false
			}
		}
		return true
	}
	keys := make([]env.QueueKey, len(written))
	for i, e := range written {
		keys[i] = e.Key
	}
	setErr, again := endCommit(ctx, c, asSet(), setErr, func() bool {
		got, rerr = sw.Read(ctx, keys)
		return asSet()
	})
	if again {
		got, rerr = sw.Read(ctx, keys)
	}
	return setErr, got, rerr
}

// judgeManual is a manual change's audit state from its Set and read-back,
// by the loop's rule (core.JudgeSet, a refused headroom taken out first
// as setLanded does): applied when the switch runs it (and its commit, if
// any, was confirmed), failed when the Set failed and the switch does not
// run it, a mismatch when the Set was answered and the switch runs
// something else, and left open (intent) when neither the Set nor the
// read answered.
func judgeManual(e core.AuditEntry, setErr error, got map[env.QueueKey]env.Setting, rerr error) (core.AuditState, *env.Setting, string) {
	var gp *env.Setting
	g, ok := got[e.Key]
	if ok && rerr == nil {
		gp = &g
	}
	refused := errors.As(setErr, new(*gnmipath.HeadroomError))
	judged := setErr
	if refused && !errors.Is(setErr, core.ErrUnconfirmed) {
		// the ECN change stands: judged without the headroom (an
		// unconfirmed commit stays one, refusal or not)
		judged = nil
	}
	switch core.JudgeSet(readBackWant(e.New, refused), readBackWant(e.Old, refused), judged, g, ok, rerr, core.ReadBackMatches) {
	case core.SetUnconfirmed:
		return core.StateFailed, gp, "set: " + setErr.Error()
	case core.SetUnknown:
		if rerr != nil {
			return core.StateIntent, nil, fmt.Sprintf("set: %v; read-back: %v", setErr, rerr)
		}
		return core.StateIntent, nil, fmt.Sprintf("set: %v; the Set may still land: the agent judges it at its next start, after %s",
			setErr, time.Unix(0, e.LandByNs).UTC().Format(time.RFC3339))
	case core.SetUnread:
		// answered, unverified: the agent's next start judges it by a
		// read, as the loop does
		return core.StateIntent, nil, "set answered; read-back: " + rerr.Error() + ": the agent judges it at its next start"
	case core.SetApplied:
		if refused && e.New.HeadroomBytes > 0 && e.New.HeadroomBytes != g.HeadroomBytes {
			return core.StateApplied, gp, headroomRefused(e.New.HeadroomBytes, g.HeadroomBytes, setErr)
		}
		return core.StateApplied, gp, ""
	case core.SetFailed:
		return core.StateFailed, gp, "set: " + setErr.Error()
	}
	if !ok {
		return core.StateMismatch, nil, "the read-back after the Set does not report the queue"
	}
	return core.StateMismatch, gp, "switch reports a different setting (set → reported: " + core.SettingDiff(e.New, g) + ")"
}
