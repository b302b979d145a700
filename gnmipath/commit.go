package gnmipath

import (
	"fmt"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// gNMI's commit confirmed extension (openconfig/reference rpc/gnmi/
// gnmi-commit-confirmed.md, gnmi_ext.Commit): a Set carrying a commit
// request is applied and reverted by the switch after its rollback
// duration unless a Set carrying a confirm with the same id arrives first;
// a cancel reverts at once. One commit at a time per switch: while one
// runs, another commit request, or a Set without the extension, is
// refused with FAILED_PRECONDITION; a confirm or cancel with another id
// with INVALID_ARGUMENT. A device-side guard for the agent: a change whose
// read-back the agent never confirmed (the agent died, was deposed, or
// lost the switch) undoes itself.

// CommitAction is what a commit extension asks.
type CommitAction int

const (
	CommitStart   CommitAction = iota + 1 // a new commit, reverted unless confirmed
	CommitConfirm                         // make the running commit permanent
	CommitCancel                          // revert the running commit now
)

// CommitExtension is the extension of a Set that starts (with rollback),
// confirms or cancels the commit id.
func CommitExtension(id string, a CommitAction, rollback time.Duration) *gnmi_ext.Extension {
	c := &gnmi_ext.Commit{Id: id}
	switch a {
	case CommitStart:
		c.Action = &gnmi_ext.Commit_Commit{Commit: &gnmi_ext.CommitRequest{RollbackDuration: durationpb.New(rollback)}}
	case CommitConfirm:
		c.Action = &gnmi_ext.Commit_Confirm{Confirm: &gnmi_ext.CommitConfirm{}}
	case CommitCancel:
		c.Action = &gnmi_ext.Commit_Cancel{Cancel: &gnmi_ext.CommitCancel{}}
	}
	return &gnmi_ext.Extension{Ext: &gnmi_ext.Extension_Commit{Commit: c}}
}

// CommitOf finds the commit extension of a Set (nil: none).
func CommitOf(req *gnmi.SetRequest) *gnmi_ext.Commit {
	for _, e := range req.GetExtension() {
		if c := e.GetCommit(); c != nil {
			return c
		}
	}
	return nil
}

// DefaultCommitRollback is the rollback duration of a commit request that
// gives none (the extension's specification: ten minutes).
const DefaultCommitRollback = 10 * time.Minute

// MergeSets makes one Set of reqs (deletes, replaces and updates in
// order), for a commit that must cover all of a change: the requests must
// share their prefix.
func MergeSets(reqs []*gnmi.SetRequest) (*gnmi.SetRequest, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	out := &gnmi.SetRequest{Prefix: reqs[0].GetPrefix()}
	for i, r := range reqs {
		if !proto.Equal(r.GetPrefix(), out.Prefix) {
			return nil, fmt.Errorf("gnmipath: Set %d of %d has another prefix (%s, not %s): one commit cannot cover them",
				i+1, len(reqs), Describe(r.GetPrefix(), nil), Describe(out.Prefix, nil))
		}
		out.Delete = append(out.Delete, r.GetDelete()...)
		out.Replace = append(out.Replace, r.GetReplace()...)
		out.Update = append(out.Update, r.GetUpdate()...)
	}
	return out, nil
}
