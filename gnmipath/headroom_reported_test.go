package gnmipath

import "testing"

// A headroom leaf of 0 is a headroom of 0 B, told apart from no leaf at
// all (the guard repairs the first, and leaves the second alone).
func TestHeadroomReportedTellsZeroFromAbsent(t *testing.T) {
	tree := Tree{}
	if headroomReported(OpenConfig, tree, nil, "Ethernet0", 3) {
		t.Fatal("no headroom leaf, yet reported")
	}
	tree[Leaf{Field: PFCHeadroom, Port: "Ethernet0", Index: 3}] = Val{U: 0}
	if !headroomReported(OpenConfig, tree, nil, "Ethernet0", 3) {
		t.Fatal("a headroom of 0 B taken as not reported")
	}
	if s, _ := resolveSetting(OpenConfig, tree, nil, "Ethernet0", 3); s.HeadroomBytes != 0 {
		t.Fatalf("headroom %d", s.HeadroomBytes)
	}
	pgs := map[string]*[8]pgBind{"Ethernet0": {}}
	pgs["Ethernet0"][3].profile = "pg_lossless"
	if headroomReported(Sonic, tree, pgs, "Ethernet0", 3) {
		t.Fatal("sonic: no xoff leaf, yet reported")
	}
	tree[Leaf{Field: BPXoff, Name: "pg_lossless"}] = Val{U: 0}
	if !headroomReported(Sonic, tree, pgs, "Ethernet0", 3) {
		t.Fatal("sonic: an xoff of 0 B taken as not reported")
	}
}
