package simswitch

import (
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// A drop probability of 0% is a setting both schemas take (openconfig's
// uint8 percentage, SONiC's green_drop_probability 0..100): another
// writer's Set of it is taken and run (marking above kmax only), and the
// agent's decoder reads the queue with pmax 0, complete (it was refused as
// outside (0, 100]: the queue read malformed at every sample), while the
// agent itself still never writes it.
func TestDropProbabilityZero(t *testing.T) {
	for _, d := range []gnmipath.Dialect{gnmipath.OpenConfig, gnmipath.Sonic} {
		s, addr := start(t, d, nil)
		tg := dial(t, addr)
		tt := gnmipath.Target{Name: "sw0", Dialect: d}
		key := env.QueueKey{Target: "sw0", Port: "Ethernet2", Queue: 3}
		_, dec := onceSnapshot(t, tg, tt)
		prof := dec.Binding(key.Port, key.Queue).ECNProfile
		if prof == "" {
			t.Fatalf("%s: %s has no ECN profile", d, key)
		}
		req := &gnmi.SetRequest{Prefix: &gnmi.Path{Target: "sw0"}}
		if d == gnmipath.Sonic {
			req.Prefix.Target = gnmipath.ConfigDB
			req.Update = []*gnmi.Update{{Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "WRED_PROFILE"}, {Name: prof}, {Name: "green_drop_probability"}}},
				Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "0"}}}}
		} else {
			_, el, _ := gnmipath.ParsePath("/qos/queue-management-profiles/queue-management-profile[name=" + prof + "]/wred/uniform/config/max-drop-probability-percent")
			req.Update = []*gnmi.Update{{Path: &gnmi.Path{Elem: el}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 0}}}}
		}
		if _, err := tg.Set(ctx5(t), req); err != nil {
			t.Fatalf("%s: a profile's drop probability set to 0%%: %v", d, err)
		}
		truth, _ := s.Telemetry("sw0")
		if p := truth.Ports[2].Queues[3].ECN.Pmax; p != 0 {
			t.Fatalf("%s: the simulation runs pmax %g, want 0", d, p)
		}
		snap, _ := onceSnapshot(t, tg, tt) // fails on a refused value or an incomplete queue
		if st := snap.Queues[2].Setting; st.Pmax != 0 || st.KmaxBytes == 0 {
			t.Fatalf("%s: telemetry reads %+v, want pmax 0", d, st)
		}
		if err := gnmipath.ValidateSetting(key, snap.Queues[2].Setting); err == nil {
			t.Fatalf("%s: pmax 0 would be written by the agent", d)
		}
	}
}
