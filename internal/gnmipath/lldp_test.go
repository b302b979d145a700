package gnmipath

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/simenv"
)

func lldpSwitch() simenv.SwitchInfo {
	return simenv.SwitchInfo{Name: "leaf0", Ports: []simenv.PortInfo{
		{Index: 0, Name: "Ethernet0", Peer: "host3", PeerPort: 0},
		{Index: 1, Name: "Ethernet1", Peer: "spine1", PeerSwitch: true, PeerPort: 6},
		{Index: 2, Name: "Ethernet2"}, // nothing connected
	}}
}

// LLDPItems: one neighbour per connected port, with the paths and values
// of openconfig-lldp.
func TestLLDPItems(t *testing.T) {
	got := map[string]string{}
	for _, it := range LLDPItems(OpenConfig, lldpSwitch()) {
		if it.DB != "" || it.Leaf.Field.IsConfig() {
			t.Fatalf("%+v", it)
		}
		v := "string:" + it.Val.GetStringVal()
		if b, ok := it.Val.GetValue().(*gnmi.TypedValue_BoolVal); ok {
			v = "bool:" + strconv.FormatBool(b.BoolVal)
		}
		got[PathString(it.Path.GetElem())] = v
	}
	base0 := "/lldp/interfaces/interface[name=Ethernet0]/neighbors/neighbor[id=1]"
	base1 := "/lldp/interfaces/interface[name=Ethernet1]/neighbors/neighbor[id=1]"
	want := map[string]string{
		base0 + "/state/system-name": "string:host3",
		base0 + "/state/port-id":     "string:eth0",
		base0 + "/state/chassis-id":  "string:" + SimChassisID("host3"),
		base0 + "/capabilities/capability[name=STATION_ONLY]/state/enabled": "bool:true",
		base1 + "/state/system-name":                                        "string:spine1",
		base1 + "/state/port-id":                                            "string:Ethernet6",
		base1 + "/state/chassis-id":                                         "string:" + SimChassisID("spine1"),
		base1 + "/capabilities/capability[name=MAC_BRIDGE]/state/enabled":   "bool:true",
		base1 + "/capabilities/capability[name=ROUTER]/state/enabled":       "bool:true",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d leaves, want %d:\n%v", len(got), len(want), got)
	}
	for p, v := range want {
		if got[p] != v {
			t.Errorf("%s = %s, want %s", p, got[p], v)
		}
	}
	if SimChassisID("host3") == SimChassisID("spine1") || !strings.HasPrefix(SimChassisID("x"), "02:") {
		t.Fatalf("chassis ids %s %s", SimChassisID("host3"), SimChassisID("spine1"))
	}
	for _, it := range LLDPItems(Sonic, lldpSwitch()) {
		if it.DB != OCYang || it.Val.GetValue() == nil {
			t.Fatalf("sonic %+v", it)
		}
	}
	// Not leaves the QoS decoder knows: they are skipped, and Sets on them
	// are refused as unknown paths.
	for _, it := range LLDPItems(OpenConfig, lldpSwitch()) {
		if _, err := ParseLeaf(OpenConfig, "", it.Path.GetElem()); err == nil {
			t.Fatalf("ParseLeaf took %s", PathString(it.Path.GetElem()))
		}
	}
}

func rawIETF(s string) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(s)}}
}

func mustElems(t *testing.T, s string) *gnmi.Path {
	t.Helper()
	_, el, err := ParsePath(s)
	if err != nil {
		t.Fatal(err)
	}
	return &gnmi.Path{Elem: el}
}

// LLDPNeighbors reads the tree however a server splits it: leaf by leaf
// (simswitch), as one JSON_IETF container with lists (most switches), or
// wrapped in the container's own module-prefixed name (sonic-gnmi).
func TestLLDPNeighborsShapes(t *testing.T) {
	want := map[string][]LLDPNeighbor{
		"Ethernet0": {{Interface: "Ethernet0", ID: "1", SystemName: "host3", PortID: "eth0", ChassisID: SimChassisID("host3"),
			Capabilities: map[string]bool{"STATION_ONLY": true}}},
		"Ethernet1": {{Interface: "Ethernet1", ID: "1", SystemName: "spine1", PortID: "Ethernet6", ChassisID: SimChassisID("spine1"),
			Capabilities: map[string]bool{"MAC_BRIDGE": true, "ROUTER": true}}},
	}
	// leaf by leaf, in each encoding simswitch offers
	its := LLDPItems(OpenConfig, lldpSwitch())
	for _, enc := range []gnmi.Encoding{gnmi.Encoding_JSON_IETF, gnmi.Encoding_JSON, gnmi.Encoding_PROTO} {
		got, err := LLDPNeighbors(Notifications(OpenConfig, "leaf0", "", its, 1, enc))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: %v\n got %+v\nwant %+v", enc, err, got, want)
		}
	}
	// one container with RFC 7951 lists, module-prefixed identities
	blob := `{"interface": [
	  {"name": "Ethernet0", "config": {"name": "Ethernet0", "enabled": true}, "state": {"counters": {"frame-in": "12"}},
	   "neighbors": {"neighbor": [{"id": "1", "state": {"id": "1", "system-name": "host3", "port-id": "eth0",
	     "chassis-id": "` + SimChassisID("host3") + `", "ttl": 120},
	     "capabilities": {"capability": [{"name": "openconfig-lldp-types:STATION_ONLY",
	       "state": {"name": "openconfig-lldp-types:STATION_ONLY", "enabled": true}}]}}]}},
	  {"name": "Ethernet1", "neighbors": {"neighbor": [{"id": "1", "state": {"system-name": "spine1", "port-id": "Ethernet6",
	     "chassis-id": "` + SimChassisID("spine1") + `"},
	     "capabilities": {"capability": [{"name": "MAC_BRIDGE", "state": {"enabled": true}},
	       {"name": "ROUTER", "state": {"enabled": true}}]}}]}},
	  {"name": "Ethernet2", "neighbors": {}}]}`
	n := &gnmi.Notification{Prefix: &gnmi.Path{Target: "leaf0"},
		Update: []*gnmi.Update{{Path: mustElems(t, "/openconfig-lldp:lldp/interfaces"), Val: rawIETF(blob)}}}
	got, err := LLDPNeighbors([]*gnmi.Notification{n})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("container: %v\n got %+v\nwant %+v", err, got, want)
	}
	// sonic-gnmi: the value names its own container
	n = &gnmi.Notification{Prefix: &gnmi.Path{Target: OCYang},
		Update: []*gnmi.Update{{Path: mustElems(t, "/openconfig-lldp:lldp/interfaces"),
			Val: rawIETF(`{"openconfig-lldp:interfaces": ` + blob + `}`)}}}
	if got, err := LLDPNeighbors([]*gnmi.Notification{n}); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("wrapped: %v\n got %+v", err, got)
	}
	// a list entry asked by key, wrapped in its list's name
	n = &gnmi.Notification{Update: []*gnmi.Update{{Path: mustElems(t, "/lldp/interfaces/interface[name=Ethernet1]"),
		Val: rawIETF(`{"openconfig-lldp:interface": [{"name": "Ethernet1", "neighbors": {"neighbor": [{"id": "7",
		  "state": {"system-name": "h"}}]}}]}`)}}}
	got, err = LLDPNeighbors([]*gnmi.Notification{n})
	if err != nil || len(got) != 1 || len(got["Ethernet1"]) != 1 || got["Ethernet1"][0].ID != "7" || got["Ethernet1"][0].SystemName != "h" {
		t.Fatalf("entry: %v %+v", err, got)
	}
	// unrelated trees are ignored
	n = &gnmi.Notification{Update: []*gnmi.Update{{Path: mustElems(t, "/qos/state/shared-buffer-size"), Val: rawIETF(`"5"`)},
		{Path: mustElems(t, "/lldp/state/system-name"), Val: rawIETF(`"leaf0"`)}}}
	if got, err := LLDPNeighbors([]*gnmi.Notification{n}); err != nil || len(got) != 0 {
		t.Fatalf("unrelated: %v %+v", err, got)
	}
}

// What cannot be read marks its neighbour Malformed and is reported; it
// never panics.
func TestLLDPNeighborsMalformed(t *testing.T) {
	nb := "/lldp/interfaces/interface[name=Ethernet0]/neighbors/neighbor[id=1]"
	cases := []struct {
		name      string
		path, val string
		malformed bool // Ethernet0's neighbour is marked
		none      bool // no neighbour at all
	}{
		{"system-name not a string", nb + "/state/system-name", `42`, true, false},
		{"enabled not a bool", nb + "/capabilities/capability[name=MAC_BRIDGE]/state/enabled", `"garbage"`, true, false},
		{"capability without a name", nb + "/capabilities/capability/state/enabled", `true`, true, false},
		{"neighbour without an id", "/lldp/interfaces/interface[name=Ethernet0]/neighbors/neighbor/state/system-name", `"x"`, true, false},
		{"entry without its key", "/lldp/interfaces/interface[name=Ethernet0]/neighbors", `{"neighbor": [{"state": {"system-name": "x"}}]}`, true, false},
		{"entry not an object", "/lldp/interfaces/interface[name=Ethernet0]/neighbors", `{"neighbor": [3]}`, true, false},
		{"invalid JSON", nb, `{"state": `, true, false},
		{"invalid JSON above the neighbours", "/lldp/interfaces", `{"interface": [`, false, true},
		{"interface without a name", "/lldp/interfaces", `{"interface": [{"neighbors": {}}]}`, false, true},
		{"no interface key in the path", "/lldp/interfaces/interface/neighbors/neighbor[id=1]/state/port-id", `"p"`, false, true},
	}
	for _, c := range cases {
		n := &gnmi.Notification{Update: []*gnmi.Update{{Path: mustElems(t, c.path), Val: rawIETF(c.val)}}}
		got, err := LLDPNeighbors([]*gnmi.Notification{n})
		if err == nil {
			t.Errorf("%s: no error", c.name)
		}
		e0 := got["Ethernet0"]
		switch {
		case c.none && len(got) != 0:
			t.Errorf("%s: neighbours %+v", c.name, got)
		case c.malformed && (len(e0) != 1 || !e0[0].Malformed):
			t.Errorf("%s: %+v", c.name, got)
		}
	}
	// Nothing at all is not an error; a leaf without a value is.
	for _, ns := range [][]*gnmi.Notification{nil, {nil}, {{Update: []*gnmi.Update{nil, {}}}}} {
		if got, err := LLDPNeighbors(ns); err != nil || len(got) != 0 {
			t.Errorf("%v: %v %+v", ns, err, got)
		}
	}
	n0 := &gnmi.Notification{Update: []*gnmi.Update{{Path: mustElems(t, nb+"/state/system-name")}}}
	if got, err := LLDPNeighbors([]*gnmi.Notification{n0}); err == nil || len(got["Ethernet0"]) != 1 || !got["Ethernet0"][0].Malformed {
		t.Errorf("no value: %v %+v", err, got)
	}
	// A neighbour with only its id reported nothing about itself.
	n := &gnmi.Notification{Update: []*gnmi.Update{{Path: mustElems(t, nb+"/state/id"), Val: rawIETF(`"1"`)}}}
	got, err := LLDPNeighbors([]*gnmi.Notification{n})
	if err != nil || len(got["Ethernet0"]) != 1 || got["Ethernet0"][0].Reported() || got["Ethernet0"][0].Malformed {
		t.Fatalf("id only: %v %+v", err, got)
	}
}

func TestLLDPRequest(t *testing.T) {
	r := LLDPRequest(Target{Name: "leaf0", Dialect: OpenConfig})
	if r.GetPrefix().GetTarget() != "leaf0" || PathString(r.GetPath()[0].GetElem()) != "/lldp/interfaces/interface[name=*]/neighbors" ||
		r.GetEncoding() != gnmi.Encoding_JSON_IETF {
		t.Fatalf("openconfig %v", r)
	}
	r = LLDPRequest(Target{Name: "leaf0", Dialect: Sonic, Namespace: "leaf0"})
	if r.GetPrefix().GetTarget() != OCYang || PathString(r.GetPath()[0].GetElem()) != "/openconfig-lldp:lldp/interfaces" {
		t.Fatalf("sonic %v", r)
	}
}
