package gnmipath

import (
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"
)

// FuzzApply feeds arbitrary paths and JSON values to the decoder and to
// ApplySet: bad input must give errors, never panics.
func FuzzApply(f *testing.F) {
	for _, s := range []struct{ target, path, val string }{
		{"leaf0", "/qos/interfaces/interface[interface-id=Ethernet0]/output/queues/queue[name=3]/state/transmit-pkts", `"12"`},
		{"leaf0", "/qos/queue-management-profiles/queue-management-profile[name=p]/wred/uniform/config", `{"min-threshold":"5","max-drop-probability-percent":101}`},
		{"CONFIG_DB", "/WRED_PROFILE/x", `{"green_min_threshold":"-1","ecn":"ecn_all"}`},
		{"CONFIG_DB", "/BUFFER_PG/Ethernet0|4-3/profile", `"[BUFFER_PROFILE|p]"`},
		{"COUNTERS_DB", "/COUNTERS/Ethernet0:9/SAI_QUEUE_STAT_PACKETS", `"1e3"`},
		{"COUNTERS_DB", "/COUNTERS/Ethernet0/SAI_PORT_STAT_PFC_x_RX_PKTS", `[1,2]`},
		{"", "sonic-db:/CONFIG_DB/localhost/QUEUE/Ethernet0|3", `{"wred_profile":null}`},
		{"leaf0", "/interfaces/interface[name=Ethernet0]/ethernet/state/port-speed", `"SPEED_-5GB"`},
	} {
		f.Add(s.target, s.path, s.val)
	}
	f.Fuzz(func(t *testing.T, target, path, val string) {
		origin, el, err := ParsePath(path)
		if err != nil {
			return
		}
		tv := &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(val)}}
		for _, d := range []Dialect{OpenConfig, Sonic} {
			dec := NewDecoder(Target{Name: "leaf0", Dialect: d})
			n := &gnmi.Notification{Prefix: &gnmi.Path{Target: target, Origin: origin},
				Update: []*gnmi.Update{{Path: &gnmi.Path{Elem: el}, Val: tv}, {Path: &gnmi.Path{Elem: el}}},
				Delete: []*gnmi.Path{{Elem: el}}}
			_ = dec.Apply(n)
			dec.Snapshot()
			_ = dec.Binding("Ethernet0", 3)
			db, rest, err := Route(d, "", "leaf0", target, origin, el)
			if err != nil {
				continue
			}
			tr := Tree{}
			_ = ApplySet(d, tr, []SetOp{{Op: "replace", DB: db, Elems: rest, Val: tv}, {Op: "delete", DB: db, Elems: rest}})
			Resolve(d, tr, "Ethernet0", 3)
		}
	})
}
