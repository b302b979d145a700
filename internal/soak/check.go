package soak

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"github.com/ecntune/ecntune/agent/core"
	"io"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simswitch"
)

// Report is what a soak found.
type Report struct {
	Applied, Tunes, Rollbacks, Repairs, Reverts int
	SwitchStarts                                int
	HoldViolations                              []string
	BadRollbacks                                []string
	BelowFloor                                  []string
	// PastSets are changes computed from a setting the switch did not run
	// just before the Set (a restart or another writer in between).
	PastSets []string
	// DoubleChanges are two changes of one queue within one interval.
	DoubleChanges []string
	// StepViolations are tunes and fallbacks that moved a knob further than
	// the guard's max step from what the switch ran (see Steps).
	StepViolations []string
}

// Violations counts every violation found.
func (r Report) Violations() int {
	return len(r.All())
}

// All lists every violation found.
func (r Report) All() []string {
	return slices.Concat(r.HoldViolations, r.BadRollbacks, r.BelowFloor, r.PastSets, r.DoubleChanges, r.StepViolations)
}

func (r Report) String() string {
	return fmt.Sprintf("%d changes applied (%d tunes, %d rollbacks, %d repairs, %d reverts), %d switch starts; "+
		"hold violations %d, rollbacks to a setting the switch did not have %d, PGs below floor at the end %d, "+
		"changes computed on a setting the switch no longer ran %d, queues changed twice in one interval %d, "+
		"step-limit violations %d",
		r.Applied, r.Tunes, r.Rollbacks, r.Repairs, r.Reverts, r.SwitchStarts,
		len(r.HoldViolations), len(r.BadRollbacks), len(r.BelowFloor), len(r.PastSets), len(r.DoubleChanges),
		len(r.StepViolations))
}

// ReadSetLog parses simswitch's set log.
func ReadSetLog(r io.Reader) ([]simswitch.SetLogEntry, error) {
	var out []simswitch.SetLogEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var e simswitch.SetLogEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// a switch killed mid-write leaves a partial last line
			continue
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

func sameECN(a env.Setting, e simswitch.SetLogEntry) bool {
	if a.KminBytes != e.Kmin || a.KmaxBytes != e.Kmax || math.Abs(a.Pmax-e.Pmax) > 0.005 {
		return false
	}
	return a.HeadroomBytes <= 0 || a.HeadroomBytes == e.Headroom
}

// Check audits a soak: entries is the agent's audit log, log simswitch's
// set log (both in time order), minHold the guardrail.
//
//   - A hold violation is a tuning change (tune or fallback: the changes
//     min-hold governs; rollbacks, reverts and repairs are exempt by
//     design) applied less than minHold after the previous applied change
//     of the same queue finished.
//   - A rollback (rollback, read-back, reconcile) must return the queue to
//     a setting the switch ran earlier in the same run of the switch: a
//     setting from before a switch restart is stale. A rollback the guard
//     had to shape (AuditEntry.Wanted: Kmax below an XOFF that moved) is
//     judged by the setting it was shaped from.
//   - At the end every lossless PG whose floor the switch reported is at or
//     above it.
//   - Every change was computed from the setting the switch ran just
//     before its Set (the set log's last entry of the queue): no Set on a
//     switch's past.
//   - No queue is changed twice within one interval (a read-back rollback
//     of a Set just made excepted).
func Check(entries []core.AuditEntry, log []simswitch.SetLogEntry, minHold, interval time.Duration) Report {
	var r Report
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Seq < entries[j].Seq })
	sets := indexSets(log)
	last := map[env.QueueKey]int64{}
	prevAt := map[env.QueueKey]int64{}
	for _, e := range entries {
		if e.State != core.StateApplied && e.State != core.StateReconciled {
			continue
		}
		r.Applied++
		if why, bad := pastSet(e, sets); bad {
			r.PastSets = append(r.PastSets, why)
		}
		if p, ok := prevAt[e.Key]; ok && e.TimeNs-p < int64(interval) && e.Kind != core.KindReadBack {
			r.DoubleChanges = append(r.DoubleChanges, fmt.Sprintf("%s: audit entry %d (%s) %v after the queue's previous change, in one interval of %v",
				e.Key, e.Seq, e.Kind, time.Duration(e.TimeNs-p), interval))
		}
		prevAt[e.Key] = e.TimeNs
		switch e.Kind {
		case core.KindTune, core.KindFallback:
			r.Tunes++
			if prev, ok := last[e.Key]; ok && e.TimeNs-prev < int64(minHold) {
				r.HoldViolations = append(r.HoldViolations, fmt.Sprintf("%s: audit entry %d (%s) %v after the previous change, min-hold %v",
					e.Key, e.Seq, e.Kind, time.Duration(e.TimeNs-prev), minHold))
			}
		case core.KindRollback, core.KindReadBack, core.KindReconcile:
			r.Rollbacks++
			if why, bad := badRollback(e, log); bad {
				r.BadRollbacks = append(r.BadRollbacks, why)
			}
		case core.KindRepair:
			r.Repairs++
		case core.KindRevert:
			r.Reverts++
		}
		end := e.ResultNs
		if end == 0 {
			end = e.TimeNs
		}
		last[e.Key] = end
	}
	r.checkEnd(log)
	return r
}

// pastSet says why change e was computed on the switch's past: its Old is
// not (in ECN) what the switch ran just before the Set.
func pastSet(e core.AuditEntry, sets setsByQueue) (string, bool) {
	prev := sets.lastBefore(e)
	old := e.Old
	old.HeadroomBytes = 0
	if prev == nil || sameECN(old, *prev) {
		return "", false
	}
	return fmt.Sprintf("%s: audit entry %d (%s) computed from kmin %d kmax %d pmax %g; the switch ran kmin %d kmax %d pmax %g (%s at %d)",
		e.Key, e.Seq, e.Kind, e.Old.KminBytes, e.Old.KmaxBytes, e.Old.Pmax, prev.Kmin, prev.Kmax, prev.Pmax, prev.Why, prev.TimeNs), true
}

// badRollback says why rollback e is bad: the setting it returned to (its
// Wanted one when the guard shaped it) is not one the switch ran earlier in
// the run the rollback happened in.
func badRollback(e core.AuditEntry, log []simswitch.SetLogEntry) (string, bool) {
	start := int64(0) // the switch run the rollback happened in
	// A rollback the guard shaped (Kmax below an XOFF that has
	// moved since) returns to its Wanted setting as far as the
	// rules allow: Wanted must be one the switch ran.
	back := e.New
	if e.Wanted != nil {
		back = *e.Wanted
	}
	for _, l := range log {
		if l.TimeNs > e.TimeNs {
			break
		}
		if l.Switch == e.Key.Target && l.Why == "start" {
			start = l.TimeNs
		}
	}
	for _, l := range log {
		if l.TimeNs > e.TimeNs {
			break
		}
		if l.TimeNs >= start && l.Switch == e.Key.Target && l.Port == e.Key.Port && l.Queue == e.Key.Queue && sameECN(back, l) {
			return "", false
		}
	}
	from := ""
	if e.Wanted != nil {
		from = fmt.Sprintf(" (shaped from kmin %d kmax %d pmax %g headroom %d)", back.KminBytes, back.KmaxBytes, back.Pmax, back.HeadroomBytes)
	}
	return fmt.Sprintf("%s: audit entry %d (%s) set kmin %d kmax %d pmax %g headroom %d%s, which the switch had not run since it started",
		e.Key, e.Seq, e.Kind, e.New.KminBytes, e.New.KmaxBytes, e.New.Pmax, e.New.HeadroomBytes, from), true
}

// logQueue is a queue as the set log names it.
type logQueue struct {
	sw, port string
	q        int
}

// checkEnd counts the switch starts in log and checks the end state, from
// the switch's side: each queue's last setting in its switch's last run,
// against the floor reported at that start.
func (r *Report) checkEnd(log []simswitch.SetLogEntry) {
	floor := map[logQueue]int64{}
	final := map[logQueue]int64{}
	starts := map[string]bool{}
	for _, l := range log {
		k := logQueue{l.Switch, l.Port, l.Queue}
		if l.Why == "start" {
			if s := fmt.Sprint(l.Switch, l.TimeNs); !starts[s] {
				starts[s] = true
				r.SwitchStarts++
			}
			floor[k] = l.Floor
		}
		final[k] = l.Headroom
	}
	keys := make([]logQueue, 0, len(final))
	for k := range final {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].port != keys[j].port {
			return keys[i].port < keys[j].port
		}
		return keys[i].q < keys[j].q
	})
	for _, k := range keys {
		if f := floor[k]; f > 0 && final[k] < f {
			r.BelowFloor = append(r.BelowFloor, fmt.Sprintf("%s/%s/q%d: headroom %d B below the floor %d B", k.sw, k.port, k.q, final[k], f))
		}
	}
}

// Steps lists the tunes and fallbacks among entries that moved a knob
// (Kmin, Kmax, Pmax, headroom) more than a factor maxStep away from what
// the switch ran just before the Set (its set log's previous entry of the
// queue, else the change's Old), for a guard whose dwell is 1 (a move's
// limit is then maxStep itself). A move beyond it is allowed only where
// the guard says it shaped the change by a rule that may: the bounds
// (either way), or the order of the knobs (down only: Kmax under XOFF,
// Kmin under Kmax). Rollbacks, repairs and reverts are not steps.
func Steps(entries []core.AuditEntry, log []simswitch.SetLogEntry, maxStep float64) []string {
	if maxStep <= 1 {
		return nil
	}
	sets := indexSets(log)
	var out []string
	for _, e := range entries {
		if (e.State != core.StateApplied && e.State != core.StateReconciled) ||
			(e.Kind != core.KindTune && e.Kind != core.KindFallback) {
			continue
		}
		from := e.Old
		if prev := sets.lastBefore(e); prev != nil {
			from = env.Setting{KminBytes: prev.Kmin, KmaxBytes: prev.Kmax, Pmax: prev.Pmax, HeadroomBytes: prev.Headroom}
		}
		if why := stepBeyond(from, e.New, maxStep, e.Clamped); why != "" {
			out = append(out, fmt.Sprintf("%s: audit entry %d (%s) %s (max step %g)", e.Key, e.Seq, e.Kind, why, maxStep))
		}
	}
	return out
}

// setsByQueue is a set log's entries per queue, in time order, without
// the Sets a switch refused (they did not change what it ran).
type setsByQueue map[logQueue][]*simswitch.SetLogEntry

func indexSets(log []simswitch.SetLogEntry) setsByQueue {
	idx := setsByQueue{}
	for i := range log {
		if l := &log[i]; l.Why != "refused" {
			k := logQueue{l.Switch, l.Port, l.Queue}
			idx[k] = append(idx[k], l)
		}
	}
	return idx
}

// lastBefore is the set log's last entry of e's queue before e's intent.
func (idx setsByQueue) lastBefore(e core.AuditEntry) *simswitch.SetLogEntry {
	ls := idx[logQueue{e.Key.Target, e.Key.Port, e.Key.Queue}]
	n, _ := slices.BinarySearchFunc(ls, e.TimeNs, func(l *simswitch.SetLogEntry, t int64) int { return cmp.Compare(l.TimeNs, t) })
	if n == 0 {
		return nil
	}
	return ls[n-1]
}

// stepBeyond says which knob moved from a to b by more than maxStep (with
// 1% for rounding, and Pmax's 0.005 resolution) in a direction none of
// the rules in clamped allows: the bounds either way, the order of the
// knobs down (Kmax under XOFF, Kmin under Kmax), the headroom floor up.
func stepBeyond(a, b env.Setting, maxStep float64, clamped []string) string {
	has := func(rule string) bool { return slices.Contains(clamped, rule) }
	check := func(name string, from, to, slack float64, upRule, downRule string) string {
		if from <= 0 || to <= 0 {
			return "" // not set before: the first setting moves freely
		}
		up, down := to > from*maxStep*1.01+slack, to < from/(maxStep*1.01)-slack
		if (up && !has(core.RuleBounds) && !has(upRule)) || (down && !has(core.RuleBounds) && !has(downRule)) {
			return fmt.Sprintf("moved %s %g -> %g (x%.2f)", name, from, to, to/from)
		}
		return ""
	}
	for _, w := range []string{
		check("kmin", float64(a.KminBytes), float64(b.KminBytes), 0, "", core.RuleOrder),
		check("kmax", float64(a.KmaxBytes), float64(b.KmaxBytes), 0, "", core.RuleOrder),
		check("pmax", a.Pmax, b.Pmax, 0.005, "", ""),
		check("headroom", float64(a.HeadroomBytes), float64(b.HeadroomBytes), 0, core.RuleHeadroom, ""),
	} {
		if w != "" {
			return w
		}
	}
	return ""
}
