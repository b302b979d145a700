package gnmiclient

import (
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// sonicSwitchAt is a Switch whose decoder holds a SONiC CONFIG_DB with
// one lossless queue: ECN 400KB/1.6MB/20%, headroom 80KB, alpha 1/8.
func sonicSwitchAt(t *testing.T, dev string) *Switch {
	t.Helper()
	d := gnmipath.Devices[dev]
	gt := gnmipath.Target{Name: "leaf0", Dialect: d.Dialect, Device: d}
	tree := gnmipath.Tree{
		{Field: gnmipath.QueueProfile, Port: "Ethernet0", Index: 3}: {S: "W3"},
		{Field: gnmipath.WREDMin, Name: "W3"}:                       {U: 400_000},
		{Field: gnmipath.WREDMax, Name: "W3"}:                       {U: 1_600_000},
		{Field: gnmipath.WREDProb, Name: "W3"}:                      {F: 20},
	}
	if d.Dialect == gnmipath.Sonic {
		tree[gnmipath.Leaf{Field: gnmipath.PGProfile, Port: "Ethernet0", PGs: "3"}] = gnmipath.Val{S: "pg3"}
		tree[gnmipath.Leaf{Field: gnmipath.BPXoff, Name: "pg3"}] = gnmipath.Val{U: 80_000}
		tree[gnmipath.Leaf{Field: gnmipath.BPXon, Name: "pg3"}] = gnmipath.Val{U: 18_432}
		tree[gnmipath.Leaf{Field: gnmipath.BPSize, Name: "pg3"}] = gnmipath.Val{U: 98_432}
		tree[gnmipath.Leaf{Field: gnmipath.BPPool, Name: "pg3"}] = gnmipath.Val{S: gnmipath.LosslessPool}
		tree[gnmipath.Leaf{Field: gnmipath.BPDynamicTh, Name: "pg3"}] = gnmipath.Val{I: -3}
	}
	dec := gnmipath.NewDecoder(gt)
	for _, n := range gnmipath.Notifications(d.Dialect, "leaf0", "", gnmipath.ConfigItemsFor(d, tree), 1, gnmi.Encoding_JSON_IETF) {
		if err := dec.Apply(n); err != nil {
			t.Fatal(err)
		}
	}
	return &Switch{cfg: config.Target{Name: "leaf0"}, codec: gt, dec: dec}
}

func setPathsOf(t *testing.T, s *Switch, st env.Setting) string {
	t.Helper()
	ecn, hr, _, err := s.requests(map[env.QueueKey]env.Setting{{Target: "leaf0", Port: "Ethernet0", Queue: 3}: st})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range append(ecn, hr...) {
		for _, u := range r.Update {
			out = append(out, gnmipath.Describe(r.Prefix, u.Path)+"="+string(u.GetVal().GetJsonIetfVal()))
		}
	}
	return strings.Join(out, " ")
}

// The agent writes dynamic_th only when alpha changes, and only on SONiC.
func TestRequestsAlpha(t *testing.T) {
	s := sonicSwitchAt(t, "sonic")
	if cur, err := s.dec.Setting("Ethernet0", 3); err != nil || cur.Alpha != 0.125 {
		t.Fatalf("current %+v %v", cur, err)
	}
	ecn := env.Setting{KminBytes: 500_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 80_000}
	same := ecn
	same.Alpha = 0.125
	if got := setPathsOf(t, s, same); strings.Contains(got, "BUFFER_PROFILE") || !strings.Contains(got, "green_min_threshold") {
		t.Fatalf("unchanged alpha and headroom: %s", got)
	}
	changed := ecn
	changed.Alpha = 0.5
	if got := setPathsOf(t, s, changed); !strings.Contains(got, `BUFFER_PROFILE/pg3/dynamic_th="-1"`) || strings.Contains(got, "xoff") {
		t.Fatalf("alpha 1/8→1/2: %s", got)
	}
	for _, dev := range []string{"ecntune", "openconfig", "arista-eos", "nokia-srl"} {
		o := sonicSwitchAt(t, dev)
		odd := ecn
		odd.Alpha = 0.3 // not even representable on SONiC: ignored here
		if got := setPathsOf(t, o, odd); strings.Contains(got, "dynamic") || strings.Contains(got, "alpha") || !strings.Contains(got, "min-threshold") {
			t.Fatalf("%s: %s", dev, got)
		}
	}
}
