package gnmipath

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"
	"gopkg.in/yaml.v3"

	"github.com/ecntune/ecntune/env"
)

// A Set request as a gnmic request file says the same thing: every update
// in order, its full path with origin (gnmic's origin:/path), its value
// decoded with its encoding, the deletes, and the prefix target apart
// (gnmic --target); a value with no gnmic form is an error naming its
// path.
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
		if g.Target != req.GetPrefix().GetTarget() {
			t.Errorf("%s: prefix target %q, want %q", tg.Dialect, g.Target, req.GetPrefix().GetTarget())
		}
		var f gnmicFile
		if err := yaml.Unmarshal(g.File, &f); err != nil {
			t.Fatalf("%s: %v\n%s", tg.Dialect, err, g.File)
		}
		if len(f.Updates) != len(req.Update) || len(f.Deletes) != len(req.Delete) || len(f.Updates) == 0 {
			t.Fatalf("%s: %d updates, %d deletes; want %d, %d\n%s", tg.Dialect, len(f.Updates), len(f.Deletes), len(req.Update), len(req.Delete), g.File)
		}
		for i, u := range req.Update {
			want := strings.TrimPrefix(Describe(req.Prefix, u.Path), req.GetPrefix().GetTarget()+" ")
			if f.Updates[i].Path != want {
				t.Errorf("%s: update %d path %q, want %q", tg.Dialect, i, f.Updates[i].Path, want)
			}
			var orig any
			switch v := u.GetVal().GetValue().(type) {
			case *gnmi.TypedValue_JsonIetfVal:
				json.Unmarshal(v.JsonIetfVal, &orig)
			case *gnmi.TypedValue_StringVal:
				orig = v.StringVal
			default:
				t.Fatalf("%s: a %T value in the test request", tg.Dialect, v)
			}
			a, _ := json.Marshal(orig)
			b, _ := json.Marshal(f.Updates[i].Value)
			if string(a) != string(b) && !reflect.DeepEqual(orig, f.Updates[i].Value) {
				t.Errorf("%s: update %d value %s, want %s", tg.Dialect, i, b, a)
			}
		}
	}
	bad := &gnmi.SetRequest{Update: []*gnmi.Update{{Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "x"}}}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_BytesVal{BytesVal: []byte{1}}}}}}
	if _, err := Gnmic(bad); err == nil || !strings.Contains(err.Error(), "/x") {
		t.Fatalf("a bytes value: %v", err)
	}
}
