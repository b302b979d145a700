package core

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ecntune/ecntune/env"
)

// Approvals is approve mode's gate: the closed loop applies a tune or a
// fallback only when an operator approved that very change (queue and
// setting); the others wait as pending, one per queue, the guard's newest
// proposal. Safety changes (rollback, read-back restore, repair, revert,
// reconcile) never wait. An approval lasts until its change is applied or
// for TTL nanoseconds. It does no I/O and is not safe for concurrent use.
type Approvals struct {
	TTL      int64
	pending  map[env.QueueKey]Pending
	approved map[env.QueueKey]approval
}

// Pending is a change waiting for approval: since when the guard has
// proposed it, and whether (and by whom) it was approved.
type Pending struct {
	Change
	SinceNs    int64 `json:"since_ns"`
	Approved   bool  `json:"approved,omitempty"`
	ApprovedAt int64 `json:"approved_at_ns,omitempty"`
}

type approval struct {
	setting env.Setting
	by      string
	atNs    int64
}

// NeedsApproval says whether a change of kind k waits for an operator in
// approve mode.
func NeedsApproval(k ChangeKind) bool { return k == KindTune || k == KindFallback }

// Gate splits an interval's changes: those that may be applied (safety
// changes, and approved ones, marked with their approver) and those held
// for approval, which become the pending set (replacing the last
// interval's: a proposal the guard no longer makes is no longer pending).
func (a *Approvals) Gate(changes []Change, nowNs int64) (apply, held []Change) {
	if a.pending == nil {
		a.pending, a.approved = map[env.QueueKey]Pending{}, map[env.QueueKey]approval{}
	}
	for k, ap := range a.approved {
		if a.TTL > 0 && nowNs-ap.atNs > a.TTL {
			delete(a.approved, k)
		}
	}
	next := map[env.QueueKey]Pending{}
	for _, c := range changes {
		if !NeedsApproval(c.Kind) {
			apply = append(apply, c)
			continue
		}
		if ap, ok := a.approved[c.Key]; ok && SameSetting(ap.setting, c.New, 1e-9) {
			c.ApprovedBy = ap.by
			delete(a.approved, c.Key)
			apply = append(apply, c)
			continue
		}
		p := Pending{Change: c, SinceNs: nowNs}
		if was, ok := a.pending[c.Key]; ok && SameSetting(was.New, c.New, 1e-9) {
			p.SinceNs = was.SinceNs
		}
		next[c.Key] = p
		held = append(held, c)
	}
	a.pending = next
	return apply, held
}

// Pending lists the changes waiting for approval, in key order, each
// marked when it was approved (it is applied at the next interval where
// the guard still proposes it).
func (a *Approvals) Pending() []Pending {
	out := make([]Pending, 0, len(a.pending))
	for _, p := range a.pending {
		if ap, ok := a.approved[p.Key]; ok && SameSetting(ap.setting, p.New, 1e-9) {
			p.Approved, p.ApprovedBy, p.ApprovedAt = true, ap.by, ap.atNs
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(x, y Pending) int { return env.CompareQueueKeys(x.Key, y.Key) })
	return out
}

// Approve approves the pending change of each of keys (every pending
// change when all is set) for by, and returns the changes approved, each
// with who approved it first (a change approved already keeps its
// approver). A key with nothing pending is an error that names it;
// nothing is approved then.
func (a *Approvals) Approve(keys []env.QueueKey, all bool, by string, nowNs int64) ([]Pending, error) {
	if strings.TrimSpace(by) == "" {
		return nil, fmt.Errorf("approve: say who approves (by)")
	}
	if all {
		keys = keys[:0:0]
		for k := range a.pending {
			keys = append(keys, k)
		}
	}
	var missing []string
	for _, k := range keys {
		if _, ok := a.pending[k]; !ok {
			missing = append(missing, k.String())
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("approve: nothing pending for %s", strings.Join(missing, ", "))
	}
	if a.approved == nil {
		a.approved = map[env.QueueKey]approval{}
	}
	var out []Pending
	seen := map[env.QueueKey]bool{}
	for _, k := range keys {
		if seen[k] {
			continue // named twice: one approval
		}
		seen[k] = true
		p := a.pending[k]
		ap, ok := a.approved[k]
		if !ok || !SameSetting(ap.setting, p.New, 1e-9) {
			// the first approval of this change stands: a second one (two
			// operators at once) does not rewrite who approved it
			ap = approval{setting: p.New, by: by, atNs: nowNs}
			a.approved[k] = ap
		}
		p.Approved, p.ApprovedBy, p.ApprovedAt = true, ap.by, ap.atNs
		out = append(out, p)
	}
	slices.SortFunc(out, func(x, y Pending) int { return env.CompareQueueKeys(x.Key, y.Key) })
	return out, nil
}
