package fleet

import (
	"context"
	"errors"
	"testing"
	"time"
)

// joinCfg joins member id with cfg (testConfig's, changed by the test).
func joinCfg(t *testing.T, ep, id string, n int, change func(*Config)) *Node {
	t.Helper()
	cfg := testConfig(id, n)
	change(&cfg)
	nd, err := Join(context.Background(), client(t, ep), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nd.Close() })
	return nd
}

// assigned counts the switches placed on each member.
func assigned(t *testing.T, n *Node) map[string]int {
	t.Helper()
	st, err := n.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, s := range st.Switches {
		out[s.Assigned]++
	}
	return out
}

// With no periodic round (Every an hour), a member that joins late gets
// what is beyond the others' bounds at once and the rest of its share one
// rebalance request at a time, at most MaxMoves switches each, until
// nothing is pending.
func TestRebalanceOnRequest(t *testing.T) {
	ep := startEtcd(t)
	const switches, maxMoves = 60, 2
	slow := func(c *Config) { c.Every, c.MaxMoves = time.Hour, maxMoves }
	a := joinCfg(t, ep, "a", switches, slow)
	waitUntil(t, 20*time.Second, "a assigned every switch", func() bool { return assigned(t, a)["a"] == switches })
	b := joinCfg(t, ep, "b", switches, slow)
	waitUntil(t, 20*time.Second, "b assigned some", func() bool { return assigned(t, a)["b"] > 0 })
	c := joinCfg(t, ep, "c", switches, slow)
	waitUntil(t, 20*time.Second, "c assigned some", func() bool { return assigned(t, a)["c"] > 0 })
	before := assigned(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var requests, moved int
	for {
		r, err := c.Rebalance(ctx)
		if err != nil {
			t.Fatal(err)
		}
		requests++
		if r.Rebalanced > maxMoves || r.Members != 3 {
			t.Fatalf("round %d: %+v (at most %d moves a round)", requests, r, maxMoves)
		}
		moved += r.Rebalanced
		if r.Pending == 0 {
			break
		}
		if requests > switches {
			t.Fatalf("still pending after %d requests: %+v", requests, r)
		}
	}
	after := assigned(t, a)
	lo, hi := switches, 0
	for _, id := range []string{"a", "b", "c"} {
		lo, hi = min(lo, after[id]), max(hi, after[id])
	}
	if hi-lo > 1 || after[""] != 0 {
		t.Fatalf("not balanced after the requests: %v", after)
	}
	if requests < 2 || moved == 0 {
		t.Fatalf("%d requests moved %d switches: want the share taken over several rate-limited rounds (%v → %v)", requests, moved, before, after)
	}
	t.Logf("after the late joins %v; %d rebalance requests moved %d switches (≤ %d each): %v", before, requests, moved, maxMoves, after)
	_ = b
}

// A resign request makes the leader give the lead up: the member that
// campaigned longest leads next and places switches; the one that
// resigned campaigns again. Alone, a leader is elected again.
func TestResignHandsTheLeadOver(t *testing.T) {
	ep := startEtcd(t)
	nodes := []*Node{joinCfg(t, ep, "a", 12, func(*Config) {})}
	waitUntil(t, 20*time.Second, "a leads", nodes[0].Leader)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := Resign(ctx, client(t, ep), "test", "test")
	if err != nil || h.From != "a" || h.To != "a" || !h.Reelected {
		t.Fatalf("alone: %+v %v", h, err)
	}
	nodes = append(nodes, joinCfg(t, ep, "b", 12, func(*Config) {}), joinCfg(t, ep, "c", 12, func(*Config) {}))
	byID := map[string]*Node{"a": nodes[0], "b": nodes[1], "c": nodes[2]}
	for i := 0; i < 3; i++ {
		waitUntil(t, 20*time.Second, "one leader", func() bool { return leaders(nodes...) == 1 })
		start := time.Now()
		h, err := nodes[i].Resign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if h.From == h.To || h.Reelected || byID[h.To] == nil {
			t.Fatalf("resign %d: %+v", i, h)
		}
		waitUntil(t, 20*time.Second, h.To+" leads", func() bool { return byID[h.To].Leader() && !byID[h.From].Leader() })
		t.Logf("resign %d: %s → %s, new leader's key in %v, leading in %v", i, h.From, h.To, h.Took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	}
	// the new leader places: every switch still assigned, to a member
	waitUntil(t, 20*time.Second, "every switch assigned", func() bool {
		as := assigned(t, nodes[0])
		return as[""] == 0 && as["a"]+as["b"]+as["c"] == 12
	})
}

func leaders(nodes ...*Node) int {
	k := 0
	for _, n := range nodes {
		if n.Leader() {
			k++
		}
	}
	return k
}

// Drain names members by id: an unknown one is an ErrNoMember; the last
// member not draining is not drained (ErrLastMember).
func TestDrainUnknownMember(t *testing.T) {
	ep := startEtcd(t)
	a := joinCfg(t, ep, "a", 4, func(*Config) {})
	for _, m := range []string{"zz", "", "a/b"} {
		if err := a.Drain(context.Background(), m, true); !errors.Is(err, ErrNoMember) {
			t.Fatalf("drain %q: %v", m, err)
		}
	}
	// the only member: drained, nobody would run the switches
	if err := a.Drain(context.Background(), "a", true); !errors.Is(err, ErrLastMember) {
		t.Fatalf("drain of the only member: %v", err)
	}
}
