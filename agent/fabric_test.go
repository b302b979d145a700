package agent

import (
	"context"
	"testing"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/env"
)

// The fabric record is written from the first snapshot, not again while
// nothing changes, again after a reconnect, with LLDP's neighbours once
// they are read, and when the ports change.
func TestFabricRecordWrites(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	written := func() env.FabricRecord {
		t.Helper()
		recs, err := r.j.Fabric()
		if err != nil || len(recs) != 1 {
			t.Fatalf("fabric records %+v, %v", recs, err)
		}
		return recs[0]
	}
	r.interval(t)
	first := written()
	if first.Target != "leaf0" || len(first.Ports) != 2 || first.TimeNs != r.tns {
		t.Fatalf("first record %+v", first)
	}
	r.interval(t)
	if got := written(); got.TimeNs != first.TimeNs {
		t.Fatalf("rewritten with nothing changed: %+v", got)
	}
	r.a.staleFabric("leaf0") // a reconnect
	r.interval(t)
	if got := written(); got.TimeNs != r.tns {
		t.Fatalf("not rewritten after a reconnect: %+v", got)
	}
	tc := config.Target{Name: "leaf0", AllPorts: true, Queues: []int{3, 4}, DiscoverPeers: true}
	r.a.targets["leaf0"] = tc
	sw := &fakeLLDP{fakeSwitch: r.sw, ns: lldpNotif(t, nbr(kA.Port, "state/system-name"), `"spine3"`, nbr(kA.Port, "state/port-id"), `"Ethernet7"`)}
	r.a.discoverPeers(context.Background(), tc, sw)
	r.interval(t)
	got := written()
	var nb env.Neighbor
	for _, p := range got.Ports {
		if p.Name == kA.Port {
			nb = p.Neighbor
		}
	}
	if got.TimeNs != r.tns || nb != (env.Neighbor{System: "spine3", Port: "Ethernet7"}) {
		t.Fatalf("after LLDP: %+v", got)
	}
	r.sw.mu.Lock()
	r.sw.set[env.QueueKey{Target: "leaf0", Port: "Ethernet99", Queue: 3}] = target
	r.sw.mu.Unlock()
	r.interval(t)
	if got := written(); len(got.Ports) != 3 || got.TimeNs != r.tns {
		t.Fatalf("a new port: %+v", got)
	}
}
