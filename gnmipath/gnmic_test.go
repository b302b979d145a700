package gnmipath

import (
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/ecntune/ecntune/env"
)

// A Set request as a gnmic prototext file is the same request when gnmic
// reads it back (prototext.Unmarshal, as gnmic's
// CreateSetRequestFromProtoFile): every update in order, its value, and
// the prefix with its target (which a gnmic YAML request file dropped).
func TestGnmicRequestFile(t *testing.T) {
	k := env.QueueKey{Target: "sw", Port: "Ethernet2", Queue: 3}
	st := env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.05}
	for _, tg := range []Target{{Name: "sw", Dialect: OpenConfig, Device: Devices["ecntune"]}, {Name: "sw", Dialect: Sonic, Device: Devices["sonic"]}} {
		req, err := SetRequest(tg, k, st, Binding{})
		if err != nil {
			t.Fatal(err)
		}
		g, err := Gnmic(req)
		if err != nil {
			t.Fatal(err)
		}
		if g.Target != req.GetPrefix().GetTarget() || (tg.Dialect == OpenConfig && g.Target != "sw") {
			t.Errorf("%s: prefix target %q, want %q", tg.Dialect, g.Target, req.GetPrefix().GetTarget())
		}
		var back gnmi.SetRequest
		if err := prototext.Unmarshal(g.File, &back); err != nil {
			t.Fatalf("%s: %v\n%s", tg.Dialect, err, g.File)
		}
		if !proto.Equal(&back, req) {
			t.Errorf("%s: gnmic reads\n%s\nwant\n%s", tg.Dialect, prototext.Format(&back), prototext.Format(req))
		}
	}
}
