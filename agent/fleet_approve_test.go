package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/env"
)

// An approval on a member that does not own the switch names the member
// that does, and says to approve there (it said only "nothing pending for
// leaf0/Ethernet0/q3").
func TestFleetApproveOnANonOwnerNamesTheOwner(t *testing.T) {
	ep, names, sws, mu, writers := fleetSwitches(t)
	names = names[:1]
	sws = map[string]*fakeSwitch{"leaf0": sws["leaf0"]}
	defer feedSwitches(sws)()
	appr := func(c *config.Config) { c.Approve = true }
	a, cancelA, doneA := startFleetAgent(t, ep, "a", names, sws, mu, writers, 200*time.Millisecond, appr)
	defer func() { cancelA(); <-doneA; a.Close() }()
	b, cancelB, doneB := startFleetAgent(t, ep, "b", names, sws, mu, writers, 200*time.Millisecond, appr)
	defer func() { cancelB(); <-doneB; b.Close() }()
	var owner, other *Agent
	within(t, 30*time.Second, "a change pending on leaf0's owner", func() bool {
		for _, x := range []*Agent{a, b} {
			if len(x.Pending()) > 0 {
				owner = x
			}
		}
		return owner != nil
	})
	ownerID, otherID := "a", "b"
	other = b
	if owner == b {
		other, ownerID, otherID = a, "b", "a"
	}
	k := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	_, err := other.Approve([]env.QueueKey{k}, false, "op", nil)
	want := "approve on member " + otherID + " of fleet t: leaf0 is run by member " + ownerID + ", not this one: approve on " + ownerID
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("approve on the non-owner: %v (want %q)", err, want)
	}
	if out, err := owner.Approve([]env.QueueKey{k}, false, "op", nil); err != nil || len(out) != 1 {
		t.Fatalf("approve on the owner: %v %+v", err, out)
	}
}
