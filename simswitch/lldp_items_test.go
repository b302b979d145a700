package simswitch

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/gnmipath"
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
	for _, it := range LLDPItems(gnmipath.OpenConfig, lldpSwitch()) {
		if it.DB != "" || it.Leaf.Field.IsConfig() {
			t.Fatalf("%+v", it)
		}
		v := "string:" + it.Val.GetStringVal()
		if b, ok := it.Val.GetValue().(*gnmi.TypedValue_BoolVal); ok {
			v = "bool:" + strconv.FormatBool(b.BoolVal)
		}
		got[gnmipath.PathString(it.Path.GetElem())] = v
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
	for _, it := range LLDPItems(gnmipath.Sonic, lldpSwitch()) {
		if it.DB != gnmipath.OCYang || it.Val.GetValue() == nil {
			t.Fatalf("sonic %+v", it)
		}
	}
	// Not leaves the QoS decoder knows: they are skipped, and Sets on them
	// are refused as unknown paths.
	for _, it := range LLDPItems(gnmipath.OpenConfig, lldpSwitch()) {
		if _, err := gnmipath.ParseLeaf(gnmipath.OpenConfig, "", it.Path.GetElem()); err == nil {
			t.Fatalf("ParseLeaf took %s", gnmipath.PathString(it.Path.GetElem()))
		}
	}
}

// LLDPItems, sent leaf by leaf in each encoding simswitch offers, read
// back by the agent's LLDPNeighbors.
func TestLLDPItemsRoundTrip(t *testing.T) {
	want := map[string][]gnmipath.LLDPNeighbor{
		"Ethernet0": {{Interface: "Ethernet0", ID: "1", SystemName: "host3", PortID: "eth0", ChassisID: SimChassisID("host3"),
			Capabilities: map[string]bool{"STATION_ONLY": true}}},
		"Ethernet1": {{Interface: "Ethernet1", ID: "1", SystemName: "spine1", PortID: "Ethernet6", ChassisID: SimChassisID("spine1"),
			Capabilities: map[string]bool{"MAC_BRIDGE": true, "ROUTER": true}}},
	}
	// leaf by leaf, in each encoding simswitch offers
	its := LLDPItems(gnmipath.OpenConfig, lldpSwitch())
	for _, enc := range []gnmi.Encoding{gnmi.Encoding_JSON_IETF, gnmi.Encoding_JSON, gnmi.Encoding_PROTO} {
		got, err := gnmipath.LLDPNeighbors(gnmipath.Notifications(gnmipath.OpenConfig, "leaf0", "", its, 1, enc))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: %v\n got %+v\nwant %+v", enc, err, got, want)
		}
	}
}
