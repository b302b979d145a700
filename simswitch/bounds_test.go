package simswitch

import (
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmic/pkg/api/target"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/ecntune/ecntune/agent/gnmipath"
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
func manyPorts(t *testing.T) *target.Target {
	f := newFake(2000)
	_, addr := start(t, gnmipath.OpenConfig, func(c *Config) { c.Engine = f; c.Step = 100 * time.Millisecond })
	return dial(t, addr)
}

// A Get whose answer would exceed the message limit is refused with
// ResourceExhausted and the connection stays usable.
func TestGetResponseSizeLimit(t *testing.T) {
	tg := manyPorts(t)
	_, err := tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "sw0"}, Path: []*gnmi.Path{{}}})
	wantCode(t, err, codes.ResourceExhausted, "Get response")
	wantCode(t, err, codes.ResourceExhausted, "4194304")
	if _, err := tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "sw0"}, Path: []*gnmi.Path{{Elem: elems(t, "/qos/state")}}}); err != nil {
		t.Fatalf("a small Get after a refused one: %v", err)
	}
}

// A subscription splits notifications larger than the message limit into
// messages under it.
func TestSubscribeSplitsLargeNotifications(t *testing.T) {
	tg := manyPorts(t)
	list := &gnmi.SubscriptionList{Prefix: &gnmi.Path{Target: "sw0"}, Mode: gnmi.SubscriptionList_ONCE,
		Subscription: []*gnmi.Subscription{{Path: &gnmi.Path{}}}}
	rs, err := tg.SubscribeOnce(ctx5(t), &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: list}})
	if err != nil {
		t.Fatal(err)
	}
	ups, biggest := 0, 0
	for _, r := range rs {
		ups += len(r.GetUpdate().GetUpdate())
		biggest = max(biggest, proto.Size(r))
	}
	// 2000 ports, one lossless queue: 9 queue leaves, 6 PFC leaves, a speed,
	// a binding, a headroom and a 5-leaf profile each; and the buffer size.
	if want := 2000*(9+6+1+2+5) + 1; ups != want || biggest > 4<<20 {
		t.Fatalf("ONCE of everything: %d updates (want %d), largest message %d B", ups, want, biggest)
	}
}
