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
	// The id is kept before the Set goes out: a Set whose answer is lost
	// (a timeout) may have started the commit all the same, and only its
	// id can confirm it (SettleCommit; a switch that never saw it refuses
	// the confirm, and nothing is lost).
	s.mu.Lock()
	s.commit, s.commitPrefix = id, req.GetPrefix()
	s.mu.Unlock()
	if _, err := s.conn.Set(ctx, req); err != nil {
		return err
	}
	if len(notTunable) > 0 {
		return &gnmipath.HeadroomError{Target: s.cfg.Name, Paths: notTunable, Err: errors.New("not tunable on this switch")}
	}
	return nil
}

// SettleCommit ends the confirmed commit the last Apply started: keep
// confirms it, otherwise it is cancelled (the switch reverts at once); a
// commit whose confirm or cancel failed is kept for another try until
// AbandonCommit or the next Apply. It
// says whether a commit may be under way (an Apply sent one, whether or
// not its answer came); none (commit-confirmed off, or the Apply sent
// nothing) is not an error. A commit that could not be confirmed is
// reverted by the switch when its rollback duration ends (at once, if the
// Set never started it): it is not applied, whatever a read says now.
func (s *Switch) SettleCommit(ctx context.Context, keep bool) (bool, error) {
	s.mu.Lock()
	id, prefix := s.commit, s.commitPrefix
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
		// kept: a cancel may follow a failed confirm (AbandonCommit
		// forgets it)
		return true, fmt.Errorf("target %s: %s of commit %s: %w", s.cfg.Name, what, id, err)
	}
	s.mu.Lock()
	if s.commit == id {
		s.commit, s.commitPrefix = "", nil
	}
	s.mu.Unlock()
	return true, nil
}

// RollbackDuration is how long the switch waits for a commit's confirm
// before it reverts it (target key commit-confirmed; 0: off).
func (s *Switch) RollbackDuration() time.Duration { return s.cfg.CommitConfirmed }

// AbandonCommit forgets the confirmed commit the last Apply started, if
// any, without a word to the switch: it reverts the commit when its
// rollback duration ends (for a writer that may no longer write the
// switch, for which a confirm or a cancel would be a write).
func (s *Switch) AbandonCommit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	had := s.commit != ""
	s.commit, s.commitPrefix = "", nil
	return had
}
