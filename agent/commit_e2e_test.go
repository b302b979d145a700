package agent

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/gnmiclient"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simswitch"
)

// lostConfirm is a switch whose confirms never leave the agent (as if
// the agent died between its read-back and the confirm).
type lostConfirm struct{ *gnmiclient.Switch }

func (lostConfirm) SettleCommit(context.Context, bool) (bool, error) { return true, nil }

// runCommitE2E runs a closed loop of the static hpcc policy on one
// simulated switch with commit-confirmed 3 s (set timeout 1 s), the
// switch's set log in log.
func runCommitE2E(t *testing.T, loseConfirms bool) (*simswitch.Server, *syncBuffer, *Agent) {
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
			if err != nil || !loseConfirms {
				return s, err
			}
			return lostConfirm{s}, nil
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
	s, log, a := runCommitE2E(t, false)
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
	_, log, _ := runCommitE2E(t, true)
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
