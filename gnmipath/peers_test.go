package gnmipath

import (
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// lldpNotif builds a Get answer of leaf updates: pairs of a path under
// /lldp/interfaces and a JSON_IETF value.
func lldpNotif(t *testing.T, kv ...string) []*gnmi.Notification {
	t.Helper()
	n := &gnmi.Notification{Prefix: &gnmi.Path{Target: "leaf0"}}
	for i := 0; i+1 < len(kv); i += 2 {
		_, el, err := ParsePath("/lldp/interfaces/" + kv[i])
		if err != nil {
			t.Fatal(err)
		}
		n.Update = append(n.Update, &gnmi.Update{Path: &gnmi.Path{Elem: el},
			Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(kv[i+1])}}})
	}
	return []*gnmi.Notification{n}
}

// nbr is the path of neighbour id 1 of port.
func nbr(port, rest string) string {
	return "interface[name=" + port + "]/neighbors/neighbor[id=1]/" + rest
}

func capab(port, c string) string {
	return nbr(port, "capabilities/capability[name="+c+"]/state/enabled")
}

func TestPeersFromLLDP(t *testing.T) {
	others := []string{"spine0", "Spine1"}
	cases := []struct {
		name string
		kv   []string
		want env.Peer // of Ethernet0
		err  bool
	}{
		{"bridge", []string{capab("Ethernet0", "MAC_BRIDGE"), "true", nbr("Ethernet0", "state/system-name"), `"unmanaged-sw"`}, env.PeerSwitch, false},
		{"router", []string{capab("Ethernet0", "ROUTER"), "true"}, env.PeerSwitch, false},
		{"bridge and router, module-prefixed", []string{capab("Ethernet0", "openconfig-lldp-types:MAC_BRIDGE"), "true",
			capab("Ethernet0", "openconfig-lldp-types:ROUTER"), "true"}, env.PeerSwitch, false},
		{"station", []string{capab("Ethernet0", "STATION_ONLY"), "true", nbr("Ethernet0", "state/system-name"), `"host3"`}, env.PeerHost, false},
		{"bridge advertised, not enabled", []string{capab("Ethernet0", "MAC_BRIDGE"), "false", capab("Ethernet0", "STATION_ONLY"), "true"}, env.PeerHost, false},
		{"system-name is another target", []string{nbr("Ethernet0", "state/system-name"), `"spine0"`, capab("Ethernet0", "STATION_ONLY"), "true"}, env.PeerSwitch, false},
		{"system-name, other case", []string{nbr("Ethernet0", "state/system-name"), `"SPINE1"`}, env.PeerSwitch, false},
		{"system-name, fully qualified", []string{nbr("Ethernet0", "state/system-name"), `"spine1.dc1.example.net"`}, env.PeerSwitch, false},
		{"system-name is this target", []string{nbr("Ethernet0", "state/system-name"), `"leaf0"`}, env.PeerHost, false},
		{"name only", []string{nbr("Ethernet0", "state/system-name"), `"host7"`}, env.PeerHost, false},
		{"chassis only", []string{nbr("Ethernet0", "state/chassis-id"), `"02:00:00:00:00:01"`}, env.PeerHost, false},
		{"no neighbour", []string{capab("Ethernet1", "MAC_BRIDGE"), "true"}, env.PeerUnknown, false},
		{"nothing at all", nil, env.PeerUnknown, false},
		{"neighbour reports nothing", []string{nbr("Ethernet0", "state/id"), `"1"`}, env.PeerUnknown, false},
		{"malformed enabled", []string{capab("Ethernet0", "MAC_BRIDGE"), `"garbage"`, capab("Ethernet0", "STATION_ONLY"), "true"}, env.PeerUnknown, true},
		{"malformed system-name", []string{nbr("Ethernet0", "state/system-name"), `17`, capab("Ethernet0", "STATION_ONLY"), "true"}, env.PeerUnknown, true},
		{"malformed but a router", []string{nbr("Ethernet0", "state/system-name"), `17`, capab("Ethernet0", "ROUTER"), "true"}, env.PeerSwitch, true},
		{"missing value", []string{nbr("Ethernet0", "state/system-name"), ``, capab("Ethernet0", "STATION_ONLY"), "true"}, env.PeerUnknown, true},
		{"neighbour without id", []string{"interface[name=Ethernet0]/neighbors/neighbor/state/system-name", `"h"`}, env.PeerUnknown, true},
		{"capability without name", []string{nbr("Ethernet0", "capabilities/capability/state/enabled"), "true",
			nbr("Ethernet0", "state/system-name"), `"h"`}, env.PeerUnknown, true},
		{"list entry without key", []string{"interface[name=Ethernet0]/neighbors", `{"neighbor": [{"state": {"system-name": "h"}}]}`}, env.PeerUnknown, true},
		{"not JSON", []string{nbr("Ethernet0", "state"), `{"system-name": `}, env.PeerUnknown, true},
		{"interface without name", []string{"interface/neighbors/neighbor[id=1]/state/system-name", `"spine0"`}, env.PeerUnknown, true},
	}
	for _, c := range cases {
		peers, err := PeersFromLLDP(lldpNotif(t, c.kv...), others)
		if got := peers["Ethernet0"]; got != c.want {
			t.Errorf("%s: Ethernet0 faces %q, want %q (%v)", c.name, got, c.want, err)
		}
		if (err != nil) != c.err {
			t.Errorf("%s: error %v, want one: %v", c.name, err, c.err)
		}
	}
	// Several neighbours on one port: a switch wins, then unknown, then host.
	two := func(a, b []string) env.Peer {
		kv := []string{}
		for i, x := range [][]string{a, b} {
			id := []string{"1", "2"}[i]
			for j := 0; j+1 < len(x); j += 2 {
				kv = append(kv, strings.Replace(x[j], "neighbor[id=1]", "neighbor[id="+id+"]", 1), x[j+1])
			}
		}
		peers, _ := PeersFromLLDP(lldpNotif(t, kv...), others)
		return peers["Ethernet0"]
	}
	host := []string{capab("Ethernet0", "STATION_ONLY"), "true"}
	sw := []string{capab("Ethernet0", "ROUTER"), "true"}
	blank := []string{nbr("Ethernet0", "state/id"), `"1"`}
	if two(host, sw) != env.PeerSwitch || two(host, blank) != env.PeerUnknown || two(host, host) != env.PeerHost || two(blank, sw) != env.PeerSwitch {
		t.Fatalf("several neighbours: %q %q %q %q", two(host, sw), two(host, blank), two(host, host), two(blank, sw))
	}
	if !(env.NaturalCompare("Ethernet2", "Ethernet10") < 0) || (env.NaturalCompare("Ethernet10", "Ethernet2") < 0) || !(env.NaturalCompare("Eth1", "Ethernet0") < 0) {
		t.Fatal("portLess")
	}
}

// Random cuts of a valid answer never panic.
func TestPeersFromLLDPNeverPanics(t *testing.T) {
	blob := `{"interface": [{"name": "Ethernet0", "neighbors": {"neighbor": [{"id": "1", "state": {"system-name": "spine0"},
	  "capabilities": {"capability": [{"name": "MAC_BRIDGE", "state": {"enabled": true}}]}}]}}]}`
	for i := 0; i <= len(blob); i++ {
		for _, v := range []string{blob[:i], blob[i:], `[` + blob[:i] + `]`, `null`, `[]`, `{}`, `"x"`} {
			PeersFromLLDP(lldpNotif(t, "", v), nil)
			PeersFromLLDP(lldpNotif(t, "interface[name=Ethernet0]/neighbors/neighbor", v), nil)
		}
	}
}
