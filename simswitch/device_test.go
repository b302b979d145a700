package simswitch

import (
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"

	"github.com/ecntune/ecntune/gnmipath"
)

func deviceServer(t *testing.T, device string) (*Server, string) {
	return start(t, "", func(c *Config) { c.Device = device })
}

func get(t *testing.T, addr, origin, path string) (*gnmi.GetResponse, error) {
	tg := dial(t, addr)
	return tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "sw0", Origin: origin},
		Path: []*gnmi.Path{{Elem: elems(t, path)}}, Encoding: gnmi.Encoding_JSON_IETF})
}

func set(t *testing.T, addr, origin string, ups ...*gnmi.Update) error {
	tg := dial(t, addr)
	_, err := tg.Set(ctx5(t), &gnmi.SetRequest{Prefix: &gnmi.Path{Target: "sw0", Origin: origin}, Update: ups})
	return err
}

func upd(t *testing.T, path, json string) *gnmi.Update {
	return &gnmi.Update{Path: &gnmi.Path{Elem: elems(t, path)}, Val: jval(json)}
}

const (
	pfcState    = "/interfaces/interface[name=Ethernet1]/ethernet/pfc/priorities/priority[index=3]/state"
	headroomCfg = "/interfaces/interface[name=Ethernet1]/ethernet/pfc/priorities/priority[index=3]/config/headroom"
	srlPFC      = "/qos/interfaces/interface[interface-id=Ethernet1]/pfc/statistics/pfc-priority[index=3]"
	queueState  = "/qos/interfaces/interface[interface-id=Ethernet1]/output/queues/queue[name=3]/state"
	profileBase = "/qos/queue-management-profiles/queue-management-profile[name=new]"
)

// Each device serves its own leaves, at its own paths and origins, and
// lists its vendor's models.
func TestDeviceServesItsLeaves(t *testing.T) {
	leaves := func(r *gnmi.GetResponse) map[string]bool {
		m := map[string]bool{}
		for _, n := range r.GetNotification() {
			for _, u := range n.GetUpdate() {
				el := gnmipath.FullElems(n.GetPrefix(), u.GetPath())
				m[el[len(el)-1].GetName()] = true
			}
		}
		return m
	}
	for _, c := range []struct {
		device          string
		queueHas, lacks []string
		pfc             bool // the ethernet augment's PFC state exists
		model           string
	}{
		{"ecntune", []string{"ecn-marked-octets", "max-queue-len", "current-queue-len"}, nil, true, gnmipath.ExtensionModel},
		{"openconfig", []string{"ecn-marked-octets", "max-queue-len", "avg-queue-len"}, []string{"current-queue-len"}, false, "openconfig-qos"},
		{"arista-eos", []string{"transmit-octets", "ecn-marked-pkts"}, []string{"ecn-marked-octets", "max-queue-len", "avg-queue-len"}, true, "arista-pfc-history-counters-augment"},
		{"nokia-srl", []string{"transmit-octets", "ecn-marked-pkts"}, []string{"ecn-marked-octets", "max-queue-len"}, false, "srl_nokia-qos"},
	} {
		t.Run(c.device, func(t *testing.T) {
			_, addr := deviceServer(t, c.device)
			r, err := get(t, addr, "openconfig", queueState)
			if err != nil {
				t.Fatal(err)
			}
			got := leaves(r)
			for _, l := range c.queueHas {
				if !got[l] {
					t.Errorf("queue state lacks %s: %v", l, got)
				}
			}
			for _, l := range c.lacks {
				if got[l] {
					t.Errorf("queue state has %s, which %s does not serve", l, c.device)
				}
			}
			r, err = get(t, addr, "openconfig", pfcState)
			if c.pfc != (err == nil) {
				t.Fatalf("PFC state: %v (want served: %v)", err, c.pfc)
			}
			if !c.pfc {
				wantCode(t, err, codes.NotFound, "matches no data")
			}
			if c.device == "arista-eos" && !leaves(r)["pfc-on-total-rx-time"] {
				t.Errorf("arista-eos PFC state lacks pfc-on-total-rx-time: %v", leaves(r))
			}
			caps, err := dial(t, addr).Capabilities(ctx5(t))
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, m := range caps.GetSupportedModels() {
				found = found || m.GetName() == c.model
			}
			if !found {
				t.Errorf("Capabilities do not list %s", c.model)
			}
			if d, _ := gnmipath.InferDevice(modelNames(caps)); d.Name != c.device {
				t.Errorf("Capabilities infer %s, want %s", d.Name, c.device)
			}
		})
	}
}

func modelNames(c *gnmi.CapabilityResponse) []string {
	var out []string
	for _, m := range c.GetSupportedModels() {
		out = append(out, m.GetName())
	}
	return out
}

// SR Linux's native PFC statistics are served under their origin only.
func TestDeviceNativeOrigin(t *testing.T) {
	_, addr := deviceServer(t, "nokia-srl")
	r, err := get(t, addr, "srl_nokia", srlPFC)
	if err != nil || len(r.GetNotification()) == 0 {
		t.Fatalf("native PFC statistics: %v", err)
	}
	if o := r.GetNotification()[0].GetPrefix().GetOrigin(); o != "srl_nokia" {
		t.Fatalf("notification origin %q, want srl_nokia", o)
	}
	_, err = get(t, addr, "openconfig", srlPFC)
	wantCode(t, err, codes.NotFound, "matches no data")
	_, err = get(t, addr, "arista", srlPFC)
	wantCode(t, err, codes.Unimplemented, "origin")
}

// Writes outside a device's schema or to read-only leaves are refused, a
// strict device creates a list entry only with its key leaf and resolves
// every profile reference, and no device takes min > max, bound or not.
func TestDeviceRefusesWrites(t *testing.T) {
	_, oc := deviceServer(t, "openconfig")
	wantCode(t, set(t, oc, "openconfig", upd(t, headroomCfg, `"60000"`)), codes.NotFound, "no settable per-PG headroom")
	_, ar := deviceServer(t, "arista-eos")
	wantCode(t, set(t, ar, "openconfig", upd(t, headroomCfg, `"60000"`)), codes.InvalidArgument, "read-only")
	_, ec := deviceServer(t, "ecntune")
	if err := set(t, ec, "", upd(t, headroomCfg, `"60000"`)); err != nil {
		t.Fatalf("ecntune headroom: %v", err)
	}

	wred := func(min, max string) []*gnmi.Update {
		return []*gnmi.Update{upd(t, profileBase+"/wred/uniform/config/min-threshold", min),
			upd(t, profileBase+"/wred/uniform/config/max-threshold", max),
			upd(t, profileBase+"/wred/uniform/config/max-drop-probability-percent", "10")}
	}
	wantCode(t, set(t, oc, "openconfig", wred(`"100000"`, `"400000"`)...), codes.InvalidArgument, "no config/name")
	named := append(wred(`"100000"`, `"400000"`), upd(t, profileBase+"/config/name", `"new"`))
	if err := set(t, oc, "openconfig", named...); err != nil {
		t.Fatalf("profile with its key leaf: %v", err)
	}
	wantCode(t, set(t, oc, "openconfig", upd(t, "/qos/interfaces/interface[interface-id=Ethernet1]/output/queues/queue[name=3]/config/queue-management-profile", `"ghost"`)),
		codes.InvalidArgument, "does not exist")
	// min > max on a profile no queue uses
	wantCode(t, set(t, oc, "openconfig", wred(`"900000"`, `"400000"`)...), codes.InvalidArgument, "above kmax")
	wantCode(t, set(t, ec, "", append(wred(`"900000"`, `"400000"`), upd(t, profileBase+"/config/name", `"new"`))...), codes.InvalidArgument, "above kmax")
}

// max-drop-probability-percent is a uint8: a JSON number, not a string,
// in JSON_IETF (RFC 7951 quotes only 64-bit integers).
func TestPercentIsAJSONNumber(t *testing.T) {
	_, addr := deviceServer(t, "openconfig")
	r, err := get(t, addr, "openconfig", "/qos/queue-management-profiles/queue-management-profile[name=ecn-Ethernet1-q3]/wred/uniform/config/max-drop-probability-percent")
	if err != nil {
		t.Fatal(err)
	}
	v := r.GetNotification()[0].GetUpdate()[0].GetVal().GetJsonIetfVal()
	if len(v) == 0 || v[0] == '"' {
		t.Fatalf("max-drop-probability-percent encoded as %s", v)
	}
}

// Arista EOS does not serve its neighbours' LLDP system capabilities
// (switch-knobs §7): the imitation leaves them out, names and ids stay.
func TestAristaServesNoLLDPCapabilities(t *testing.T) {
	for _, dev := range []string{"arista-eos", "openconfig"} {
		_, addr := start(t, gnmipath.OpenConfig, func(c *Config) { c.Device = dev })
		r, err := get(t, addr, "openconfig", "/lldp/interfaces/interface[name=*]/neighbors")
		if err != nil {
			t.Fatalf("%s: %v", dev, err)
		}
		var caps, names int
		for _, n := range r.GetNotification() {
			for _, u := range n.GetUpdate() {
				s := gnmipath.PathString(u.GetPath().GetElem()) + string(u.GetVal().GetJsonIetfVal())
				caps += strings.Count(s, "capabilit")
				names += strings.Count(s, "system-name")
			}
		}
		if names == 0 || (dev == "arista-eos") != (caps == 0) {
			t.Errorf("%s: %d capability mentions, %d system names", dev, caps, names)
		}
	}
}
