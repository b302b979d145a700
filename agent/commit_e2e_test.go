package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/gnmiclient"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simswitch"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// lostConfirm is a switch whose confirms never leave the agent (as if
// the agent died between its read-back and the confirm).
type lostConfirm struct{ *gnmiclient.Switch }

func (lostConfirm) SettleCommit(context.Context, bool) (bool, error) { return true, nil }

// runCommitE2E runs a closed loop of the static hpcc policy on one
// simulated switch with commit-confirmed 3 s (set timeout 1 s), the
// switch's set log in log.
func runCommitE2E(t *testing.T, wrap func(*gnmiclient.Switch) Switch) (*simswitch.Server, *syncBuffer, *Agent) {
	t.Helper()
	log := &syncBuffer{}
	s, addr := startSim(t, e2eSim(poorECN), gnmipath.OpenConfig, func(c *simswitch.Config) { c.SetLog = log })
	tg := target0(addr, config.DialectOpenConfig)
	tg.CommitConfirmed = 3 * time.Second
	pol := mustStatic(t, "hpcc")
	cfg := &config.Config{Mode: config.ModeClosedLoop, Policy: pol.Name(), Interval: 100 * time.Millisecond, SampleInterval: 100 * time.Millisecond,
		DB: filepath.Join(t.TempDir(), "agent.db"), Owner: "e2e", Targets: []config.Target{tg}, Guardrails: e2eGuard()}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := Open(ctx, cfg, Deps{Policy: pol, SetTimeout: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LockTimeout: time.Second,
		Dial: func(ctx context.Context, t config.Target, sample time.Duration) (Switch, error) {
			s, err := gnmiclient.Dial(ctx, t, sample)
			if err != nil || wrap == nil {
				return s, err
			}
			return wrap(s), nil
		}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; a.Close() })
	return s, log, a
}

// With commit-confirmed, every change goes as a confirmed commit: applied,
// read back, confirmed; nothing is rolled back by the switch.
func TestE2ECommitConfirmed(t *testing.T) {
	s, log, a := runCommitE2E(t, nil)
	waitFor(t, 10*time.Second, "hpcc on every port", func() bool {
		for p := 0; p < 4; p++ {
			if simECN(t, s, "sw0", p, 3) != (simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}) {
				return false
			}
		}
		return true
	})
	time.Sleep(3500 * time.Millisecond) // past the rollback duration
	if l := log.String(); strings.Contains(l, `"why":"rollback"`) || strings.Contains(l, `"why":"cancel"`) {
		t.Fatalf("a confirmed commit was undone:\n%s", l)
	}
	es, _ := a.Journal().Entries("sw0", 0)
	if len(es) == 0 {
		t.Fatal("no audit entries")
	}
	for _, e := range es {
		if e.State != core.StateApplied {
			t.Fatalf("audit entry %d: %s (%s)", e.Seq, e.State, e.Error)
		}
	}
}

// A change whose confirm never reaches the switch is undone by the switch
// itself when the rollback duration ends: the device-side guard.
func TestE2EUnconfirmedCommitRollsBack(t *testing.T) {
	_, log, _ := runCommitE2E(t, func(s *gnmiclient.Switch) Switch { return lostConfirm{s} })
	waitFor(t, 15*time.Second, "the switch to roll an unconfirmed commit back", func() bool {
		l := log.String()
		return strings.Contains(l, `"why":"set"`) && strings.Contains(l, `"why":"rollback"`)
	})
}

// A rollback duration the agent cannot confirm within (three set
// timeouts) is refused when the agent is built.
func TestCommitConfirmedTooShortIsRefused(t *testing.T) {
	cfg := testConfig(config.ModeClosedLoop)
	cfg.Targets[0].CommitConfirmed = 2 * time.Second
	j, err := journal.OpenJournal(filepath.Join(t.TempDir(), "a.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	_, err = New(Options{Config: cfg, Policy: alternating{}, Observer: &fakeObserver{}, Journal: j, SetTimeout: time.Second,
		Switches: []Switch{newFakeSwitch("leaf0")}})
	if err == nil || !strings.Contains(err.Error(), "targets.leaf0.commit-confirmed: 2s is less than three set timeouts") {
		t.Fatalf("got %v", err)
	}
}

// confirmFails is a switch whose confirms fail on the wire (they never
// reach the switch); cancels go through.
type confirmFails struct{ *gnmiclient.Switch }

func (c confirmFails) SettleCommit(ctx context.Context, keep bool) (bool, error) {
	if keep {
		return true, errors.New("rpc error: code = Unavailable desc = connection reset")
	}
	return c.Switch.SettleCommit(ctx, keep)
}

// A change whose confirm failed is not applied, whatever the switch runs
// until its rollback duration ends: the audit says failed and why, and
// the switch does revert it (the audit said "applied" before).
func TestE2EFailedConfirmIsNotApplied(t *testing.T) {
	s, _, a := runCommitE2E(t, func(s *gnmiclient.Switch) Switch { return confirmFails{s} })
	var first core.AuditEntry
	waitFor(t, 10*time.Second, "a first audit entry resolved", func() bool {
		es, _ := a.Journal().Entries("sw0", 0)
		for _, e := range es {
			if e.State != core.StateIntent {
				first = e
				return true
			}
		}
		return false
	})
	if first.State != core.StateFailed || !strings.Contains(first.Error, "not confirmed") || !strings.Contains(first.Error, "confirm failed") ||
		!strings.Contains(first.Error, "cancelled, the switch reverted it") {
		t.Fatalf("audit entry %d of a change whose confirm failed: %s (%s); want failed, saying the commit was not confirmed", first.Seq, first.State, first.Error)
	}
	port := int(first.Key.Port[len(first.Key.Port)-1] - '0')
	waitFor(t, 10*time.Second, "the switch to revert the unconfirmed commit", func() bool {
		return simECN(t, s, "sw0", port, 3) != (simenv.ECN{KminBytes: first.New.KminBytes, KmaxBytes: first.New.KmaxBytes, Pmax: first.New.Pmax})
	})
}

// slowAnswers forwards TCP to upstream and holds the answers (server to
// client) until the time in until (unix ns).
type slowAnswers struct {
	ln    net.Listener
	until atomic.Int64
}

func newSlowAnswers(t *testing.T, upstream string) *slowAnswers {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &slowAnswers{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close(); u.Close() })
			go func() { io.Copy(u, c); u.Close() }()
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := u.Read(buf)
					if n > 0 {
						if d := time.Until(time.Unix(0, p.until.Load())); d > 0 {
							time.Sleep(d)
						}
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						c.Close()
						return
					}
				}
			}()
		}
	}()
	return p
}

// A confirmed commit whose Set answer is lost (a client timeout after the
// switch took it) can still be confirmed: the client kept its id before
// sending, so the confirm reaches the commit and the switch keeps the
// change past its rollback duration (before, the id was lost with the
// answer, nothing confirmed it, and the read-back judged it applied).
func TestCommitWithALostAnswerIsConfirmed(t *testing.T) {
	s, addr := startSim(t, e2eSim(poorECN), gnmipath.OpenConfig, nil)
	p := newSlowAnswers(t, addr)
	tg := target0(p.ln.Addr().String(), config.DialectOpenConfig)
	tg.CommitConfirmed = 2 * time.Second
	ctx := context.Background()
	sw, err := gnmiclient.Dial(ctx, tg, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	k := env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}
	if _, err := sw.Read(ctx, []env.QueueKey{k}); err != nil { // the binding, as the agent's stream learns it
		t.Fatal(err)
	}
	want := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	p.until.Store(time.Now().Add(1200 * time.Millisecond).UnixNano())
	sctx, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
	setErr := sw.Apply(sctx, map[env.QueueKey]env.Setting{k: want})
	cancel()
	if setErr == nil {
		t.Fatal("the Set's answer was not lost: the proxy held nothing")
	}
	time.Sleep(time.Until(time.Unix(0, p.until.Load())) + 100*time.Millisecond)
	had, err := sw.SettleCommit(ctx, true)
	if !had || err != nil {
		t.Fatalf("confirm after a lost answer: had %v, err %v; want the commit confirmed", had, err)
	}
	time.Sleep(2500 * time.Millisecond) // past the rollback duration
	if got := simECN(t, s, "sw0", 0, 3); got != (simenv.ECN{KminBytes: want.KminBytes, KmaxBytes: want.KmaxBytes, Pmax: want.Pmax}) {
		t.Fatalf("the switch reverted a confirmed commit: runs %+v", got)
	}
}

// `ecntune agent rollback` (ApplyManual) on a commit-confirmed target
// confirms its commit: the switch keeps the rollback past the rollback
// duration, as the audit says (before, it was never confirmed and the
// switch undid the rollback by itself).
func TestManualRollbackConfirmsItsCommit(t *testing.T) {
	s, addr := startSim(t, e2eSim(poorECN), gnmipath.OpenConfig, nil)
	tg := target0(addr, config.DialectOpenConfig)
	tg.CommitConfirmed = time.Second
	ctx := context.Background()
	sw, err := gnmiclient.Dial(ctx, tg, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	j := tempJournal(t)
	k := env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}
	want := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	written, _, err := ApplyManual(ctx, j, sw, []core.Change{{Key: k, Kind: core.KindManual, New: want, Reason: "undo"}}, "rollback/me", time.Now)
	if err != nil || len(written) != 1 || written[0].State != core.StateApplied {
		t.Fatalf("ApplyManual: %v, %+v", err, written)
	}
	time.Sleep(2500 * time.Millisecond) // past the rollback duration
	if got := simECN(t, s, "sw0", 0, 3); got != (simenv.ECN{KminBytes: want.KminBytes, KmaxBytes: want.KmaxBytes, Pmax: want.Pmax}) {
		t.Fatalf("the audit says applied, the switch runs %+v", got)
	}
}

// committing is a fake switch with confirmed commits: the confirm and the
// cancel answer as told, and the switch runs what runs says.
type committing struct {
	*fakeSwitch
	confirmErr, cancelErr error
	calls                 []bool // SettleCommit's keep, call by call
}

func (c *committing) SettleCommit(_ context.Context, keep bool) (bool, error) {
	c.calls = append(c.calls, keep)
	if keep {
		return true, c.confirmErr
	}
	return true, c.cancelErr
}

func (c *committing) AbandonCommit() bool { return true }

// A confirm or cancel that does not reach the switch, and a switch's
// answer that no commit waits under the id.
var (
	unreachable = errors.New("rpc error: code = Unavailable desc = connection reset")
	noCommit    = status.Error(codes.FailedPrecondition, "no commit is waiting for confirmation")
)

// A failed confirm is followed by a cancel, which tells what the switch
// keeps: taken, it reverted the change (not applied); refused by a switch
// that answers (no commit waits under that id), the confirm took and only
// its answer was lost, so a read showing the change is applied; not
// reaching the switch either, the switch reverts by itself (not applied).
func TestFailedConfirmIsSettledByACancel(t *testing.T) {
	for _, c := range []struct {
		name      string
		cancelErr error
		runs      env.Setting // what the switch runs when read
		applied   bool
		says      string
	}{
		{"cancel taken", nil, cur, false, "cancelled, the switch reverted it"},
		{"confirm took, answer lost", noCommit, target, true, ""},
		{"no commit, switch reverted", noCommit, cur, false, "the switch runs otherwise"},
		{"cancel unreachable too", unreachable, target, false, "and its cancel"},
		// a refusal of the request itself says nothing of the commit,
		// which may still be pending: the switch reverts it by itself
		{"cancel refused, commit pending", status.Error(codes.ResourceExhausted, "too many requests"), target, false, "and its cancel"},
		{"cancel refused by authorisation", status.Error(codes.PermissionDenied, "no"), target, false, "and its cancel"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeSwitch("leaf0", kA)
			f.set[kA] = c.runs
			sw := &committing{fakeSwitch: f, confirmErr: unreachable, cancelErr: c.cancelErr}
			r := newRig(t, config.ModeClosedLoop, false, "", f)
			d := ioDone{target: "leaf0", changes: []core.Change{{Key: kA, Kind: core.KindTune, Old: cur, New: target}},
				got: map[env.QueueKey]env.Setting{kA: target}}
			r.a.settleCommit(context.Background(), sw, &d)
			if len(sw.calls) != 2 || !sw.calls[0] || sw.calls[1] {
				t.Fatalf("SettleCommit calls %v, want a confirm then a cancel", sw.calls)
			}
			res := r.a.core.ReadBack("leaf0", d.changes, d.setErr, d.got, d.err)
			if (res[0].Outcome == core.Applied) != c.applied || (c.says != "" && !strings.Contains(fmt.Sprint(d.setErr), c.says)) {
				t.Fatalf("outcome %v (set error %v); want applied %v saying %q", res[0].Outcome, d.setErr, c.applied, c.says)
			}
		})
	}
}

// agent rollback ends its confirmed commit as the loop does: a failed
// confirm is followed by a cancel (before, the manual path stopped at the
// failed confirm and called the change failed, whatever the switch kept).
func TestManualRollbackSettlesAFailedConfirm(t *testing.T) {
	for _, c := range []struct {
		name      string
		cancelErr error
		state     core.AuditState
	}{
		{"confirm took, answer lost", noCommit, core.StateApplied},
		{"cancel taken", nil, core.StateFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeSwitch("leaf0", kA)
			f.set[kA] = target
			sw := &committing{fakeSwitch: f, confirmErr: unreachable, cancelErr: c.cancelErr}
			j := tempJournal(t)
			written, _, _ := ApplyManual(context.Background(), j, sw, []core.Change{{Key: kA, Kind: core.KindManual, New: cur}}, "me", func() time.Time { return time.Unix(100, 0) })
			if len(sw.calls) != 2 || !sw.calls[0] || sw.calls[1] {
				t.Fatalf("SettleCommit calls %v, want a confirm then a cancel", sw.calls)
			}
			if len(written) != 1 || written[0].State != c.state {
				t.Fatalf("written %+v, want %s", written, c.state)
			}
		})
	}
}
