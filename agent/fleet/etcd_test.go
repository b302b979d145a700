package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// startEtcd runs a one-member etcd for the test (internal/etcdtest).
func startEtcd(t *testing.T) string { return etcdtest.Start(t) }

func client(t *testing.T, ep string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func testConfig(id string, n int) Config {
	var sw []Switch
	for i := 0; i < n; i++ {
		sw = append(sw, Switch{Name: fmt.Sprintf("leaf%02d", i)})
	}
	return Config{Name: "test", Member: Member{ID: id}, Switches: sw, TTL: 3 * time.Second,
		Takeover: 400 * time.Millisecond, Logger: quiet}
}

func join(t *testing.T, ep, id string, n int) *Node {
	t.Helper()
	nd, err := Join(context.Background(), client(t, ep), testConfig(id, n))
	if err != nil {
		t.Fatal(err)
	}
	return nd
}

// owners maps each switch to the members that own it now.
func owners(nodes ...*Node) map[string][]string {
	out := map[string][]string{}
	for _, n := range nodes {
		for _, o := range n.Owned() {
			out[o.Switch] = append(out[o.Switch], n.cfg.Member.ID)
		}
	}
	return out
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Three agents share 30 switches: each switch has exactly one owner, one
// agent leads, the load is within bounded-load hashing's bound.
func TestFleetOneOwnerPerSwitch(t *testing.T) {
	ep := startEtcd(t)
	a, b, c := join(t, ep, "a", 30), join(t, ep, "b", 30), join(t, ep, "c", 30)
	defer a.Close()
	defer b.Close()
	defer c.Close()
	// The first member placed alone may hold every switch for a moment;
	// rebalance rounds (every TTL, MaxMoves each) spread them.
	waitUntil(t, 20*time.Second, "every switch owned once, every member within its bound", func() bool {
		o := owners(a, b, c)
		if len(o) != 30 {
			return false
		}
		for _, ids := range o {
			if len(ids) != 1 {
				return false
			}
		}
		for _, n := range []*Node{a, b, c} {
			if len(n.Owned()) > 13 { // ceil(30/3 × 1.25)
				return false
			}
		}
		return true
	})
	leaders := 0
	for _, n := range []*Node{a, b, c} {
		if n.Leader() {
			leaders++
		}
	}
	if leaders != 1 {
		t.Fatalf("%d leaders", leaders)
	}
}

// An owner that dies (its client gone: no renewal, nothing revoked) loses
// its switches when its lease expires; the survivors take each of them
// and may write after the takeover delay. The deposed owner, paused
// rather than dead, stops writing before its lease can expire
// (self-fencing) and its fenced writes fail once another owns the switch.
func TestFleetFailoverAndFencing(t *testing.T) {
	ep := startEtcd(t)
	a, b, c := join(t, ep, "a", 30), join(t, ep, "b", 30), join(t, ep, "c", 30)
	defer b.Close()
	defer c.Close()
	// the placement settled: every switch owned, every member within its
	// bound (rebalance rounds move switches while members join)
	waitUntil(t, 20*time.Second, "every switch owned, the placement settled", func() bool {
		if len(owners(a, b, c)) != 30 {
			return false
		}
		for _, n := range []*Node{a, b, c} {
			if len(n.Owned()) > 13 {
				return false
			}
		}
		return true
	})
	theirs := a.Owned()
	if len(theirs) == 0 {
		t.Fatal("a owns nothing")
	}
	sw, token := theirs[0].Switch, theirs[0].Token
	waitUntil(t, 10*time.Second, "a may write", func() bool { _, ok := a.Writable(sw, time.Now()); return ok })
	// pause a: no renewal from now on, nothing revoked
	paused := time.Now()
	a.Stop()
	a.sess.Orphan()
	waitUntil(t, 3*time.Second, "a fences itself", func() bool { _, ok := a.Writable(sw, time.Now()); return !ok })
	fenced := time.Since(paused)
	var took []time.Duration
	waitUntil(t, 15*time.Second, "a's switches taken and writable", func() bool {
		took = took[:0]
		for _, o := range theirs {
			owner := owners(b, c)[o.Switch]
			if len(owner) != 1 {
				return false
			}
			n := b
			if owner[0] == "c" {
				n = c
			}
			if _, ok := n.Writable(o.Switch, time.Now()); !ok {
				return false
			}
			took = append(took, time.Since(paused))
		}
		return true
	})
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("a paused: fenced itself after %v (ttl 2s, margin %v); its %d switches writable elsewhere after %v (p50) .. %v (max)",
		fenced.Round(time.Millisecond), a.cfg.Margin, len(took), took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	if fenced >= a.cfg.TTL {
		t.Fatalf("a could write for %v after its last renewal, ttl %v", fenced, a.cfg.TTL)
	}
	if _, err := a.Fenced(context.Background(), sw, token, clientv3.OpPut("/x", "y")); err == nil {
		t.Fatal("a deposed owner's fenced write succeeded")
	}
	if err := a.Fence(context.Background(), sw, token, []core.AuditEntry{{Seq: 1, Target: sw}}); !errors.Is(err, ErrFenced) {
		t.Fatalf("a deposed owner's intent: %v", err)
	}
	nb, _ := owners(b, c)[sw], 0
	newTok := int64(0)
	for _, n := range []*Node{b, c} {
		for _, o := range n.Owned() {
			if o.Switch == sw {
				newTok = o.Token
			}
		}
	}
	if newTok <= token {
		t.Fatalf("fencing token of %s went from %d to %d (owner %v): must increase", sw, token, newTok, nb)
	}
	for _, n := range []*Node{b, c} {
		if tok, ok := n.Writable(sw, time.Now()); ok {
			if err := n.Fence(context.Background(), sw, tok, []core.AuditEntry{{Seq: 2, Target: sw}}); err != nil {
				t.Fatalf("the new owner's intent: %v", err)
			}
		}
	}
}

// A member paused past its lease finds it gone when it resumes: it owns
// nothing, says so (Done), and writes nothing.
func TestFleetResumedMemberKnowsItIsGone(t *testing.T) {
	ep := startEtcd(t)
	a, b := join(t, ep, "a", 10), join(t, ep, "b", 10)
	defer b.Close()
	waitUntil(t, 15*time.Second, "every switch owned", func() bool { return len(owners(a, b)) == 10 })
	a.Stop()
	a.sess.Orphan()
	waitUntil(t, 15*time.Second, "b owns every switch", func() bool { return len(b.Owned()) == 10 })
	// resume a's renewals: its lease is gone
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.renew(ctx)
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a resumed without noticing its lease is gone")
	}
	if len(a.Owned()) != 0 {
		t.Fatalf("a still owns %v", a.Owned())
	}
}

// The timing is checked at Join: a margin past half the TTL (renewals
// every TTL/3 would not keep the member writable) is refused.
func TestFleetRefusesUnsafeTiming(t *testing.T) {
	c := testConfig("a", 1)
	c.TTL, c.Margin = 4*time.Second, 2*time.Second
	if err := c.defaults(); err == nil {
		t.Fatalf("unsafe timing accepted: margin %v, ttl %v", c.Margin, c.TTL)
	}
	// etcd grants whole seconds: 4.9 s would be a lease of 4 s under
	// deadlines counted on 4.9 s
	c = testConfig("a", 1)
	c.TTL = 4900 * time.Millisecond
	if err := c.defaults(); err == nil || !strings.Contains(err.Error(), "whole number of seconds") {
		t.Fatalf("ttl %v: %v", c.TTL, err)
	}
}

// Status shows the members, the leader and each switch's owner; draining
// a member moves its switches to the others.
func TestFleetStatusAndDrain(t *testing.T) {
	ep := startEtcd(t)
	a, b := join(t, ep, "a", 10), join(t, ep, "b", 10)
	defer a.Close()
	defer b.Close()
	cli := client(t, ep)
	var st Status
	var err error
	waitUntil(t, 20*time.Second, "every switch owned by the member placed on it", func() bool {
		if st, err = ReadStatus(context.Background(), cli, "test"); err != nil {
			return false
		}
		for _, s := range st.Switches {
			if s.Owner == "" || s.Owner != s.Assigned {
				return false
			}
		}
		return len(st.Switches) == 10
	})
	if err != nil || len(st.Members) != 2 || len(st.Switches) != 10 || st.Leader == "" || st.Members[0].Owns+st.Members[1].Owns != 10 {
		t.Fatalf("status %+v, %v", st, err)
	}
	if err := Drain(context.Background(), cli, "test", "a", true); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "a drained", func() bool { return len(a.Owned()) == 0 && len(b.Owned()) == 10 })
	if err := Drain(context.Background(), cli, "test", "nobody", true); err == nil {
		t.Fatal("drained a member that does not exist")
	}
	// b is the last member not draining: drained, the switches would run
	// on nobody while every health check said ok
	if err := Drain(context.Background(), cli, "test", "b", true); !errors.Is(err, ErrLastMember) || !strings.Contains(err.Error(), `draining "b" would leave no member to run the switches`) {
		t.Fatalf("drain of the last member: %v", err)
	}
	if err := Drain(context.Background(), cli, "test", "a", false); err != nil {
		t.Fatal(err)
	}
	if err := Drain(context.Background(), cli, "test", "b", true); err != nil {
		t.Fatalf("drain of b with a back: %v", err)
	}
}

// An audit entry carries at most MaxAuditModel bytes of its policy spec
// into etcd (a soak's 82 KB schedule filled etcd with 83 KB entries).
func TestAuditEntryModelBounded(t *testing.T) {
	ep := startEtcd(t)
	a := join(t, ep, "a", 1)
	defer a.Close()
	var tok int64
	for ok := false; !ok; time.Sleep(20 * time.Millisecond) {
		tok, ok = a.Writable("leaf00", time.Now())
	}
	e := core.AuditEntry{TimeNs: 1, Target: "leaf00", Writer: "a", Token: tok, State: core.StateIntent, Model: strings.Repeat("schedule,", 10_000)}
	if err := a.Fence(context.Background(), "leaf00", tok, []core.AuditEntry{e}); err != nil {
		t.Fatal(err)
	}
	got, err := a.Audit(context.Background(), "leaf00")
	if err != nil || len(got) != 1 || len(got[0].Model) > MaxAuditModel+len("…") || !strings.HasPrefix(got[0].Model, "schedule,") {
		t.Fatalf("audit in etcd: %d entries, model of %d bytes, %v", len(got), len(got[0].Model), err)
	}
}

// States reads the kept state of many switches (more than one
// transaction's worth) in one go: each switch's memory and audit entries,
// none mixed up with another's, and switches with nothing kept empty.
func TestStatesOfManySwitches(t *testing.T) {
	ep := startEtcd(t)
	a := join(t, ep, "a", 70)
	defer a.Close()
	ctx := context.Background()
	var names []string
	for i := 0; i < 70; i++ {
		names = append(names, fmt.Sprintf("leaf%02d", i))
	}
	for _, sw := range []string{"leaf01", "leaf65"} {
		var tok int64
		for ok := false; !ok; time.Sleep(20 * time.Millisecond) {
			tok, ok = a.Writable(sw, time.Now())
		}
		k := env.QueueKey{Target: sw, Port: "Ethernet0", Queue: 3}
		e := core.AuditEntry{TimeNs: 1, Target: sw, Writer: "a", Token: tok, State: core.StateIntent, Change: core.Change{Key: k}}
		if err := a.Fence(ctx, sw, tok, []core.AuditEntry{e}); err != nil {
			t.Fatal(err)
		}
		if err := a.Record(ctx, sw, tok, nil, []core.QueueMemory{{Key: k, Changed: true, LastChangeNs: 7}}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := a.States(ctx, names)
	if err != nil || len(st) != 70 {
		t.Fatalf("%d states, %v", len(st), err)
	}
	for _, sw := range names {
		want := 0
		if sw == "leaf01" || sw == "leaf65" {
			want = 1
		}
		if s := st[sw]; len(s.Memory) != want || len(s.Audit) != want || (want == 1 && (s.Memory[0].Key.Target != sw || s.Audit[0].Target != sw)) {
			t.Errorf("%s: %+v", sw, s)
		}
	}
}

// A switch in one agent's configuration and not the leader's (a rolling
// change that has not reached the leader) is placed by nobody: that agent
// says so, once, naming the switch; the switches the leader places are
// not named.
func TestFleetWarnsOfASwitchTheLeaderDoesNotPlace(t *testing.T) {
	ep := startEtcd(t)
	a := join(t, ep, "a", 2)
	defer a.Close()
	waitUntil(t, 10*time.Second, "a leads and owns its switches", func() bool { return len(a.Owned()) == 2 })
	var log lockedBuffer
	cb := testConfig("b", 2)
	cb.Switches = append(cb.Switches, Switch{Name: "leafX"})
	cb.Every = 500 * time.Millisecond
	cb.Logger = slog.New(slog.NewTextHandler(&log, nil))
	b, err := Join(context.Background(), client(t, ep), cb)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	waitUntil(t, 20*time.Second, "b's warning", func() bool { return strings.Contains(log.String(), "not placed by the leader") })
	time.Sleep(2 * time.Second)
	out := log.String()
	var warned []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "not placed by the leader") {
			warned = append(warned, l)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "switch=leafX") {
		t.Fatalf("b's log:\n%s", out)
	}
	if o := owners(a, b); len(o["leafX"]) != 0 {
		t.Fatalf("leafX owned by %v", o["leafX"])
	}
	// and its health says so (it said healthy: nobody tunes leafX)
	if u := b.Unowned(time.Now()); len(u) != 1 || u["leafX"] < b.unplacedAfter() {
		t.Fatalf("b's unowned switches: %v", u)
	}
	if u := a.Unowned(time.Now()); len(u) != 0 {
		t.Fatalf("a's unowned switches: %v", u)
	}
}

// lockedBuffer is a bytes.Buffer for a logger on another goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A second agent given a member id in use is refused (it took the first
// one's key, and its exit deleted it, the first running on owning
// nothing); the id of a member that crashed is free again once its lease
// expires, and a restart waits for that.
func TestFleetMemberIDOfALiveMemberRefused(t *testing.T) {
	ep := startEtcd(t)
	a := join(t, ep, "a", 4)
	defer a.Close()
	if _, err := Join(context.Background(), client(t, ep), testConfig("a", 4)); err == nil || !strings.Contains(err.Error(), `member id "a" is held by a live member`) {
		t.Fatalf("a second member a: %v", err)
	}
	st, err := ReadStatus(context.Background(), client(t, ep), "test")
	if err != nil || len(st.Members) != 1 || st.Members[0].ID != "a" {
		t.Fatalf("members after the refused join: %+v, %v", st.Members, err)
	}
	// b crashes (no revoke): its restart joins once the old lease expires
	b := join(t, ep, "b", 4)
	b.Stop()
	b.sess.Orphan()
	b2 := join(t, ep, "b", 4)
	defer b2.Close()
	waitUntil(t, 20*time.Second, "switches shared by a and the restarted b", func() bool {
		return len(owners(a, b2)) == 4 && len(b2.Owned()) > 0
	})
}

// A drain outlasts the member's restart (drain, stop, upgrade, start:
// it came back with switches); undoing it gives them back, also while the
// member is stopped.
func TestFleetDrainSurvivesRestart(t *testing.T) {
	ep := startEtcd(t)
	a, b := join(t, ep, "a", 6), join(t, ep, "b", 6)
	defer b.Close()
	cli := client(t, ep)
	waitUntil(t, 20*time.Second, "every switch owned", func() bool { return len(owners(a, b)) == 6 })
	if err := Drain(context.Background(), cli, "test", "a", true); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "a drained", func() bool { return len(a.Owned()) == 0 && len(b.Owned()) == 6 })
	a.Close()
	a = join(t, ep, "a", 6)
	if !a.cfg.Member.Draining {
		t.Fatal("a restarted drained joins as active")
	}
	time.Sleep(2 * a.cfg.Every)
	if len(a.Owned()) != 0 {
		t.Fatalf("the drained member owns %v after its restart", a.Owned())
	}
	a.Close()
	// undone while it is stopped: it starts with switches
	if err := Drain(context.Background(), cli, "test", "a", false); err != nil {
		t.Fatalf("undo the drain of a stopped member: %v", err)
	}
	a = join(t, ep, "a", 6)
	defer a.Close()
	waitUntil(t, 30*time.Second, "a given switches again", func() bool { return len(a.Owned()) > 0 })
}

// A member that cannot renew its lease says so for its health, with
// what etcd answered, and a member whose lease is gone too.
func TestFleetLeaseProblem(t *testing.T) {
	ep := startEtcd(t)
	a := join(t, ep, "a", 2)
	if p := a.LeaseProblem(time.Now()); p != "" {
		t.Fatalf("lease problem of a member renewing: %q", p)
	}
	a.Stop()
	if p := a.LeaseProblem(time.Now().Add(a.cfg.TTL)); !strings.HasPrefix(p, "fleet: lease not renewed for ") {
		t.Fatalf("lease problem a ttl after the last renewal: %q", p)
	}
	a.expired()
	if p := a.LeaseProblem(time.Now()); !strings.Contains(p, "lease expired") {
		t.Fatalf("lease problem of an expired member: %q", p)
	}
}

// A switch given up keeps its owner key for its own write timeout (its
// target's set timeout: 60 s for sonic-gnmi), not only the member's: a
// Set started just before a drain is still on the wire that long. Before,
// the key went after the agent's 5 s, and with a slow switch and a ttl
// above that two members wrote one switch at once. No longer than the
// member's write deadline, though, where every write's context ends: a
// write timeout past it (leaf00's 40 s beside a 3 s ttl) held the switch
// from its successor for nothing.
func TestGivenUpSwitchWaitsForItsOwnWriteTimeout(t *testing.T) {
	ep := startEtcd(t)
	cfg := func(id string) Config {
		c := testConfig(id, 3)
		c.WriteTimeout = 200 * time.Millisecond
		c.Switches[0].WriteTimeout = 40 * time.Second
		c.Switches[1].WriteTimeout = 1500 * time.Millisecond
		return c
	}
	a, err := Join(context.Background(), client(t, ep), cfg("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	waitUntil(t, 15*time.Second, "a owns all", func() bool { return len(a.Owned()) == 3 })
	b, err := Join(context.Background(), client(t, ep), cfg("b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := Drain(context.Background(), client(t, ep), "test", "a", true); err != nil {
		t.Fatal(err)
	}
	stopped := map[string]time.Time{}
	deadline := map[string]time.Time{} // a's write deadline when it stopped
	writable := map[string]time.Time{}
	waitUntil(t, 30*time.Second, "b may write all", func() bool {
		now := time.Now()
		for _, sw := range []string{"leaf00", "leaf01", "leaf02"} {
			if _, ok := stopped[sw]; !ok && !a.Owns(sw) {
				stopped[sw], deadline[sw] = now, a.Deadline()
			}
			if _, ok := writable[sw]; !ok {
				if _, ok := b.Writable(sw, now); ok {
					writable[sw] = now
				}
			}
		}
		return len(writable) == 3
	})
	for sw, want := range map[string]time.Duration{"leaf01": 1500 * time.Millisecond, "leaf00": min(40*time.Second, deadline["leaf00"].Sub(stopped["leaf00"]))} {
		if gap := writable[sw].Sub(stopped[sw]); gap < want-50*time.Millisecond {
			t.Errorf("%s writable by b %v after a stopped writing it, before %v", sw, gap, want)
		}
	}
	if gap := writable["leaf00"].Sub(stopped["leaf00"]); gap > 3*time.Second+2*time.Second {
		t.Errorf("leaf00 (write timeout 40 s, ttl 3 s) writable by b only %v after a stopped writing it: no write of a outlives its lease", gap)
	}
	if gap := writable["leaf02"].Sub(stopped["leaf02"]); gap > 3*time.Second {
		t.Errorf("leaf02 (the member's write timeout, 200 ms) writable by b only %v after a stopped writing it", gap)
	}
}

// A member is given only the switches its configuration lists, and a
// switch the leader's configuration does not list is placed on nobody.
// Before, a member took (and held, untuned) any switch the leader placed
// on it, and an assignment outlived the switch's removal from the
// configurations.
func TestFleetPlacesOnlyListedSwitches(t *testing.T) {
	ep := startEtcd(t)
	a := join(t, ep, "a", 3) // leaf00-02
	waitUntil(t, 20*time.Second, "a leads", a.Leader)
	b := join(t, ep, "b", 2) // leaf00-01
	defer b.Close()
	cli := client(t, ep)
	waitUntil(t, 20*time.Second, "every switch owned, each member some", func() bool {
		o := owners(a, b)
		return len(o) == 3 && len(a.Owned()) > 0 && len(b.Owned()) > 0
	})
	if o := owners(a, b)["leaf02"]; len(o) != 1 || o[0] != "a" {
		t.Fatalf("leaf02, listed by a only, owned by %v", o)
	}
	// a's drain is refused: nobody else lists leaf02
	if err := Drain(context.Background(), cli, "test", "a", true); !errors.Is(err, ErrLastMember) || !strings.Contains(err.Error(), "leaf02") {
		t.Fatalf("drain of the only member listing leaf02: %v", err)
	}
	// a leaves: b leads, and its configuration does not list leaf02
	a.Close()
	waitUntil(t, 20*time.Second, "b owns its two, leaf02 placed on nobody", func() bool {
		st, err := ReadStatus(context.Background(), cli, "test")
		if err != nil {
			return false
		}
		for _, s := range st.Switches {
			if s.Switch == "leaf02" && (s.Assigned != "" || s.Owner != "") {
				return false
			}
		}
		return len(b.Owned()) == 2
	})
	if b.Owns("leaf02") {
		t.Fatal("b owns leaf02, which its configuration does not list")
	}
}

// A drain that would leave a switch with no member listing it is refused
// naming the switch (a listed leaf00 and leaf01, b only leaf01: a's drain
// was taken and leaf00 had no owner for the maintenance).
func TestDrainRefusedForASwitchNoOtherMemberRuns(t *testing.T) {
	ep := startEtcd(t)
	cb := testConfig("b", 2)
	cb.Switches = cb.Switches[1:]
	a := join(t, ep, "a", 2)
	defer a.Close()
	b, err := Join(context.Background(), client(t, ep), cb)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cli := client(t, ep)
	waitUntil(t, 15*time.Second, "both switches owned", func() bool { return len(owners(a, b)) == 2 })
	err = Drain(context.Background(), cli, "test", "a", true)
	if !errors.Is(err, ErrLastMember) || !strings.Contains(err.Error(), `draining "a" would leave leaf00 with no member to run them`) || strings.Contains(err.Error(), "leaf01 with") {
		t.Fatalf("drain of a, the only member listing leaf00: %v", err)
	}
	if st, _ := ReadStatus(context.Background(), cli, "test"); slices.ContainsFunc(st.Members, func(m MemberStatus) bool { return m.Draining }) {
		t.Fatalf("a refused drain marked a member draining: %+v", st.Members)
	}
	// b's switch, leaf01, is listed by a too
	if err := Drain(context.Background(), cli, "test", "b", true); err != nil {
		t.Fatalf("drain of b: %v", err)
	}
}
