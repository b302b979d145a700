package simswitch

import (
	"context"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
)

// gNMI's commit confirmed extension, as its specification (openconfig/
// reference rpc/gnmi/gnmi-commit-confirmed.md) says, per switch (each
// switch its own server, one commit at a time): a Set with a commit
// request applies and starts a rollback timer (default ten minutes); a
// confirm with its id keeps the change, a cancel reverts it at once, a new
// rollback duration resets the timer; when the timer fires the switch
// reverts. While a commit runs, another commit request or a Set without
// the extension is refused (FAILED_PRECONDITION); a confirm, cancel or
// new duration without a commit under way is FAILED_PRECONDITION, with
// another id INVALID_ARGUMENT. Served by devices with CommitConfirmed.

// pendingCommit is a switch's commit under way.
type pendingCommit struct {
	id      string
	before  gnmipath.Tree // the configuration before it
	changes []change      // what it changed
	timer   *time.Timer
	gen     int // which timer is live (a reset one fires stale)
}

// treeOf is switch sw's configuration now.
func (r *runner) treeOf(sw int) gnmipath.Tree {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pub[sw].tree
}

// commitAllows refuses a Set while a commit runs on sw (runner goroutine).
func (r *runner) commitAllows(sw int) error {
	if pc := r.commits[sw]; pc != nil {
		return status.Errorf(codes.FailedPrecondition, "commit %q is waiting for confirmation on %s: no other Set until it is confirmed, cancelled or rolled back; nothing changed",
			pc.id, r.infos[sw].Name)
	}
	return nil
}

// startCommit records the commit a Set just applied and starts its
// rollback timer (runner goroutine).
func (r *runner) startCommit(sw int, c *gnmi_ext.Commit, before gnmipath.Tree) {
	if r.commits == nil {
		r.commits = map[int]*pendingCommit{}
	}
	pc := &pendingCommit{id: c.GetId(), before: before, changes: r.applied}
	r.commits[sw] = pc
	d := gnmipath.DefaultCommitRollback
	if rd := c.GetCommit().GetRollbackDuration(); rd != nil && rd.AsDuration() > 0 {
		d = rd.AsDuration()
	}
	r.armCommit(sw, pc, d)
}

// armCommit (re)starts pc's rollback timer.
func (r *runner) armCommit(sw int, pc *pendingCommit, d time.Duration) {
	if pc.timer != nil {
		pc.timer.Stop()
	}
	pc.gen++
	gen := pc.gen
	pc.timer = time.AfterFunc(d, func() {
		_ = r.do(context.Background(), func() {
			if r.commits[sw] == pc && pc.gen == gen {
				r.revertCommit(sw, pc, "rollback")
			}
		})
	})
}

// revertCommit undoes a commit: every queue's setting and the
// configuration as they were before it (runner goroutine).
func (r *runner) revertCommit(sw int, pc *pendingCommit, why string) {
	pc.timer.Stop()
	delete(r.commits, sw)
	for i := len(pc.changes) - 1; i >= 0; i-- {
		c := pc.changes[i]
		pg := simenv.PGRef{Switch: sw, Port: c.ref.Port, PG: c.ref.Queue}
		if c.setECN {
			_ = r.eng.SetECN(c.ref, c.old)
		}
		if c.setHdrm {
			_ = r.eng.SetHeadroom(pg, c.oldHdrm)
		}
		if c.setAlpha && c.oldAlpha > 0 {
			_ = r.eng.SetAlpha(pg, c.oldAlpha)
		}
	}
	r.commitTree(sw, pc.before)
	back := make([]change, len(pc.changes))
	for i, c := range pc.changes {
		back[i] = c
		back[i].ecn, back[i].hdrm, back[i].alpha = c.old, c.oldHdrm, c.oldAlpha
	}
	r.writing = gnmipath.Fence{}
	r.logChangesWhy(sw, back, why)
	r.publishStep(-1)
}

// commitAction serves a Set that confirms or cancels a commit, or sets
// its rollback duration, found by its id among the switches this listener
// serves.
func (v *service) commitAction(ctx context.Context, req *gnmi.SetRequest, c *gnmi_ext.Commit) (*gnmi.SetResponse, error) {
	if len(req.GetDelete())+len(req.GetReplace())+len(req.GetUpdate())+len(req.GetUnionReplace()) > 0 {
		return nil, status.Error(codes.InvalidArgument, "a commit confirm, cancel or rollback duration carries no operations; nothing changed")
	}
	if c.GetId() == "" {
		return nil, status.Error(codes.InvalidArgument, "commit extension without an id")
	}
	d := c.GetSetRollbackDuration().GetRollbackDuration().AsDuration()
	if c.GetSetRollbackDuration() != nil && d <= 0 {
		return nil, status.Error(codes.InvalidArgument, "set_rollback_duration needs a duration above 0")
	}
	var aerr error
	var ts int64
	err := v.s.r.do(ctx, func() {
		ts = SimTimestamp(v.s.r.eng.Now())
		sw, pc := v.s.r.commitByID(c.GetId())
		switch {
		case pc == nil && len(v.s.r.commits) == 0:
			aerr = status.Errorf(codes.FailedPrecondition, "no commit is waiting for confirmation (commit %q rolled back, or never started)", c.GetId())
		case pc == nil:
			aerr = status.Errorf(codes.InvalidArgument, "commit %q is not the commit under way", c.GetId())
		case c.GetConfirm() != nil:
			pc.timer.Stop()
			delete(v.s.r.commits, sw)
		case c.GetCancel() != nil:
			v.s.r.revertCommit(sw, pc, "cancel")
		case c.GetSetRollbackDuration() != nil:
			v.s.r.armCommit(sw, pc, d)
		default:
			aerr = status.Error(codes.InvalidArgument, "commit extension without an action")
		}
	})
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "simulation not running: %v", err)
	}
	if aerr != nil {
		return nil, aerr
	}
	return &gnmi.SetResponse{Prefix: req.GetPrefix(), Timestamp: ts}, nil
}

// commitByID finds the commit under way with id (runner goroutine).
func (r *runner) commitByID(id string) (int, *pendingCommit) {
	for sw, pc := range r.commits {
		if pc.id == id {
			return sw, pc
		}
	}
	return -1, nil
}
