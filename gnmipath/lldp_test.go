package gnmipath

import (
	"reflect"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"
)

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
// (simswitch; tested there), as one JSON_IETF container with lists (most switches), or
// wrapped in the container's own module-prefixed name (sonic-gnmi).
func TestLLDPNeighborsShapes(t *testing.T) {
	want := map[string][]LLDPNeighbor{
		"Ethernet0": {{Interface: "Ethernet0", ID: "1", SystemName: "host3", PortID: "eth0", ChassisID: "02:00:00:00:00:03",
			Capabilities: map[string]bool{"STATION_ONLY": true}}},
		"Ethernet1": {{Interface: "Ethernet1", ID: "1", SystemName: "spine1", PortID: "Ethernet6", ChassisID: "02:00:00:00:00:01",
			Capabilities: map[string]bool{"MAC_BRIDGE": true, "ROUTER": true}}},
	}
	// one container with RFC 7951 lists, module-prefixed identities
	blob := `{"interface": [
	  {"name": "Ethernet0", "config": {"name": "Ethernet0", "enabled": true}, "state": {"counters": {"frame-in": "12"}},
	   "neighbors": {"neighbor": [{"id": "1", "state": {"id": "1", "system-name": "host3", "port-id": "eth0",
	     "chassis-id": "` + "02:00:00:00:00:03" + `", "ttl": 120},
	     "capabilities": {"capability": [{"name": "openconfig-lldp-types:STATION_ONLY",
	       "state": {"name": "openconfig-lldp-types:STATION_ONLY", "enabled": true}}]}}]}},
	  {"name": "Ethernet1", "neighbors": {"neighbor": [{"id": "1", "state": {"system-name": "spine1", "port-id": "Ethernet6",
	     "chassis-id": "` + "02:00:00:00:00:01" + `"},
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
