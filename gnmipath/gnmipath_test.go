package gnmipath

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

var lossless = []int{3, 4}

// testEpoch stamps the test notifications (any Unix time will do).
const testEpoch int64 = 1_767_225_600_000_000_000

// testSwitch is a switch of nports ports (100G and 400G in turn) with
// distinct counters and settings on its lossless queues, as it would
// export them at 3 ms.
func testSwitch(nports int) env.Snapshot {
	s := env.Snapshot{Target: "leaf0", TimeNs: 3_000_000}
	for p := 0; p < nports; p++ {
		rate := 100e9
		if p%2 == 1 {
			rate = 400e9
		}
		for _, q := range lossless {
			b := uint64(p*1000 + q*100)
			s.Queues = append(s.Queues, env.QueueSample{Key: env.QueueKey{Target: "leaf0", Port: "Ethernet" + itoa(p*4), Queue: q}, RateBps: rate,
				TxPkts: b + 1, TxBytes: (b + 1) * 1048, MarkedPkts: b + 2, MarkedBytes: (b + 2) * 1048,
				DropPkts: b + 3, DropBytes: (b + 3) * 1048, CurQueueBytes: int64(b) + 7, MaxQueueBytes: int64(b) + 900, AvgQueueBytes: float64(b) + 123.25,
				PauseTx: b + 10, PauseRx: b + 20, PausedNs: b*1000 + 4567,
				Setting:   env.Setting{KminBytes: 400_000 + int64(p), KmaxBytes: 1_600_000 + int64(q), Pmax: 0.2, HeadroomBytes: 90_000 + int64(p)},
				XoffBytes: 2_000_000 + int64(q), MinHeadroomBytes: 45_000, BufferBytes: 32_000_000, HeadroomReported: true})
		}
	}
	return s
}

// testAlpha is every PG's dynamic threshold α.
func testAlpha(env.QueueKey) float64 { return 0.125 }

func itoa(i int) string { return env.QueueKey{Queue: i}.String()[3:] }

// expected is what a dialect carries of each queue of s.
func expected(d Dialect, s env.Snapshot) []env.QueueSample {
	out := append([]env.QueueSample(nil), s.Queues...)
	for i := range out {
		q := &out[i]
		if d == OpenConfig {
			q.AvgQueueBytes = math.Round(q.AvgQueueBytes) // uint64 in the model
		} else {
			q.PausedNs = q.PausedNs / 1000 * 1000 // microseconds
			q.XoffBytes, q.MinHeadroomBytes = 0, 0
			q.Missing = env.TelXoff | env.TelHeadroom // buffer profiles, not state
			q.Setting.Alpha = testAlpha(q.Key)        // dynamic_th of its buffer profile
		}
	}
	return out
}

func encodeAll(d Dialect, ns string, s env.Snapshot, enc gnmi.Encoding) []*gnmi.Notification {
	e := NewEncoder(d, &s)
	items := e.Encode(nil, &s)
	items = append(items, ConfigItems(d, InitialConfig(d, &s, 3072, testAlpha))...)
	return Notifications(d, s.Target, ns, items, testEpoch+s.TimeNs, enc)
}

func TestRoundTrip(t *testing.T) {
	for _, d := range []Dialect{OpenConfig, Sonic} {
		for _, enc := range []gnmi.Encoding{gnmi.Encoding_PROTO, gnmi.Encoding_JSON_IETF, gnmi.Encoding_JSON} {
			for _, ns := range []string{"", "leaf0"} {
				if d == OpenConfig && ns != "" {
					continue
				}
				snap0 := testSwitch(3)
				dec := NewDecoder(Target{Name: "leaf0", Dialect: d, Namespace: ns}, lossless...)
				for _, n := range encodeAll(d, ns, snap0, enc) {
					if err := dec.Apply(n); err != nil {
						t.Fatalf("%s/%v: apply: %v", d, enc, err)
					}
				}
				snap, inc := dec.Snapshot()
				if len(inc) > 0 {
					t.Fatalf("%s/%v: incomplete: %v", d, enc, inc)
				}
				if snap.TimeNs != testEpoch+3_000_000 || snap.Target != "leaf0" {
					t.Fatalf("%s: time %d target %q", d, snap.TimeNs, snap.Target)
				}
				want := expected(d, snap0)
				if !reflect.DeepEqual(snap.Queues, want) {
					t.Fatalf("%s/%v ns=%q: round trip differs:\n got %+v\nwant %+v", d, enc, ns, snap.Queues[0], want[0])
				}
			}
		}
	}
}

func setVal(n *gnmi.Notification, leafName string, v *gnmi.TypedValue) bool {
	for _, u := range n.Update {
		el := u.Path.Elem
		if el[len(el)-1].Name == leafName {
			u.Val = v
			return true
		}
	}
	return false
}

func TestMalformedValues(t *testing.T) {
	cases := []struct {
		name string
		v    *gnmi.TypedValue
		msg  string
	}{
		{"string", strVal("lots"), "not a non-negative integer"},
		{"negative int", &gnmi.TypedValue{Value: &gnmi.TypedValue_IntVal{IntVal: -5}}, "negative"},
		{"negative json", &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`"-5"`)}}, "negative"},
		{"bool", boolVal(true), "not a non-negative integer"},
		{"bad json", &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: []byte(`{"x`)}}, "not valid JSON"},
		{"empty", &gnmi.TypedValue{}, "empty"},
		{"fraction", &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: 1.5}}, "not a non-negative integer"},
	}
	for _, d := range []Dialect{OpenConfig, Sonic} {
		leaf := "transmit-octets"
		if d == Sonic {
			leaf = "SAI_QUEUE_STAT_BYTES"
		}
		for _, c := range cases {
			snap := testSwitch(1)
			ns := encodeAll(d, "", snap, gnmi.Encoding_PROTO)
			dec := NewDecoder(Target{Name: "leaf0", Dialect: d}, lossless...)
			// first a good dump, then a sample where one queue's byte counter is malformed
			for _, n := range ns {
				if err := dec.Apply(n); err != nil {
					t.Fatal(err)
				}
			}
			bad := encodeAll(d, "", snap, gnmi.Encoding_PROTO)
			hit := false
			var err error
			for _, n := range bad {
				if setVal(n, leaf, c.v) {
					hit = true
				}
				err = errors.Join(err, dec.Apply(n))
			}
			if !hit {
				t.Fatalf("%s: leaf %s not found", d, leaf)
			}
			if err == nil || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), leaf) {
				t.Fatalf("%s/%s: error %v, want one naming %s and saying %q", d, c.name, err, leaf, c.msg)
			}
			snap, inc := dec.Snapshot()
			if len(snap.Queues) != 1 || len(inc) != 1 || !strings.Contains(inc[0], "tx bytes") {
				t.Fatalf("%s/%s: want the malformed queue left out (1 of 2 kept), got %d queues, incomplete %v", d, c.name, len(snap.Queues), inc)
			}
			if snap.Queues[0].Key.Queue != 4 || snap.Queues[0].TxBytes == 0 {
				t.Fatalf("%s/%s: kept wrong queue %+v", d, c.name, snap.Queues[0].Key)
			}
		}
	}
}

func TestDeletes(t *testing.T) {
	snap := testSwitch(2)
	dec := NewDecoder(Target{Name: "leaf0", Dialect: OpenConfig})
	for _, n := range encodeAll(OpenConfig, "", snap, gnmi.Encoding_PROTO) {
		if err := dec.Apply(n); err != nil {
			t.Fatal(err)
		}
	}
	if s, _ := dec.Snapshot(); len(s.Queues) != 4 {
		t.Fatalf("want 4 queues, got %d", len(s.Queues))
	}
	del := &gnmi.Notification{Timestamp: 5, Prefix: &gnmi.Path{Target: "leaf0"}, Delete: []*gnmi.Path{
		{Elem: ocQueueBase("Ethernet0", 3)},
		{Elem: []*gnmi.PathElem{elem("qos"), elem("queue-management-profiles"), elem("queue-management-profile", "name", ECNProfileName("Ethernet4", 4))}},
	}}
	if err := dec.Apply(del); err != nil {
		t.Fatal(err)
	}
	s, inc := dec.Snapshot()
	if len(s.Queues) != 2 || len(inc) != 1 || !strings.Contains(inc[0], "Ethernet4/q4") || !strings.Contains(inc[0], "min threshold") {
		t.Fatalf("after deletes: %d queues, incomplete %v", len(s.Queues), inc)
	}
	// A full re-snapshot (reconnect) restores everything.
	for _, n := range encodeAll(OpenConfig, "", snap, gnmi.Encoding_JSON_IETF) {
		if err := dec.Apply(n); err != nil {
			t.Fatal(err)
		}
	}
	if s, inc := dec.Snapshot(); len(s.Queues) != 4 || len(inc) != 0 {
		t.Fatalf("after re-snapshot: %d queues, %v", len(s.Queues), inc)
	}
}

// serverOps turns a SetRequest into SetOps the way simswitch routes it.
func serverOps(t *testing.T, d Dialect, ns string, req *gnmi.SetRequest) []SetOp {
	var ops []SetOp
	add := func(op string, p *gnmi.Path, v *gnmi.TypedValue) {
		db, el, err := Route(d, ns, "leaf0", req.GetPrefix().GetTarget(), originOf(req.GetPrefix(), p), FullElems(req.GetPrefix(), p))
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, SetOp{Op: op, DB: db, Elems: el, Val: v})
	}
	for _, p := range req.Delete {
		add("delete", p, nil)
	}
	for _, u := range req.Replace {
		add("replace", u.Path, u.Val)
	}
	for _, u := range req.Update {
		add("update", u.Path, u.Val)
	}
	return ops
}

func getResponse(d Dialect, ns string, tree Tree) *gnmi.GetResponse {
	return &gnmi.GetResponse{Notification: Notifications(d, "leaf0", ns, ConfigItems(d, tree), 1, gnmi.Encoding_JSON_IETF)}
}

func TestSetRoundTrip(t *testing.T) {
	snap := testSwitch(2)
	set := env.Setting{KminBytes: 150_000, KmaxBytes: 3_000_000, Pmax: 0.07, HeadroomBytes: 123_456, Alpha: 0.5}
	for _, d := range []Dialect{OpenConfig, Sonic} {
		want := set
		if d != Sonic {
			want.Alpha = 0 // no alpha leaf: ignored, read back as unknown
		}
		for _, ns := range []string{"", "leaf0"} {
			tg := Target{Name: "leaf0", Dialect: d, Namespace: ns}
			tree := InitialConfig(d, &snap, 3072, testAlpha)
			key := env.QueueKey{Target: "leaf0", Port: "Ethernet4", Queue: 3}
			dec := NewDecoder(tg)
			for _, n := range getResponse(d, ns, tree).Notification {
				if err := dec.Apply(n); err != nil {
					t.Fatal(err)
				}
			}
			before, err := dec.Setting("Ethernet4", 4)
			if err != nil {
				t.Fatal(err)
			}
			// the queue keeps a profile only it uses (updated in place) and
			// gets its own in place of one others share
			b := dec.Binding("Ethernet4", 3)
			wantName := b.ECNProfile
			if b.ECNShared {
				wantName = OwnProfileName("Ethernet4", 3)
			}
			req, err := SetRequest(tg, key, set, b)
			if err != nil {
				t.Fatal(err)
			}
			if err := ApplySet(d, tree, serverOps(t, d, ns, req)); err != nil {
				t.Fatalf("%s: apply: %v", d, err)
			}
			if h := HeadroomRequest(tg, key, want.HeadroomBytes); h != nil {
				if err := ApplySet(d, tree, serverOps(t, d, ns, h)); err != nil {
					t.Fatalf("%s: apply headroom: %v", d, err)
				}
			}
			got, err := ParseSetting(tg, key, getResponse(d, ns, tree))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%s: read back %+v, want %+v", d, got, want)
			}
			if other, _ := Resolve(d, tree, "Ethernet4", 4); other != before {
				t.Fatalf("%s: queue 4 changed: %+v -> %+v", d, before, other)
			}
			if n := tree[Leaf{Field: QueueProfile, Port: "Ethernet4", Index: 3}].S; n != wantName {
				t.Fatalf("%s: queue bound to %s, want %s", d, n, wantName)
			}
		}
	}
}

// A switch whose queues share one profile (SONiC's AZURE_LOSSLESS, one
// buffer profile on BUFFER_PG|port|3-4) gets a per-queue profile and the
// other queues keep their setting.
func TestSetSharedProfiles(t *testing.T) {
	for _, d := range []Dialect{OpenConfig, Sonic} {
		tree := Tree{}
		for _, p := range []string{"Ethernet0", "Ethernet4"} {
			for _, q := range lossless {
				tree[Leaf{Field: QueueProfile, Port: p, Index: q}] = Val{S: "AZURE_LOSSLESS"}
			}
			tree[Leaf{Field: PGProfile, Port: p, PGs: "3-4"}] = Val{S: "pg_lossless_100000_5m_profile"}
		}
		tree[Leaf{Field: WREDMin, Name: "AZURE_LOSSLESS"}] = Val{U: 1048576}
		tree[Leaf{Field: WREDMax, Name: "AZURE_LOSSLESS"}] = Val{U: 2097152}
		tree[Leaf{Field: WREDProb, Name: "AZURE_LOSSLESS"}] = Val{F: 5}
		bp := "pg_lossless_100000_5m_profile"
		tree[Leaf{Field: BPXoff, Name: bp}] = Val{U: 80000}
		tree[Leaf{Field: BPXon, Name: bp}] = Val{U: 18432}
		tree[Leaf{Field: BPSize, Name: bp}] = Val{U: 98432}
		tree[Leaf{Field: BPPool, Name: bp}] = Val{S: LosslessPool}
		tree[Leaf{Field: BPDynamicTh, Name: bp}] = Val{I: -2}
		for p := range []string{"Ethernet0", "Ethernet4"} {
			tree[Leaf{Field: PFCHeadroom, Port: []string{"Ethernet0", "Ethernet4"}[p], Index: 3}] = Val{U: 80000}
			tree[Leaf{Field: PFCHeadroom, Port: []string{"Ethernet0", "Ethernet4"}[p], Index: 4}] = Val{U: 80000}
		}
		tg := Target{Name: "leaf0", Dialect: d}
		dec := NewDecoder(tg)
		for _, n := range getResponse(d, "", tree).Notification {
			if err := dec.Apply(n); err != nil {
				t.Fatal(err)
			}
		}
		b := dec.Binding("Ethernet0", 3)
		if !b.ECNShared || b.ECNProfile != "AZURE_LOSSLESS" || (d == Sonic && (!b.BufferShared || b.PGKey != "3-4")) {
			t.Fatalf("%s: binding %+v", d, b)
		}
		key := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
		want := env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.3, HeadroomBytes: 95_000}
		req, err := SetRequest(tg, key, want, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := ApplySet(d, tree, serverOps(t, d, "", req)); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if h := HeadroomRequest(tg, key, want.HeadroomBytes); h != nil {
			// openconfig: headroom is a Set of its own
			if err := ApplySet(d, tree, serverOps(t, d, "", h)); err != nil {
				t.Fatalf("%s headroom: %v", d, err)
			}
		} else if d != Sonic {
			t.Fatalf("%s: the idealised device has a settable headroom leaf, but HeadroomRequest made none", d)
		}
		if d == Sonic {
			want.Alpha = 0.25 // dynamic_th -2, copied into the new profile
		}
		if got, _ := Resolve(d, tree, "Ethernet0", 3); got != want {
			t.Fatalf("%s: got %+v want %+v", d, got, want)
		}
		if tree[Leaf{Field: QueueProfile, Port: "Ethernet0", Index: 3}].S != OwnProfileName("Ethernet0", 3) {
			t.Fatalf("%s: queue not rebound", d)
		}
		other := env.Setting{KminBytes: 1048576, KmaxBytes: 2097152, Pmax: 0.05, HeadroomBytes: 80000}
		if d == Sonic {
			other.Alpha = 0.25
		}
		for _, k := range []struct {
			p string
			q int
		}{{"Ethernet0", 4}, {"Ethernet4", 3}, {"Ethernet4", 4}} {
			if got, m := Resolve(d, tree, k.p, k.q); got != other || len(m) > 0 {
				t.Fatalf("%s: %s q%d changed to %+v (%v)", d, k.p, k.q, got, m)
			}
		}
		if d == Sonic {
			if _, ok := tree[Leaf{Field: PGProfile, Port: "Ethernet0", PGs: "3-4"}]; ok {
				t.Fatal("range key should be split")
			}
			if tree[Leaf{Field: BPSize, Name: OwnBufferProfileName("Ethernet0", 3)}].U != 18432+95000 ||
				tree[Leaf{Field: BPDynamicTh, Name: OwnBufferProfileName("Ethernet0", 3)}].I != -2 {
				t.Fatal("new buffer profile lacks copied fields")
			}
		}
	}
}

func TestApplySetRejects(t *testing.T) {
	snap := testSwitch(1)
	cases := []struct {
		d       Dialect
		db      string
		path    string
		val     *gnmi.TypedValue
		unknown bool
		msg     string
	}{
		{OpenConfig, "", "/qos/queue-management-profiles/queue-management-profile[name=x]/wred/uniform/config/max-drop-probability-percent", uintVal(150), false, "outside [0, 100]"},
		{OpenConfig, "", "/qos/interfaces/interface[interface-id=Ethernet0]/output/queues/queue[name=3]/state/transmit-pkts", uintVal(1), false, "read-only"},
		{OpenConfig, "", "/qos/bogus/leaf", uintVal(1), true, "not an ecntune openconfig leaf"},
		{OpenConfig, "", "/qos/queue-management-profiles/queue-management-profile[name=x]/config/name", strVal("y"), false, `name "y" differs from the list key "x"`},
		{OpenConfig, "", "/qos/queue-management-profiles/queue-management-profile[name=x]/wred/uniform/config/min-threshold", strVal("-3"), false, "negative"},
		{Sonic, ConfigDB, "/WRED_PROFILE/x/green_max_threshold", strVal("ten"), false, "not a non-negative integer"},
		{Sonic, ConfigDB, "/WRED_PROFILE/x/ecn", strVal("ecn_bogus"), false, "ecn mode"},
		{Sonic, CountersDB, "/COUNTERS/Ethernet0:3/SAI_QUEUE_STAT_PACKETS", strVal("1"), false, "read-only"},
		{Sonic, ConfigDB, "/NOPE/x/y", strVal("1"), true, "not an ecntune CONFIG_DB leaf"},
	}
	for _, c := range cases {
		tree := InitialConfig(c.d, &snap, 0, testAlpha)
		before := tree.Clone()
		_, el, _ := ParsePath(c.path)
		err := ApplySet(c.d, tree.Clone(), []SetOp{{Op: "update", DB: c.db, Elems: el, Val: c.val}})
		var se *SetError
		if !errors.As(err, &se) || se.Unknown != c.unknown || !strings.Contains(se.Error(), c.msg) || !strings.Contains(se.Path, el[len(el)-1].Name) {
			t.Fatalf("%s %s: got %v, want error saying %q", c.d, c.path, err, c.msg)
		}
		if !reflect.DeepEqual(tree, before) {
			t.Fatal("tree changed")
		}
	}
	if _, err := SetRequest(Target{Name: "x", Dialect: OpenConfig}, env.QueueKey{Target: "x", Port: "Ethernet0", Queue: 3}, env.Setting{KminBytes: 5, KmaxBytes: 4, Pmax: 0.1}, Binding{}); err == nil || !strings.Contains(err.Error(), "kmin 5 B is above kmax 4 B") {
		t.Fatalf("SetRequest validation: %v", err)
	}
}

func TestPathHelpers(t *testing.T) {
	o, el, err := ParsePath("sonic-db:/CONFIG_DB/localhost/WRED_PROFILE")
	if err != nil || o != "sonic-db" || len(el) != 3 {
		t.Fatalf("%q %v %v", o, el, err)
	}
	_, leaf, _ := ParsePath("/qos/interfaces/interface[interface-id=Ethernet8]/output/queues/queue[name=3]/state/transmit-pkts")
	for pat, want := range map[string]bool{
		"/qos/interfaces/interface[interface-id=*]/output":  true,
		"/qos/interfaces/interface[interface-id=Ethernet0]": false,
		"/qos/.../state": true,
		"/qos/interfaces/interface/output/queues/queue[name=3]/state/transmit-pkts":  true,
		"/qos/interfaces/interface/output/queues/queue[name=4]":                      false,
		"/qos/interfaces/interface/output/queues/queue/state/transmit-pkts/too-deep": false,
		"/*/interfaces": true,
	} {
		_, p, err := ParsePath(pat)
		if err != nil {
			t.Fatal(err)
		}
		if Match(p, leaf) != want {
			t.Errorf("Match(%s) = %v, want %v", pat, !want, want)
		}
	}
	if _, _, err := ParsePath("/a[b/c"); err == nil {
		t.Fatal("unterminated key accepted")
	}
	if v, err := parseOCSpeed("openconfig-if-ethernet:SPEED_400GB"); err != nil || v != 400e9 {
		t.Fatal(v, err)
	}
	if _, err := parseOCSpeed("SPEED_UNKNOWN"); err == nil {
		t.Fatal("SPEED_UNKNOWN accepted")
	}
	if s := formatOCSpeed(25e9); s != "openconfig-if-ethernet:SPEED_25GB" {
		t.Fatal(s)
	}
	if q := Quantize(env.Setting{Pmax: 0.004}); q.Pmax != 0.01 {
		t.Fatal(q)
	}
}

func BenchmarkEncode100x32x2(b *testing.B) {
	snap := testSwitch(32)
	encs := make([]*Encoder, 100)
	for i := range encs {
		encs[i] = NewEncoder(OpenConfig, &snap)
	}
	var items []Item
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := 0
		for _, e := range encs {
			items = e.Encode(items[:0], &snap)
			n += len(Notifications(OpenConfig, snap.Target, "", items, 1, gnmi.Encoding_PROTO)[0].Update)
		}
		if n != 100*(1+32*(1+2*15)) {
			b.Fatalf("%d updates", n)
		}
	}
}

func BenchmarkEncode100x32x2Sonic(b *testing.B) {
	snap := testSwitch(32)
	encs := make([]*Encoder, 100)
	for i := range encs {
		encs[i] = NewEncoder(Sonic, &snap)
	}
	var items []Item
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, e := range encs {
			items = e.Encode(items[:0], &snap)
			_ = Notifications(Sonic, snap.Target, "", items, 1, gnmi.Encoding_JSON_IETF)
		}
	}
}

// Thresholds that are well-formed leaf by leaf but out of order together
// (max 1 KB under min 400 KB: a garbled value, or a switch reporting one
// in other units) are malformed telemetry: the queue is left out of the
// snapshot, named with both values, so that the agent neither decides
// from it nor restores it as a "last good" setting (it planned a tune
// from 400KB/1KB/20% and wrote it to every queue of the switch).
func TestThresholdsOutOfOrderLeftOut(t *testing.T) {
	for _, d := range []Dialect{OpenConfig, Sonic} {
		snap := testSwitch(1)
		snap.Queues[0].Setting.KmaxBytes = 1000
		dec := NewDecoder(Target{Name: "leaf0", Dialect: d}, lossless...)
		for _, n := range encodeAll(d, "", snap, gnmi.Encoding_PROTO) {
			if err := dec.Apply(n); err != nil {
				t.Fatal(err)
			}
		}
		got, inc := dec.Snapshot()
		bad := snap.Queues[0].Key
		if len(got.Queues) != len(snap.Queues)-1 || len(inc) != 1 || !strings.Contains(inc[0], bad.Port+"/q"+itoa(bad.Queue)) ||
			!strings.Contains(inc[0], "min threshold 400000 B above max threshold 1000 B") {
			t.Fatalf("%s: %d of %d queues kept, incomplete %q", d, len(got.Queues), len(snap.Queues), inc)
		}
		for _, q := range got.Queues {
			if q.Key == bad {
				t.Fatalf("%s: %v kept", d, bad)
			}
		}
		if _, err := dec.Setting(bad.Port, bad.Queue); err == nil || !strings.Contains(err.Error(), "malformed setting") {
			t.Fatalf("%s: Setting: %v", d, err)
		}
	}
}

// A drop probability is a whole percent in both models (openconfig's
// uint8, SONiC's 0..100): 0.3 was taken by the simulated switch, run as
// 0.3% and read back as 0, which the agent's decoder refused.
func TestDropProbabilityWholePercent(t *testing.T) {
	for _, c := range []struct {
		d   Dialect
		val *gnmi.TypedValue
		ok  bool
	}{
		{OpenConfig, &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`0.3`)}}, false},
		{OpenConfig, &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`12.5`)}}, false},
		{OpenConfig, &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`12`)}}, true},
		{OpenConfig, &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 5}}, true},
		{Sonic, &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "0.5"}}, false},
		{Sonic, &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "5"}}, true},
	} {
		_, err := DecodeVal(c.d, Leaf{Field: WREDProb, Name: "p"}, c.val)
		if (err == nil) != c.ok || (err != nil && !strings.Contains(err.Error(), "not a whole percent")) {
			t.Errorf("%s %v: %v", c.d, c.val, err)
		}
	}
}
