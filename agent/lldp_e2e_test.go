package agent

// End-to-end LLDP discovery (fabric-ports: lldp) against simswitch on
// 127.0.0.1, port 0.

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simswitch"
)

func newPeerPolicy() *peerPolicy {
	return &peerPolicy{fixedPolicy: fixedPolicy{s: target, conf: 0.9}, peers: map[env.QueueKey]env.Peer{}}
}

// seen copies what the policy has been shown so far.
func (p *peerPolicy) seen() map[env.QueueKey]env.Peer {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[env.QueueKey]env.Peer, len(p.peers))
	for k, v := range p.peers {
		out[k] = v
	}
	return out
}

// On a leaf-spine fabric, every target with fabric-ports: lldp ends up with
// exactly the peers the explicit lists simswitch prints give.
func TestE2ELLDPMatchesFabricPorts(t *testing.T) {
	cfg := e2eSim(poorECN)
	cfg.Topology = simenv.LeafSpineTopology(2, 2, 2, 100e9, 100e9, simenv.Microsecond)
	s, addr := startSim(t, cfg, gnmipath.OpenConfig, nil)
	var listed, lldp []config.Target
	queues := 0
	for _, sw := range s.Switches() {
		tc := target0(addr, config.DialectOpenConfig)
		tc.Name = sw.Name
		l := tc
		l.PeersKnown, l.FabricPorts = true, simswitch.FabricPorts(sw)
		listed = append(listed, l)
		tc.DiscoverPeers = true
		lldp = append(lldp, tc)
		queues += len(sw.Ports)
	}
	if queues != 12 {
		t.Fatalf("%d queues", queues)
	}
	polList, polLLDP := newPeerPolicy(), newPeerPolicy()
	var logs syncBuffer
	runE2E(t, config.ModeShadow, polList, listed, e2eGuard())
	e := runE2ELog(t, config.ModeShadow, polLLDP, lldp, e2eGuard(), slog.New(slog.NewTextHandler(&logs, nil)))
	waitFor(t, 20*time.Second, "every queue shown to both policies", func() bool {
		return len(polList.seen()) == queues && len(polLLDP.seen()) == queues
	})
	want, got := polList.seen(), polLLDP.seen()
	fabric := 0
	for k, p := range want {
		if p == env.PeerUnknown || got[k] != p {
			t.Errorf("%s: lldp says %q, fabric-ports %q", k, got[k], p)
		}
		if p == env.PeerSwitch {
			fabric++
		}
	}
	if fabric != 8 { // 2 leaves x 2 uplinks, 2 spines x 2 leaves
		t.Fatalf("%d fabric queues: %v", fabric, want)
	}
	if !strings.Contains(logs.String(), `msg="LLDP discovery" target=leaf0 fabric_ports="[Ethernet2 Ethernet3]" host_ports=2 unknown_ports=0`) {
		t.Fatalf("log:\n%s", logs.String())
	}
	checkFabricRecords(t, e, s.Switches())
}

// checkFabricRecords: the agent db holds one fabric record per switch,
// with every port's speed, peer and LLDP neighbour as the simulation has
// them, and the buffer.
func checkFabricRecords(t *testing.T, e *e2e, sws []simenv.SwitchInfo) {
	t.Helper()
	var recs []env.FabricRecord
	waitFor(t, 10*time.Second, "a fabric record per switch", func() bool {
		var err error
		recs, err = e.j.Fabric()
		return err == nil && len(recs) == len(sws)
	})
	byName := map[string]env.FabricRecord{}
	for _, r := range recs {
		byName[r.Target] = r
	}
	for _, sw := range sws {
		r := byName[sw.Name]
		if len(r.Ports) != len(sw.Ports) || r.BufferBytes != sw.BufferBytes {
			t.Fatalf("%s: record %+v, want %d ports and buffer %d", sw.Name, r, len(sw.Ports), sw.BufferBytes)
		}
		for i, p := range sw.Ports {
			got := r.Ports[i]
			peer := env.PeerHost
			if p.PeerSwitch {
				peer = env.PeerSwitch
			}
			want := env.Neighbor{System: p.Peer, Port: simswitch.SimPortID(p)}
			if got.Name != p.Name || got.RateBps != p.RateBps || got.Peer != peer || got.Neighbor != want || got.Setting.KmaxBytes == 0 {
				t.Errorf("%s: port %+v, want %s at %g facing %s (%+v)", sw.Name, got, p.Name, p.RateBps, peer, want)
			}
		}
	}
}

// A switch that answers the LLDP Get with an error: the loop runs with
// unknown peers, one log line says why; after a reconnect with the model
// back, discovery runs again and the peers are known.
func TestE2ELLDPGetFailsKeepsUnknown(t *testing.T) {
	s, addr := startSim(t, e2eSim(poorECN), gnmipath.OpenConfig, nil)
	s.SetFaults(simswitch.Faults{NoLLDP: true})
	tc := target0(addr, config.DialectOpenConfig)
	tc.DiscoverPeers = true
	pol := newPeerPolicy()
	var logs syncBuffer
	e := runE2ELog(t, config.ModeShadow, pol, []config.Target{tc}, e2eGuard(), slog.New(slog.NewTextHandler(&logs, nil)))
	waitFor(t, 10*time.Second, "recommendations for every queue", func() bool {
		return len(e.a.Recommendations("sw0")) == 4 && snapshots(e.a) >= 5
	})
	for k, p := range pol.seen() {
		if p != env.PeerUnknown {
			t.Fatalf("%s: peer %q without LLDP", k, p)
		}
	}
	if n := strings.Count(logs.String(), "LLDP discovery failed"); n != 1 ||
		!strings.Contains(logs.String(), `level=WARN msg="LLDP discovery failed: every port's peer stays unknown (fabric-ports: lldp)" target=sw0 err="rpc error: code = NotFound desc = path sw0 /lldp/interfaces/interface[name=*]/neighbors matches no data on sw0"`) {
		t.Fatalf("%d failure lines:\n%s", n, logs.String())
	}
	// The model comes back; the next connection discovers the peers.
	s.SetFaults(simswitch.Faults{})
	s.DropStreams()
	waitFor(t, 10*time.Second, "peers after the reconnect", allPeers(pol, env.PeerHost, 4))
	if !strings.Contains(logs.String(), `msg="LLDP discovery" target=sw0 fabric_ports=[] host_ports=4`) {
		t.Fatalf("log:\n%s", logs.String())
	}
}

// Over the sonic dialect the agent asks sonic-gnmi's way (OC-YANG).
func TestE2ELLDPSONiC(t *testing.T) {
	_, addr := startSim(t, e2eSim(poorECN), gnmipath.Sonic, nil)
	tc := target0(addr, config.DialectSONiC)
	tc.Namespace = "sw0"
	tc.DiscoverPeers = true
	pol := newPeerPolicy()
	runE2E(t, config.ModeShadow, pol, []config.Target{tc}, e2eGuard())
	waitFor(t, 10*time.Second, "host peers over sonic", allPeers(pol, env.PeerHost, 4))
}

// allPeers reports (for waitFor) whether the policy has seen n queues, all
// with peer p.
func allPeers(pol *peerPolicy, p env.Peer, n int) func() bool {
	return func() bool {
		seen := pol.seen()
		for _, q := range seen {
			if q != p {
				return false
			}
		}
		return len(seen) == n
	}
}
