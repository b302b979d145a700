package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/fleet"

	"github.com/ecntune/ecntune/agent/gnmiclient"
	"github.com/ecntune/ecntune/gnmipath"
)

// Committer is a Switch whose Sets can go as gNMI confirmed commits
// (gnmiclient.Switch with commit-confirmed): SettleCommit confirms the
// commit the last Apply started, or cancels it (the switch reverts).
type Committer interface {
	SettleCommit(ctx context.Context, keep bool) (bool, error)
}

// settleCommit ends a flight's confirmed commit on the flight's goroutine:
// confirmed when every change read back as set, cancelled otherwise, and
// read again after a cancel or a failed confirm (the switch reverted, or
// its rollback came first): the driver judges what the switch runs.
func (a *Agent) settleCommit(ctx context.Context, sw Switch, d *ioDone) {
	c, ok := sw.(Committer)
	if !ok {
		return
	}
	keep := d.err == nil && (d.setErr == nil || errors.As(d.setErr, new(*gnmipath.HeadroomError)))
	for _, ch := range d.changes {
		got, ok := d.got[ch.Key]
		want := ch.New
		if d.setErr != nil { // the headroom was not tunable: the ECN change alone
			want.HeadroomBytes, want.Alpha = 0, 0
		}
		keep = keep && ok && a.core.Guard().ReadBackOK(want, got)
	}
	cctx, cancel := a.writeContext(ctx, true) // a confirm or cancel is a write
	defer cancel()
	if f := a.cfg.Fleet; f != nil {
		cctx = gnmiclient.WithFence(cctx, gnmipath.Fence{Writer: f.Member, Token: d.token})
	}
	had, err := c.SettleCommit(cctx, keep)
	if !had || (keep && err == nil) {
		return
	}
	switch {
	case keep:
		// Read again: a switch that took the confirm after all still
		// runs the change (applied); one whose rollback came first
		// does not (not applied).
		d.setErr = fmt.Errorf("confirming the commit: %w (the switch reverts an unconfirmed commit by itself)", err)
	case err != nil:
		// %v, not %w: a headroom refusal inside is no longer "the ECN
		// change went through" (setLanded)
		d.setErr = fmt.Errorf("read back otherwise; cancelling the commit: %v (the switch reverts it when its rollback duration ends)", err)
	default:
		d.setErr = errors.New("read back otherwise: the commit was cancelled and the switch reverted it")
	}
	d.got, d.err = sw.Read(cctx, keysOf(d.changes))
}

// checkCommitConfirmed refuses a rollback duration the agent cannot
// confirm within: its Set, read-back and confirm take up to a set timeout
// each. In a fleet, a take-over delay shorter than the rollback duration
// lets a new owner meet its predecessor's unconfirmed commit, whose
// switch refuses every Set until it has reverted: said once.
func checkCommitConfirmed(cfg *config.Config, setTimeout time.Duration, log *slog.Logger) error {
	for _, t := range cfg.Targets {
		if t.CommitConfirmed == 0 {
			continue
		}
		if t.CommitConfirmed < 3*setTimeout {
			return fmt.Errorf("targets.%s.commit-confirmed: %s is less than three set timeouts (3 × %s): the switch would revert changes before the agent confirms them",
				t.Name, t.CommitConfirmed, setTimeout)
		}
		if f := cfg.Fleet; f != nil {
			takeover := f.Takeover
			if takeover == 0 {
				takeover = fleet.DefaultTakeover
			}
			if takeover < t.CommitConfirmed {
				log.Warn("fleet.takeover is shorter than a target's commit-confirmed: a new owner may find its predecessor's commit unconfirmed and its Sets refused until the switch reverts it",
					"target", t.Name, "takeover", takeover, "commit_confirmed", t.CommitConfirmed)
			}
		}
	}
	return nil
}
