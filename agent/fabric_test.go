package agent

import (
	"context"
	"log/slog"
	"strings"
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

// A db that cannot take the fabric record is said once, not with every
// snapshot (each one tries again), and once more when it can.
func TestFabricRecordFailureLoggedOnce(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	var logs strings.Builder
	r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	if err := r.j.Close(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		r.tns += sec
		r.a.Ingest(r.sw.snapshot(r.tns))
	}
	if n := strings.Count(logs.String(), "fabric record not written"); n != 1 {
		t.Fatalf("%d warnings for 5 failed writes, want 1:\n%s", n, logs.String())
	}
	if !r.a.fabricFail["leaf0"] {
		t.Fatal("the failing write is not noted")
	}
}
