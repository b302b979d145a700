package gnmipath

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/protobuf/proto"

	"github.com/ecntune/ecntune/env"
)

// probeLeaves has one leaf of every value kind and range check.
var probeLeaves = []Leaf{
	{Field: TxBytes, Port: "Ethernet0", Index: 3},
	{Field: AvgQueue, Port: "Ethernet0", Index: 3},
	{Field: WREDProb, Name: "p"},
	{Field: PortSpeed, Port: "Ethernet0"},
	{Field: QueueProfile, Port: "Ethernet0", Index: 3},
	{Field: PGProfile, Port: "Ethernet0", PGs: "3"},
	{Field: WREDName, Name: "p"},
	{Field: WREDECNMode, Name: "p"},
	{Field: WREDEnableECN, Name: "p"},
	{Field: BPDynamicTh, Name: "p"},
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// checkScalarFastPath decodes raw with the fast path (when it takes it) and
// with encoding/json, and requires the same value or error for every leaf
// kind in both dialects.
func checkScalarFastPath(t *testing.T, raw string) (fast bool) {
	var xf, xs scal
	fast = fastJSON([]byte(raw), &xf)
	ef := jsonScalar([]byte(raw), &xf)
	es := slowJSON([]byte(raw), &xs)
	if errText(ef) != errText(es) {
		t.Fatalf("%q: fast path error %q, encoding/json %q", raw, errText(ef), errText(es))
	}
	if es != nil {
		return fast
	}
	for _, d := range []Dialect{OpenConfig, Sonic} {
		for _, l := range probeLeaves {
			vf, errF := decodeScal(d, l, &xf)
			vs, errS := decodeScal(d, l, &xs)
			if vf != vs || errText(errF) != errText(errS) {
				t.Fatalf("%q %s field %d: fast %+v %q, encoding/json %+v %q", raw, d, l.Field, vf, errText(errF), vs, errText(errS))
			}
		}
	}
	return fast
}

var scalarSeeds = []string{
	`"12"`, ` 12 `, `12`, `0`, `012`, `"012"`, `-0`, `"-5"`, `-5`, `1e3`, `"1e3"`, `1.5`, `"1.5"`, `1.`, `.5`, `1e`, `-`,
	`"18446744073709551615"`, `"18446744073709551616"`, `18446744073709551616`, `"99999999999999999999999"`,
	`"SPEED_100GB"`, `"openconfig-if-ethernet:SPEED_400GB"`, `" openconfig-if-ethernet:SPEED_25GB "`,
	`"openconfig-if-ethernet:SPEED_UNKNOWN"`, `"SPEED_0GB"`, `"SPEED_1.5TB"`, `"x:y:SPEED_10MB"`,
	`"openconfig-if-ethernet-with-a-very-long-module-name-indeed:SPEED_100GB"`,
	`true`, `false`, `"true"`, `" TRUE "`, `"False"`, `"yes"`, `null`, `{}`, `[]`, `{"a":1}`, `"12" x`, `12x`, `"`, `""`,
	`"  42  "`, `"\t42"`, `"4\u0032"`, `"é"`, "\"\xff\"", `"ecn_all"`, `"[WRED_PROFILE|x]"`, `"[BUFFER_PROFILE|p]"`, `"-2"`, `-9`,
	`"+5"`, `"1_000"`, `"0x10"`, `"Inf"`, `"NaN"`, `1e400`, `"1e400"`, "\n\"7\"\r\n", `100`, `101`, `"50"`,
}

func TestScalarFastPathMatchesJSON(t *testing.T) {
	fast := 0
	for _, raw := range scalarSeeds {
		if checkScalarFastPath(t, raw) {
			fast++
		}
	}
	// The common forms must take the fast path, or nothing is gained.
	for _, raw := range []string{`"12"`, `12`, `"openconfig-if-ethernet:SPEED_400GB"`, `true`, `"ecn_all"`, `1.5`, `" 7 "`} {
		var x scal
		if !fastJSON([]byte(raw), &x) {
			t.Errorf("%q does not take the fast path", raw)
		}
	}
	if fast < 30 {
		t.Fatalf("only %d of %d seeds took the fast path", fast, len(scalarSeeds))
	}
}

func FuzzScalarFastPath(f *testing.F) {
	for _, s := range scalarSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) { checkScalarFastPath(t, raw) })
}

// stream is a sequence of notification batches exercising what a
// subscription delivers: dumps, samples, malformed values, deletes,
// new ports, re-snapshots, re-bindings.
type step struct {
	what  string
	ns    []*gnmi.Notification
	reset bool
}

func jsonTV(s string) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(s)}}
}

// spoil replaces the value of every update whose last element is leaf
// (and, when port is set, whose path mentions port).
func spoil(ns []*gnmi.Notification, leaf, port string, v *gnmi.TypedValue) int {
	n := 0
	for _, no := range ns {
		for _, u := range no.Update {
			el := u.Path.Elem
			if el[len(el)-1].Name == leaf && (port == "" || strings.Contains(PathString(el), port)) {
				u.Val = v
				n++
			}
		}
	}
	return n
}

func streamFor(t *testing.T, d Dialect, ns string, enc gnmi.Encoding) []step {
	snap2 := testSwitch(2)
	snap3 := testSwitch(3)
	txb, spd, avg := "transmit-octets", "port-speed", "avg-queue-len"
	if d == Sonic {
		txb, spd, avg = "SAI_QUEUE_STAT_BYTES", "speed", "ECNTUNE_QUEUE_AVG_OCCUPANCY_BYTES"
	}
	var steps []step
	steps = append(steps, step{what: "dump", ns: encodeAll(d, ns, snap2, enc)})
	snap2.TimeNs += 1_000_000
	snap2.Queues[0].TxBytes += 5000 // Ethernet0, queue 3
	steps = append(steps, step{what: "sample", ns: encodeAll(d, ns, snap2, enc)})
	// the same paths in another order (the decoder expects the last order)
	rev := encodeAll(d, ns, snap2, enc)
	for _, n := range rev {
		slices.Reverse(n.Update)
	}
	steps = append(steps, step{what: "reordered", ns: rev})
	for i, bad := range []*gnmi.TypedValue{jsonTV(`"lots"`), jsonTV(`"-5"`), jsonTV(`"1.5"`), jsonTV(`true`), jsonTV(`"1e3"`),
		jsonTV(`"18446744073709551616"`), jsonTV(`null`), strVal("9 9")} {
		s := encodeAll(d, ns, snap2, enc)
		if spoil(s, txb, "Ethernet4", bad) == 0 {
			t.Fatalf("%s: no %s leaf", d, txb)
		}
		if i%3 == 0 {
			spoil(s, avg, "Ethernet0", jsonTV(`" 77 "`))
		}
		steps = append(steps, step{what: fmt.Sprintf("bad %s", bad), ns: s})
		steps = append(steps, step{what: "good again", ns: encodeAll(d, ns, snap2, enc)})
	}
	// A container where a leaf is expected names no known leaf: ignored,
	// as any unknown path is (the leaf keeps its last value).
	s := encodeAll(d, ns, snap2, enc)
	spoil(s, txb, "Ethernet4", jsonTV(`{"x":1}`))
	steps = append(steps, step{what: "container", ns: s})
	s = encodeAll(d, ns, snap2, enc)
	spoil(s, spd, "Ethernet0", jsonTV(`"SPEED_0GB"`))
	spoil(s, spd, "Ethernet4", jsonTV(`"0"`))
	steps = append(steps, step{what: "bad speed", ns: s})
	steps = append(steps, step{what: "good again", ns: encodeAll(d, ns, snap2, enc)})
	// deletes
	var del *gnmi.Notification
	if d == Sonic {
		p := &gnmi.Path{Target: CountersDB}
		if ns != "" {
			p.Elem = names(ns)
		}
		del = &gnmi.Notification{Timestamp: 7, Prefix: p, Delete: []*gnmi.Path{{Elem: names("COUNTERS", "Ethernet0:3")}}}
	} else {
		del = &gnmi.Notification{Timestamp: 7, Prefix: &gnmi.Path{Target: "leaf0"}, Delete: []*gnmi.Path{{Elem: ocQueueBase("Ethernet0", 3)}}}
	}
	steps = append(steps, step{what: "delete", ns: []*gnmi.Notification{del}})
	steps = append(steps, step{what: "re-snapshot", ns: encodeAll(d, ns, snap2, enc)})
	steps = append(steps, step{what: "new port", ns: encodeAll(d, ns, snap3, enc)})
	if d == Sonic {
		// Ethernet4's PGs 3-4 move to one shared profile with another xoff.
		cfg := Tree{
			{Field: PGProfile, Port: "Ethernet4", PGs: "3"}:   {S: "shared_pg"},
			{Field: PGProfile, Port: "Ethernet4", PGs: "4"}:   {S: "shared_pg"},
			{Field: BPXoff, Name: "shared_pg"}:                {U: 77_000},
			{Field: BPPool, Name: "shared_pg"}:                {S: LosslessPool},
			{Field: PGProfile, Port: "Ethernet8", PGs: "3-4"}: {S: "shared_pg"},
		}
		rb := Notifications(d, "leaf0", ns, ConfigItems(d, cfg), 9, enc)
		// Ethernet8's own PG keys go, so its 3-4 range binds both PGs.
		rb[0].Delete = []*gnmi.Path{{Elem: names("BUFFER_PG", "Ethernet8|3")}, {Elem: names("BUFFER_PG", "Ethernet8|4")}}
		steps = append(steps, step{what: "rebind", ns: rb})
		// A range overlapping Ethernet4's single-PG keys does not win.
		cfg = Tree{
			{Field: PGProfile, Port: "Ethernet4", PGs: "3-4"}: {S: "other_pg"},
			{Field: BPXoff, Name: "other_pg"}:                 {U: 55_000},
		}
		steps = append(steps, step{what: "overlap", ns: Notifications(d, "leaf0", ns, ConfigItems(d, cfg), 10, enc)})
	}
	steps = append(steps, step{what: "reset", reset: true, ns: encodeAll(d, ns, snap3, enc)})
	return steps
}

// TestFastPathMatchesGeneral feeds the same streams to a decoder and to one
// forced through the general path (encoding/json, path parsing per update)
// and requires the same errors, trees and snapshots at every step; it also
// checks each incremental snapshot against one worked out from the whole
// tree by lookups, and both against the decoder as it was before the fast
// path (refDecoder).
func TestFastPathMatchesGeneral(t *testing.T) {
	for _, d := range []Dialect{OpenConfig, Sonic} {
		for _, enc := range []gnmi.Encoding{gnmi.Encoding_JSON_IETF, gnmi.Encoding_JSON, gnmi.Encoding_PROTO} {
			for _, ns := range []string{"", "leaf0"} {
				if d == OpenConfig && ns != "" {
					continue
				}
				tg := Target{Name: "leaf0", Dialect: d, Namespace: ns}
				fast, gen, ref := NewDecoder(tg, lossless...), NewDecoder(tg, lossless...), newRefDecoder(tg, lossless...)
				wire := NewDecoder(tg, lossless...)
				gen.general = true
				for i, st := range streamFor(t, d, ns, enc) {
					if st.reset {
						fast.Reset()
						gen.Reset()
						ref.reset()
						wire.Reset()
					}
					var errs error
					for _, n := range st.ns {
						ef, eg, er := fast.Apply(n), gen.Apply(n), ref.apply(n)
						if errText(ef) != errText(eg) || errText(ef) != errText(er) {
							t.Fatalf("%s/%v/%q step %d %s: errors differ:\nfast    %v\ngeneral %v\nbefore  %v", d, enc, ns, i, st.what, ef, eg, er)
						}
						b, err := proto.Marshal(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}})
						if err != nil {
							t.Fatal(err)
						}
						if _, ew := wire.ApplyWire(b); errText(ew) != errText(ef) {
							t.Fatalf("%s/%v/%q step %d %s: ApplyWire error %v, Apply %v", d, enc, ns, i, st.what, ew, ef)
						}
						errs = errors.Join(errs, ef)
					}
					if strings.HasPrefix(st.what, "bad ") != (errs != nil) || (errs != nil && !strings.Contains(errs.Error(), "Ethernet4")) {
						t.Fatalf("%s/%v step %s: error %v (want one naming the path exactly when a value is bad)", d, enc, st.what, errs)
					}
					if sw, _ := wire.Snapshot(); !reflect.DeepEqual(fast.Tree(), wire.Tree()) || !reflect.DeepEqual(sw, func() env.Snapshot { s, _ := fast.Snapshot(); return s }()) {
						t.Fatalf("%s/%v/%q step %d %s: ApplyWire's state differs from Apply's", d, enc, ns, i, st.what)
					}
					if !reflect.DeepEqual(fast.Tree(), gen.Tree()) || !reflect.DeepEqual(fast.Tree(), ref.tree) {
						t.Fatalf("%s/%v/%q step %d %s: trees differ (%d, %d, before %d leaves)", d, enc, ns, i, st.what, len(fast.Tree()), len(gen.Tree()), len(ref.tree))
					}
					sf, incf := fast.Snapshot()
					sg, incg := gen.Snapshot()
					sr, incr := ref.snapshot()
					if !reflect.DeepEqual(sf, sg) || !reflect.DeepEqual(incf, incg) || !reflect.DeepEqual(sf, sr) || !reflect.DeepEqual(incf, incr) {
						t.Fatalf("%s/%v/%q step %d %s: snapshots differ:\nfast %d %v\ngen  %d %v\nrebuilt %d %v", d, enc, ns, i, st.what,
							len(sf.Queues), incf, len(sg.Queues), incg, len(sr.Queues), incr)
					}
					checkStep(t, d, enc, st.what, sf, incf)
				}
				if wire.wireWalks == 0 {
					t.Fatalf("%s/%v/%q: ApplyWire never walked a notification in place", d, enc, ns)
				}
			}
		}
	}
}

// checkStep asserts what each step must leave, in numbers.
func checkStep(t *testing.T, d Dialect, enc gnmi.Encoding, what string, s env.Snapshot, inc []string) {
	t.Helper()
	find := func(port string, q int) *env.QueueSample {
		for i := range s.Queues {
			if s.Queues[i].Key.Port == port && s.Queues[i].Key.Queue == q {
				return &s.Queues[i]
			}
		}
		return nil
	}
	fail := func(f string, a ...any) {
		t.Helper()
		t.Fatalf("%s/%v after %s: %s (queues %d, incomplete %v)", d, enc, what, fmt.Sprintf(f, a...), len(s.Queues), inc)
	}
	switch {
	case what == "dump" || what == "good again" || what == "re-snapshot" || what == "container" || what == "reordered":
		if len(s.Queues) != 4 || len(inc) != 0 {
			fail("want 4 complete queues")
		}
		if q := find("Ethernet0", 3); what != "dump" && q.TxBytes != 301*1048+5000 {
			fail("Ethernet0/q3 tx bytes %d, want %d", q.TxBytes, 301*1048+5000)
		}
	case strings.HasPrefix(what, "bad speed"):
		if len(s.Queues) != 0 || len(inc) != 4 || !strings.Contains(inc[0], "port speed") {
			fail("want every queue left out for want of a port speed")
		}
	case strings.HasPrefix(what, "bad "):
		// Ethernet4's tx bytes are malformed: its two queues are left
		// out, never reported with 0 bytes.
		if len(s.Queues) != 2 || len(inc) != 2 || !strings.Contains(inc[0], "Ethernet4") || !strings.Contains(inc[0], "tx bytes") {
			fail("want Ethernet4 left out for its tx bytes")
		}
		if q := find("Ethernet0", 4); q == nil || q.TxBytes != 401*1048 {
			fail("Ethernet0/q4 wrong")
		}
	case what == "delete":
		if len(s.Queues) != 3 || find("Ethernet0", 3) != nil {
			fail("want Ethernet0/q3 gone")
		}
	case what == "new port" || what == "reset":
		if len(s.Queues) != 6 || len(inc) != 0 || find("Ethernet8", 4) == nil || find("Ethernet8", 4).TxBytes != 2401*1048 {
			fail("want 6 queues with Ethernet8")
		}
	case what == "rebind" || what == "overlap":
		if len(s.Queues) != 6 {
			fail("want 6 queues")
		}
		for _, k := range []struct {
			p string
			q int
		}{{"Ethernet4", 3}, {"Ethernet4", 4}, {"Ethernet8", 3}, {"Ethernet8", 4}} {
			if h := find(k.p, k.q).Setting.HeadroomBytes; h != 77_000 {
				fail("%s/q%d headroom %d, want 77000 from the new profile", k.p, k.q, h)
			}
		}
		if h := find("Ethernet0", 3).Setting.HeadroomBytes; h != 90_000 {
			fail("Ethernet0/q3 headroom %d, want 90000", h)
		}
	}
}

// FuzzFastPath compares the fast and general paths on arbitrary paths and
// values (see FuzzApply).
func FuzzFastPath(f *testing.F) {
	for _, s := range []struct{ target, path, val string }{
		{"leaf0", "/qos/interfaces/interface[interface-id=Ethernet0]/output/queues/queue[name=3]/state/transmit-pkts", `"12"`},
		{"leaf0", "/qos/interfaces/interface[interface-id=Ethernet0]/output/queues/queue[name=9]/state/transmit-pkts", `"12"`},
		{"leaf0", "/qos/interfaces/interface[interface-id=Ethernet0][x=y]/output/queues/queue[name=3]/state/avg-queue-len", `7`},
		{"other", "/interfaces/interface[name=Ethernet0]/ethernet/state/port-speed", `"SPEED_100GB"`},
		{"COUNTERS_DB", "/COUNTERS/Ethernet0:3/SAI_QUEUE_STAT_PACKETS", `"1e3"`},
		{"COUNTERS_DB", "/COUNTERS/Ethernet0/SAI_PORT_STAT_PFC_3_RX_PKTS", `" 5 "`},
		{"CONFIG_DB", "/WRED_PROFILE/x/ecn", `"ecn_all"`},
		{"", "sonic-db:/CONFIG_DB/localhost/QUEUE/Ethernet0|3/wred_profile", `"[WRED_PROFILE|p]"`},
		{"CONFIG_DB", "/BUFFER_PROFILE/p/dynamic_th", `"-2"`},
	} {
		f.Add(s.target, s.path, s.val)
	}
	f.Fuzz(func(t *testing.T, target, path, val string) {
		origin, el, err := ParsePath(path)
		if err != nil {
			return
		}
		for _, d := range []Dialect{OpenConfig, Sonic} {
			for _, ns := range []string{"", "localhost"} {
				tg := Target{Name: "leaf0", Dialect: d, Namespace: ns}
				fast, gen, ref := NewDecoder(tg), NewDecoder(tg), newRefDecoder(tg)
				gen.general = true
				for _, tv := range []*gnmi.TypedValue{jsonTV(val), strVal(val), {Value: &gnmi.TypedValue_JsonVal{JsonVal: []byte(val)}}} {
					n := &gnmi.Notification{Prefix: &gnmi.Path{Target: target, Origin: origin},
						Update: []*gnmi.Update{{Path: &gnmi.Path{Elem: el}, Val: tv}}}
					ef, eg, er := fast.Apply(n), gen.Apply(n), ref.apply(n)
					if errText(ef) != errText(eg) || errText(ef) != errText(er) {
						t.Fatalf("errors differ: fast %v, general %v, before %v", ef, eg, er)
					}
					if !reflect.DeepEqual(fast.Tree(), gen.Tree()) || !reflect.DeepEqual(fast.Tree(), ref.tree) {
						t.Fatalf("trees differ: fast %v, general %v, before %v", fast.Tree(), gen.Tree(), ref.tree)
					}
					checkSnapshot(t, fast, ref)
				}
				// and the same path deleted
				del := &gnmi.Notification{Prefix: &gnmi.Path{Target: target, Origin: origin}, Delete: []*gnmi.Path{{Elem: el}}}
				ef, eg, er := fast.Apply(del), gen.Apply(del), ref.apply(del)
				if errText(ef) != errText(eg) || errText(ef) != errText(er) || !reflect.DeepEqual(fast.Tree(), gen.Tree()) || !reflect.DeepEqual(fast.Tree(), ref.tree) {
					t.Fatalf("delete: errors %v / %v / %v, trees %v / %v / %v", ef, eg, er, fast.Tree(), gen.Tree(), ref.tree)
				}
				checkSnapshot(t, fast, ref)
			}
		}
	})
}

// checkSnapshot requires a decoder's snapshot to equal the reference's.
func checkSnapshot(t *testing.T, d *Decoder, ref *refDecoder) {
	t.Helper()
	s, inc := d.Snapshot()
	rs, rinc := ref.snapshot()
	if !reflect.DeepEqual(s, rs) || !reflect.DeepEqual(inc, rinc) {
		t.Fatalf("snapshot %+v %v, from the tree %+v %v", s, inc, rs, rinc)
	}
}

// TestDecodeAllocs: decoding a JSON_IETF sample and taking its snapshot
// allocates next to nothing per value (it made about 22 per value with
// encoding/json), and a PROTO one likewise.
func TestDecodeAllocs(t *testing.T) {
	for _, d := range []Dialect{OpenConfig, Sonic} {
		for _, enc := range []gnmi.Encoding{gnmi.Encoding_JSON_IETF, gnmi.Encoding_PROTO} {
			cfg, samples, values := benchSamples(d, enc)
			dec := NewDecoder(Target{Name: "leaf0", Dialect: d}, lossless...)
			for _, n := range append(cfg, samples[0]...) {
				if err := dec.Apply(n); err != nil {
					t.Fatal(err)
				}
			}
			i := 0
			var err error
			allocs := testing.AllocsPerRun(10, func() {
				i++
				for _, n := range samples[i%2] {
					err = errors.Join(err, dec.Apply(n))
				}
				if s, _ := dec.Snapshot(); len(s.Queues) != 64 {
					err = fmt.Errorf("%d queues", len(s.Queues))
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if per := allocs / float64(values); per > 0.01 {
				t.Errorf("%s/%v: %.0f allocations per sample of %d values (%.4f per value), want at most 0.01 per value", d, enc, allocs, values, per)
			}
		}
	}
}

// TestSortItems: items come out ordered by database, then path string.
func TestSortItems(t *testing.T) {
	snap := testSwitch(3)
	for _, d := range []Dialect{OpenConfig, Sonic} {
		it := ConfigItems(d, InitialConfig(d, &snap, 3072, testAlpha))
		it = append(it, NewEncoder(d, &snap).Encode(nil, &snap)...)
		sortItems(it)
		for i := 1; i < len(it); i++ {
			a, b := it[i-1], it[i]
			pa, pb := PathString(a.Path.GetElem()), PathString(b.Path.GetElem())
			if a.DB > b.DB || (a.DB == b.DB && pa > pb) {
				t.Fatalf("%s: %s%s before %s%s", d, a.DB, pa, b.DB, pb)
			}
		}
		if d == Sonic && (it[0].DB != ConfigDB || it[len(it)-1].DB != CountersDB) {
			t.Fatalf("sonic: databases out of order: %s … %s", it[0].DB, it[len(it)-1].DB)
		}
		if want := 3*2*12 + 1 + 3*(1+2*(9+3)); d == Sonic && len(it) != want {
			t.Fatalf("sonic: %d items, want %d", len(it), want)
		}
	}
}
