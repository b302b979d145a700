package gnmipath

import (
	"strings"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// PeersFromLLDP derives what each interface faces from openconfig-lldp
// neighbour state (the notifications of a Get, read by
// LLDPNeighbors). others are the names of the other configured
// targets. Per neighbour:
//
//   - a switch when it has MAC_BRIDGE or ROUTER enabled, or its
//     system-name is one of others (without regard to case; a dotted name
//     also by its first label, leaf1.dc1 for leaf1);
//   - unknown when some of its state could not be read (a value of the
//     wrong type, a list entry without its key), or it reported nothing
//     about itself (no name, port or chassis id, or capability);
//   - a host otherwise (e.g. STATION_ONLY, or a name and no bridge or
//     router capability).
//
// An interface faces a switch when any of its neighbours is one, else its
// peer is unknown when any neighbour's is, else it faces a host.
// Interfaces without a neighbour are left out (unknown). The error joins
// what could not be read; the peers are those derived from the rest.
func PeersFromLLDP(ns []*gnmi.Notification, others []string) (map[string]env.Peer, error) {
	neigh, err := LLDPNeighbors(ns)
	names := make(map[string]bool, len(others))
	for _, o := range others {
		names[strings.ToLower(o)] = true
	}
	out := make(map[string]env.Peer, len(neigh))
	for ifc, nbs := range neigh {
		out[ifc] = portPeer(nbs, names)
	}
	return out, err
}

// portPeer combines the neighbours of one interface.
func portPeer(nbs []LLDPNeighbor, targets map[string]bool) env.Peer {
	p := env.PeerHost
	if len(nbs) == 0 {
		p = env.PeerUnknown
	}
	for _, n := range nbs {
		switch neighborPeer(n, targets) {
		case env.PeerSwitch:
			return env.PeerSwitch
		case env.PeerUnknown:
			p = env.PeerUnknown
		}
	}
	return p
}

// neighborPeer classifies one neighbour (see PeersFromLLDP); targets holds
// lower-case target names.
func neighborPeer(n LLDPNeighbor, targets map[string]bool) env.Peer {
	if n.Capabilities["MAC_BRIDGE"] || n.Capabilities["ROUTER"] {
		return env.PeerSwitch
	}
	if name := strings.ToLower(strings.TrimSpace(n.SystemName)); name != "" {
		short, _, _ := strings.Cut(name, ".")
		if targets[name] || targets[short] {
			return env.PeerSwitch
		}
	}
	if n.Malformed || !n.Reported() {
		return env.PeerUnknown
	}
	return env.PeerHost
}
