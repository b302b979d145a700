package core

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ecntune/ecntune/env"
)

// Approvals is approve mode's gate: the closed loop applies a tune or a
// fallback only when an operator approved that very change (queue and
// setting); the others wait as pending, one per queue, the guard's newest
// proposal. Safety changes (rollback, read-back restore, repair, revert,
// reconcile) never wait. An approval lasts until its change is applied or
// for TTL nanoseconds; a proposal can be approved for TTL after the guard
// last made it (with no TTL, while the guard makes it), so that one whose
// confidence hovers at the bar, made one interval and not the next, can be
// approved as it was listed. It does no I/O and is not safe for concurrent
// use.
type Approvals struct {
	TTL      int64
	pending  map[env.QueueKey]Pending
	recent   map[env.QueueKey]proposed
	approved map[env.QueueKey]approval
}

// proposed is the guard's newest proposal for a queue and when it last
// made it.
type proposed struct {
	Pending
	lastNs int64
}

// Pending is a change waiting for approval: since when the guard has
// proposed it, and whether (and by whom) it was approved.
type Pending struct {
	Change
	// Plan names this very change (queue and proposed setting, PlanID):
	// an approval that gives it approves this change and no other.
	Plan       string `json:"plan"`
	SinceNs    int64  `json:"since_ns"`
	Approved   bool   `json:"approved,omitempty"`
	ApprovedAt int64  `json:"approved_at_ns,omitempty"`
}

// PlanID names a proposed change: its queue and setting (knobs as the
// switch takes them: bytes, and Pmax to 1e-6), as 8 hex digits. The
// same proposal has the same ID from one interval to the next; another
// setting for the queue has another.
func PlanID(k env.QueueKey, s env.Setting) string {
	b := fmt.Appendf(nil, "%s|%d|%d|%d|%d|%d", k.String(), s.KminBytes, s.KmaxBytes,
		int64(math.Round(s.Pmax*1e6)), s.HeadroomBytes, int64(math.Round(s.Alpha*1e6)))
	// FNV-1a, 32 bits (written out: the core imports no more than it
	// decides with): an ID to tell proposals apart, not a secret
	h := uint32(2166136261)
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return fmt.Sprintf("%08x", h)
}

type approval struct {
	setting env.Setting
	by      string
	atNs    int64
}

// Approved is an approval waiting to be applied, as kept across restarts
// (Approvals.Approved, Restore): the queue, the setting approved, who
// approved it and when.
type Approved struct {
	Key     env.QueueKey `json:"key"`
	Setting env.Setting  `json:"setting"`
	By      string       `json:"by"`
	AtNs    int64        `json:"at_ns"`
}

// Approved lists the approvals not yet applied, in key order.
func (a *Approvals) Approved() []Approved {
	out := make([]Approved, 0, len(a.approved))
	for k, ap := range a.approved {
		out = append(out, Approved{Key: k, Setting: ap.setting, By: ap.by, AtNs: ap.atNs})
	}
	slices.SortFunc(out, func(x, y Approved) int { return env.CompareQueueKeys(x.Key, y.Key) })
	return out
}

// Restore takes back the approvals a stopped agent kept (Approved): each
// is applied when the guard proposes its very setting again within the
// TTL of when it was given, as before the restart.
func (a *Approvals) Restore(rs []Approved) {
	a.init()
	for _, r := range rs {
		if strings.TrimSpace(r.By) == "" {
			continue
		}
		a.approved[r.Key] = approval{setting: r.Setting, by: r.By, atNs: r.AtNs}
	}
}

// NeedsApproval says whether a change of kind k waits for an operator in
// approve mode.
func NeedsApproval(k ChangeKind) bool { return k == KindTune || k == KindFallback }

// Holds reports whether Gate at nowNs will hold change c for approval: a
// tune or fallback no operator approved (that very setting, within the
// TTL). Such changes spend no change budget (Interval.Held).
func (a *Approvals) Holds(c Change, nowNs int64) bool {
	if !NeedsApproval(c.Kind) {
		return false
	}
	_, ok := a.approvedFor(c, nowNs)
	return !ok
}

// approvedFor is the approval of change c at nowNs: one given for its very
// setting, within the TTL.
func (a *Approvals) approvedFor(c Change, nowNs int64) (approval, bool) {
	ap, ok := a.approved[c.Key]
	if !ok || !SameSetting(ap.setting, c.New, 1e-9) || (a.TTL > 0 && nowNs-ap.atNs > a.TTL) {
		return approval{}, false
	}
	return ap, true
}

// init makes the maps a zero Approvals lacks.
func (a *Approvals) init() {
	if a.pending == nil {
		a.pending = map[env.QueueKey]Pending{}
	}
	if a.recent == nil {
		a.recent = map[env.QueueKey]proposed{}
	}
	if a.approved == nil {
		a.approved = map[env.QueueKey]approval{}
	}
}

// expired says whether a proposal last made at lastNs can no longer be
// approved at nowNs: TTL after it (with no TTL, once the guard decided
// again).
func (a *Approvals) expired(lastNs, nowNs int64) bool {
	if a.TTL <= 0 {
		return lastNs < nowNs
	}
	return nowNs-lastNs > a.TTL
}

// Gate splits an interval's changes: those that may be applied (safety
// changes, and approved ones, marked with their approver) and those held
// for approval, which become the pending set (replacing the last
// interval's: a proposal the guard no longer makes is no longer pending).
func (a *Approvals) Gate(changes []Change, nowNs int64) (apply, held []Change) {
	a.init()
	for k, ap := range a.approved {
		if a.TTL > 0 && nowNs-ap.atNs > a.TTL {
			delete(a.approved, k)
		}
	}
	a.forgetProposals(nowNs)
	next := map[env.QueueKey]Pending{}
	for _, c := range changes {
		if !NeedsApproval(c.Kind) {
			apply = append(apply, c)
			continue
		}
		if ap, ok := a.approvedFor(c, nowNs); ok {
			c.ApprovedBy = ap.by
			delete(a.approved, c.Key)
			delete(a.recent, c.Key)
			apply = append(apply, c)
			continue
		}
		p := Pending{Change: c, Plan: PlanID(c.Key, c.New), SinceNs: nowNs}
		if was, ok := a.recent[c.Key]; ok && SameSetting(was.New, c.New, 1e-9) {
			p.SinceNs = was.SinceNs
		}
		next[c.Key] = p
		a.recent[c.Key] = proposed{Pending: p, lastNs: nowNs}
		held = append(held, c)
	}
	a.pending = next
	return apply, held
}

// forgetProposals drops the proposals made longer than TTL before nowNs.
func (a *Approvals) forgetProposals(nowNs int64) {
	a.init()
	for k, r := range a.recent {
		if a.expired(r.lastNs, nowNs) {
			delete(a.recent, k)
		}
	}
}

// Withdraw drops every proposal (pending or made within TTL): none can be
// approved until the guard proposes it again (a paused loop offers no
// plan). Approvals given stay, expiring after TTL.
func (a *Approvals) Withdraw(nowNs int64) {
	a.Gate(nil, nowNs)
	clear(a.recent)
}

// proposal is the guard's newest proposal for k: pending this interval,
// or made within TTL of nowNs.
func (a *Approvals) proposal(k env.QueueKey, nowNs int64) (Pending, bool) {
	if p, ok := a.pending[k]; ok {
		return p, true
	}
	r, ok := a.recent[k]
	if !ok || a.expired(r.lastNs, nowNs) {
		return Pending{}, false
	}
	return r.Pending, true
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
// approver). The change of a key is the guard's newest proposal for it
// made within TTL, pending now or not (its confidence may have dipped
// below the bar for an interval). A key with no proposal within TTL is an
// error that names it; nothing is approved then.
//
// With plans (the Plan of each change the operator reviewed), it
// approves only those very changes: each change it would approve must be
// one of plans, and each of plans must be the newest proposal of a key
// (with all: of a queue pending now, or proposed within TTL; and every
// change pending now must be one of plans). Otherwise the guard's
// proposal changed since it was reviewed; the error names what is
// proposed now, and nothing is approved.
func (a *Approvals) Approve(keys []env.QueueKey, all bool, by string, plans []string, nowNs int64) ([]Pending, error) {
	if strings.TrimSpace(by) == "" {
		return nil, fmt.Errorf("approve: say who approves (by)")
	}
	a.init()
	props := map[env.QueueKey]Pending{}
	for k := range a.recent {
		if p, ok := a.proposal(k, nowNs); ok {
			props[k] = p
		}
	}
	if all {
		keys = keys[:0:0]
		for k := range a.pending {
			keys = append(keys, k)
		}
		// a reviewed plan its guard did not make this interval, but
		// within TTL, is approved with the others
		want := planSet(plans)
		for k, p := range props {
			if _, now := a.pending[k]; !now && want[p.Plan] {
				keys = append(keys, k)
			}
		}
		slices.SortFunc(keys, env.CompareQueueKeys)
	}
	var missing []string
	for _, k := range keys {
		if _, ok := props[k]; !ok {
			missing = append(missing, k.String())
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("approve: nothing pending for %s: the guard proposed no change there%s (list what waits with 'ecntune agent pending')",
			strings.Join(missing, ", "), a.window())
	}
	if len(plans) > 0 {
		if err := checkPlans(props, keys, plans); err != nil {
			return nil, err
		}
	}
	var out []Pending
	seen := map[env.QueueKey]bool{}
	for _, k := range keys {
		if seen[k] {
			continue // named twice: one approval
		}
		seen[k] = true
		p := props[k]
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

// window says for how long a proposal can be approved after the guard
// last made it.
func (a *Approvals) window() string {
	if a.TTL <= 0 {
		return " this interval"
	}
	return fmt.Sprintf(" in the last %.3g s", float64(a.TTL)/1e9)
}

func planSet(plans []string) map[string]bool {
	want := map[string]bool{}
	for _, p := range plans {
		want[strings.ToLower(strings.TrimSpace(p))] = true
	}
	return want
}

// checkPlans says whether the proposals (props) of keys are the reviewed
// plans, and only those: a reviewed plan that is no key's newest proposal,
// or a proposal of keys that is not one of plans, is an error naming the
// queue and what is proposed now.
func checkPlans(props map[env.QueueKey]Pending, keys []env.QueueKey, plans []string) error {
	want := planSet(plans)
	var changed []string
	have := map[string]bool{}
	for _, k := range keys {
		p := props[k]
		have[p.Plan] = true
		if !want[p.Plan] {
			changed = append(changed, fmt.Sprintf("%s now proposes %s (plan %s)", k, p.New.Describe(), p.Plan))
		}
	}
	var gone []string
	for p := range want {
		if !have[p] {
			gone = append(gone, p)
		}
	}
	slices.Sort(gone)
	if len(changed) == 0 && len(gone) == 0 {
		return nil
	}
	msg := "approve: the pending plan is not the one reviewed, nothing approved"
	if len(changed) > 0 {
		msg += ": " + strings.Join(changed, "; ")
	}
	if len(gone) > 0 {
		msg += ": plan " + strings.Join(gone, ", ") + " is no longer pending for the queues given"
	}
	return fmt.Errorf("%s (list it again with 'ecntune agent pending')", msg)
}
