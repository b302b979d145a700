package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/fleet"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
)

// fakeGate owns the targets listed, with a token each, and fails Fence
// when told (a deposed owner).
type fakeGate struct {
	mu      sync.Mutex
	owns    map[string]int64
	deposed bool
	fenced  []int64 // tokens Fence was called with
	intents int
}

func (g *fakeGate) Writable(target string, now time.Time) (int64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	tok, ok := g.owns[target]
	return tok, ok
}

func (g *fakeGate) Fence(ctx context.Context, target string, token int64, intents []core.AuditEntry) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fenced = append(g.fenced, token)
	g.intents += len(intents)
	if g.deposed {
		return errors.New("fenced: another member owns " + target)
	}
	return nil
}

// A fleet member writes only the switches its gate lets it write: not
// one it does not own (the change waits, rule not-owner), nothing once
// its write is fenced (the intent is resolved as failed, no Set sent),
// and a write it owns goes through with its intent fenced under the
// owner's token.
func TestGateLimitsWrites(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA)
	r := newRig(t, config.ModeClosedLoop, false, "", sw)
	g := &fakeGate{owns: map[string]int64{}}
	r.a.o.Gate = g
	r.interval(t)
	if sw.setCount() != 0 || testutilCounter(t, r.a, "ecntune_agent_guardrail_rejections_total", RuleNotOwner) != 1 {
		t.Fatalf("a switch it does not own was written (%d Sets)", sw.setCount())
	}
	g.owns["leaf0"], g.deposed = 42, true
	r.interval(t)
	es, _ := r.j.Entries("", 0)
	if sw.setCount() != 0 || len(es) != 1 || es[0].State != core.StateFailed || !strings.Contains(es[0].Error, "not sent") {
		t.Fatalf("a fenced write: %d Sets, audit %+v", sw.setCount(), es)
	}
	g.deposed = false
	r.clk.Add(10 * time.Second) // past min-hold
	r.interval(t)
	if sw.setCount() != 1 || sw.get(kA) != target || g.fenced[len(g.fenced)-1] != 42 {
		t.Fatalf("an owned write: %d Sets, runs %+v, tokens %v", sw.setCount(), sw.get(kA), g.fenced)
	}
}

// A fleet member is the agent's gate.
var _ Gate = (*fleet.Node)(nil)

// readHook runs once on the first Read (an interval's read before write),
// before the switch answers.
type readHook struct {
	*fakeSwitch
	once func()
}

func (h *readHook) Read(ctx context.Context, keys []env.QueueKey) (map[env.QueueKey]env.Setting, error) {
	if f := h.once; f != nil {
		h.once = nil
		f()
	}
	return h.fakeSwitch.Read(ctx, keys)
}

// A switch handed over (a drain or rebalance: Writable false from then on,
// while its owner key stays a write timeout, so Fence still passes) while
// the read before a write is out: the Set does not go out (before, a
// write that followed its read asked the Gate nothing again).
func TestNoSetAfterTheSwitchIsHandedOver(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA)
	r := newRig(t, config.ModeClosedLoop, false, "", sw)
	g := &fakeGate{owns: map[string]int64{}}
	r.a.o.Gate = g
	r.interval(t) // not owned: held
	g.owns["leaf0"] = 42
	r.clk.Add(10 * time.Second)
	r.a.switches["leaf0"] = &readHook{fakeSwitch: sw, once: func() {
		g.mu.Lock()
		delete(g.owns, "leaf0") // assigned elsewhere, given up
		g.mu.Unlock()
	}}
	r.interval(t)
	if n := sw.setCount(); n != 0 {
		t.Fatalf("%d Set(s) sent after the gate said the switch is no longer this member's", n)
	}
	// owned again: the change goes out
	g.mu.Lock()
	g.owns["leaf0"] = 43
	g.mu.Unlock()
	r.clk.Add(10 * time.Second)
	r.interval(t)
	if sw.setCount() == 0 {
		t.Fatal("no Set once the switch is this member's again")
	}
}

// unownedGate is a fleet member's gate that knows switches nobody owns.
type unownedGate struct {
	fakeGate
	unowned map[string]time.Duration
}

func (g *unownedGate) Unowned(time.Time) map[string]time.Duration { return g.unowned }

// A switch no member of the fleet owns is a health problem of every
// member (each said healthy while nobody tuned it).
func TestHealthNamesSwitchesNobodyOwns(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	g := &unownedGate{fakeGate: fakeGate{owns: map[string]int64{"leaf0": 1}}}
	r.a.o.Gate = g
	r.interval(t)
	if p, _ := r.a.Health(); len(p) != 0 {
		t.Fatalf("problems %q with every switch owned", p)
	}
	g.unowned = map[string]time.Duration{"sw0": 15 * time.Second}
	if p, _ := r.a.Health(); len(p) != 1 || !strings.HasPrefix(p[0], "sw0: no member of the fleet owns it (for 15s): nobody tunes it") {
		t.Fatalf("problems %q", p)
	}
}

// leaseGate is a fleet member's gate whose lease is not being renewed.
type leaseGate struct {
	fakeGate
	problem string
}

func (g *leaseGate) LeaseProblem(time.Time) string { return g.problem }

// A member cut off from etcd writes nothing: its health says so (it said
// ok for the whole outage, its own switches' telemetry fresh).
func TestHealthNamesALeaseNotRenewed(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	g := &leaseGate{fakeGate: fakeGate{owns: map[string]int64{"leaf0": 1}}}
	r.a.o.Gate = g
	r.interval(t)
	if p, _ := r.a.Health(); len(p) != 0 {
		t.Fatalf("problems %q with the lease renewed", p)
	}
	g.problem = "fleet: lease not renewed for 2.1s"
	if p, _ := r.a.Health(); len(p) != 1 || p[0] != g.problem {
		t.Fatalf("problems %q", p)
	}
}

// pauseGate is a fleet member's gate with the fleet's pause, whose write
// can fail.
type pauseGate struct {
	fakeGate
	mu      sync.Mutex
	p       fleet.Pause
	written bool
	failing bool
}

func (g *pauseGate) ReadPause(context.Context) (fleet.Pause, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.p, g.written, nil
}

func (g *pauseGate) SetPause(_ context.Context, p fleet.Pause) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failing {
		return errors.New("etcd at 127.0.0.1:2379 did not answer")
	}
	g.p, g.written = p, true
	return nil
}

func (g *pauseGate) FollowPause(func(fleet.Pause)) {}

// A pause whose write to the fleet failed changes nothing, and its retry
// reaches the fleet (it was journaled first, the retry answered "already
// paused", and the fleet never heard of it); a second pause keeps the
// fleet's first record.
func TestFleetPauseRetriedReachesTheFleet(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	g := &pauseGate{fakeGate: fakeGate{owns: map[string]int64{"leaf0": 1}}, failing: true}
	r.a.o.Gate = g
	if err := r.a.Pause("alice", "incident"); err == nil || !strings.Contains(err.Error(), "nothing changed; try again") {
		t.Fatalf("pause with the fleet unreachable: %v", err)
	}
	if p, _ := r.a.PauseState(); p.Paused || r.a.paused() {
		t.Fatalf("paused here with the fleet not told: %+v", p)
	}
	g.mu.Lock()
	g.failing = false
	g.mu.Unlock()
	if err := r.a.Pause("alice", "incident"); err != nil {
		t.Fatal(err)
	}
	if p, _ := r.a.PauseState(); !p.Paused || !r.a.paused() || !g.p.Paused || g.p.By != "alice" {
		t.Fatalf("after the retry: here %+v, fleet %+v", p, g.p)
	}
	if err := r.a.Pause("eve", "second"); !errors.Is(err, journal.ErrPauseUnchanged) || g.p.By != "alice" {
		t.Fatalf("a second pause: %v; fleet %+v", err, g.p)
	}
}

// keeperGate is a fleet member's gate whose etcd does not answer: Record
// waits for its deadline.
type keeperGate struct {
	fakeGate
	calls int
}

func (g *keeperGate) Record(ctx context.Context, _ string, _ int64, _ []core.AuditEntry, _ []core.QueueMemory) error {
	g.calls++
	<-ctx.Done()
	return ctx.Err()
}

func (g *keeperGate) States(context.Context, []string) (map[string]fleet.State, error) {
	return nil, nil
}

// An etcd that does not answer costs one round one second, not a second
// per switch (the interval loop was held and the telemetry looked stale),
// and what it could not share is kept for the next round.
func TestShareMemoryOneDeadlinePerRound(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	g := &keeperGate{fakeGate: fakeGate{owns: map[string]int64{"leaf0": 1, "leaf1": 1, "leaf2": 1}}}
	r.a.o.Gate = g
	r.a.fleet.resolved = map[string][]core.AuditEntry{"leaf0": {{Seq: 1}}, "leaf1": {{Seq: 2}}, "leaf2": {{Seq: 3}}}
	r.a.shareMemory(context.Background(), nil)
	if g.calls != 1 {
		t.Fatalf("%d Records in one round against an etcd that does not answer, want 1", g.calls)
	}
	if len(r.a.fleet.resolved) != 3 {
		t.Fatalf("resolved entries kept for the next round: %v", r.a.fleet.resolved)
	}
}

// "Changed in the last interval" counts the changes sent, not those held
// for a target this member does not own (or one busy, or with a commit
// pending): they were counted as made.
func TestLastChangesLeaveOutHeldChanges(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	g := &fakeGate{owns: map[string]int64{}}
	r.a.o.Gate = g
	r.interval(t)
	if n := len(r.a.LastChanges()); n != 0 || r.sw.setCount() != 0 {
		t.Fatalf("%d changes in the last interval, %d Sets, for a switch another member owns", n, r.sw.setCount())
	}
	g.mu.Lock()
	g.owns["leaf0"] = 1
	g.mu.Unlock()
	r.clk.Add(10 * time.Second)
	r.interval(t)
	if n := len(r.a.LastChanges()); n == 0 || r.sw.setCount() == 0 {
		t.Fatalf("%d changes in the last interval, %d Sets, once the switch is this member's", n, r.sw.setCount())
	}
}

// statesGate is a fleet member's gate whose etcd keeps, per switch, the
// state the switch's owners left; it counts the take-overs asked for.
type statesGate struct {
	fakeGate
	states map[string]fleet.State
	asked  map[string]int
}

func (g *statesGate) Record(context.Context, string, int64, []core.AuditEntry, []core.QueueMemory) error {
	return nil
}

func (g *statesGate) States(_ context.Context, sws []string) (map[string]fleet.State, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]fleet.State{}
	for _, sw := range sws {
		g.asked[sw]++
		out[sw] = g.states[sw]
	}
	return out, nil
}

// A switch that left this member and came back between two of its
// intervals (under a new token: another member owned it meanwhile, or
// this member joined again after losing its lease) is taken over again,
// with the hold the other owner's change started: before, the first
// take-over counted for ever, and the member changed the queue inside the
// other's hold.
func TestTakeOverAgainUnderANewToken(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	g := &statesGate{fakeGate: fakeGate{owns: map[string]int64{"leaf0": 1}}, states: map[string]fleet.State{}, asked: map[string]int{}}
	r.a.o.Gate = g
	r.a.adoptMemory(context.Background())
	if g.asked["leaf0"] != 1 {
		t.Fatalf("take-overs asked %d, want 1", g.asked["leaf0"])
	}
	r.interval(t)
	r.a.adoptMemory(context.Background())
	if g.asked["leaf0"] != 1 {
		t.Fatalf("taken over again under the same token (%d)", g.asked["leaf0"])
	}
	// another member owned it meanwhile and left a change in flight
	cur := r.sw.get(kA)
	next := cur
	next.KmaxBytes += 100_000
	g.mu.Lock()
	g.owns["leaf0"] = 7
	g.states["leaf0"] = fleet.State{Audit: []core.AuditEntry{{Target: "leaf0", Writer: "b", Token: 5, TimeNs: r.clk.Now().UnixNano(),
		State: core.StateIntent, Change: core.Change{Key: kA, Kind: core.KindTune, Old: cur, New: next}}}}
	g.mu.Unlock()
	r.interval(t)
	if g.asked["leaf0"] != 2 {
		t.Fatalf("take-overs asked %d after the token changed, want 2", g.asked["leaf0"])
	}
	es, err := r.j.Entries("leaf0", 0)
	if err != nil {
		t.Fatal(err)
	}
	took := false
	for _, e := range es {
		took = took || e.Writer == "b"
	}
	if !took {
		t.Fatal("the other owner's change in flight was not taken over into the audit log")
	}
}
