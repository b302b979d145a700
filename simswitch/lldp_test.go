package simswitch

import (
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmic/pkg/api/target"
	"google.golang.org/grpc/codes"

	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
)

func lldpFabric(c *Config) {
	cfg := simenv.DefaultConfig()
	cfg.Topology = simenv.LeafSpineTopology(2, 2, 2, 100e9, 400e9, simenv.Microsecond)
	cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Fanin: 3, SizeBytes: 100_000, Every: 100 * simenv.Microsecond, Priority: 3}}
	c.Sim = cfg
}

func mustPath(t *testing.T, s string) *gnmi.Path {
	t.Helper()
	_, el, err := gnmipath.ParsePath(s)
	if err != nil {
		t.Fatal(err)
	}
	return &gnmi.Path{Elem: el}
}

// checkNeighbors compares what a switch says over LLDP with the topology.
func checkNeighbors(t *testing.T, what string, sw simenv.SwitchInfo, got map[string][]gnmipath.LLDPNeighbor) {
	t.Helper()
	if len(got) != len(sw.Ports) {
		t.Fatalf("%s: %s: %d interfaces with neighbours, want %d: %+v", what, sw.Name, len(got), len(sw.Ports), got)
	}
	for _, p := range sw.Ports {
		ns := got[p.Name]
		if len(ns) != 1 {
			t.Fatalf("%s: %s %s: neighbours %+v", what, sw.Name, p.Name, ns)
		}
		n := ns[0]
		caps := map[string]bool{"STATION_ONLY": true}
		if p.PeerSwitch {
			caps = map[string]bool{"MAC_BRIDGE": true, "ROUTER": true}
		}
		if n.SystemName != p.Peer || n.PortID != SimPortID(p) || n.ChassisID != SimChassisID(p.Peer) ||
			n.Malformed || len(n.Capabilities) != len(caps) {
			t.Fatalf("%s: %s %s: %+v, topology %+v", what, sw.Name, p.Name, n, p)
		}
		for c := range caps {
			if !n.Capabilities[c] {
				t.Fatalf("%s: %s %s: capabilities %v", what, sw.Name, p.Name, n.Capabilities)
			}
		}
	}
}

func getLLDP(t *testing.T, tg *target.Target, tt gnmipath.Target) map[string][]gnmipath.LLDPNeighbor {
	t.Helper()
	resp, err := tg.Get(ctx5(t), gnmipath.LLDPRequest(tt))
	if err != nil {
		t.Fatalf("%s: %v", tt.Name, err)
	}
	got, err := gnmipath.LLDPNeighbors(resp.GetNotification())
	if err != nil {
		t.Fatalf("%s: %v", tt.Name, err)
	}
	return got
}

// Every switch port serves its neighbour's openconfig-lldp state: a switch
// (MAC_BRIDGE, ROUTER) or a host (STATION_ONLY), named as in the topology,
// through Get (with wildcards and types) and Subscribe ONCE.
func TestLLDPServed(t *testing.T) {
	s, addr := start(t, gnmipath.OpenConfig, lldpFabric)
	tg := dial(t, addr)
	sws := s.Switches()
	if len(sws) != 4 {
		t.Fatalf("%d switches", len(sws))
	}
	byName := map[string]simenv.SwitchInfo{}
	for _, sw := range sws {
		byName[sw.Name] = sw
		checkNeighbors(t, "get", sw, getLLDP(t, tg, gnmipath.Target{Name: sw.Name, Dialect: gnmipath.OpenConfig}))
	}
	// The far ends agree: leaf0's uplink to spine1 is the spine1 port whose
	// neighbour is leaf0 on that uplink.
	for _, p := range byName["leaf0"].Ports {
		if !p.PeerSwitch {
			continue
		}
		back := byName[p.Peer].Ports[p.PeerPort]
		if back.Peer != "leaf0" || SimPortID(back) != p.Name {
			t.Fatalf("leaf0 %s -> %s Ethernet%d -> %s %s", p.Name, p.Peer, p.PeerPort, back.Peer, SimPortID(back))
		}
	}
	if fp := FabricPorts(byName["leaf0"]); len(fp) != 2 || fp[0] != "Ethernet2" || fp[1] != "Ethernet3" {
		t.Fatalf("leaf0 fabric ports %v", fp)
	}
	if fp := FabricPorts(byName["spine0"]); len(fp) != 2 {
		t.Fatalf("spine0 fabric ports %v", fp)
	}

	// Wildcards in keys and names, PROTO typed values.
	resp, err := tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "leaf1"}, Encoding: gnmi.Encoding_PROTO,
		Path: []*gnmi.Path{mustPath(t, "/lldp/interfaces/interface[name=*]/neighbors/neighbor[id=*]/capabilities/capability[name=*]/state/enabled")}})
	if err != nil {
		t.Fatal(err)
	}
	ups := resp.GetNotification()[0].GetUpdate()
	if len(ups) != 2+2*2 { // 2 hosts x STATION_ONLY, 2 spines x (MAC_BRIDGE, ROUTER)
		t.Fatalf("%d capability leaves", len(ups))
	}
	for _, u := range ups {
		if !u.GetVal().GetBoolVal() {
			t.Fatalf("%v", u)
		}
	}
	resp, err = tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "leaf1"}, Encoding: gnmi.Encoding_JSON,
		Path: []*gnmi.Path{mustPath(t, "/lldp/interfaces/interface[name=Ethernet0]/neighbors/neighbor[id=1]/state/system-name"),
			mustPath(t, "/lldp/interfaces/interface[name=*]/neighbors/neighbor/state/port-*")}})
	if err != nil {
		t.Fatal(err)
	}
	if n := resp.GetNotification(); len(n) != 2 || len(n[0].GetUpdate()) != 1 || string(n[0].GetUpdate()[0].GetVal().GetJsonVal()) != `"host2"` ||
		len(n[1].GetUpdate()) != 4 || n[0].GetPrefix().GetTarget() != "leaf1" {
		t.Fatalf("%v", n)
	}
	// LLDP is state: a CONFIG Get finds none, a STATE Get all of it.
	_, err = tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "leaf0"}, Type: gnmi.GetRequest_CONFIG, Path: []*gnmi.Path{mustPath(t, "/lldp")}})
	wantCode(t, err, codes.NotFound, "matches no data on leaf0")
	resp, err = tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "leaf0"}, Type: gnmi.GetRequest_STATE, Path: []*gnmi.Path{mustPath(t, "/lldp")}})
	if err != nil || len(resp.GetNotification()[0].GetUpdate()) != 4*3+2+2*2 {
		t.Fatalf("state get: %v %v", err, resp)
	}
	// Read-only.
	_, err = tg.Set(ctx5(t), &gnmi.SetRequest{Prefix: &gnmi.Path{Target: "leaf0"}, Update: []*gnmi.Update{{
		Path: mustPath(t, "/lldp/interfaces/interface[name=Ethernet0]/neighbors/neighbor[id=1]/state/system-name"),
		Val:  &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "spine0"}}}}})
	if err == nil {
		t.Fatal("Set on LLDP state accepted")
	}
	checkNeighbors(t, "after set", byName["leaf0"], getLLDP(t, tg, gnmipath.Target{Name: "leaf0", Dialect: gnmipath.OpenConfig}))

	// Subscribe ONCE.
	req := &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
		Prefix: &gnmi.Path{Target: "spine1"}, Mode: gnmi.SubscriptionList_ONCE, Encoding: gnmi.Encoding_JSON_IETF,
		Subscription: []*gnmi.Subscription{{Path: mustPath(t, "/lldp/interfaces/interface[name=*]/neighbors")}}}}}
	rs, err := tg.SubscribeOnce(ctx5(t), req)
	if err != nil {
		t.Fatal(err)
	}
	var ns []*gnmi.Notification
	for _, r := range rs {
		if u := r.GetUpdate(); u != nil {
			ns = append(ns, u)
		}
	}
	got, err := gnmipath.LLDPNeighbors(ns)
	if err != nil {
		t.Fatal(err)
	}
	checkNeighbors(t, "once", byName["spine1"], got)
	// A telemetry subscription does not carry LLDP leaves.
	snap, _ := onceSnapshot(t, tg, gnmipath.Target{Name: "leaf0", Dialect: gnmipath.OpenConfig})
	if len(snap.Queues) != 4 {
		t.Fatalf("%d queues", len(snap.Queues))
	}

	// A switch without the LLDP model: NotFound, the rest unchanged.
	s.SetFaults(Faults{NoLLDP: true})
	_, err = tg.Get(ctx5(t), gnmipath.LLDPRequest(gnmipath.Target{Name: "leaf0", Dialect: gnmipath.OpenConfig}))
	wantCode(t, err, codes.NotFound, "matches no data on leaf0")
	_, err = tg.SubscribeOnce(ctx5(t), req)
	wantCode(t, err, codes.NotFound, "match no data on spine1")
	if snap, _ := onceSnapshot(t, tg, gnmipath.Target{Name: "leaf0", Dialect: gnmipath.OpenConfig}); len(snap.Queues) != 4 {
		t.Fatalf("%d queues with NoLLDP", len(snap.Queues))
	}
	s.SetFaults(Faults{})
	checkNeighbors(t, "fault cleared", byName["leaf0"], getLLDP(t, tg, gnmipath.Target{Name: "leaf0", Dialect: gnmipath.OpenConfig}))

	caps, err := tg.Capabilities(ctx5(t))
	if err != nil || !strings.Contains(caps.String(), "openconfig-lldp") {
		t.Fatalf("capabilities %v %v", caps, err)
	}
}

// The sonic dialect serves LLDP as sonic-gnmi does: openconfig paths under
// prefix.target OC-YANG, module prefixes accepted; one switch per listener.
func TestLLDPServedSonic(t *testing.T) {
	s, _ := start(t, gnmipath.Sonic, func(c *Config) { lldpFabric(c); c.PerSwitch = true })
	for _, sw := range s.Switches() {
		tg := dial(t, s.Addrs()[sw.Name])
		tt := gnmipath.Target{Name: sw.Name, Dialect: gnmipath.Sonic, Namespace: sw.Name}
		resp, err := tg.Get(ctx5(t), gnmipath.LLDPRequest(tt))
		if err != nil {
			t.Fatal(err)
		}
		if p := resp.GetNotification()[0].GetPrefix(); p.GetTarget() != gnmipath.OCYang || len(p.GetElem()) != 0 {
			t.Fatalf("prefix %v", p)
		}
		got, err := gnmipath.LLDPNeighbors(resp.GetNotification())
		if err != nil {
			t.Fatal(err)
		}
		checkNeighbors(t, "sonic", sw, got)
	}
	// One listener for all switches: OC-YANG names no switch.
	_, addr := start(t, gnmipath.Sonic, lldpFabric)
	_, err := dial(t, addr).Get(ctx5(t), gnmipath.LLDPRequest(gnmipath.Target{Name: "leaf0", Dialect: gnmipath.Sonic, Namespace: "leaf0"}))
	wantCode(t, err, codes.InvalidArgument, "OC-YANG paths name no switch")
}
