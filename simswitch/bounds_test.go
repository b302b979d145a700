package simswitch

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmic/pkg/api/target"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
)

func elems(t *testing.T, s string) []*gnmi.PathElem {
	t.Helper()
	_, el, err := gnmipath.ParsePath(s)
	if err != nil {
		t.Fatal(err)
	}
	return el
}

func uval(x uint64) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: x}}
}

func jval(s string) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(s)}}
}

const minLeaf = "/qos/queue-management-profiles/queue-management-profile[name=ecn-Ethernet1-q3]/wred/uniform/config/min-threshold"

// getMin reads the min threshold of Ethernet1 queue 3's profile.
func getMin(t *testing.T, tg *target.Target) uint64 {
	t.Helper()
	resp, err := tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "sw0"}, Path: []*gnmi.Path{{Elem: elems(t, minLeaf)}}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := gnmipath.Uint(resp.GetNotification()[0].GetUpdate()[0].GetVal())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A Get or a subscription list with more paths than the limit is refused
// (the limit and the count named), and duplicate paths are answered once.
func TestRequestPathLimits(t *testing.T) {
	_, addr := start(t, gnmipath.OpenConfig, nil)
	tg := dial(t, addr)
	leaf := &gnmi.Path{Elem: elems(t, minLeaf)}
	many := func(n int) []*gnmi.Path {
		ps := make([]*gnmi.Path, n)
		for i := range ps {
			ps[i] = leaf
		}
		return ps
	}
	_, err := tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "sw0"}, Path: many(2000)})
	wantCode(t, err, codes.ResourceExhausted, "2000 paths")
	wantCode(t, err, codes.ResourceExhausted, "limit of 1024")

	resp, err := tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "sw0"}, Path: many(300)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetNotification()); n != 1 || len(resp.GetNotification()[0].GetUpdate()) != 1 {
		t.Fatalf("300 copies of one path: %d notifications, want 1 with 1 update", n)
	}

	list := &gnmi.SubscriptionList{Prefix: &gnmi.Path{Target: "sw0"}, Mode: gnmi.SubscriptionList_ONCE}
	for i := 0; i < 2000; i++ {
		list.Subscription = append(list.Subscription, &gnmi.Subscription{Path: leaf})
	}
	_, err = tg.SubscribeOnce(ctx5(t), &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: list}})
	wantCode(t, err, codes.ResourceExhausted, "2000 subscriptions")
	wantCode(t, err, codes.ResourceExhausted, "limit of 1024")
	list.Subscription = list.Subscription[:300]
	rs, err := tg.SubscribeOnce(ctx5(t), &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: list}})
	if err != nil {
		t.Fatal(err)
	}
	ups := 0
	for _, r := range rs {
		ups += len(r.GetUpdate().GetUpdate())
	}
	if ups != 1 {
		t.Fatalf("300 copies of one subscription: %d updates, want 1", ups)
	}
}

// A Set with more operations than the limit is refused whole.
func TestSetOperationLimit(t *testing.T) {
	_, addr := start(t, gnmipath.OpenConfig, nil)
	tg := dial(t, addr)
	before := getMin(t, tg)
	req := &gnmi.SetRequest{Prefix: &gnmi.Path{Target: "sw0"}}
	for i := 0; i < 5000; i++ {
		req.Update = append(req.Update, &gnmi.Update{Path: &gnmi.Path{Elem: elems(t, minLeaf)}, Val: uval(before + 1)})
	}
	_, err := tg.Set(ctx5(t), req)
	wantCode(t, err, codes.ResourceExhausted, "5000 operations")
	wantCode(t, err, codes.ResourceExhausted, "limit of 4096")
	if got := getMin(t, tg); got != before {
		t.Fatalf("refused Set changed min-threshold %d to %d", before, got)
	}
}

// Config.MaxMsgBytes bounds the size of a request.
func TestRequestSizeLimit(t *testing.T) {
	_, addr := start(t, gnmipath.OpenConfig, func(c *Config) { c.MaxMsgBytes = 256 << 10 })
	tg := dial(t, addr)
	big := "/qos/queue-management-profiles/queue-management-profile[name=" + strings.Repeat("x", 300<<10) + "]/wred/uniform/config/min-threshold"
	_, err := tg.Set(ctx5(t), &gnmi.SetRequest{Prefix: &gnmi.Path{Target: "sw0"}, Update: []*gnmi.Update{{Path: &gnmi.Path{Elem: elems(t, big)}, Val: uval(1)}}})
	wantCode(t, err, codes.ResourceExhausted, "262144")
}

// manyPorts serves one fake switch with so many ports that its whole tree
// is more than 4 MiB of gNMI.
// manyPortsN ports: a Get of everything is over a megabyte.
const manyPortsN = 2000

func manyPorts(t *testing.T) *target.Target { return manyPortsLimit(t, 0) }

// manyPortsLimit is manyPorts with a message limit (0: the default).
func manyPortsLimit(t *testing.T, limit int) *target.Target {
	f := newFake(manyPortsN)
	_, addr := start(t, gnmipath.OpenConfig, func(c *Config) { c.Engine = f; c.Step = 100 * time.Millisecond; c.MaxMsgBytes = limit })
	return dial(t, addr)
}

// A Get whose answer would exceed the message limit is refused with
// ResourceExhausted and the connection stays usable.
func TestGetResponseSizeLimit(t *testing.T) {
	tg := manyPortsLimit(t, 1<<20)
	_, err := tg.Get(ctxLarge(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "sw0"}, Path: []*gnmi.Path{{}}})
	wantCode(t, err, codes.ResourceExhausted, "Get response")
	wantCode(t, err, codes.ResourceExhausted, "1048576")
	if _, err := tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "sw0"}, Path: []*gnmi.Path{{Elem: elems(t, "/qos/state")}}}); err != nil {
		t.Fatalf("a small Get after a refused one: %v", err)
	}
}

// A subscription splits notifications larger than the message limit into
// messages under it.
func TestSubscribeSplitsLargeNotifications(t *testing.T) {
	tg := manyPortsLimit(t, 1<<20)
	list := &gnmi.SubscriptionList{Prefix: &gnmi.Path{Target: "sw0"}, Mode: gnmi.SubscriptionList_ONCE,
		Subscription: []*gnmi.Subscription{{Path: &gnmi.Path{}}}}
	rs, err := tg.SubscribeOnce(ctxLarge(t), &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: list}})
	if err != nil {
		t.Fatal(err)
	}
	ups, biggest := 0, 0
	for _, r := range rs {
		ups += len(r.GetUpdate().GetUpdate())
		biggest = max(biggest, proto.Size(r))
	}
	// manyPortsN ports, one lossless queue: 9 queue leaves, 6 PFC leaves, a
	// speed, a binding, a headroom and a 5-leaf profile each; and the
	// buffer size.
	if want := manyPortsN*(9+6+1+2+5) + 1; ups != want || biggest > 1<<20 || len(rs) < 3 {
		t.Fatalf("ONCE of everything: %d updates (want %d), largest message %d B", ups, want, biggest)
	}
}

func profileUpdates(t *testing.T, d gnmipath.Dialect, table string, first, n int) []*gnmi.Update {
	var out []*gnmi.Update
	for i := first; i < first+n; i++ {
		name := fmt.Sprintf("junk%d", i)
		if d == gnmipath.OpenConfig {
			out = append(out, &gnmi.Update{Path: &gnmi.Path{Elem: elems(t, "/qos/queue-management-profiles/queue-management-profile[name="+name+"]/wred/uniform/config")},
				Val: jval(`{"min-threshold":"1000","max-threshold":"2000","max-drop-probability-percent":5}`)})
			continue
		}
		v := `{"green_min_threshold":"1000","green_max_threshold":"2000","green_drop_probability":"5"}`
		if table == "BUFFER_PROFILE" {
			v = `{"size":"1000","xon":"0","xoff":"1000","pool":"ingress_lossless_pool","dynamic_th":"0"}`
		}
		out = append(out, &gnmi.Update{Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: table}, {Name: name}}}, Val: jval(v)})
	}
	return out
}

// sonicKeys are the keys of CONFIG_DB table of switch tg as a Get
// answers it (one update per field here).
func sonicKeys(t *testing.T, tg *target.Target, table string) map[string]bool {
	t.Helper()
	resp, err := tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: gnmipath.ConfigDB}, Path: []*gnmi.Path{{Elem: []*gnmi.PathElem{{Name: table}}}}})
	if err != nil {
		t.Fatalf("get %s: %v", table, err)
	}
	out := map[string]bool{}
	for _, n := range resp.GetNotification() {
		for _, u := range n.GetUpdate() {
			if el := u.GetPath().GetElem(); len(el) >= 2 && el[0].GetName() == table {
				out[el[1].GetName()] = true
			}
		}
	}
	return out
}

// A switch holds at most ProfilesPerQueue profiles (of each kind) per
// queue; a Set that would go beyond is refused whole.
func TestProfileLimit(t *testing.T) {
	for _, c := range []struct {
		d     gnmipath.Dialect
		table string
	}{{gnmipath.OpenConfig, "queue-management-profiles"}, {gnmipath.Sonic, "WRED_PROFILE"}, {gnmipath.Sonic, "BUFFER_PROFILE"}} {
		s, addr := start(t, c.d, nil)
		tg := dial(t, addr)
		prefix := &gnmi.Path{Target: "sw0"}
		if c.d == gnmipath.Sonic {
			prefix = &gnmi.Path{Target: gnmipath.ConfigDB}
		}
		// 4 ports, 8 queues each: 128 profiles. The switch starts with one
		// ECN (and one buffer) profile per lossless queue: 4.
		limit := 4 * 8 * len(s.Switches()[0].Ports)
		have := len(s.Switches()[0].Ports) * len(s.LosslessPriorities())
		// A valid change riding along with too many profiles is not
		// applied: in place on openconfig (one profile per queue); on
		// sonic the queues share AZURE_LOSSLESS, so the change creates the
		// queue's own profile, one more.
		key := "Ethernet1"
		b, more := gnmipath.Binding{ECNProfile: gnmipath.ECNProfileName(key, 3)}, 0
		if c.d == gnmipath.Sonic {
			have = len(sonicKeys(t, tg, c.table))
			b = gnmipath.Binding{ECNProfile: gnmipath.SonicSharedProfile, ECNShared: true}
			if c.table == "WRED_PROFILE" {
				more = 1
			}
		}
		ecnBefore, _ := s.Telemetry("sw0")
		valid, err := gnmipath.SetRequest(gnmipath.Target{Name: "sw0", Dialect: c.d}, envKey(key), settingFor(), b)
		if err != nil {
			t.Fatal(err)
		}
		req := &gnmi.SetRequest{Prefix: prefix, Update: append(valid.Update, profileUpdates(t, c.d, c.table, 0, limit-have+1-more)...)}
		_, err = tg.Set(ctx5(t), req)
		wantCode(t, err, codes.ResourceExhausted, fmt.Sprintf("%d", limit+1))
		wantCode(t, err, codes.ResourceExhausted, fmt.Sprintf("limit of %d", limit))
		if now, _ := s.Telemetry("sw0"); now.Ports[1].Queues[3].ECN != ecnBefore.Ports[1].Queues[3].ECN {
			t.Fatalf("%s %s: the refused Set changed the simulation", c.d, c.table)
		}
		// Up to the limit is fine; one more is refused.
		if c.d == gnmipath.Sonic {
			have = len(sonicKeys(t, tg, c.table))
		}
		if _, err := tg.Set(ctx5(t), &gnmi.SetRequest{Prefix: prefix, Update: profileUpdates(t, c.d, c.table, 0, limit-have)}); err != nil {
			t.Fatalf("%s %s: %v", c.d, c.table, err)
		}
		_, err = tg.Set(ctx5(t), &gnmi.SetRequest{Prefix: prefix, Update: profileUpdates(t, c.d, c.table, 10_000, 1)})
		wantCode(t, err, codes.ResourceExhausted, fmt.Sprintf("limit of %d", limit))
		// Deleting one makes room for one.
		del := &gnmi.Path{Elem: []*gnmi.PathElem{{Name: c.table}, {Name: "junk0"}}}
		if c.d == gnmipath.OpenConfig {
			del = &gnmi.Path{Elem: elems(t, "/qos/queue-management-profiles/queue-management-profile[name=junk0]")}
		}
		if _, err := tg.Set(ctx5(t), &gnmi.SetRequest{Prefix: prefix, Delete: []*gnmi.Path{del}, Update: profileUpdates(t, c.d, c.table, 10_000, 1)}); err != nil {
			t.Fatalf("%s %s: delete one, add one: %v", c.d, c.table, err)
		}
	}
}

// Set refuses configuration of interfaces the switch does not have and
// names longer than MaxNameBytes.
func TestSetUnknownInterfaceAndLongNames(t *testing.T) {
	_, addr := start(t, gnmipath.Sonic, nil)
	tg := dial(t, addr)
	prefix := &gnmi.Path{Target: gnmipath.ConfigDB}
	_, err := tg.Set(ctx5(t), &gnmi.SetRequest{Prefix: prefix, Update: []*gnmi.Update{{
		Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "QUEUE"}, {Name: "Ethernet99|0"}}}, Val: jval(`{"wred_profile":"ecn-Ethernet0-q3"}`)}}})
	wantCode(t, err, codes.NotFound, `interface "Ethernet99"`)
	long := strings.Repeat("p", 200)
	_, err = tg.Set(ctx5(t), &gnmi.SetRequest{Prefix: prefix, Update: []*gnmi.Update{{
		Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "WRED_PROFILE"}, {Name: long}}}, Val: jval(`{"green_min_threshold":"1000"}`)}}})
	wantCode(t, err, codes.InvalidArgument, "200 bytes")
	_, err = tg.Set(ctx5(t), &gnmi.SetRequest{Prefix: prefix, Update: []*gnmi.Update{{
		Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "QUEUE"}, {Name: "Ethernet0|0"}}}, Val: jval(`{"wred_profile":"` + long + `"}`)}}})
	wantCode(t, err, codes.InvalidArgument, "200 bytes")
}

func envKey(port string) env.QueueKey { return env.QueueKey{Target: "sw0", Port: port, Queue: 3} }

func settingFor() env.Setting { return env.Setting{KminBytes: 111_000, KmaxBytes: 222_000, Pmax: 0.05} }

// A Set that writes many leaves (here 30k junk profiles in one JSON value,
// 3 MB) is decoded and checked off the simulation's goroutine: the
// simulation keeps its pace meanwhile (decoding it there stalled the
// simulation for half a second per Set).
func TestBigSetDoesNotStallSimulation(t *testing.T) {
	if raceEnabled {
		t.Skip("judges the simulation's pace, which the race detector slows several times over (the 3 MB Set outlived its 10 s deadline under -race)")
	}
	s, addr := start(t, gnmipath.Sonic, nil)
	tg := dial(t, addr)
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < 30000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"junk%d":{"green_min_threshold":"1000","green_max_threshold":"2000","green_drop_probability":"5"}`, i)
	}
	b.WriteString("}")
	req := &gnmi.SetRequest{Prefix: &gnmi.Path{Target: gnmipath.ConfigDB},
		Update: []*gnmi.Update{{Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "WRED_PROFILE"}}}, Val: jval(b.String())}}}
	for k := 0; k < 3; k++ {
		done := make(chan error, 1)
		go func() { _, err := tg.Set(ctx5(t), req); done <- err }()
		// the longest wall time without a simulation step while the Set runs
		last, lastAt, gap := simenv.Time(-1), time.Now(), time.Duration(0)
		for running := true; running; {
			select {
			case err := <-done:
				wantCode(t, err, codes.ResourceExhausted, "limit of 128")
				running = false
			case <-time.After(5 * time.Millisecond):
			}
			if now, _ := s.Status(); now != last {
				last, lastAt = now, time.Now()
			}
			gap = max(gap, time.Since(lastAt))
		}
		if gap > 150*time.Millisecond {
			t.Fatalf("Set %d: the simulation made no step for %v", k, gap)
		}
	}
}

// A timescale below 1 (faster than real time) is a simulated time, not a
// division by zero (demo and simswitch panicked printing it).
func TestSimulatedBelowRealTime(t *testing.T) {
	for _, c := range []struct {
		ts   float64
		want simenv.Time
	}{{0.5, 2 * simenv.Second}, {0.001, 1000 * simenv.Second}, {1000, simenv.Millisecond}} {
		if got := Simulated(time.Second, c.ts); got != c.want {
			t.Errorf("timescale %g: 1 s wall = %v simulated, want %v", c.ts, got, c.want)
		}
	}
}

// A timescale under MinTimescale is refused, saying the floor: at 1e-9
// one wall second stood for an overflowed simulated time (-2562h).
func TestTimescaleFloor(t *testing.T) {
	for _, ts := range []float64{1e-9, 1e-4} {
		if err := CheckTimescale(ts); err == nil || !strings.Contains(err.Error(), "below the smallest timescale") {
			t.Errorf("timescale %g: %v", ts, err)
		}
	}
	for _, ts := range []float64{MinTimescale, 0.01, 1, 1000} {
		if err := CheckTimescale(ts); err != nil {
			t.Errorf("timescale %g: %v", ts, err)
		}
	}
	if hour := Simulated(time.Hour, MinTimescale); hour <= 0 {
		t.Errorf("an hour of wall time at timescale %g: simulated %d", MinTimescale, hour)
	}
	if _, _, err := Start(context.Background(), Config{Sim: simenv.DefaultConfig(), Listen: "127.0.0.1:0", Timescale: 1e-9}); err == nil ||
		!strings.Contains(err.Error(), "below the smallest timescale") {
		t.Errorf("Start at timescale 1e-9: %v", err)
	}
}
