package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/gnmiclient"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
)

// killedAtConfirm is a commit-confirmed switch as seen by an agent killed
// (kill -9, a power cut) as its flight reaches the confirm: before it
// (afterConfirm false: the confirm never leaves the process) or just after
// the switch took it (afterConfirm true). Either way nothing more leaves
// the dead process: its flight stays parked until the test ends, and no
// result of it is journaled.
type killedAtConfirm struct {
	*gnmiclient.Switch
	afterConfirm bool
	killed       chan struct{} // closed when the process dies
	dead         chan struct{} // closed when the test ends
	once         sync.Once
}

func (k *killedAtConfirm) SettleCommit(ctx context.Context, keep bool) (bool, error) {
	if k.afterConfirm && keep {
		if had, err := k.Switch.SettleCommit(ctx, true); !had || err != nil {
			panic("the confirm before the crash did not take")
		}
	}
	k.once.Do(func() { close(k.killed) })
	<-k.dead
	return true, errors.New("the process is dead")
}

// openCommitAgent opens an agent on db for the simulated switch at addr,
// with commit-confirmed 3 s and a set timeout of 1 s (its switch wrapped
// by wrap when not nil). Run is not started: the test drives it.
func openCommitAgent(t *testing.T, addr, db string, wrap func(*gnmiclient.Switch) Switch) *Agent {
	t.Helper()
	tg := target0(addr, config.DialectOpenConfig)
	tg.CommitConfirmed = 3 * time.Second
	pol := mustStatic(t, "hpcc")
	cfg := &config.Config{Mode: config.ModeClosedLoop, Policy: pol.Name(), Interval: 100 * time.Millisecond, SampleInterval: 100 * time.Millisecond,
		DB: db, Owner: "e2e", Targets: []config.Target{tg}, Guardrails: e2eGuard()}
	a, err := Open(context.Background(), cfg, Deps{Policy: pol, SetTimeout: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LockTimeout: time.Second,
		Dial: func(ctx context.Context, t config.Target, sample time.Duration) (Switch, error) {
			s, err := gnmiclient.Dial(ctx, t, sample)
			if err != nil || wrap == nil {
				return s, err
			}
			return wrap(s), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// An agent killed between the Set of a confirmed commit and its confirm
// leaves an open audit entry; the switch reverts the commit when its
// rollback duration ends. At the next start the entry is not taken as
// applied from a read that shows the change while the commit may still
// be pending: it stays open until the switch has settled the commit, and
// is then judged by what the switch runs: abandoned when the commit was
// never confirmed (the switch reverted it), reconciled when the confirm
// had reached the switch before the crash (it keeps the change). Before,
// the start's reconcile read the switch at once, found the new setting
// and marked the entry reconciled, which the switch then dropped.
func TestRestartAfterAnUnconfirmedCommit(t *testing.T) {
	for _, c := range []struct {
		name         string
		afterConfirm bool
		state        core.AuditState
	}{
		{"killed before the confirm", false, core.StateAbandoned},
		{"killed after the confirm", true, core.StateReconciled},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, addr := startSim(t, e2eSim(poorECN), gnmipath.OpenConfig, nil)
			db := filepath.Join(t.TempDir(), "agent.db")
			k := env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}
			want := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
			wantECN := simenv.ECN{KminBytes: want.KminBytes, KmaxBytes: want.KmaxBytes, Pmax: want.Pmax}

			// The first life: the loop's own write of one change (intent,
			// Set, read-back), killed at the confirm.
			var crash *killedAtConfirm
			a1 := openCommitAgent(t, addr, db, func(s *gnmiclient.Switch) Switch {
				crash = &killedAtConfirm{Switch: s, afterConfirm: c.afterConfirm, killed: make(chan struct{}), dead: make(chan struct{})}
				return crash
			})
			t.Cleanup(func() { close(crash.dead) })
			ctx := context.Background()
			old, err := a1.switches["sw0"].Read(ctx, []env.QueueKey{k}) // also the binding, as the agent's stream learns it
			if err != nil {
				t.Fatal(err)
			}
			a1.write(ctx, "sw0", []core.Change{{Key: k, Kind: core.KindTune, Old: old[k], New: want, Reason: "before the crash"}}, false)
			select {
			case <-crash.killed:
			case <-time.After(10 * time.Second):
				t.Fatal("the flight never reached its confirm")
			}
			killedAt := time.Now()
			a1.Close() // the kernel closes the dead process's connections and db lock
			if got := simECN(t, s, "sw0", 0, 3); got != wantECN {
				t.Fatalf("the Set did not take: the switch runs %+v", got)
			}

			// The second life: its start's reconcile (Run's first step).
			a2 := openCommitAgent(t, addr, db, nil)
			defer a2.Close()
			if err := a2.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			es, _ := a2.Journal().Entries("sw0", 0)
			if len(es) != 1 {
				t.Fatalf("audit %+v", es)
			}
			if e := es[0]; time.Since(killedAt) < 2*time.Second && !e.Open() {
				t.Fatalf("at the start, with the commit possibly pending on the switch, audit entry %d reads %s (%s), got %+v: "+
					"judged from a read of a change the switch may still revert", e.Seq, e.State, e.Error, e.Got)
			}
			if m := a2.Guard().Memory(k); time.Since(killedAt) < 2*time.Second && m.Expect != nil && *m.Expect == want {
				t.Fatalf("at the start, the guard takes the change as running (%+v) while the switch may still revert it", m)
			}

			// Once the commit has settled on the switch, the entry is
			// judged by what the switch runs.
			waitFor(t, 15*time.Second, "the open entry to be judged", func() bool {
				if err := a2.Reconcile(ctx); err != nil {
					t.Fatal(err)
				}
				es, _ = a2.Journal().Entries("sw0", 0)
				return !es[0].Open()
			})
			time.Sleep(time.Until(killedAt.Add(4 * time.Second))) // past the rollback duration in any case
			runs := simECN(t, s, "sw0", 0, 3)
			e := es[0]
			if e.State != c.state || (runs == wantECN) != c.afterConfirm {
				t.Fatalf("audit entry %d: %s (%s); the switch runs %+v (the change: %+v); want %s", e.Seq, e.State, e.Error, runs, wantECN, c.state)
			}
			if !c.afterConfirm && !strings.Contains(e.Error, "not confirmed") {
				t.Fatalf("audit entry %d: %s (%q), want a reason naming the unconfirmed commit", e.Seq, e.State, e.Error)
			}
		})
	}
}

// pendingCommits is a fake switch with gNMI's confirmed commits, one at a
// time as the specification has them: a Set starts one (refused while one
// is pending), a confirm keeps it, a cancel or the end of its rollback
// duration (expire) reverts it.
type pendingCommits struct {
	*fakeSwitch
	before map[env.QueueKey]env.Setting // the pending commit's previous settings (nil: none)
	tries  int                          // Sets sent, taken or refused
	window time.Duration                // RollbackDuration
}

func (p *pendingCommits) Apply(ctx context.Context, s map[env.QueueKey]env.Setting) error {
	p.mu.Lock()
	p.tries++
	if p.before != nil {
		p.mu.Unlock()
		return noCommit // as a switch with a commit pending refuses a Set
	}
	before := map[env.QueueKey]env.Setting{}
	for k := range s {
		before[k] = p.set[k]
	}
	p.mu.Unlock()
	if err := p.fakeSwitch.Apply(ctx, s); err != nil {
		return err
	}
	p.mu.Lock()
	p.before = before
	p.mu.Unlock()
	return nil
}

func (p *pendingCommits) SettleCommit(_ context.Context, keep bool) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.before == nil {
		return false, nil
	}
	if !keep {
		maps.Copy(p.set, p.before)
	}
	p.before = nil
	return true, nil
}

func (p *pendingCommits) AbandonCommit() bool { return false }

func (p *pendingCommits) RollbackDuration() time.Duration { return p.window }

// expire is the end of the pending commit's rollback duration.
func (p *pendingCommits) expire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	maps.Copy(p.set, p.before)
	p.before = nil
}

func (p *pendingCommits) sent() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tries
}

// onCommits makes r's agent write leaf0 through p with commit-confirmed
// 20 s (set after New, which would refuse it against the set timeout of
// 5 s).
func onCommits(r *rig, p *pendingCommits) {
	tg := r.a.targets["leaf0"]
	tg.CommitConfirmed = 20 * time.Second
	r.a.targets["leaf0"] = tg
	r.a.cfg.Targets[0] = tg
	r.a.switches["leaf0"] = p
}

// The agent's side of a restart after a crash between a confirmed
// commit's Set and its confirm (or just after the confirm), under its
// own clock: the intent says until when the commit may be pending (the
// set timeout twice and the rollback duration), the entry stays open and
// the target unwritten until then (rule commit-pending), the guard holds
// the queue as a change in flight (no "another writer" alarm when the
// switch reverts it, nor when it keeps it), and the entry is then judged
// by what the switch runs, after which the loop writes the target again.
// Before, the start's reconcile took the change as applied from its first
// read, and the switch's revert then read as another writer.
func TestRestartWaitsForAPendingCommit(t *testing.T) {
	next := env.Setting{KminBytes: 600_000, KmaxBytes: 2_400_000, Pmax: 0.2, HeadroomBytes: 100_000}
	later := env.Setting{KminBytes: 700_000, KmaxBytes: 2_800_000, Pmax: 0.2, HeadroomBytes: 100_000}
	for _, c := range []struct {
		name         string
		afterConfirm bool
		state        core.AuditState
		runs         env.Setting
	}{
		{"killed before the confirm", false, core.StateAbandoned, target},
		{"killed after the confirm", true, core.StateReconciled, next},
	} {
		t.Run(c.name, func(t *testing.T) {
			sw := newFakeSwitch("leaf0", kA, kB)
			p := &pendingCommits{fakeSwitch: sw}
			r := newRig(t, config.ModeClosedLoop, false, "", sw)
			onCommits(r, p)
			r.interval(t) // cur -> target on both queues, confirmed
			for i := 0; i < 6; i++ {
				r.interval(t) // past min-hold
			}
			if sw.get(kA) != target || p.before != nil {
				t.Fatalf("first change: switch runs %+v, commit pending %v", sw.get(kA), p.before != nil)
			}
			// The loop's write of kA, killed at its confirm.
			intentNs := r.clk.Now().UnixNano()
			w, err := r.a.intend("leaf0", p, []core.Change{{Key: kA, Kind: core.KindTune, Old: target, New: next, Reason: "killed at its confirm"}})
			if err != nil {
				t.Fatal(err)
			}
			if want := intentNs + int64(30*time.Second); w[0].RevertByNs != want {
				t.Fatalf("intent's revert-by %d, want %d (intent + 2 set timeouts + rollback duration)", w[0].RevertByNs, want)
			}
			if err := p.Apply(context.Background(), map[env.QueueKey]env.Setting{kA: next}); err != nil {
				t.Fatal(err)
			}
			if c.afterConfirm {
				p.SettleCommit(context.Background(), true)
			}

			r2 := restartRig(t, r)
			onCommits(r2, p)
			r2.pol.s = later
			if err := r2.a.Reconcile(context.Background()); err != nil {
				t.Fatal(err)
			}
			entry := func() core.AuditEntry {
				es, _ := r2.j.Entries("", 0)
				for _, e := range es {
					if e.Seq == w[0].Seq {
						return e
					}
				}
				t.Fatalf("no audit entry %d", w[0].Seq)
				return core.AuditEntry{}
			}
			external := func() float64 {
				return testutilCounter(t, r2.a, "ecntune_agent_alarms_total", core.RuleExternal)
			}
			sent := p.sent()
			for i := 0; i < 10; i++ {
				if i == 5 && !c.afterConfirm {
					p.expire() // the switch reverts the commit nobody confirmed
				}
				r2.interval(t)
				if e := entry(); !e.Open() {
					t.Fatalf("%d s after the intent, before the commit's revert-by, audit entry %d reads %s (%s)",
						(r2.clk.Now().UnixNano()-intentNs)/sec, e.Seq, e.State, e.Error)
				}
				if m := r2.a.Guard().Memory(kA); m.Expect != nil && *m.Expect == next {
					t.Fatalf("the guard takes the change as running (%+v) while the switch may revert it", m)
				}
			}
			if p.sent() != sent {
				t.Fatalf("%d Sets sent to a switch whose commit may be pending", p.sent()-sent)
			}
			if n := testutilCounter(t, r2.a, "ecntune_agent_guardrail_rejections_total", RuleCommitPending); n == 0 {
				t.Fatal("no change waited with rule commit-pending")
			}
			for r2.clk.Now().UnixNano() <= w[0].RevertByNs {
				r2.interval(t)
			}
			r2.interval(t)
			e := entry()
			if e.State != c.state || sw.get(kA) != c.runs || (!c.afterConfirm && !strings.Contains(e.Error, "not confirmed")) {
				t.Fatalf("after the commit's revert-by: audit entry %d %s (%q), switch runs %+v; want %s, running %+v",
					e.Seq, e.State, e.Error, sw.get(kA), c.state, c.runs)
			}
			if n := external(); n != 0 {
				t.Fatalf("%v another-writer alarms: the agent's own commit taken for another writer", n)
			}
			r2.interval(t)
			if p.sent() == sent || sw.get(kB) != later {
				t.Fatalf("the loop does not write the target again once the commit settled: %d Sets, kB runs %+v", p.sent()-sent, sw.get(kB))
			}
		})
	}
}

// `agent rollback` (ReconcileOpen) judges no open entry whose confirmed
// commit may still be pending: it says so and leaves it open, and judges
// it once the switch has settled the commit. ApplyManual's intents on a
// commit-confirmed switch say until when their commit may be pending.
func TestRollbackToolWaitsForAPendingCommit(t *testing.T) {
	j := tempJournal(t)
	sw := newFakeSwitch("leaf0", kA)
	sw.set[kA] = target // the commit's change, which the switch may yet revert
	at := time.Unix(100, 0)
	now := func() time.Time { return at }
	w, err := j.Intent([]core.AuditEntry{{TimeNs: at.UnixNano(), Target: "leaf0", RevertByNs: at.Add(30 * time.Second).UnixNano(),
		Change: core.Change{Key: kA, Kind: core.KindTune, Old: cur, New: target}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ReconcileOpen(context.Background(), j, sw, now, false)
	if err != nil || len(res) != 1 || !res[0].Wait || res[0].State != core.StateIntent || !strings.Contains(res[0].Msg, "may still be pending") {
		t.Fatalf("ReconcileOpen before the revert-by: %+v, %v", res, err)
	}
	if es, _ := j.Entries("", 0); es[0].State != core.StateIntent {
		t.Fatalf("entry resolved before its commit settled: %+v", es[0])
	}
	at = at.Add(31 * time.Second)
	sw.set[kA] = cur // reverted: never confirmed
	res, err = ReconcileOpen(context.Background(), j, sw, now, false)
	if err != nil || len(res) != 1 || res[0].Wait {
		t.Fatalf("ReconcileOpen after the revert-by: %+v, %v", res, err)
	}
	if es, _ := j.Entries("", 0); es[0].Seq != w[0].Seq || es[0].State != core.StateAbandoned || !strings.Contains(es[0].Error, "not confirmed") {
		t.Fatalf("entry after its commit settled: %+v", es[0])
	}

	// ApplyManual's intent on a commit-confirmed switch
	p := &pendingCommits{fakeSwitch: sw, window: 20 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Second)
	defer cancel()
	written, _, err := ApplyManual(ctx, j, p, []core.Change{{Key: kA, Kind: core.KindManual, New: target}}, "me", time.Now)
	if err != nil || len(written) != 1 || written[0].State != core.StateApplied {
		t.Fatalf("ApplyManual: %+v, %v", written, err)
	}
	lo, hi := written[0].TimeNs+int64(33*time.Second), written[0].TimeNs+int64(34*time.Second)+1
	if rb := written[0].RevertByNs; rb < lo || rb > hi {
		t.Fatalf("ApplyManual's revert-by %s after its intent; want 34 s (2 × the 7 s deadline + 20 s)", time.Duration(rb-written[0].TimeNs))
	}
}
