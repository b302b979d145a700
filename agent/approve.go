package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// ErrPausedApproval answers an approval while the closed loop is paused.
var ErrPausedApproval = errors.New("the closed loop is paused: its pending changes are decided again when it resumes; approve them then")

// ErrNotApproveMode answers an approval to an agent that does not wait
// for any (approve: true is off, or it runs in shadow mode).
var ErrNotApproveMode = errors.New("the agent does not run in approve mode (approve: true in a closed-loop configuration)")

// ApprovalIntervals is how long an approval waits for the guard to
// propose its change again: 10 control intervals.
const ApprovalIntervals = 10

// gate holds back the tunes and fallbacks no operator approved (approve
// mode), leaving them pending; safety changes and approved ones go on.
func (a *Agent) gate(nowNs int64, changes []core.Change) []core.Change {
	if !a.cfg.Approve {
		return changes
	}
	a.mu.Lock()
	a.approvals.TTL = int64(ApprovalIntervals * a.cfg.Interval)
	apply, held := a.approvals.Gate(changes, nowNs)
	a.saveApprovals()
	a.mu.Unlock()
	for _, c := range held {
		a.core.Hold(c)
	}
	return apply
}

// saveApprovals keeps the approvals not yet applied in the journal when
// they changed, so that a restart does not lose them (they were held in
// memory only: an approval given just before a restart was gone, its
// change pending again). Called with a.mu held.
func (a *Agent) saveApprovals() error {
	as := a.approvals.Approved()
	if slices.Equal(as, a.savedApprovals) {
		return nil
	}
	if err := a.o.Journal.SetApprovals(as); err != nil {
		a.log.Error("approvals not kept in the agent db: a restart would lose them", "err", err)
		return fmt.Errorf("approve: keeping the approval in the agent db: %w", err)
	}
	a.savedApprovals = as
	return nil
}

// Approving says why nothing can wait for approval (nil in approve mode):
// GET /pending refuses with it, as POST /approve does, rather than answer
// an empty list an operator reads as "nothing pending" of an agent that
// applies its changes by itself.
func (a *Agent) Approving() error {
	switch {
	case a.cfg.Mode != config.ModeClosedLoop:
		return fmt.Errorf("%w: it runs in %s mode and writes nothing, so nothing waits for approval (agent recommendations shows what it would change)", ErrNotApproveMode, a.cfg.Mode)
	case !a.cfg.Approve:
		return fmt.Errorf("%w: it applies its changes by itself, so nothing waits for approval (agent history shows what it applied)", ErrNotApproveMode)
	}
	return nil
}

// Pending is what waits for approval, in key order (none outside approve
// mode).
func (a *Agent) Pending() []core.Pending {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.approvals.Pending()
}

// Approve approves the pending change of each of keys (all pending ones
// with all) for by: each is applied at the next interval where the guard
// still proposes it (its audit entry names by), within ApprovalIntervals.
// With plans, only those very changes are approved (core.Approvals.Approve).
func (a *Agent) Approve(keys []env.QueueKey, all bool, by string, plans []string) ([]core.Pending, error) {
	if !a.cfg.Approve || a.cfg.Mode != config.ModeClosedLoop {
		return nil, ErrNotApproveMode
	}
	if a.paused() {
		// the plan is not decided while paused: an approval now would be
		// of a change the loop may not want at resume, and was dropped
		return nil, ErrPausedApproval
	}
	if err := a.notOwned(keys, all); err != nil {
		return nil, err
	}
	a.mu.Lock()
	out, err := a.approvals.Approve(keys, all, by, plans, a.o.Clock().UnixNano())
	if err == nil {
		err = a.saveApprovals()
	}
	a.mu.Unlock()
	if err != nil {
		return nil, err
	}
	for _, p := range out {
		a.log.Warn("change approved", "by", by, "queue", p.Key.String(), "to", p.New.Describe())
	}
	return out, nil
}

// notOwned refuses, in a fleet, the approval of queues of a switch this
// member does not own: the change waits on the switch's owner, and only an
// approval there applies it. It names the owner (from etcd, within 2 s)
// and says to approve there (it said only "nothing pending for ...").
func (a *Agent) notOwned(keys []env.QueueKey, all bool) error {
	og, ok := a.o.Gate.(ownerGate)
	if !ok || all {
		return nil
	}
	var others []string
	for _, k := range keys {
		if !og.Owns(k.Target) && !slices.Contains(others, k.Target) {
			others = append(others, k.Target)
		}
	}
	if len(others) == 0 {
		return nil
	}
	owner := map[string]string{}
	name, self := "", ""
	if fs, ok := a.o.Gate.(fleetStatuser); ok {
		ctx, cancel := context.WithTimeout(context.Background(), FleetStatusTimeout)
		st, err := fs.Status(ctx)
		cancel()
		if err == nil {
			for _, sw := range st.Switches {
				owner[sw.Switch] = sw.Owner
			}
			name, self = st.Name, st.Self
		}
	}
	var said []string
	for _, t := range others {
		switch o := owner[t]; {
		case o != "":
			said = append(said, fmt.Sprintf("%s is run by member %s, not this one: approve on %s (its agent's URL, or ecntune agent approve --config with its configuration)", t, o, o))
		case len(owner) > 0:
			said = append(said, fmt.Sprintf("%s has no owner in the fleet now (ecntune fleet status says why): nothing of it waits for an approval", t))
		default:
			said = append(said, fmt.Sprintf("%s is not run by this member (etcd did not say which member runs it: ecntune fleet status shows its owner): approve there", t))
		}
	}
	who := "this member"
	if self != "" {
		who = "member " + self
	}
	if name != "" {
		who += " of fleet " + name
	}
	return fmt.Errorf("approve on %s: %s", who, strings.Join(said, "; "))
}

// RequestWriter is a Switch that can show the Set requests a change
// would send (gnmiclient.Switch): for approve mode's gnmic export.
type RequestWriter interface {
	SetRequests(settings map[env.QueueKey]env.Setting) ([]*gnmi.SetRequest, error)
}

// PendingRequests are the Set requests of the pending changes, per target,
// as gnmic request files (gnmipath.Gnmic), in the order they would be
// sent.
func (a *Agent) PendingRequests() (map[string][]gnmipath.GnmicRequest, error) {
	byTarget := map[string]map[env.QueueKey]env.Setting{}
	for _, p := range a.Pending() {
		if byTarget[p.Key.Target] == nil {
			byTarget[p.Key.Target] = map[env.QueueKey]env.Setting{}
		}
		byTarget[p.Key.Target][p.Key] = p.New
	}
	out := map[string][]gnmipath.GnmicRequest{}
	for _, t := range slices.Sorted(maps.Keys(byTarget)) {
		rw, ok := a.switches[t].(RequestWriter)
		if !ok {
			return nil, fmt.Errorf("target %s: its client cannot show its Set requests", t)
		}
		reqs, err := rw.SetRequests(byTarget[t])
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", t, err)
		}
		for _, r := range reqs {
			g, err := gnmipath.Gnmic(r)
			if err != nil {
				return nil, fmt.Errorf("target %s: %w", t, err)
			}
			out[t] = append(out[t], g)
		}
	}
	return out, nil
}
