package gnmipath

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

func TestAlphaDynamicTh(t *testing.T) {
	for th := int64(MinDynamicTh); th <= MaxDynamicTh; th++ {
		a := AlphaOf(th)
		back, err := DynamicThOf(a)
		if err != nil || back != th {
			t.Fatalf("th %d: alpha %g, back %d (%v)", th, a, back, err)
		}
	}
	if AlphaOf(-3) != 0.125 || AlphaOf(0) != 1 || AlphaOf(9) != 0 {
		t.Fatalf("AlphaOf: %g %g %g", AlphaOf(-3), AlphaOf(0), AlphaOf(9))
	}
	for _, a := range []float64{0.3, 3, 1.0 / 512, 512, -0.5, 0} {
		if _, err := DynamicThOf(a); err == nil || !strings.Contains(err.Error(), "power of two") {
			t.Fatalf("alpha %g: %v", a, err)
		}
	}
}

// A lossless PG's alpha is 2^dynamic_th of the buffer profile its headroom
// comes from; absent (a static profile) it is 0, unknown; a malformed value
// is an error naming profile and field, and leaves alpha unknown.
func TestDecodeDynamicTh(t *testing.T) {
	for _, c := range []struct {
		name, field string // field: the "dynamic_th" member of the profile's JSON, "" for none
		alpha       float64
		err         string
	}{
		{"1/8", `"dynamic_th": "-3", `, 0.125, ""},
		{"1", `"dynamic_th": "0", `, 1, ""},
		{"8", `"dynamic_th": "3", `, 8, ""},
		{"absent", ``, 0, ""},
		{"not an integer", `"dynamic_th": "half", `, 0, `dynamic_th of buffer profile pg_lossless_100000_5m_profile: value "half" is not an integer`},
		{"fraction", `"dynamic_th": "-1.5", `, 0, `buffer profile pg_lossless_100000_5m_profile`},
		{"out of range", `"dynamic_th": "9", `, 0, `dynamic_th 9 of buffer profile pg_lossless_100000_5m_profile is outside -8..8`},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, general := range []bool{false, true} {
				d := NewDecoder(Target{Name: "leaf0", Dialect: Sonic, Device: Devices["sonic"]}, 3)
				d.general = general
				notes := sonicConfig("pg_lossless_100000_5m_profile")
				notes[len(notes)-1] = sonicNote("CONFIG_DB", 1, "/BUFFER_PROFILE/pg_lossless_100000_5m_profile",
					`{`+c.field+`"pool": "ingress_lossless_pool", "size": "56368", "xoff": "37936", "xon": "18432"}`)
				// the field on its own path too, as an ON_CHANGE update sends it
				if c.field != "" {
					var m map[string]string
					if err := json.Unmarshal([]byte("{"+strings.TrimSuffix(c.field, ", ")+"}"), &m); err != nil {
						t.Fatal(err)
					}
					b, _ := json.Marshal(m["dynamic_th"])
					notes = append(notes, sonicNote("CONFIG_DB", 2, "/BUFFER_PROFILE/pg_lossless_100000_5m_profile/dynamic_th", string(b)))
				}
				var errs []string
				for _, n := range append(notes, sonicCounters(2_000_000_000, "200")...) {
					if err := d.Apply(n); err != nil {
						errs = append(errs, err.Error())
					}
				}
				if c.err == "" && len(errs) > 0 {
					t.Fatalf("general=%v: %v", general, errs)
				}
				if c.err != "" {
					if len(errs) != 2 || !strings.Contains(errs[0], c.err) || !strings.Contains(errs[0], "BUFFER_PROFILE/pg_lossless_100000_5m_profile/dynamic_th") {
						t.Fatalf("general=%v: errors %q, want each to contain %q", general, errs, c.err)
					}
				}
				s, err := d.Setting("Ethernet0", 3)
				if err != nil {
					t.Fatal(err)
				}
				if s.Alpha != c.alpha || s.HeadroomBytes != 37936 {
					t.Fatalf("general=%v: setting %+v, want alpha %g", general, s, c.alpha)
				}
				snap, _ := d.Snapshot()
				if len(snap.Queues) != 1 || snap.Queues[0].Setting != s {
					t.Fatalf("general=%v: snapshot %+v", general, snap.Queues)
				}
			}
		})
	}
}

// updates lists a Set's updates as "path=value".
func updates(req *gnmi.SetRequest) []string {
	var out []string
	for _, u := range req.GetUpdate() {
		out = append(out, PathString(u.GetPath().GetElem())+"="+string(u.GetVal().GetJsonIetfVal()))
	}
	return out
}

func sonicAlphaTree(shared bool) Tree {
	tree := Tree{}
	pgs := []string{"3"}
	if shared {
		pgs = []string{"3-4"}
	}
	for _, pg := range pgs {
		tree[Leaf{Field: PGProfile, Port: "Ethernet0", PGs: pg}] = Val{S: "pg_lossless"}
	}
	tree[Leaf{Field: QueueProfile, Port: "Ethernet0", Index: 3}] = Val{S: "W3"}
	tree[Leaf{Field: WREDMin, Name: "W3"}] = Val{U: 100_000}
	tree[Leaf{Field: WREDMax, Name: "W3"}] = Val{U: 400_000}
	tree[Leaf{Field: WREDProb, Name: "W3"}] = Val{F: 5}
	tree[Leaf{Field: BPXoff, Name: "pg_lossless"}] = Val{U: 80_000}
	tree[Leaf{Field: BPXon, Name: "pg_lossless"}] = Val{U: 18_432}
	tree[Leaf{Field: BPSize, Name: "pg_lossless"}] = Val{U: 98_432}
	tree[Leaf{Field: BPPool, Name: "pg_lossless"}] = Val{S: LosslessPool}
	tree[Leaf{Field: BPDynamicTh, Name: "pg_lossless"}] = Val{I: -3}
	return tree
}

// An alpha change on SONiC writes dynamic_th = log2 alpha into the PG's
// buffer profile, where the headroom goes, and nothing else of it; the
// openconfig-family dialects have no alpha leaf and ignore alpha.
func TestSetRequestAlpha(t *testing.T) {
	key := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	ecn := env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.05}
	tg := Target{Name: "leaf0", Dialect: Sonic}
	b := bindingOf(Sonic, sonicAlphaTree(false), "Ethernet0", 3)

	s := ecn
	s.Alpha = 0.5
	req, err := SetRequest(tg, key, s, b)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(updates(req), " ")
	if !strings.Contains(got, `/BUFFER_PROFILE/pg_lossless/dynamic_th="-1"`) || strings.Contains(got, "xoff") || strings.Contains(got, "size") {
		t.Fatalf("alpha only: %s", got)
	}

	s.HeadroomBytes = 90_000
	req, err = SetRequest(tg, key, s, b)
	if err != nil {
		t.Fatal(err)
	}
	got = strings.Join(updates(req), " ")
	for _, w := range []string{`/BUFFER_PROFILE/pg_lossless/dynamic_th="-1"`, `/BUFFER_PROFILE/pg_lossless/xoff="90000"`, `/BUFFER_PROFILE/pg_lossless/size="108432"`} {
		if !strings.Contains(got, w) {
			t.Fatalf("alpha and headroom: %s lacks %s", got, w)
		}
	}

	// Unchanged alpha (0 in the setting to apply): the profile is left alone.
	req, err = SetRequest(tg, key, ecn, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(updates(req), " "); strings.Contains(got, "BUFFER_PROFILE") {
		t.Fatalf("no alpha, no headroom: %s", got)
	}

	// Not representable: a clear error, nothing built.
	s = ecn
	s.Alpha = 0.3
	if _, err := SetRequest(tg, key, s, b); err == nil || !strings.Contains(err.Error(), "alpha 0.3 is not a power of two") {
		t.Fatalf("alpha 0.3: %v", err)
	}

	// A shared profile: a profile of its own with every field copied,
	// only dynamic_th changed; the applied tree reads back alpha 2 for
	// the queue, 1/8 for its neighbour.
	tree := sonicAlphaTree(true)
	s = ecn
	s.Alpha = 2
	req, err = SetRequest(tg, key, s, bindingOf(Sonic, tree, "Ethernet0", 3))
	if err != nil {
		t.Fatal(err)
	}
	if err := ApplySet(Sonic, tree, serverOps(t, Sonic, "", req)); err != nil {
		t.Fatal(err)
	}
	own := OwnBufferProfileName("Ethernet0", 3)
	if v := tree[Leaf{Field: BPDynamicTh, Name: own}]; v.I != 1 {
		t.Fatalf("own profile dynamic_th %d", v.I)
	}
	if tree[Leaf{Field: BPXoff, Name: own}].U != 80_000 || tree[Leaf{Field: BPSize, Name: own}].U != 98_432 ||
		tree[Leaf{Field: BPXon, Name: own}].U != 18_432 || tree[Leaf{Field: BPPool, Name: own}].S != LosslessPool {
		t.Fatalf("own profile lacks the copied fields")
	}
	if r, _ := Resolve(Sonic, tree, "Ethernet0", 3); r.Alpha != 2 || r.HeadroomBytes != 80_000 {
		t.Fatalf("queue 3 reads %+v", r)
	}
	if r, _ := Resolve(Sonic, tree, "Ethernet0", 4); r.Alpha != 0.125 {
		t.Fatalf("queue 4 reads %+v", r)
	}

	// The other dialects: no alpha path, no error, whatever the alpha.
	for _, name := range []string{"ecntune", "openconfig", "arista-eos", "nokia-srl"} {
		dev := Devices[name]
		if dev == nil {
			t.Fatalf("no device %s", name)
		}
		tg := Target{Name: "leaf0", Dialect: dev.Dialect, Device: dev}
		s := ecn
		s.Alpha, s.HeadroomBytes = 0.3, 90_000
		req, err := SetRequest(tg, key, s, Binding{ECNProfile: "W3"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		reqs := []*gnmi.SetRequest{req}
		if h := HeadroomRequest(tg, key, s.HeadroomBytes); h != nil {
			reqs = append(reqs, h)
		}
		for _, r := range reqs {
			for _, u := range r.GetUpdate() {
				if p := PathString(u.GetPath().GetElem()); strings.Contains(p, "alpha") || strings.Contains(p, "dynamic") {
					t.Fatalf("%s: alpha written at %s", name, p)
				}
			}
		}
	}
}

// Two PGs bound through one BUFFER_PG range (stock SONiC's "3-4") both
// change headroom in one call: the range is split once, and both PGs end
// bound to their own profiles with their own headroom (before, the second
// request split the range again from the bindings before the first Set,
// binding PG 3 back to the shared profile: both Sets answered OK, PG 3's
// read-back mismatched).
func TestSetsSplitARangeOnce(t *testing.T) {
	tree := sonicAlphaTree(true)
	tree[Leaf{Field: QueueProfile, Port: "Ethernet0", Index: 4}] = Val{S: "W4"}
	tree[Leaf{Field: WREDMin, Name: "W4"}] = Val{U: 100_000}
	tree[Leaf{Field: WREDMax, Name: "W4"}] = Val{U: 400_000}
	tree[Leaf{Field: WREDProb, Name: "W4"}] = Val{F: 5}
	tg := Target{Name: "leaf0", Dialect: Sonic}
	k3 := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	k4 := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 4}
	state := func(k env.QueueKey) QueueState {
		s, _ := Resolve(Sonic, tree, k.Port, k.Queue)
		return QueueState{Binding: bindingOf(Sonic, tree, k.Port, k.Queue), Setting: s, Known: true}
	}
	s3 := env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.05, HeadroomBytes: 60_000}
	s4 := env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.05, HeadroomBytes: 70_000}
	ecn, _, nt, err := Sets(tg, map[env.QueueKey]env.Setting{k3: s3, k4: s4}, state)
	if err != nil || len(nt) != 0 {
		t.Fatal(err, nt)
	}
	deletes := 0
	for _, r := range ecn {
		deletes += len(r.Delete)
		if err := ApplySet(Sonic, tree, serverOps(t, Sonic, "", r)); err != nil {
			t.Fatal(err)
		}
	}
	r3, _ := Resolve(Sonic, tree, "Ethernet0", 3)
	r4, _ := Resolve(Sonic, tree, "Ethernet0", 4)
	if r3.HeadroomBytes != 60_000 || r4.HeadroomBytes != 70_000 || deletes != 1 {
		t.Fatalf("PG 3 headroom %d (want 60000), PG 4 %d (want 70000); %d deletes of the range (want 1)", r3.HeadroomBytes, r4.HeadroomBytes, deletes)
	}
	if _, ok := tree[Leaf{Field: PGProfile, Port: "Ethernet0", PGs: "3-4"}]; ok {
		t.Fatal("the range entry is still there")
	}
}
