package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/fleet"

	"github.com/ecntune/ecntune/agent/gnmiclient"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/internal/units"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Committer is a Switch whose Sets can go as gNMI confirmed commits
// (gnmiclient.Switch with commit-confirmed): SettleCommit confirms the
// commit the last Apply started, or cancels it (the switch reverts);
// AbandonCommit forgets it without a word to the switch, which reverts it
// by itself.
type Committer interface {
	SettleCommit(ctx context.Context, keep bool) (bool, error)
	AbandonCommit() bool
}

// revertBy is the RevertByNs of a change's audit intent written at nowNs
// whose Set goes as a confirmed commit with the given rollback duration,
// the Set bounded by setBound: the Set reaches the switch within setBound,
// the switch reverts the commit rollback after it started unless it was
// confirmed, and one more setBound covers a Set the switch took as its
// deadline ended and the revert itself. Before then, a read of the switch
// after a crash may show a commit it has yet to revert.
func revertBy(nowNs int64, setBound, rollback time.Duration) int64 {
	return nowNs + int64(2*setBound+rollback)
}

// rollbackDurationer is a Switch that sends its Sets as confirmed commits
// (gnmiclient.Switch): RollbackDuration is how long the switch waits for
// the confirm (0: commit-confirmed off).
type rollbackDurationer interface{ RollbackDuration() time.Duration }

// RuleCommitPending is the reason a change waits: an open audit entry of
// its target, left by a crash, has a confirmed commit that may still be
// pending on the switch (core.AuditEntry.CommitPending), and the switch
// refuses other Sets until it has confirmed or reverted it.
const RuleCommitPending = "commit-pending"

// settleCommit ends a flight's confirmed commit on the flight's goroutine:
// confirmed when every change read back as set (after a failed Set too: a
// lost answer may hide a commit the switch started), cancelled otherwise,
// and read again when it was not confirmed. A change whose commit was not
// confirmed is not applied (core.ErrUnconfirmed), whatever the read says:
// the switch reverts it when its rollback duration ends, or has already.
func (a *Agent) settleCommit(ctx context.Context, sw Switch, d *ioDone) {
	c, ok := sw.(Committer)
	if !ok {
		return
	}
	refused := errors.As(d.setErr, new(*gnmipath.HeadroomError))
	keep := d.err == nil && a.readBackAsSet(d, refused)
	cctx, cancel := a.writeContext(ctx, d.target, true) // a confirm or cancel is a write
	defer cancel()
	if a.o.Gate != nil {
		// A confirm or a cancel is a write, and starts now: not once this
		// member may no longer write the switch (handed over, or its
		// lease about to end), whose next owner may be writing it.
		if tok, ok := a.o.Gate.Writable(d.target, a.o.Clock()); !ok || tok != d.token {
			if c.AbandonCommit() {
				d.setErr = fmt.Errorf("%w: not confirmed, this member may no longer write the switch", core.ErrUnconfirmed)
				d.got, d.err = sw.Read(cctx, keysOf(d.changes))
			}
			return
		}
	}
	if f := a.cfg.Fleet; f != nil {
		cctx = gnmiclient.WithFence(cctx, gnmipath.Fence{Writer: f.Member, Token: d.token})
	}
	var again bool
	d.setErr, again = endCommit(cctx, c, keep, d.setErr, func() bool {
		d.got, d.err = sw.Read(cctx, keysOf(d.changes))
		return d.err == nil && a.readBackAsSet(d, refused)
	})
	if again {
		d.got, d.err = sw.Read(cctx, keysOf(d.changes))
	}
}

// endCommit ends a confirmed commit (the loop's and agent rollback's): it
// confirms it when keep (the read-back shows every change), cancels it
// otherwise, and returns the Set's error as it then stands (wrapping
// core.ErrUnconfirmed when the commit was not confirmed: the switch
// reverts it) and whether the caller must read the switch again. A failed
// confirm is followed by a cancel, which tells what the switch keeps:
// taken, it reverted the change; refused because no commit waits under
// that id (noSuchCommit), the confirm took or the rollback duration ended,
// and readAsSet (which reads the switch) says which; refused otherwise, or
// not reaching the switch, the commit may still be pending, and the switch
// reverts it by itself.
func endCommit(ctx context.Context, c Committer, keep bool, setErr error, readAsSet func() bool) (error, bool) {
	had, err := c.SettleCommit(ctx, keep)
	if !had || (keep && err == nil) {
		return setErr, false
	}
	defer c.AbandonCommit()
	// %v, not %w, for what the Set said: a headroom refusal inside is no
	// longer "the ECN change went through" (setLanded).
	switch {
	case keep:
		_, cerr := c.SettleCommit(ctx, false)
		switch {
		case cerr == nil:
			return fmt.Errorf("%w: its confirm failed (%v); cancelled, the switch reverted it", core.ErrUnconfirmed, err), true
		case noSuchCommit(cerr):
			if readAsSet() {
				return setErr, false // the confirm took; its answer was lost
			}
			return fmt.Errorf("%w: its confirm failed (%v), and the switch runs otherwise", core.ErrUnconfirmed, err), false
		default:
			return fmt.Errorf("%w: its confirm failed (%v), and its cancel (%v)", core.ErrUnconfirmed, err, cerr), true
		}
	case err != nil:
		return fmt.Errorf("%w: read back otherwise (set: %v); cancelling it failed: %v", core.ErrUnconfirmed, setErr, err), true
	case setErr != nil:
		return fmt.Errorf("%w: read back otherwise (set: %v); cancelled, the switch reverted it", core.ErrUnconfirmed, setErr), true
	}
	return fmt.Errorf("%w: read back otherwise; cancelled, the switch reverted it", core.ErrUnconfirmed), true
}

// readBackAsSet says whether d's read shows every change as set (without
// its headroom and alpha where the switch refused them: refused).
func (a *Agent) readBackAsSet(d *ioDone, refused bool) bool {
	for _, ch := range d.changes {
		if got, ok := d.got[ch.Key]; !ok || !a.core.Guard().ReadBackOK(readBackWant(ch.New, refused), got) {
			return false
		}
	}
	return true
}

// readBackWant is what a change must read back as: without its headroom
// and alpha when the switch refused them (gnmipath.HeadroomError: the ECN
// change stands, the switch keeps its own).
func readBackWant(s env.Setting, refused bool) env.Setting {
	if refused {
		s.HeadroomBytes, s.Alpha = 0, 0
	}
	return s
}

// headroomRefused is the audit's word on a change applied without the
// headroom the switch refused (why).
func headroomRefused(wanted, got int64, why error) string {
	if errors.Is(why, core.ErrSetOutcomeUnknown) {
		// a headroom Set that timed out was audited as refused, and
		// landed seconds later unnoticed
		return fmt.Sprintf("headroom %s not confirmed (%v): the ECN change applied, the headroom is %s as read back, and the headroom Set may still land",
			units.FormatBytes(wanted), why, units.FormatBytes(got))
	}
	return fmt.Sprintf("headroom %s refused by the switch (%v): the ECN change applied, the headroom is %s as read back",
		units.FormatBytes(wanted), why, units.FormatBytes(got))
}

// headroomErrorOf is herr narrowed to the paths of key's port (each
// queue's audit entry listed every queue's headroom paths); all of them
// when none names the port.
func headroomErrorOf(herr *gnmipath.HeadroomError, key env.QueueKey) error {
	var own []string
	for _, p := range herr.Paths {
		// the port's name whole (Ethernet4, not Ethernet40)
		if i := strings.Index(p, key.Port); i >= 0 {
			if rest := p[i+len(key.Port):]; rest == "" || !unicode.IsLetter(rune(rest[0])) && !unicode.IsDigit(rune(rest[0])) {
				own = append(own, p)
			}
		}
	}
	if len(own) == 0 || len(own) == len(herr.Paths) {
		return herr
	}
	return &gnmipath.HeadroomError{Target: herr.Target, Paths: own, Err: herr.Err}
}

// noSuchCommit says whether err is a switch's answer that no commit
// waits under the id (gNMI's commit confirmed extension: FailedPrecondition,
// NotFound, or InvalidArgument for an id that is not the commit under
// way), not a refusal of the request itself (permission, resources) or a
// failure to reach the switch, after which the commit may still be
// pending.
func noSuchCommit(err error) bool {
	switch status.Code(err) {
	case codes.FailedPrecondition, codes.NotFound, codes.InvalidArgument:
		return true
	}
	return false
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
