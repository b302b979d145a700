package simswitch

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmic/pkg/api/target"
	"google.golang.org/grpc/codes"

	"github.com/ecntune/ecntune/gnmipath"
)

func realSonic(t *testing.T, write bool, model string) string {
	_, addr := start(t, "", func(c *Config) { c.Device, c.SonicNativeWrite, c.SonicBufferModel = "sonic", write, model })
	return addr
}

func sonicGet(t *testing.T, addr, target, path string) (map[string]any, error) {
	tg := dial(t, addr)
	resp, err := tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: target}, Path: []*gnmi.Path{{Elem: elems(t, path)}}, Encoding: gnmi.Encoding_JSON_IETF})
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(resp.GetNotification()[0].GetUpdate()[0].GetVal().GetJsonIetfVal(), &m); err != nil {
		t.Fatal(err)
	}
	return m, nil
}

func sonicSet(t *testing.T, addr string, ups ...*gnmi.Update) error {
	tg := dial(t, addr)
	_, err := tg.Set(ctx5(t), &gnmi.SetRequest{Prefix: &gnmi.Path{Origin: "sonic-db", Elem: elems(t, "/CONFIG_DB/localhost")}, Update: ups})
	return err
}

func sonicDelete(t *testing.T, addr, path string) error {
	tg := dial(t, addr)
	_, err := tg.Set(ctx5(t), &gnmi.SetRequest{Prefix: &gnmi.Path{Origin: "sonic-db", Elem: elems(t, "/CONFIG_DB/localhost")}, Delete: []*gnmi.Path{{Elem: elems(t, path)}}})
	return err
}

// COUNTERS_DB as sonic-gnmi serves it: object ids with name maps, the
// virtual paths keyed by alias (by name for one port) with periodic
// watermarks; the per-queue path ecntune's idealised layout uses is not
// there.
func TestRealSonicCounters(t *testing.T) {
	addr := realSonic(t, false, "static")
	q, err := sonicGet(t, addr, "COUNTERS_DB", "/COUNTERS/Ethernet*/Queues")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := q["etp2:3"]; !ok {
		t.Fatalf("queues not keyed by alias: %v", keysOf(q))
	}
	wm, ok := q["etp2:3:periodic"].(map[string]any)
	if !ok || wm["SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES"] == nil {
		t.Fatalf("no periodic watermark: %v", q["etp2:3:periodic"])
	}
	if v, ok := q["etp2:3"].(map[string]any)["SAI_QUEUE_STAT_PACKETS"].(string); !ok || v == "" {
		t.Fatalf("counters are not strings: %v", q["etp2:3"])
	}
	one, err := sonicGet(t, addr, "COUNTERS_DB", "/COUNTERS/Ethernet1/Queues")
	if err != nil || one["Ethernet1:3"] == nil {
		t.Fatalf("one port's queues not keyed by name: %v %v", keysOf(one), err)
	}
	ports, err := sonicGet(t, addr, "COUNTERS_DB", "/COUNTERS/Ethernet*")
	if err != nil || ports["etp1"] == nil || ports["etp1"].(map[string]any)["SAI_PORT_STAT_PFC_3_RX_PKTS"] == nil {
		t.Fatalf("port counters: %v %v", keysOf(ports), err)
	}
	qmap, err := sonicGet(t, addr, "COUNTERS_DB", "/COUNTERS_QUEUE_NAME_MAP")
	if err != nil || !strings.HasPrefix(qmap["Ethernet1:3"].(string), "oid:0x") {
		t.Fatalf("queue name map: %v", err)
	}
	if _, err := sonicGet(t, addr, "COUNTERS_DB", "/COUNTERS/Ethernet1:3/SAI_QUEUE_STAT_PACKETS"); err == nil {
		t.Fatal("COUNTERS/<port>:<q>/FIELD answered: real COUNTERS is keyed by object id")
	}
	if _, err := sonicGet(t, addr, "APPL_DB", "/PORT_TABLE"); err == nil {
		t.Fatal("unknown database answered")
	}
}

// Subscriptions: SAMPLE of at least 1 s; TARGET_DEFINED is refused.
func TestRealSonicSubscribeRefusals(t *testing.T) {
	addr := realSonic(t, false, "static")
	for _, c := range []struct {
		name string
		sub  *gnmi.Subscription
		msg  string
	}{
		{"target defined", &gnmi.Subscription{Path: &gnmi.Path{Elem: elems(t, "/COUNTERS/Ethernet*/Queues")}, Mode: gnmi.SubscriptionMode_TARGET_DEFINED}, "not supported"},
		{"fast sample", &gnmi.Subscription{Path: &gnmi.Path{Elem: elems(t, "/COUNTERS/Ethernet*/Queues")}, Mode: gnmi.SubscriptionMode_SAMPLE, SampleInterval: uint64(100 * time.Millisecond)}, "minimum is 1s"},
	} {
		tg := dial(t, addr)
		req := &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
			Prefix: &gnmi.Path{Target: "COUNTERS_DB"}, Mode: gnmi.SubscriptionList_STREAM, Subscription: []*gnmi.Subscription{c.sub}}}}
		rc, ec := tg.SubscribeChan(ctx5(t), req, c.name)
		select {
		case e := <-ec:
			wantCode(t, e.Err, codes.InvalidArgument, c.msg)
		case r := <-rc:
			t.Fatalf("%s: answered %v", c.name, r)
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no answer", c.name)
		}
		tg.StopSubscription(c.name)
	}
}

// Writes: refused without native write; with it, the config updater's
// JSON patch semantics (a whole entry replaces the old one, a field
// patches it) checked against SONiC's YANG; under the dynamic buffer
// model there is no lossless profile to write.
func TestRealSonicWrites(t *testing.T) {
	ro := realSonic(t, false, "static")
	wantCode(t, sonicSet(t, ro, upd(t, "/WRED_PROFILE/ecn-Ethernet1-q3/green_min_threshold", `"300000"`)), codes.Unimplemented, "native write")

	addr := realSonic(t, true, "static")
	// every lossless queue starts on the shared AZURE_LOSSLESS
	if q, _ := sonicGet(t, addr, "CONFIG_DB", "/QUEUE/Ethernet1|3"); q["wred_profile"] != gnmipath.SonicSharedProfile {
		t.Fatalf("QUEUE|Ethernet1|3 %v: want wred_profile %s", q, gnmipath.SonicSharedProfile)
	}
	if err := sonicSet(t, addr, upd(t, "/WRED_PROFILE/AZURE_LOSSLESS/green_min_threshold", `"300000"`)); err != nil {
		t.Fatalf("field write: %v", err)
	}
	e, _ := sonicGet(t, addr, "CONFIG_DB", "/WRED_PROFILE/AZURE_LOSSLESS")
	if e["green_min_threshold"] != "300000" || e["green_max_threshold"] == nil {
		t.Fatalf("field write lost the entry's other fields: %v", e)
	}
	// a field of an entry not there: the JSON patch's add needs its
	// parent, and the whole Set is refused
	own := gnmipath.OwnProfileName("Ethernet1", 3)
	wantCode(t, sonicSet(t, addr, upd(t, "/WRED_PROFILE/"+own+"/green_min_threshold", `"300000"`)), codes.InvalidArgument, `member "`+own+`" not found`)
	// a whole entry creates it
	if err := sonicSet(t, addr, upd(t, "/WRED_PROFILE/"+own, `{"green_min_threshold": "300000", "green_max_threshold": "900000", "green_drop_probability": "5", "ecn": "ecn_all", "wred_green_enable": "true"}`)); err != nil {
		t.Fatalf("whole-entry create: %v", err)
	}
	// removing what is not there is refused too
	wantCode(t, sonicDelete(t, addr, "/WRED_PROFILE/nosuch"), codes.InvalidArgument, `member "nosuch" not found`)
	// a whole QUEUE entry replaces it: the scheduler is gone
	if err := sonicSet(t, addr, upd(t, "/QUEUE/Ethernet1|3", `{"wred_profile": "`+own+`"}`)); err != nil {
		t.Fatal(err)
	}
	if q, _ := sonicGet(t, addr, "CONFIG_DB", "/QUEUE/Ethernet1|3"); q["scheduler"] != nil {
		t.Fatalf("whole-entry write kept the scheduler: %v", q)
	}
	// a BUFFER_PROFILE written whole without its pool is refused
	wantCode(t, sonicSet(t, addr, upd(t, "/BUFFER_PROFILE/"+gnmipath.PGProfileName("Ethernet1", 3), `{"xoff": "60000", "size": "63072"}`)),
		codes.InvalidArgument, "pool is mandatory")
	// min above max, on a profile no queue uses
	wantCode(t, sonicSet(t, addr, upd(t, "/WRED_PROFILE/spare", `{"green_min_threshold": "900000", "green_max_threshold": "100000"}`)),
		codes.InvalidArgument, "above green_max_threshold")

	dyn := realSonic(t, true, "dynamic")
	pg, _ := sonicGet(t, dyn, "CONFIG_DB", "/BUFFER_PG")
	if v, _ := pg["Ethernet1|3"].(map[string]any); v["profile"] != "NULL" {
		t.Fatalf("dynamic model BUFFER_PG %v", pg)
	}
	// The table is absent: sonic-gnmi answers an empty object (seen on the
	// real server, TestRealSonicImitationMatchesServer).
	if bp, err := sonicGet(t, dyn, "CONFIG_DB", "/BUFFER_PROFILE"); err != nil || len(bp) != 0 {
		t.Fatalf("dynamic model has lossless profiles in CONFIG_DB: %v %v", bp, err)
	}
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A lossless PG's alpha as SONiC holds it: BUFFER_PROFILE dynamic_th =
// log2 alpha, served from the simulator's PG alpha; a written dynamic_th
// reaches the simulator for every PG bound to that profile; a value that
// is not an integer in -8..8 is refused and changes nothing.
func TestRealSonicAlpha(t *testing.T) {
	s, addr := start(t, "", func(c *Config) { c.Device, c.SonicNativeWrite, c.SonicBufferModel = "sonic", true, "static" })
	alphas := func() [4]float64 {
		truth, _ := s.Telemetry("sw0")
		var a [4]float64
		for i := range a {
			a[i] = truth.Ports[i].PG[3].Alpha
		}
		return a
	}
	if a := alphas(); a != [4]float64{0.125, 0.125, 0.125, 0.125} {
		t.Fatalf("simulator starts with alpha %v", a)
	}
	bp1, bp2 := gnmipath.PGProfileName("Ethernet1", 3), gnmipath.PGProfileName("Ethernet2", 3)
	if e, _ := sonicGet(t, addr, "CONFIG_DB", "/BUFFER_PROFILE/"+bp1); e["dynamic_th"] != "-3" {
		t.Fatalf("BUFFER_PROFILE|%s serves %v, want dynamic_th -3 (alpha 1/8)", bp1, e)
	}
	if err := sonicSet(t, addr, upd(t, "/BUFFER_PROFILE/"+bp1+"/dynamic_th", `"-1"`)); err != nil {
		t.Fatal(err)
	}
	if a := alphas(); a != [4]float64{0.125, 0.5, 0.125, 0.125} {
		t.Fatalf("after dynamic_th -1 on Ethernet1's profile: alpha %v", a)
	}
	if e, _ := sonicGet(t, addr, "CONFIG_DB", "/BUFFER_PROFILE/"+bp1); e["dynamic_th"] != "-1" || e["xoff"] == nil {
		t.Fatalf("read back %v", e)
	}
	// Ethernet2's PG bound to Ethernet1's profile takes its alpha; a
	// write of that profile reaches both.
	if err := sonicSet(t, addr, upd(t, "/BUFFER_PG/Ethernet2|3/profile", `"`+bp1+`"`)); err != nil {
		t.Fatal(err)
	}
	if err := sonicSet(t, addr, upd(t, "/BUFFER_PROFILE/"+bp1+"/dynamic_th", `"1"`)); err != nil {
		t.Fatal(err)
	}
	if a := alphas(); a != [4]float64{0.125, 2, 2, 0.125} {
		t.Fatalf("after dynamic_th 1 on a profile two PGs use: alpha %v", a)
	}
	for _, bad := range []struct{ v, msg string }{
		{`"half"`, `is not an integer`},
		{`"1.5"`, `is not an integer`},
		{`"9"`, `outside -8..8`},
		{`""`, `is not an integer`},
	} {
		wantCode(t, sonicSet(t, addr, upd(t, "/BUFFER_PROFILE/"+bp1+"/dynamic_th", bad.v)), codes.InvalidArgument, bad.msg)
		wantCode(t, sonicSet(t, addr, upd(t, "/BUFFER_PROFILE/"+bp2+"/dynamic_th", bad.v)), codes.InvalidArgument, "nothing changed")
	}
	if a := alphas(); a != [4]float64{0.125, 2, 2, 0.125} {
		t.Fatalf("refused writes changed alpha: %v", a)
	}
	if e, _ := sonicGet(t, addr, "CONFIG_DB", "/BUFFER_PROFILE/"+bp1); e["dynamic_th"] != "1" {
		t.Fatalf("refused writes changed CONFIG_DB: %v", e)
	}
}

// sonic-gnmi keys its Subscribe clients by the peer's address: a second
// Subscribe on one connection closes the first (InvalidArgument "queue:
// disposed"), unless stream multiplexing is on; one on another connection
// leaves it alone.
func TestRealSonicOneSubscribePerConnection(t *testing.T) {
	for _, mux := range []bool{false, true} {
		_, addr := start(t, "", func(c *Config) { c.Device, c.SonicStreamMultiplexing = "sonic", mux })
		sub := func(ctx context.Context, tg *target.Target) gnmi.GNMI_SubscribeClient {
			st, err := tg.Client.Subscribe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			req := &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
				Prefix: &gnmi.Path{Target: "COUNTERS_DB"}, Mode: gnmi.SubscriptionList_STREAM, Encoding: gnmi.Encoding_JSON_IETF,
				Subscription: []*gnmi.Subscription{{Path: &gnmi.Path{Elem: elems(t, "/COUNTERS/Ethernet*/Queues")},
					Mode: gnmi.SubscriptionMode_SAMPLE, SampleInterval: uint64(time.Second)}}}}}
			if err := st.Send(req); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Recv(); err != nil {
				t.Fatal(err)
			}
			return st
		}
		tg, other := dial(t, addr), dial(t, addr)
		first := sub(ctx5(t), tg)
		sub(ctx5(t), other)
		sub(ctx5(t), tg)
		var err error
		for err == nil {
			var m *gnmi.SubscribeResponse
			m, err = first.Recv()
			if mux && m.GetUpdate() != nil {
				break // the first stream lives on: a sample after the third Subscribe came
			}
		}
		switch {
		case mux && err != nil:
			t.Fatalf("with multiplexing the first stream ended: %v", err)
		case !mux:
			wantCode(t, err, codes.InvalidArgument, "queue: disposed")
		}
	}
}

// Ten queues a port by default, 0-7 unicast (the simulator's) and 8-9
// multicast, in the virtual path, the name, type and index maps and
// CONFIG_DB's QUEUE table, as many SONiC platforms have; PGs 0-7.
func TestRealSonicTenQueues(t *testing.T) {
	for _, c := range []struct{ queues, want int }{{0, 10}, {8, 8}, {20, 20}} {
		_, addr := start(t, "", func(cfg *Config) { cfg.Device, cfg.SonicQueues = "sonic", c.queues })
		q, err := sonicGet(t, addr, "COUNTERS_DB", "/COUNTERS/Ethernet*/Queues")
		if err != nil {
			t.Fatal(err)
		}
		last := "etp1:" + strconv.Itoa(c.want-1)
		if q[last] == nil || q["etp1:"+strconv.Itoa(c.want)] != nil {
			t.Fatalf("%d queues: keys %v", c.want, keysOf(q))
		}
		names, err1 := sonicGet(t, addr, "COUNTERS_DB", "/COUNTERS_QUEUE_NAME_MAP")
		types, err2 := sonicGet(t, addr, "COUNTERS_DB", "/COUNTERS_QUEUE_TYPE_MAP")
		pgs, err3 := sonicGet(t, addr, "COUNTERS_DB", "/COUNTERS_PG_NAME_MAP")
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatal(err1, err2, err3)
		}
		if types[names["Ethernet1:3"].(string)] != "SAI_QUEUE_TYPE_UNICAST" || len(pgs) != 8*len(q)/(2*c.want) {
			t.Fatalf("maps: %v %v", types, pgs)
		}
		if c.want > 8 && types[names["Ethernet1:"+strconv.Itoa(c.want-1)].(string)] != "SAI_QUEUE_TYPE_MULTICAST" {
			t.Fatalf("queue %d not multicast: %v", c.want-1, types)
		}
		cfgq, err := sonicGet(t, addr, "CONFIG_DB", "/QUEUE")
		if err != nil || cfgq["Ethernet1|"+strconv.Itoa(c.want-1)] == nil {
			t.Fatalf("QUEUE table: %v %v", keysOf(cfgq), err)
		}
	}
	if _, _, err := Start(context.Background(), Config{Sim: simConfig(), Device: "sonic", SonicQueues: 7, Listen: "127.0.0.1:0"}); err == nil ||
		!strings.Contains(err.Error(), "sonic queues 7") {
		t.Fatalf("7 queues: %v", err)
	}
}

// A sample's paths are stamped one after another, as sonic-gnmi's
// readers stamp each path when they read it: a sample is not one
// timestamp (the agent's client once took each stamp for a new sample),
// and each path's stamps still advance by the sample interval.
func TestRealSonicStaggeredStamps(t *testing.T) {
	addr := realSonic(t, false, "static")
	stamps := sonicSampleStamps(t, addr, 2)
	for s := 0; s < 2; s++ {
		a, b := stamps[s*2], stamps[s*2+1]
		if b-a != sonicPathStagger.Nanoseconds() {
			t.Errorf("sample %d: the second path stamped %d ns after the first, want %v (a sample of one timestamp)", s, b-a, sonicPathStagger)
		}
	}
	if d := stamps[2] - stamps[0]; d <= int64(sonicPathStagger)*2 {
		t.Errorf("the first path's stamps advanced %d ns from one sample to the next", d)
	}
}

// sonicSamplePaths are two paths of one COUNTERS_DB subscription list.
var sonicSamplePaths = []string{"/COUNTERS/Ethernet*/Queues", "/COUNTERS/Ethernet*"}

// sonicSampleStamps subscribes to sonicSamplePaths at addr (SAMPLE, 1 s)
// and returns the timestamps of the first n samples' notifications, in
// order (one a path a sample).
func sonicSampleStamps(t *testing.T, addr string, n int) []int64 {
	t.Helper()
	tg := dial(t, addr)
	var subs []*gnmi.Subscription
	for _, p := range sonicSamplePaths {
		subs = append(subs, &gnmi.Subscription{Path: &gnmi.Path{Elem: elems(t, p)}, Mode: gnmi.SubscriptionMode_SAMPLE, SampleInterval: uint64(time.Second)})
	}
	req := &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
		Prefix: &gnmi.Path{Target: "COUNTERS_DB"}, Mode: gnmi.SubscriptionList_STREAM, Subscription: subs}}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc, ec := tg.SubscribeChan(ctx, req, "stamps")
	defer tg.StopSubscription("stamps")
	var stamps []int64
	for len(stamps) < n*len(sonicSamplePaths) {
		select {
		case r := <-rc:
			if u := r.Response.GetUpdate(); u != nil {
				stamps = append(stamps, u.GetTimestamp())
			}
		case e := <-ec:
			t.Fatal(e.Err)
		case <-ctx.Done():
			t.Fatalf("%d notifications in 20 s, want %d", len(stamps), n*len(sonicSamplePaths))
		}
	}
	return stamps
}
