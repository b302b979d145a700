package simswitch

import (
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/export"
)

// Epoch is the Unix time (ns) that simulated time 0 is stamped as. simswitch
// stamps every notification with Epoch + simulated ns, so timestamps look
// like Unix times yet advance at simulated speed: a client dividing counter
// deltas by timestamp deltas gets simulated rates, whatever the timescale.
const Epoch int64 = 1_767_225_600_000_000_000 // 2026-01-01T00:00:00Z

// SimTimestamp converts simulated time to a notification timestamp.
func SimTimestamp(t simenv.Time) int64 { return Epoch + t.Ns() }

// SimTime converts a notification timestamp back to simulated time.
func SimTime(ts int64) simenv.Time { return simenv.Time(ts-Epoch) * simenv.Nanosecond }

// snapshot is what switch info exports at tel for the queues given, as the
// agent's vocabulary has it.
func snapshot(info simenv.SwitchInfo, tel *simenv.SwitchTelemetry, queues []int) env.Snapshot {
	return export.Snapshot(*tel, info, queues)
}

// initialConfig is the configuration tree a simulated switch starts with
// (gnmipath.InitialConfig over its current settings, with the PGs' α).
func initialConfig(d gnmipath.Dialect, info simenv.SwitchInfo, tel *simenv.SwitchTelemetry, queues []int, xonBytes int64) gnmipath.Tree {
	s := snapshot(info, tel, queues)
	ports := make(map[string]int, len(info.Ports))
	for i, p := range info.Ports {
		ports[p.Name] = i
	}
	alpha := func(k env.QueueKey) float64 {
		pi, ok := ports[k.Port]
		if !ok || pi >= len(tel.Ports) || k.Queue < 0 || k.Queue >= simenv.NumQueues {
			return 0
		}
		return tel.Ports[pi].PG[k.Queue].Alpha
	}
	return gnmipath.InitialConfig(d, &s, xonBytes, alpha)
}

// SimChassisID is the chassis-id simswitch reports for a simulated node: a
// locally administered MAC address derived from the node's name.
func SimChassisID(node string) string {
	h := fnv.New64a()
	h.Write([]byte(node))
	v := h.Sum64()
	return fmt.Sprintf("02:%02x:%02x:%02x:%02x:%02x", byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// SimPortID is the port-id simswitch reports for the far end of a port: the
// peer switch's interface name (Ethernet<n>, as simswitch names them) or a
// host's NIC (eth<n>).
func SimPortID(p simenv.PortInfo) string {
	if p.PeerSwitch {
		return "Ethernet" + strconv.Itoa(p.PeerPort)
	}
	return "eth" + strconv.Itoa(p.PeerPort)
}

// LLDPItems are the LLDP neighbour leaves of a simulated switch, one
// neighbour (id "1") per connected port: a neighbouring switch advertises
// MAC_BRIDGE and ROUTER enabled, a host STATION_ONLY; system-name is the
// peer node's name. Ports without a peer have no neighbour. Values are
// typed (string, bool) in both dialects; in the sonic dialect the items'
// database is gnmipath.OCYang.
func LLDPItems(d gnmipath.Dialect, info simenv.SwitchInfo) []gnmipath.Item {
	var out []gnmipath.Item
	add := func(l gnmipath.Leaf, v *gnmi.TypedValue) {
		db, el := gnmipath.LeafPath(d, l)
		out = append(out, gnmipath.Item{DB: db, Leaf: l, Path: &gnmi.Path{Elem: el}, Val: v})
	}
	str := func(s string) *gnmi.TypedValue {
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: s}}
	}
	for _, p := range info.Ports {
		if p.Peer == "" {
			continue
		}
		const id = "1"
		add(gnmipath.Leaf{Field: gnmipath.LLDPSystemName, Port: p.Name, Name: id}, str(p.Peer))
		add(gnmipath.Leaf{Field: gnmipath.LLDPPortID, Port: p.Name, Name: id}, str(SimPortID(p)))
		add(gnmipath.Leaf{Field: gnmipath.LLDPChassisID, Port: p.Name, Name: id}, str(SimChassisID(p.Peer)))
		caps := []int{gnmipath.CapStationOnly}
		if p.PeerSwitch {
			caps = []int{gnmipath.CapMACBridge, gnmipath.CapRouter}
		}
		for _, c := range caps {
			add(gnmipath.Leaf{Field: gnmipath.LLDPCapEnabled, Port: p.Name, Name: id, Index: c},
				&gnmi.TypedValue{Value: &gnmi.TypedValue_BoolVal{BoolVal: true}})
		}
	}
	return out
}
