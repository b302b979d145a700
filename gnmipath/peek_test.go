package gnmipath

import (
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/protobuf/proto"
)

// PeekWire says a notification carries counters when it carries queue
// counters, wherever the prefix ends; a port's speed, a binding, PFC or
// the shared buffer are no counters (any "state" element counted, so a
// port speed stamped with the time it last changed moved the stream's
// clock back and forth every sample).
func TestPeekWireCounters(t *testing.T) {
	q := "/qos/interfaces/interface[interface-id=Ethernet1]/output/queues/queue[name=3]"
	for _, c := range []struct {
		prefix, path string
		want         bool
	}{
		{"", q + "/state/transmit-pkts", true},
		{q, "state/transmit-pkts", true},
		{q + "/state", "transmit-octets", true},
		{"/qos/interfaces/interface[interface-id=Ethernet1]/output/queues", "queue[name=3]/state/dropped-pkts", true},
		{"", "/interfaces/interface[name=Ethernet1]/ethernet/state/port-speed", false},
		{"/interfaces/interface[name=Ethernet1]/ethernet/state", "port-speed", false},
		{"", q + "/config/queue-management-profile", false},
		{"/interfaces", "interface[name=Ethernet1]/ethernet/pfc/priorities/priority[index=3]/state/in-frames", false},
		{"/qos/state", "shared-buffer-size", false},
	} {
		n := &gnmi.Notification{Timestamp: 7, Prefix: &gnmi.Path{Target: "sw0"}}
		if c.prefix != "" {
			_, n.Prefix.Elem, _ = ParsePath(c.prefix)
		}
		_, el, _ := ParsePath(c.path)
		n.Update = []*gnmi.Update{{Path: &gnmi.Path{Elem: el}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 1}}}}
		b, err := proto.Marshal(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}})
		if err != nil {
			t.Fatal(err)
		}
		r, err := PeekWire(OpenConfig, b)
		if err != nil || r.Timestamp != 7 || r.Counters != c.want {
			t.Errorf("prefix %q path %q: counters %v (%v), want %v", c.prefix, c.path, r.Counters, err, c.want)
		}
	}
}
