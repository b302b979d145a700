package agent

import (
	"errors"
	"fmt"
	"maps"
	"slices"

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
	a.mu.Unlock()
	for _, c := range held {
		a.core.Hold(c)
	}
	return apply
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
	a.mu.Lock()
	out, err := a.approvals.Approve(keys, all, by, plans, a.o.Clock().UnixNano())
	a.mu.Unlock()
	if err != nil {
		return nil, err
	}
	for _, p := range out {
		a.log.Warn("change approved", "by", by, "queue", p.Key.String(), "to", p.New.Describe())
	}
	return out, nil
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
