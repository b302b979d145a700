package gnmiclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"

	"github.com/ecntune/ecntune/gnmipath"
)

// applyCommitted sends one change (every ECN and headroom update of it)
// as one confirmed commit (target key commit-confirmed): the switch takes
// all of it or none, and undoes it after the rollback duration unless
// SettleCommit confirms it. A device that does not implement the
// extension is refused before anything is sent.
func (s *Switch) applyCommitted(ctx context.Context, reqs []*gnmi.SetRequest, notTunable []string) error {
	if dev := s.device(); !dev.CommitConfirmed {
		return fmt.Errorf("target %s: commit-confirmed, but device %s does not implement gNMI's commit confirmed extension: remove the key", s.cfg.Name, dev.Name)
	}
	if len(reqs) == 0 {
		return nil
	}
	req, err := gnmipath.MergeSets(reqs)
	if err != nil {
		return fmt.Errorf("target %s: %w", s.cfg.Name, err)
	}
	id := fmt.Sprintf("ecntune-%s-%d", s.cfg.Name, time.Now().UnixNano())
	req.Extension = append(req.Extension, gnmipath.CommitExtension(id, gnmipath.CommitStart, s.cfg.CommitConfirmed))
	if _, err := s.conn.Set(ctx, req); err != nil {
		return err
	}
	s.mu.Lock()
	s.commit, s.commitPrefix = id, req.GetPrefix()
	s.mu.Unlock()
	if len(notTunable) > 0 {
		return &gnmipath.HeadroomError{Target: s.cfg.Name, Paths: notTunable, Err: errors.New("not tunable on this switch")}
	}
	return nil
}

// SettleCommit ends the confirmed commit the last Apply started: keep
// confirms it, otherwise it is cancelled (the switch reverts at once). It
// says whether a commit was under way; none (commit-confirmed off, or the
// Apply sent nothing) is not an error. A commit that could not be
// confirmed in time has been reverted by the switch: read it back.
func (s *Switch) SettleCommit(ctx context.Context, keep bool) (bool, error) {
	s.mu.Lock()
	id, prefix := s.commit, s.commitPrefix
	s.commit, s.commitPrefix = "", nil
	s.mu.Unlock()
	if id == "" {
		return false, nil
	}
	a, what := gnmipath.CommitConfirm, "confirm"
	if !keep {
		a, what = gnmipath.CommitCancel, "cancel"
	}
	req := &gnmi.SetRequest{Prefix: prefix, Extension: []*gnmi_ext.Extension{gnmipath.CommitExtension(id, a, 0)}}
	if _, err := s.conn.Set(ctx, req); err != nil {
		return true, fmt.Errorf("target %s: %s of commit %s: %w", s.cfg.Name, what, id, err)
	}
	return true, nil
}
