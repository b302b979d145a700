package gnmipath

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// Notifications in the shape sonic-gnmi sends them (sonic_data_client:
// virtual_db.go's v2rEthPortQueStats and v2rEthPortStats, db_client.go's
// TableData2Msi): one update per requested path, its value a JSON object
// of string fields keyed by table key; with a wildcard port, queues and
// ports are keyed by the port's alias, and every queue has a
// "<alias>:<q>:periodic" entry with the periodic shared watermark.

func sonicNote(target string, ts int64, path, json string) *gnmi.Notification {
	_, el, _ := ParsePath(path)
	return &gnmi.Notification{Timestamp: ts, Prefix: &gnmi.Path{Target: target},
		Update: []*gnmi.Update{{Path: &gnmi.Path{Elem: el}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(json)}}}}}
}

func sonicCounters(ts int64, tx string) []*gnmi.Notification {
	return []*gnmi.Notification{
		sonicNote("COUNTERS_DB", ts, "/COUNTERS/Ethernet*/Queues", `{
			"etp1:3": {"SAI_QUEUE_STAT_PACKETS": "`+tx+`", "SAI_QUEUE_STAT_BYTES": "`+tx+`000", "SAI_QUEUE_STAT_DROPPED_PACKETS": "0",
			           "SAI_QUEUE_STAT_DROPPED_BYTES": "0", "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": "7",
			           "SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES": "7000", "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES": "4096"},
			"etp1:3:periodic": {"SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES": "123456"},
			"etp1:0": {"SAI_QUEUE_STAT_PACKETS": "1", "SAI_QUEUE_STAT_BYTES": "64", "SAI_QUEUE_STAT_DROPPED_PACKETS": "0", "SAI_QUEUE_STAT_DROPPED_BYTES": "0"},
			"etp1:0:periodic": {"SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES": "0"}}`),
		sonicNote("COUNTERS_DB", ts, "/COUNTERS/Ethernet*", `{
			"etp1": {"SAI_PORT_STAT_IF_IN_OCTETS": "1", "SAI_PORT_STAT_PFC_3_RX_PKTS": "5", "SAI_PORT_STAT_PFC_3_TX_PKTS": "2",
			         "SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US": "40", "SAI_PORT_STAT_PFC_0_RX_PKTS": "0"}}`),
	}
}

func sonicConfig(pgProfile string) []*gnmi.Notification {
	return []*gnmi.Notification{
		sonicNote("CONFIG_DB", 1, "/PORT", `{"Ethernet0": {"alias": "etp1", "lanes": "0,1,2,3", "speed": "100000", "mtu": "9100", "admin_status": "up"}}`),
		sonicNote("CONFIG_DB", 1, "/QUEUE", `{"Ethernet0|3": {"scheduler": "scheduler.1", "wred_profile": "AZURE_LOSSLESS"}, "Ethernet0|0": {"scheduler": "scheduler.0"}}`),
		sonicNote("CONFIG_DB", 1, "/BUFFER_PG", `{"Ethernet0|3-4": {"profile": "`+pgProfile+`"}, "Ethernet0|0": {"profile": "ingress_lossy_profile"}}`),
		sonicNote("CONFIG_DB", 1, "/BUFFER_POOL", `{"ingress_lossless_pool": {"mode": "dynamic", "size": "12766208", "type": "ingress"}}`),
		sonicNote("CONFIG_DB", 1, "/WRED_PROFILE/AZURE_LOSSLESS", `{"ecn": "ecn_all", "green_drop_probability": "5", "green_max_threshold": "2097152",
			"green_min_threshold": "1048576", "wred_green_enable": "true", "wred_red_enable": "true", "wred_yellow_enable": "true"}`),
		sonicNote("CONFIG_DB", 1, "/BUFFER_PROFILE/pg_lossless_100000_5m_profile", `{"dynamic_th": "-3", "pool": "ingress_lossless_pool",
			"size": "56368", "xoff": "37936", "xon": "18432"}`),
	}
}

func TestDecodeRealSonic(t *testing.T) {
	for _, c := range []struct {
		name, pg     string
		wantHeadroom int64
		wantAlpha    float64
	}{
		{"static buffer model", "pg_lossless_100000_5m_profile", 37936, 0.125},
		{"dynamic buffer model", "NULL", 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder(Target{Name: "leaf0", Dialect: Sonic, Device: Devices["sonic"]}, 3)
			// counters before the config that names the alias: nothing
			// is reported under the alias
			for _, n := range append(sonicCounters(1_000, "100"), sonicConfig(c.pg)...) {
				if err := d.Apply(n); err != nil {
					t.Fatal(err)
				}
			}
			if s, _ := d.Snapshot(); len(s.Queues) != 0 {
				t.Fatalf("queues decoded under an alias: %+v", s.Queues)
			}
			for _, n := range sonicCounters(2_000_000_000, "200") {
				if err := d.Apply(n); err != nil {
					t.Fatal(err)
				}
			}
			s, inc := d.Snapshot()
			if len(s.Queues) != 1 || len(inc) != 0 {
				t.Fatalf("queues %+v incomplete %v", s.Queues, inc)
			}
			q := s.Queues[0]
			want := env.QueueSample{Key: env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}, RateBps: 100e9,
				TxPkts: 200, TxBytes: 200000, MarkedPkts: 7, MarkedBytes: 7000, CurQueueBytes: 4096, MaxQueueBytes: 123456,
				PauseRx: 5, PauseTx: 2, PausedNs: 40_000, BufferBytes: 12766208,
				Setting: env.Setting{KminBytes: 1048576, KmaxBytes: 2097152, Pmax: 0.05, HeadroomBytes: c.wantHeadroom, Alpha: c.wantAlpha},
				Missing: Devices["sonic"].Missing, HeadroomReported: c.wantHeadroom > 0}
			if q != want {
				t.Fatalf("sample\n got %+v\nwant %+v", q, want)
			}
			b := d.Binding("Ethernet0", 3)
			if (b.BufferProfile != "") != (c.wantHeadroom > 0) {
				t.Fatalf("binding %+v", b)
			}
		})
	}
}

// Writes go under origin sonic-db, /CONFIG_DB/localhost/..., field by
// field to an entry that exists and others share (a whole-entry write
// would replace it and drop its other fields) and whole to an entry the
// agent creates (the config updater's JSON patch cannot add a field under
// an entry not there); under the dynamic buffer model headroom is refused
// as not tunable while ECN is written.
func TestSetRequestRealSonic(t *testing.T) {
	tg := Target{Name: "leaf0", Dialect: Sonic, Device: Devices["sonic"]}
	d := NewDecoder(tg, 3)
	for _, n := range sonicConfig("pg_lossless_100000_5m_profile") {
		if err := d.Apply(n); err != nil {
			t.Fatal(err)
		}
	}
	key := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	req, err := SetRequest(tg, key, env.Setting{KminBytes: 500_000, KmaxBytes: 1_500_000, Pmax: 0.1, HeadroomBytes: 40000}, d.Binding("Ethernet0", 3))
	if err != nil {
		t.Fatal(err)
	}
	if p := req.GetPrefix(); p.GetOrigin() != "sonic-db" || PathString(p.GetElem()) != "/CONFIG_DB/localhost" {
		t.Fatalf("prefix %v", p)
	}
	var got []string
	whole := map[string]bool{}
	for _, u := range req.GetUpdate() {
		p := PathString(u.GetPath().GetElem())
		switch len(u.GetPath().GetElem()) {
		case 3:
			got = append(got, p+"="+string(u.GetVal().GetJsonIetfVal()))
		case 2:
			whole[p] = true
			var fields map[string]string
			if err := json.Unmarshal(u.GetVal().GetJsonIetfVal(), &fields); err != nil {
				t.Fatalf("entry %s: %v", p, err)
			}
			for f, v := range fields {
				got = append(got, fmt.Sprintf("%s/%s=%q", p, f, v))
			}
		default:
			t.Fatalf("update %s is not TABLE/KEY[/FIELD]", p)
		}
	}
	for _, p := range []string{"/BUFFER_PROFILE/ecntune-Ethernet0-pg3", "/BUFFER_PG/Ethernet0|3", "/BUFFER_PG/Ethernet0|4"} {
		if !whole[p] {
			t.Fatalf("the new entry %s is not written whole: %v", p, got)
		}
	}
	if whole["/WRED_PROFILE/AZURE_LOSSLESS"] {
		t.Fatalf("the existing profile is written whole (its other fields dropped): %v", got)
	}
	// PGs 3-4 share one BUFFER_PG entry: PG 3 gets a profile of its own,
	// created with every field (pool included: mandatory), the range
	// split; the shared profile is not touched.
	all := strings.Join(got, " ")
	for _, w := range []string{`/BUFFER_PROFILE/ecntune-Ethernet0-pg3/xoff="40000"`, `/BUFFER_PROFILE/ecntune-Ethernet0-pg3/size="58432"`,
		`/BUFFER_PROFILE/ecntune-Ethernet0-pg3/pool="ingress_lossless_pool"`, `/BUFFER_PG/Ethernet0|4/profile="pg_lossless_100000_5m_profile"`,
		`/BUFFER_PG/Ethernet0|3/profile="ecntune-Ethernet0-pg3"`, `/WRED_PROFILE/AZURE_LOSSLESS/green_min_threshold="500000"`} {
		if !strings.Contains(all, w) {
			t.Fatalf("updates %v lack %s", got, w)
		}
	}
	if strings.Contains(all, "pg_lossless_100000_5m_profile/") || len(req.GetDelete()) != 1 || PathString(req.GetDelete()[0].GetElem()) != "/BUFFER_PG/Ethernet0|3-4" {
		t.Fatalf("shared profile written or range not split: %v, deletes %v", got, req.GetDelete())
	}
	// dynamic model
	dd := NewDecoder(tg, 3)
	for _, n := range sonicConfig("NULL") {
		_ = dd.Apply(n)
	}
	_, err = SetRequest(tg, key, env.Setting{KminBytes: 500_000, KmaxBytes: 1_500_000, Pmax: 0.1, HeadroomBytes: 40000}, dd.Binding("Ethernet0", 3))
	var nt *HeadroomError
	if !errors.As(err, &nt) || !strings.Contains(err.Error(), "dynamic buffer model") {
		t.Fatalf("dynamic model headroom: %v", err)
	}
	// sonic-gnmi subscriptions: virtual paths, namespace in the target
	gs := Groups(Target{Name: "leaf0", Dialect: Sonic, Device: Devices["sonic"], Namespace: "asic0"})
	if gs[0].Sub.Prefix.GetTarget() != "COUNTERS_DB/asic0" || PathString(gs[0].Sub.Paths[0].GetElem()) != "/COUNTERS/Ethernet*/Queues" {
		t.Fatalf("counters subscription %v %v", gs[0].Sub.Prefix, gs[0].Sub.Paths)
	}
}

// Broadcom's lossless profiles keep size as the PG's guaranteed minimum: a
// headroom change writes xoff alone; Mellanox's size = xon + xoff moves
// with it.
func TestSetRequestSonicASIC(t *testing.T) {
	cfg := []*gnmi.Notification{
		sonicNote("CONFIG_DB", 1, "/PORT", `{"Ethernet0": {"alias": "etp1", "speed": "100000"}}`),
		sonicNote("CONFIG_DB", 1, "/QUEUE", `{"Ethernet0|3": {"wred_profile": "W"}}`),
		sonicNote("CONFIG_DB", 1, "/BUFFER_PG", `{"Ethernet0|3": {"profile": "P"}}`),
		sonicNote("CONFIG_DB", 1, "/WRED_PROFILE/W", `{"green_min_threshold": "1", "green_max_threshold": "2", "green_drop_probability": "5"}`),
		sonicNote("CONFIG_DB", 1, "/BUFFER_PROFILE/P", `{"pool": "ingress_lossless_pool", "size": "1248", "xon": "2288", "xoff": "35776", "dynamic_th": "-4"}`),
	}
	key := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	for _, c := range []struct{ asic, want, absent string }{
		{"broadcom", `/BUFFER_PROFILE/P/xoff="40000"`, "/BUFFER_PROFILE/P/size"},
		{"", `/BUFFER_PROFILE/P/size="42288"`, ""},
	} {
		tg := Target{Name: "leaf0", Dialect: Sonic, Device: Devices["sonic"], ASIC: c.asic}
		d := NewDecoder(tg, 3)
		for _, n := range cfg {
			if err := d.Apply(n); err != nil {
				t.Fatal(err)
			}
		}
		req, err := SetRequest(tg, key, env.Setting{KminBytes: 1, KmaxBytes: 2, Pmax: 0.05, HeadroomBytes: 40000}, d.Binding("Ethernet0", 3))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, u := range req.GetUpdate() {
			got = append(got, PathString(u.GetPath().GetElem())+"="+string(u.GetVal().GetJsonIetfVal()))
		}
		all := strings.Join(got, " ")
		if !strings.Contains(all, c.want) || (c.absent != "" && strings.Contains(all, c.absent)) {
			t.Fatalf("asic %q: updates %v (want %s, not %s)", c.asic, got, c.want, c.absent)
		}
	}
}

// What real sonic-gnmi sends for a platform of 10 queues a port (0-7
// unicast, 8-9 multicast: "etp1:8", "etp1:9") and a PFC counter of a
// priority above 7: the configured queue decodes from the same update, the
// other queues are read and left out of the snapshot, nothing is an error;
// an element the decoder does not understand (a queue key that is not
// <port>:<index>, a PFC priority 9) is skipped, counted once per shape of
// path, and the rest of the update used. Both through Apply and the wire
// walk of a response seen before.
func TestDecodeRealSonicTenQueuesAndSkips(t *testing.T) {
	for _, general := range []bool{false, true} {
		d := NewDecoder(Target{Name: "leaf0", Dialect: Sonic, Device: Devices["sonic"]}, 3)
		d.general = general
		for _, n := range sonicConfig("pg_lossless_100000_5m_profile") {
			if err := d.Apply(n); err != nil {
				t.Fatal(err)
			}
		}
		counters := func(ts int64, tx string) []*gnmi.Notification {
			q := func(tx string) string {
				return `{"SAI_QUEUE_STAT_PACKETS": "` + tx + `", "SAI_QUEUE_STAT_BYTES": "` + tx + `000", "SAI_QUEUE_STAT_DROPPED_PACKETS": "0",
				"SAI_QUEUE_STAT_DROPPED_BYTES": "0", "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": "7", "SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES": "7000"}`
			}
			return []*gnmi.Notification{
				sonicNote("COUNTERS_DB", ts, "/COUNTERS/Ethernet*/Queues", `{
				"etp1:3": `+q(tx)+`, "etp1:3:periodic": {"SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES": "4096"},
				"etp1:8": `+q("5")+`, "etp1:8:periodic": {"SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES": "0"},
				"etp1:9": `+q("6")+`, "etp1": `+q("6")+`, "etp2": `+q("6")+`}`),
				sonicNote("COUNTERS_DB", ts, "/COUNTERS/Ethernet*", `{"etp1": {"SAI_PORT_STAT_PFC_3_RX_PKTS": "5",
				"SAI_PORT_STAT_PFC_9_RX_PKTS": "1", "SAI_PORT_STAT_PFC_10_RX_PKTS": "1"}}`),
			}
		}
		for i, tx := range []string{"100", "200", "300"} {
			for _, n := range counters(int64(i+1)*1e9, tx) {
				if err := d.Apply(n); err != nil {
					t.Fatalf("general %v: %v", general, err)
				}
			}
		}
		s, inc := d.Snapshot()
		if len(s.Queues) != 1 || s.Queues[0].Key.Queue != 3 || s.Queues[0].TxPkts != 300 || s.Queues[0].PauseRx != 5 || len(inc) != 0 {
			t.Fatalf("general %v: queues %+v, incomplete %v", general, s.Queues, inc)
		}
		sk := d.Skipped()
		want := map[string]uint64{
			"/COUNTERS/Ethernet*/Queues/etpN/...":                  2 * 6 * 3, // two keys, six counters, three samples
			"/COUNTERS/Ethernet*/etpN/SAI_PORT_STAT_PFC_N_RX_PKTS": 2 * 3,
		}
		if len(sk) != len(want) {
			t.Fatalf("general %v: skipped %+v", general, sk)
		}
		for _, k := range sk {
			if want[k.Shape] != k.Count || k.Example == "" || k.Why == "" {
				t.Errorf("general %v: skipped %+v, want count %d", general, k, want[k.Shape])
			}
		}
	}
}

// An openconfig switch that names its queues by class (as Arista and Nokia
// do in OpenConfig's entity naming: NC1, AF4, ..., BE0) rather than by
// index: those queues are skipped and counted by shape, the numbered ones
// decode from the same notification.
func TestDecodeClassNamedQueuesSkipped(t *testing.T) {
	d := NewDecoder(Target{Name: "sw", Dialect: OpenConfig}, 3)
	n := &gnmi.Notification{Timestamp: 1, Prefix: &gnmi.Path{Target: "sw"}}
	for _, q := range []string{"3", "AF3", "NC1"} {
		for _, f := range []string{"transmit-pkts", "transmit-octets", "dropped-pkts", "dropped-octets"} {
			p := mustPath("/qos/interfaces/interface[interface-id=Ethernet1]/output/queues/queue[name=" + q + "]/state/" + f)
			n.Update = append(n.Update, &gnmi.Update{Path: p, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 9}}})
		}
	}
	n.Update = append(n.Update, &gnmi.Update{Path: mustPath("/qos/interfaces/interface[interface-id=Ethernet1]/output/queues/queue[name=3]/config/queue-management-profile"),
		Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "LOSSLESS"}}})
	for f, v := range map[string]*gnmi.TypedValue{
		"min-threshold": {Value: &gnmi.TypedValue_UintVal{UintVal: 400_000}}, "max-threshold": {Value: &gnmi.TypedValue_UintVal{UintVal: 1_600_000}},
		"max-drop-probability-percent": {Value: &gnmi.TypedValue_UintVal{UintVal: 20}}, "enable-ecn": {Value: &gnmi.TypedValue_BoolVal{BoolVal: true}}} {
		n.Update = append(n.Update, &gnmi.Update{Path: mustPath("/qos/queue-management-profiles/queue-management-profile[name=LOSSLESS]/wred/uniform/config/" + f), Val: v})
	}
	n.Update = append(n.Update, &gnmi.Update{Path: mustPath("/interfaces/interface[name=Ethernet1]/ethernet/state/port-speed"),
		Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "SPEED_100GB"}}})
	if err := d.Apply(n); err != nil {
		t.Fatal(err)
	}
	if err := d.Apply(n); err != nil { // cached paths
		t.Fatal(err)
	}
	s, inc := d.Snapshot()
	if len(s.Queues) != 1 || s.Queues[0].Key.Queue != 3 || s.Queues[0].TxPkts != 9 {
		t.Fatalf("queues %+v, incomplete %v", s.Queues, inc)
	}
	sk := d.Skipped()
	if len(sk) != 1 || sk[0].Shape != "/qos/interfaces/interface[interface-id=*]/output/queues/queue[name=*]/..." || sk[0].Count != 16 ||
		!strings.Contains(sk[0].Why, `queue name "AF3"`) && !strings.Contains(sk[0].Why, `queue name "NC1"`) {
		t.Fatalf("skipped %+v", sk)
	}
}

// With the target's QueueNames a class-named queue is its index: decoded
// as such, written and read back under its name; other class names are
// still skipped.
func TestQueueNamesMapClassNamedQueues(t *testing.T) {
	tg := Target{Name: "sw", Dialect: OpenConfig, Device: Devices["arista-eos"], QueueNames: map[int]string{3: "AF3"}}
	d := NewDecoder(tg, 3)
	n := &gnmi.Notification{Timestamp: 1, Prefix: &gnmi.Path{Target: "sw"}}
	add := func(path string, v *gnmi.TypedValue) {
		n.Update = append(n.Update, &gnmi.Update{Path: mustPath(path), Val: v})
	}
	u := func(x uint64) *gnmi.TypedValue { return &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: x}} }
	for _, q := range []string{"AF3", "NC1"} {
		for _, f := range []string{"transmit-pkts", "transmit-octets", "dropped-pkts", "dropped-octets", "ecn-marked-pkts"} {
			add("/qos/interfaces/interface[interface-id=Ethernet1]/output/queues/queue[name="+q+"]/state/"+f, u(7))
		}
	}
	add("/qos/interfaces/interface[interface-id=Ethernet1]/output/queues/queue[name=AF3]/config/queue-management-profile",
		&gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "LOSSLESS"}})
	for f, v := range map[string]*gnmi.TypedValue{"min-threshold": u(400_000), "max-threshold": u(1_600_000),
		"max-drop-probability-percent": u(20), "enable-ecn": {Value: &gnmi.TypedValue_BoolVal{BoolVal: true}}} {
		add("/qos/queue-management-profiles/queue-management-profile[name=LOSSLESS]/wred/uniform/config/"+f, v)
	}
	add("/interfaces/interface[name=Ethernet1]/ethernet/state/port-speed", &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "SPEED_100GB"}})
	if err := d.Apply(n); err != nil {
		t.Fatal(err)
	}
	s, inc := d.Snapshot()
	if len(s.Queues) != 1 || s.Queues[0].Key.Queue != 3 || s.Queues[0].TxPkts != 7 || s.Queues[0].Setting.KmaxBytes != 1_600_000 {
		t.Fatalf("queues %+v, incomplete %v", s.Queues, inc)
	}
	if sk := d.Skipped(); len(sk) != 1 || !strings.Contains(sk[0].Why, `"NC1"`) || !strings.Contains(sk[0].Why, "queue-names") {
		t.Fatalf("skipped %+v", sk)
	}
	key := env.QueueKey{Target: "sw", Port: "Ethernet1", Queue: 3}
	req, err := SetRequest(tg, key, env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.1}, Binding{ECNProfile: "LOSSLESS", ECNShared: true})
	if err != nil {
		t.Fatal(err)
	}
	bound := false
	for _, up := range req.Update {
		p := PathString(up.Path.GetElem())
		if strings.Contains(p, "queue[name=3]") {
			t.Errorf("Set names the queue by index: %s", p)
		}
		bound = bound || strings.Contains(p, "queue[name=AF3]/config/queue-management-profile")
	}
	_, paths := SettingPaths(tg, key)
	if !bound || !strings.Contains(PathString(paths[0].GetElem()), "queue[name=AF3]") {
		t.Fatalf("Set %v, read-back %v", req.Update, paths)
	}
}

// sonic-gnmi reports a deleted CONFIG_DB field or entry as the entry with
// an empty object (never which, nor the fields left): the entry's leaves
// are dropped and it is named by Emptied, once, for a fresh read; the
// queue's setting no longer stands as it was.
func TestDecodeSonicEmptiedEntry(t *testing.T) {
	tg := Target{Name: "leaf0", Dialect: Sonic, Device: Devices["sonic"]}
	for _, c := range []struct{ path, val string }{
		{"/QUEUE", `{"Ethernet0|3": {}}`},
		{"/QUEUE/Ethernet0|3", `{}`},
	} {
		d := NewDecoder(tg, 3)
		for _, n := range append(sonicConfig("pg_lossless_100000_5m_profile"), sonicCounters(1_000, "100")...) {
			if err := d.Apply(n); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.Setting("Ethernet0", 3); err != nil {
			t.Fatalf("before: %v", err)
		}
		if e := d.Emptied(); len(e) != 0 {
			t.Fatalf("emptied before any delete: %v", e)
		}
		if err := d.Apply(sonicNote("CONFIG_DB", 2, c.path, c.val)); err != nil {
			t.Fatal(err)
		}
		if e := d.Emptied(); len(e) != 1 || e[0] != "/QUEUE/Ethernet0|3" {
			t.Fatalf("%s %s: emptied %v", c.path, c.val, e)
		}
		if e := d.Emptied(); len(e) != 0 {
			t.Fatalf("emptied twice: %v", e)
		}
		if b := d.Binding("Ethernet0", 3); b.ECNProfile != "" {
			t.Fatalf("%s %s: the queue still bound to %s", c.path, c.val, b.ECNProfile)
		}
	}
}
