package fleet

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A member whose lease etcd ends (as it does when the member does not
// renew it within the ttl: etcd unreachable, the process paused) joins
// again by itself (Keep): in between it owns and writes nothing and says
// so; afterwards every switch has one owner again, the new run's tokens
// are new, and the kept OnChange and FollowPause follow the new run.
func TestMembershipJoinsAgainAfterItsLeaseIsLost(t *testing.T) {
	defer func(d time.Duration) { rejoinFirst = d }(rejoinFirst)
	rejoinFirst = 2 * time.Second // a gap the test sees
	ep := startEtcd(t)
	ctx := context.Background()
	a, err := Keep(ctx, client(t, ep), testConfig("a", 6))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := join(t, ep, "b", 6)
	defer b.Close()
	var changes atomic.Int32
	a.OnChange(func() { changes.Add(1) })
	var paused atomic.Bool
	a.FollowPause(func(p Pause) { paused.Store(p.Paused) })
	waitUntil(t, 15*time.Second, "every switch owned, a's share too", func() bool {
		return len(owners(a.current(), b)) == 6 && len(a.Owned()) > 0
	})
	old := a.current()
	oldTok := map[string]int64{}
	for _, o := range old.Owned() {
		oldTok[o.Switch] = o.Token
	}
	if _, err := client(t, ep).Revoke(ctx, old.lease); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 3*old.cfg.TTL, "a says it lost its lease", func() bool {
		return strings.Contains(a.LeaseProblem(time.Now()), "lease expired")
	})
	if p := a.LeaseProblem(time.Now()); !strings.Contains(p, "while it joins again") {
		t.Fatalf("lease problem between the loss and the join: %q", p)
	}
	for sw := range oldTok {
		if _, ok := a.Writable(sw, time.Now()); ok {
			t.Fatalf("%s writable without a lease", sw)
		}
	}
	waitUntil(t, 30*time.Second, "a joined again", func() bool { return a.Rejoins() == 1 })
	if a.current() == old {
		t.Fatal("the old run is still current")
	}
	waitUntil(t, 20*time.Second, "every switch one owner again, a's share too", func() bool {
		o := owners(a.current(), b)
		for _, ms := range o {
			if len(ms) != 1 {
				return false
			}
		}
		return len(o) == 6 && len(a.Owned()) > 0
	})
	for _, o := range a.Owned() {
		if t0, ok := oldTok[o.Switch]; ok && o.Token <= t0 {
			t.Fatalf("%s: token %d after %d", o.Switch, o.Token, t0)
		}
	}
	if p := a.LeaseProblem(time.Now()); p != "" {
		t.Fatalf("lease problem after the join: %q", p)
	}
	if changes.Load() == 0 {
		t.Fatal("OnChange not called for the new run's switches")
	}
	if err := b.SetPause(ctx, Pause{Paused: true, By: "test"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the new run follows the fleet's pause", paused.Load)
}
