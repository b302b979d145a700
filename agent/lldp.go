package agent

// Discovery of what each port faces (fabric-ports: lldp): the I/O is one
// gNMI Get of the switch's openconfig-lldp neighbour state each time the
// switch (re)connects; what a port faces is derived from the answer by pure
// functions (PeersFromLLDP).

import (
	"context"
	"sort"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// LLDPSwitch is a Switch that can read its LLDP neighbours (gnmiclient.Switch).
// For a target with fabric-ports: lldp the agent reads them each time the
// switch connects, and derives the ports' peers from them.
type LLDPSwitch interface {
	// LLDP reads the openconfig-lldp neighbour state (one Get).
	LLDP(ctx context.Context) ([]*gnmi.Notification, error)
	// OnConnect registers f to run each time Subscribe (re)connects,
	// before the snapshots of that connection are sent.
	OnConnect(f func(ctx context.Context))
}

// discoverPeers reads target t's LLDP neighbours and keeps the peers they
// give for Ingest. When the read fails every port's peer is unknown until
// the next connection (one log line says why).
func (a *Agent) discoverPeers(ctx context.Context, t config.Target, sw LLDPSwitch) {
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	ns, err := sw.LLDP(cctx)
	cancel()
	if err != nil {
		a.setPeers(t.Name, nil)
		if ctx.Err() == nil {
			a.log.Warn("LLDP discovery failed: every port's peer stays unknown (fabric-ports: lldp)", "target", t.Name, "err", err)
		}
		return
	}
	var others []string
	for n := range a.targets {
		if n != t.Name {
			others = append(others, n)
		}
	}
	peers, err := gnmipath.PeersFromLLDP(ns, others)
	a.setPeers(t.Name, peers)
	neigh, _ := gnmipath.LLDPNeighbors(ns) // its errors are PeersFromLLDP's
	a.setNeighbors(t.Name, neigh)
	var fabric []string
	hosts, unknown := 0, 0
	for port, p := range peers {
		switch p {
		case env.PeerSwitch:
			fabric = append(fabric, port)
		case env.PeerHost:
			hosts++
		default:
			unknown++
		}
	}
	sort.Slice(fabric, func(i, j int) bool { return env.NaturalCompare(fabric[i], fabric[j]) < 0 })
	if err != nil {
		a.log.Warn("LLDP discovery: some neighbour state is unreadable; those ports' peers stay unknown", "target", t.Name, "err", err)
	}
	a.log.Info("LLDP discovery", "target", t.Name, "fabric_ports", fabric, "host_ports", hosts, "unknown_ports", unknown)
}

// setPeers replaces the discovered peers of a target (nil: none known).
func (a *Agent) setPeers(target string, peers map[string]env.Peer) {
	a.peerMu.Lock()
	a.peers[target] = peers
	a.peerMu.Unlock()
}

// discovered returns the peers discovered for a target. The map is never
// changed once stored: callers only read it.
func (a *Agent) discovered(target string) map[string]env.Peer {
	a.peerMu.RLock()
	defer a.peerMu.RUnlock()
	return a.peers[target]
}
