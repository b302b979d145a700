package agent

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
)

// UndoBaseline is the toNs of UndoPlan that restores every queue as it
// was before the agent's first change to it.
const UndoBaseline int64 = 1

// UndoPlan works out from the audit log the changes that put target's
// queues back as they were at toNs: per queue, the Old of the earliest
// applied change after toNs (UndoBaseline: the earliest of all). With
// toNs <= 0 it undoes the last change to each queue when the agent made
// it: a queue whose last change is a manual rollback (plain, --to or
// baseline) is left alone, so that run twice, or after --to baseline, a
// plain rollback finds nothing to do instead of re-applying a change.
// Change.Old is what the log says the queue runs now.
func UndoPlan(entries []core.AuditEntry, target string, toNs int64) []core.Change {
	type acc struct {
		first, last, lastAgent core.AuditEntry
		have, agent            bool
	}
	per := map[env.QueueKey]*acc{}
	for _, e := range entries {
		if e.Target != target || (e.State != core.StateApplied && e.State != core.StateReconciled) {
			continue
		}
		a := per[e.Key]
		if a == nil {
			a = &acc{}
			per[e.Key] = a
		}
		if toNs > 0 && e.TimeNs >= toNs && (!a.have || e.Seq < a.first.Seq) {
			a.first, a.have = e, true
		}
		if e.Seq >= a.last.Seq {
			a.last = e
		}
		if e.Kind != core.KindManual && e.Seq >= a.lastAgent.Seq {
			a.lastAgent, a.agent = e, true
		}
	}
	var out []core.Change
	for k, a := range per {
		var restore env.Setting
		var why string
		switch {
		case toNs <= 0 && a.agent && a.last.Kind != core.KindManual:
			// The queue's last change is the agent's (after a manual
			// rollback of any kind, there is nothing of the agent's left
			// to undo: undoing an older change again would re-apply one).
			restore = a.lastAgent.Old
			why = fmt.Sprintf("undo audit entry %d (%s)", a.lastAgent.Seq, a.lastAgent.Kind)
		case toNs == UndoBaseline && a.have:
			restore = a.first.Old
			why = fmt.Sprintf("back to the baseline: the setting before the first change, audit entry %d at %s", a.first.Seq,
				time.Unix(0, a.first.TimeNs).UTC().Format(time.RFC3339))
		case toNs > 0 && a.have:
			restore = a.first.Old
			why = fmt.Sprintf("back to the setting before audit entry %d at %s", a.first.Seq,
				time.Unix(0, a.first.TimeNs).UTC().Format(time.RFC3339))
		default:
			continue
		}
		if core.SameSetting(restore, a.last.New, 1e-9) {
			continue // already there
		}
		out = append(out, core.Change{Key: k, Kind: core.KindManual, Old: a.last.New, New: restore, Reason: why})
	}
	sort.Slice(out, func(i, j int) bool { return env.QueueKeyLess(out[i].Key, out[j].Key) })
	return out
}

// ApplyManual journals (write-ahead) and applies changes to one switch
// outside the control loop, as `ecntune agent rollback` does: it reads the
// switch first so that Old is what the switch really runs, skips queues
// already there, sets the rest in one Set, reads back and records results.
func ApplyManual(ctx context.Context, j *journal.Journal, sw Switch, changes []core.Change, owner string, now func() time.Time) ([]core.AuditEntry, error) {
	if len(changes) == 0 {
		return nil, nil
	}
	keys := make([]env.QueueKey, len(changes))
	for i, c := range changes {
		keys[i] = c.Key
	}
	cur, err := sw.Read(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("target %s: reading current settings: %w", sw.Name(), err)
	}
	var todo []core.Change
	for _, c := range changes {
		if g, ok := cur[c.Key]; ok {
			c.Old = g
			if core.ReadBackMatches(c.New, g) {
				continue
			}
		}
		todo = append(todo, c)
	}
	if len(todo) == 0 {
		return nil, nil
	}
	entries := make([]core.AuditEntry, len(todo))
	for i, c := range todo {
		entries[i] = core.AuditEntry{TimeNs: now().UnixNano(), Target: sw.Name(), Paths: sw.SetPaths([]env.QueueKey{c.Key}),
			Change: core.Change{Key: c.Key, Kind: c.Kind, Old: c.Old, New: c.New, Reason: core.AuditReason(c)}, Model: "manual", Owner: owner}
	}
	written, err := j.Intent(entries)
	if err != nil {
		return nil, err
	}
	settings := map[env.QueueKey]env.Setting{}
	for _, c := range todo {
		settings[c.Key] = c.New
	}
	if err := sw.Apply(ctx, settings); err != nil {
		for _, e := range written {
			_ = j.Resolve(e.Seq, core.StateFailed, nil, err.Error(), now().UnixNano())
		}
		return written, fmt.Errorf("target %s: set: %w", sw.Name(), err)
	}
	got, rerr := sw.Read(ctx, keys)
	var firstErr error
	for i, e := range written {
		g, ok := got[e.Key]
		st, msg := core.StateApplied, ""
		var gp *env.Setting
		if ok {
			gp = &g
		}
		switch {
		case rerr != nil:
			st, msg = core.StateMismatch, rerr.Error()
		case !ok || !core.ReadBackMatches(e.New, g):
			st, msg = core.StateMismatch, "switch reports a different setting"
			if ok {
				msg += " (set → reported: " + core.SettingDiff(e.New, g) + ")"
			}
		}
		if st != core.StateApplied && firstErr == nil {
			firstErr = fmt.Errorf("%s: read-back: %s", e.Key, msg)
		}
		_ = j.Resolve(e.Seq, st, gp, msg, now().UnixNano())
		written[i].State, written[i].Got = st, gp
	}
	return written, firstErr
}
