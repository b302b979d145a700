package agent

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/fleet"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/etcdtest"
	"github.com/ecntune/ecntune/policy"
)

// recordingSwitch is a fake switch shared by the agents of a fleet test:
// it records which agent sent each Set.
type recordingSwitch struct {
	*fakeSwitch
	by      string // the agent whose view of the switch this is
	mu      *sync.Mutex
	writers map[string]map[string]int // switch → agent → Sets
}

func (r recordingSwitch) Apply(ctx context.Context, s map[env.QueueKey]env.Setting) error {
	r.mu.Lock()
	if r.writers[r.name] == nil {
		r.writers[r.name] = map[string]int{}
	}
	r.writers[r.name][r.by]++
	r.mu.Unlock()
	return r.fakeSwitch.Apply(ctx, s)
}

// Subscribe counts the agent's Subscribe while it runs.
func (r recordingSwitch) Subscribe(ctx context.Context, out chan<- env.Snapshot, errs chan<- error) {
	r.fakeSwitch.mu.Lock()
	if r.fakeSwitch.subs == nil {
		r.fakeSwitch.subs = map[string]int{}
	}
	r.fakeSwitch.subs[r.by]++
	r.fakeSwitch.mu.Unlock()
	defer func() {
		r.fakeSwitch.mu.Lock()
		r.fakeSwitch.subs[r.by]--
		r.fakeSwitch.mu.Unlock()
	}()
	r.fakeSwitch.Subscribe(ctx, out, errs)
}

// subscribers lists the agents subscribed to f now.
func (f *fakeSwitch) subscribers() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for who, n := range f.subs {
		if n > 0 {
			out = append(out, who)
		}
	}
	sort.Strings(out)
	return out
}

// Two agents of one fleet on a real etcd share four switches: each switch
// is written by one agent only, each agent writes some; when one agent
// leaves, the other takes its switches and writes them.
func TestFleetOfTwoAgents(t *testing.T) {
	ep, names, sws, mu, writers := fleetSwitches(t)
	start := func(member string) (*Agent, context.CancelFunc, chan error) {
		return startFleetAgent(t, ep, member, names, sws, mu, writers, 200*time.Millisecond)
	}
	defer feedSwitches(sws)()
	a, cancelA, doneA := start("a")
	b, cancelB, doneB := start("b")
	defer func() { cancelB(); <-doneB; b.Close() }()
	count := func() (map[string]string, bool) {
		mu.Lock()
		defer mu.Unlock()
		owner := map[string]string{}
		for sw, by := range writers {
			if len(by) > 1 {
				return nil, false
			}
			for who := range by {
				owner[sw] = who
			}
		}
		return owner, true
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		owner, single := count()
		if !single {
			t.Fatalf("a switch written by two agents: %v", writers)
		}
		agents := map[string]bool{}
		for _, who := range owner {
			agents[who] = true
		}
		if len(owner) == 4 && len(agents) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("in 30 s: switches written %v", writers)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// each switch's telemetry goes to its owner only (once an agent that
	// lost a switch has seen it go)
	owner, _ := count()
	for sw, who := range owner {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			subs := sws[sw].subscribers()
			if len(subs) == 1 && subs[0] == who {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s, written by %s, has subscribers %v", sw, who, subs)
			}
		}
	}
	// /metrics: b owns some targets, not all
	if o := testutilCounter(t, b, "ecntune_agent_fleet_owner", `target="leaf0"`) + testutilCounter(t, b, "ecntune_agent_fleet_owner", `target="leaf1"`) +
		testutilCounter(t, b, "ecntune_agent_fleet_owner", `target="leaf2"`) + testutilCounter(t, b, "ecntune_agent_fleet_owner", `target="leaf3"`); o < 1 || o > 3 {
		t.Fatalf("b's ecntune_agent_fleet_owner sums to %g over 4 targets", o)
	}
	// GET /fleet shows both members and every switch owned
	rec := httptest.NewRecorder()
	b.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/fleet", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"id":"a"`) || !strings.Contains(rec.Body.String(), `"switch":"leaf3"`) {
		t.Fatalf("GET /fleet: %d %s", rec.Code, rec.Body.String())
	}
	// a leaves; b takes its switches
	cancelA()
	<-doneA
	a.Close()
	mu.Lock()
	for sw := range writers {
		delete(writers[sw], "b")
	}
	aHad := []string{}
	for sw, by := range writers {
		if by["a"] > 0 {
			aHad = append(aHad, sw)
		}
	}
	mu.Unlock()
	deadline = time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		ok := true
		for _, sw := range aHad {
			ok = ok && writers[sw]["b"] > 0
		}
		mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b did not take over %v: %v", aHad, writers)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alternating asks for the other of two settings each time: a policy that
// keeps writing.
type alternating struct{}

func (alternating) Name() string { return "alternating" }
func (alternating) Decide(obs []env.Observation) []policy.Decision {
	d := make([]policy.Decision, len(obs))
	for i, o := range obs {
		s := target
		if o.Current.KminBytes == target.KminBytes {
			s = cur
		}
		d[i] = policy.Decision{Key: o.Key, Setting: s, Action: -1, Confidence: 0.9, Reason: "alternating test policy"}
	}
	return d
}

// startFleetAgent opens and runs a closed-loop agent of fleet "t" on the
// switches named, each Set recorded in writers by member.
func startFleetAgent(t *testing.T, ep, member string, names []string, sws map[string]*fakeSwitch, mu *sync.Mutex,
	writers map[string]map[string]int, minHold time.Duration, mods ...func(*config.Config)) (*Agent, context.CancelFunc, chan error) {
	t.Helper()
	cfg := testConfig(config.ModeClosedLoop)
	cfg.Interval, cfg.SampleInterval = 100*time.Millisecond, 100*time.Millisecond
	cfg.Guardrails.MinHold = minHold
	for _, m := range mods {
		m(cfg)
	}
	cfg.DB, cfg.Metrics = filepath.Join(t.TempDir(), "agent.db"), ""
	cfg.Targets = nil
	for _, n := range names {
		cfg.Targets = append(cfg.Targets, config.Target{Name: n, Address: "127.0.0.1:1", AllPorts: true, Queues: []int{3}})
	}
	cfg.Fleet = &config.Fleet{Endpoints: []string{ep}, Name: "t", Member: member, TTL: 2 * time.Second, Takeover: 300 * time.Millisecond}
	// a fence in etcd and a Set take 1 s at most: under -race on a loaded
	// machine 200 ms ran out, and the queue was held for the test's hour
	a, err := Open(context.Background(), cfg, Deps{Policy: alternating{}, Observer: &fakeObserver{}, SetTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Dial: func(ctx context.Context, tg config.Target, _ time.Duration) (Switch, error) {
			return recordingSwitch{fakeSwitch: sws[tg.Name], by: member, mu: mu, writers: writers}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return a, cancel, done
}

// feedSwitches sends each fake switch's telemetry every 10 ms until the
// returned stop is called (the agents' Subscribes share each switch's
// channel: a snapshot goes to one of them, enough to see who writes).
func feedSwitches(sws map[string]*fakeSwitch) (stop func()) {
	done := make(chan struct{})
	go func() {
		tk := time.NewTicker(10 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				for _, s := range sws {
					select {
					case s.snaps <- s.snapshot(time.Now().UnixNano()):
					default:
					}
				}
			}
		}
	}()
	return func() { close(done) }
}

// A failover keeps the guard's holds: with min-hold an hour, each switch
// gets one change from its owner; when that owner leaves, the switch's new
// owner takes over the guard's memory from etcd and holds too. Without
// the memory it would change every switch it took at once (the policy
// always asks for the other setting).
func TestFleetFailoverKeepsHolds(t *testing.T) {
	ep, names, sws, mu, writers := fleetSwitches(t)
	defer feedSwitches(sws)()
	a, cancelA, doneA := startFleetAgent(t, ep, "a", names, sws, mu, writers, time.Hour)
	b, cancelB, doneB := startFleetAgent(t, ep, "b", names, sws, mu, writers, time.Hour)
	defer func() { cancelB(); <-doneB; b.Close() }()
	sets := func() (total int, byA []string) {
		mu.Lock()
		defer mu.Unlock()
		for sw, by := range writers {
			for who, k := range by {
				total += k
				if who == "a" {
					byA = append(byA, sw)
				}
			}
		}
		return total, byA
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		total, byA := sets()
		if total == 4 && len(byA) > 0 && len(byA) < 4 {
			break
		}
		if total > 4 || time.Now().After(deadline) {
			t.Fatalf("one change per switch expected: %v", writers)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, byA := sets()
	cancelA()
	<-doneA
	a.Close()
	deadline = time.Now().Add(20 * time.Second)
	for {
		all := true
		for _, sw := range byA {
			_, ok := b.o.Gate.Writable(sw, time.Now())
			all = all && ok
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b did not take a's switches over")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // ten of b's intervals as owner
	if total, _ := sets(); total != 4 {
		t.Fatalf("b changed switches it took over inside their hold: %v", writers)
	}
}

// fleetSwitches starts an etcd and four fake switches (leaf0..leaf3) whose
// Sets are recorded in writers, switch → agent → count (under mu).
func fleetSwitches(t *testing.T) (ep string, names []string, sws map[string]*fakeSwitch, mu *sync.Mutex, writers map[string]map[string]int) {
	ep = etcdtest.Start(t)
	names = []string{"leaf0", "leaf1", "leaf2", "leaf3"}
	sws = map[string]*fakeSwitch{}
	for _, n := range names {
		sws[n] = newFakeSwitch(n, env.QueueKey{Target: n, Port: "Ethernet0", Queue: 3})
	}
	return ep, names, sws, &sync.Mutex{}, map[string]map[string]int{}
}

// A change in flight when its owner dies is taken over: the switch's next
// owner finds the open entry its predecessor fenced in etcd, holds the
// queue, reconciles the entry with the switch's read-back (in its own
// audit log, and in the fleet's), and keeps the hold the change started.
// Before, a change whose result was never shared left no hold behind, and
// the next owner changed the queue again at once (CI saw it).
func TestFleetTakesOverAChangeInFlight(t *testing.T) {
	ep, names, sws, mu, writers := fleetSwitches(t)
	ctx, cli, _ := leftInFlight(t, ep, names, sws, 0)

	defer feedSwitches(sws)()
	b, cancelB, doneB := startFleetAgent(t, ep, "b", names, sws, mu, writers, time.Hour)
	defer func() { cancelB(); <-doneB; b.Close() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(writers)
		mu.Unlock()
		if n >= 3 { // b writes the three switches without a change in flight
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b wrote %v in 30 s", writers)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	mu.Lock()
	if writers["leaf0"]["b"] != 0 {
		t.Errorf("b changed leaf0 inside the hold of the change a left in flight: %v", writers)
	}
	mu.Unlock()
	fa, err := fleet.ReadAudit(ctx, cli, "t", "leaf0")
	if err != nil || len(fa) != 1 || fa[0].State != core.StateReconciled || fa[0].Writer != "a" {
		t.Fatalf("fleet audit of leaf0: %+v, %v (want a's entry reconciled)", fa, err)
	}
	mine, err := b.o.Journal.Entries("leaf0", 0)
	if err != nil || len(mine) != 1 || mine[0].State != core.StateReconciled || mine[0].Writer != "a" {
		t.Fatalf("b's audit of leaf0: %+v, %v (want a's entry, reconciled)", mine, err)
	}
}

// awaitWritable waits until n may write sw, and returns its token.
func awaitWritable(t *testing.T, n *fleet.Node, sw string) int64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if tok, ok := n.Writable(sw, time.Now()); ok {
			return tok
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not writable in 30 s", sw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A fleet in shadow mode splits the switches as a closed loop does: each
// member subscribes to, and records recommendations for, the switches it
// owns, and none sets anything.
func TestFleetInShadowMode(t *testing.T) {
	ep, names, sws, mu, writers := fleetSwitches(t)
	defer feedSwitches(sws)()
	shadow := func(c *config.Config) { c.Mode = config.ModeShadow }
	var agents []*Agent
	for _, m := range []string{"a", "b"} {
		a, cancel, done := startFleetAgent(t, ep, m, names, sws, mu, writers, 0, shadow)
		defer func() { cancel(); <-done; a.Close() }()
		agents = append(agents, a)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		recorded := map[string][]string{} // switch → agents with recommendations for it
		for i, a := range agents {
			for _, n := range names {
				if rs, err := a.o.Journal.Recommendations(n, time.Now().Add(-time.Second).UnixNano(), 1); err == nil && len(rs) > 0 {
					recorded[n] = append(recorded[n], []string{"a", "b"}[i])
				}
			}
		}
		one := len(recorded) == len(names)
		for _, by := range recorded {
			one = one && len(by) == 1
		}
		both := map[string]bool{}
		for _, by := range recorded {
			both[by[0]] = true
		}
		if one && len(both) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("in 30 s, the last second's recommendations per switch: %v", recorded)
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(writers) != 0 {
		t.Fatalf("a shadow fleet set switches: %v", writers)
	}
}

// A member watches the telemetry of its own switches only: no stale
// telemetry alarm (nor a revert) for a switch another member serves. The
// demo froze every other member's switches 5 s after start before.
func TestFleetMemberWatchesOnlyItsSwitches(t *testing.T) {
	ep, names, sws, mu, writers := fleetSwitches(t)
	defer feedSwitches(sws)()
	fast := func(c *config.Config) {
		c.Guardrails.StaleFreeze, c.Guardrails.StaleRevert = 300*time.Millisecond, 600*time.Millisecond
	}
	var agents []*Agent
	for _, m := range []string{"a", "b"} {
		a, cancel, done := startFleetAgent(t, ep, m, names, sws, mu, writers, time.Hour, fast)
		defer func() { cancel(); <-done; a.Close() }()
		agents = append(agents, a)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(writers)
		mu.Unlock()
		if n == len(names) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every switch written in 30 s: %v", writers)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // past the stale-freeze and revert limits
	for i, a := range agents {
		if n := testutilCounter(t, a, "ecntune_agent_alarms_total", `rule="stale-freeze"`); n != 0 {
			t.Errorf("agent %d raised %g stale-telemetry alarms (for switches it does not serve)", i, n)
		}
	}
}

// A change whose confirmed commit may still be pending when its owner dies
// (RevertByNs ahead) is taken over without a verdict: the next owner
// neither writes the switch nor judges the entry from a read until the
// commit has settled, and then judges it by what the switch runs (here
// the switch reverted the unconfirmed commit: abandoned).
func TestFleetTakeOverWaitsForAPendingCommit(t *testing.T) {
	ep, names, sws, mu, writers := fleetSwitches(t)
	revertBy := time.Now().Add(8 * time.Second)
	_, _, k := leftInFlight(t, ep, names, sws, revertBy.UnixNano())
	reverted := time.AfterFunc(time.Until(revertBy)-3*time.Second, func() { // the switch reverts the unconfirmed commit
		sws["leaf0"].Apply(context.Background(), map[env.QueueKey]env.Setting{k: cur})
	})
	defer reverted.Stop()

	defer feedSwitches(sws)()
	b, cancelB, doneB := startFleetAgent(t, ep, "b", names, sws, mu, writers, time.Hour)
	defer func() { cancelB(); <-doneB; b.Close() }()
	time.Sleep(time.Until(revertBy) - 3500*time.Millisecond) // the switch still shows the change
	mu.Lock()
	early := writers["leaf0"]["b"]
	mu.Unlock()
	if early != 0 {
		t.Errorf("b wrote leaf0 %d times while a's confirmed commit may still be pending", early)
	}
	mine, err := b.o.Journal.Entries("leaf0", 0)
	if err != nil || len(mine) != 1 || mine[0].State != core.StateIntent {
		t.Fatalf("b's audit of leaf0 before the revert-by: %+v, %v (want a's entry still open)", mine, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mine, err = b.o.Journal.Entries("leaf0", 0)
		if err == nil && len(mine) == 1 && mine[0].State != core.StateIntent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b's audit of leaf0 30 s after the revert-by: %+v, %v", mine, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if mine[0].State != core.StateAbandoned || !strings.Contains(mine[0].Error, "not confirmed") {
		t.Fatalf("b's verdict on a's entry: %s %q, want abandoned, not confirmed", mine[0].State, mine[0].Error)
	}
}

// leftInFlight has member "a" of fleet "t" on etcd ep fence one change of
// leaf0's queue k (cur -> target; its confirmed commit pending until
// revertByNs, 0: none), Set it on the switch and die before its result is
// shared. It returns a context for the test and an etcd client, both
// closed at the test's end.
func leftInFlight(t *testing.T, ep string, names []string, sws map[string]*fakeSwitch, revertByNs int64) (context.Context, *clientv3.Client, env.QueueKey) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	var sw []fleet.Switch
	for _, n := range names {
		sw = append(sw, fleet.Switch{Name: n})
	}
	old, err := fleet.Join(ctx, cli, fleet.Config{Name: "t", Member: fleet.Member{ID: "a"}, Switches: sw, TTL: 2 * time.Second,
		Takeover: 300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tok := awaitWritable(t, old, "leaf0")
	k := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	e := core.AuditEntry{TimeNs: time.Now().UnixNano(), RevertByNs: revertByNs, Target: "leaf0", Writer: "a", Token: tok,
		State: core.StateIntent, Change: core.Change{Key: k, Kind: core.KindTune, Old: cur, New: target, Reason: "in flight"}}
	if err := old.Fence(ctx, "leaf0", tok, []core.AuditEntry{e}); err != nil {
		t.Fatal(err)
	}
	sws["leaf0"].Apply(ctx, map[env.QueueKey]env.Setting{k: target}) // the Set went through; "a" dies before its result is shared (or its confirm)
	old.Close()
	return ctx, cli, k
}

// A pause given to one member stops every member's writes (the others
// went on writing), outlasts a failover (a paused member's switches went
// to a running one) and a member's restart, and a resume on any member
// ends it everywhere.
func TestFleetPauseIsFleetWide(t *testing.T) {
	ep, names, sws, mu, writers := fleetSwitches(t)
	defer feedSwitches(sws)()
	a, cancelA, doneA := startFleetAgent(t, ep, "a", names, sws, mu, writers, 0)
	b, cancelB, doneB := startFleetAgent(t, ep, "b", names, sws, mu, writers, 0)
	defer func() { cancelB(); <-doneB; b.Close() }()
	total := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, by := range writers {
			for _, k := range by {
				n += k
			}
		}
		return n
	}
	writing := func(what string) {
		t.Helper()
		before := total()
		for deadline := time.Now().Add(30 * time.Second); total() <= before+4; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no Sets in 30 s: %v", what, writers)
			}
		}
	}
	quiet := func(what string) {
		t.Helper()
		time.Sleep(500 * time.Millisecond) // Sets already under way land
		before := total()
		time.Sleep(1500 * time.Millisecond)
		if n := total() - before; n != 0 {
			t.Fatalf("%s: %d Sets in 1.5 s", what, n)
		}
	}
	writing("both members running")
	if err := a.Pause("alice", "incident 7"); err != nil {
		t.Fatal(err)
	}
	// b follows through its watch: on a loaded machine that may take a
	// while, so wait for its record rather than a time
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if p, _ := b.PauseState(); p.Paused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b did not follow the pause in 20 s")
		}
	}
	quiet("paused through a")
	if p, _ := b.PauseState(); !p.Paused || p.By != "alice" || p.Reason != "incident 7" {
		t.Fatalf("b's pause record %+v", p)
	}
	// a leaves: b takes its switches, paused
	cancelA()
	<-doneA
	a.Close()
	quiet("a gone, b paused")
	// a restarts on a new db: it joins paused
	a, cancelA, doneA = startFleetAgent(t, ep, "a", names, sws, mu, writers, 0)
	defer func() { cancelA(); <-doneA; a.Close() }()
	quiet("a restarted")
	if err := b.Resume("bob"); err != nil {
		t.Fatal(err)
	}
	writing("resumed through b")
	if p, _ := a.PauseState(); p.Paused || p.By != "bob" {
		t.Fatalf("a's pause record after the resume %+v", p)
	}
}

// An agent whose lease etcd ends (as after a cut from etcd or a pause past
// the ttl) runs on: it writes nothing and /healthz says why, then it joins
// the fleet again by itself and writes its switches again. Before, Run
// ended with "restart it to join again".
func TestFleetAgentJoinsAgainAfterItsLeaseIsLost(t *testing.T) {
	ep, names, sws, mu, writers := fleetSwitches(t)
	defer feedSwitches(sws)()
	a, cancelA, doneA := startFleetAgent(t, ep, "a", names, sws, mu, writers, 200*time.Millisecond)
	defer func() { cancelA(); <-doneA; a.Close() }()
	sets := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, by := range writers {
			n += by["a"]
		}
		return n
	}
	waitFor(t, 30*time.Second, "a writes", func() bool { return sets() > 0 })
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	r, err := cli.Get(ctx, "/ecntune/fleet/t/members/a")
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("a's member key: %v %v", r, err)
	}
	lease := clientv3.LeaseID(r.Kvs[0].Lease)
	if _, err := cli.Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a's health names the lost lease", func() bool {
		p, _ := a.Health()
		return strings.Contains(strings.Join(p, "\n"), "lease expired")
	})
	before := sets()
	waitFor(t, 30*time.Second, "a joined again and writes again", func() bool {
		r, err := cli.Get(ctx, "/ecntune/fleet/t/members/a")
		return err == nil && len(r.Kvs) == 1 && clientv3.LeaseID(r.Kvs[0].Lease) != lease && sets() > before+4
	})
	select {
	case err := <-doneA:
		t.Fatalf("a's Run ended: %v", err)
	default:
	}
	if p, _ := a.Health(); len(p) != 0 {
		t.Fatalf("health after the join: %v", p)
	}
}
