package gnmipath

import (
	"strconv"
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// Notifications below are written by hand in the shape each kind of
// server sends (per-leaf updates under a prefix carrying target and
// origin; counter64 as JSON_IETF strings or typed uints; list entries in
// RFC 7951 arrays), not produced by this package's encoder.

func ju(v string) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(v)}}
}
func tu(v uint64) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: v}}
}

func leafUpd(t *testing.T, path string, v *gnmi.TypedValue) *gnmi.Update {
	t.Helper()
	_, el, err := ParsePath(path)
	if err != nil {
		t.Fatal(err)
	}
	return &gnmi.Update{Path: &gnmi.Path{Elem: el}, Val: v}
}

func note(origin string, ts int64, ups ...*gnmi.Update) *gnmi.Notification {
	return &gnmi.Notification{Timestamp: ts, Prefix: &gnmi.Path{Target: "leaf1", Origin: origin}, Update: ups}
}

// bindingNotes are a queue's binding and its profile as an openconfig
// server answers a Get of the profile table: one update whose value is
// the RFC 7951 JSON of the list, entries in an array, module-qualified
// top member.
func bindingNotes(t *testing.T, origin string) []*gnmi.Notification {
	return []*gnmi.Notification{
		note(origin, 1, leafUpd(t, "/qos/interfaces/interface[interface-id=Ethernet1]/output/queues/queue[name=3]/config/queue-management-profile", ju(`"LOSSLESS"`))),
		note(origin, 1, leafUpd(t, "/qos/queue-management-profiles", ju(`{"openconfig-qos:queue-management-profile":[
			{"name":"LOSSLESS","config":{"name":"LOSSLESS"},"wred":{"uniform":{"config":{"min-threshold":"150000","max-threshold":"1500000","max-drop-probability-percent":10,"enable-ecn":true}}}},
			{"name":"OTHER","config":{"name":"OTHER"},"wred":{"uniform":{"config":{"min-threshold":"1","max-threshold":"2","max-drop-probability-percent":1,"enable-ecn":true}}}}]}`))),
		note(origin, 1, leafUpd(t, "/interfaces/interface[name=Ethernet1]/ethernet/state/port-speed", ju(`"openconfig-if-ethernet:SPEED_100GB"`))),
	}
}

const ocq = "/qos/interfaces/interface[interface-id=Ethernet1]/output/queues/queue[name=3]/state/"

func TestDecodeDevices(t *testing.T) {
	cases := []struct {
		device string
		notes  func(t *testing.T, ts int64, k uint64) []*gnmi.Notification
		check  func(t *testing.T, q env.QueueSample)
	}{
		{
			// The official models: queue counters and lengths, no PFC.
			device: "openconfig",
			notes: func(t *testing.T, ts int64, k uint64) []*gnmi.Notification {
				return []*gnmi.Notification{note("openconfig", ts,
					leafUpd(t, ocq+"transmit-pkts", ju(`"`+u(1000*k)+`"`)), leafUpd(t, ocq+"transmit-octets", ju(`"`+u(1_000_000*k)+`"`)),
					leafUpd(t, ocq+"dropped-pkts", ju(`"0"`)), leafUpd(t, ocq+"dropped-octets", ju(`"0"`)),
					leafUpd(t, ocq+"ecn-marked-pkts", ju(`"`+u(10*k)+`"`)), leafUpd(t, ocq+"ecn-marked-octets", ju(`"`+u(10_000*k)+`"`)),
					leafUpd(t, ocq+"max-queue-len", ju(`"250000"`)), leafUpd(t, ocq+"avg-queue-len", ju(`"50000"`)))}
			},
			check: func(t *testing.T, q env.QueueSample) {
				if q.MarkedBytes == 0 || q.MaxQueueBytes != 250000 || q.AvgQueueBytes != 50000 {
					t.Fatalf("sample %+v", q)
				}
			},
		},
		{
			// Arista: counters without marked octets or lengths; PFC frames
			// from its ethernet augment, paused time from the history
			// counters augment; PROTO-typed values.
			device: "arista-eos",
			notes: func(t *testing.T, ts int64, k uint64) []*gnmi.Notification {
				pfc := "/interfaces/interface[name=Ethernet1]/ethernet/pfc/priorities/priority[index=3]/state/"
				return []*gnmi.Notification{
					note("openconfig", ts, leafUpd(t, ocq+"transmit-pkts", tu(1000*k)), leafUpd(t, ocq+"transmit-octets", tu(1_000_000*k)),
						leafUpd(t, ocq+"dropped-pkts", tu(0)), leafUpd(t, ocq+"dropped-octets", tu(0)), leafUpd(t, ocq+"ecn-marked-pkts", tu(10*k))),
					note("openconfig", ts, leafUpd(t, pfc+"in-frames", tu(7*k)), leafUpd(t, pfc+"out-frames", tu(3*k)),
						leafUpd(t, pfc+"pfc-on-total-rx-time", tu(5000*k))),
				}
			},
			check: func(t *testing.T, q env.QueueSample) {
				if q.PauseRx == 0 || q.PauseTx == 0 || q.PausedNs == 0 || q.MarkedPkts == 0 {
					t.Fatalf("sample %+v", q)
				}
			},
		},
		{
			// SR Linux: PFC statistics from its native model, under its
			// own origin; queue counters through openconfig.
			device: "nokia-srl",
			notes: func(t *testing.T, ts int64, k uint64) []*gnmi.Notification {
				pfc := "/qos/interfaces/interface[interface-id=Ethernet1]/pfc/statistics/pfc-priority[index=3]/"
				return []*gnmi.Notification{
					note("openconfig", ts, leafUpd(t, ocq+"transmit-pkts", ju(`"`+u(1000*k)+`"`)), leafUpd(t, ocq+"transmit-octets", ju(`"`+u(1_000_000*k)+`"`)),
						leafUpd(t, ocq+"dropped-pkts", ju(`"0"`)), leafUpd(t, ocq+"dropped-octets", ju(`"0"`)), leafUpd(t, ocq+"ecn-marked-pkts", ju(`"`+u(10*k)+`"`))),
					note("srl_nokia", ts, leafUpd(t, pfc+"pfc-pause-frames-received", ju(`"`+u(7*k)+`"`)), leafUpd(t, pfc+"pfc-pause-frames-generated", ju(`"`+u(3*k)+`"`))),
				}
			},
			check: func(t *testing.T, q env.QueueSample) {
				if q.PauseRx == 0 || q.PauseTx == 0 || q.PausedNs != 0 {
					t.Fatalf("sample %+v", q)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.device, func(t *testing.T) {
			dev := Devices[c.device]
			d := NewDecoder(Target{Name: "leaf1", Dialect: OpenConfig, Device: dev}, 3)
			for _, n := range append(bindingNotes(t, "openconfig"), c.notes(t, 1_000_000, 1)...) {
				if err := d.Apply(n); err != nil {
					t.Fatal(err)
				}
			}
			snap, inc := d.Snapshot()
			if len(inc) > 0 || len(snap.Queues) != 1 {
				t.Fatalf("queues %d, incomplete %v", len(snap.Queues), inc)
			}
			q := snap.Queues[0]
			if q.Missing != dev.Missing {
				t.Fatalf("missing %q, want %q", q.Missing, dev.Missing)
			}
			if q.Setting != (env.Setting{KminBytes: 150000, KmaxBytes: 1500000, Pmax: 0.1}) || q.RateBps != 100e9 {
				t.Fatalf("setting %+v rate %g", q.Setting, q.RateBps)
			}
			c.check(t, q)
		})
	}
}

func u(x uint64) string { return strconv.FormatUint(x, 10) }

// Every device's Missing is env.DeviceTelemetry's, every kind env knows is
// a device under its own name, and what a device serves (Serves) is exactly
// what it does not miss.
func TestDevicesAgreeWithEnv(t *testing.T) {
	if len(Devices) != len(env.DeviceProfiles) {
		t.Errorf("%d devices, env knows %d kinds of switch", len(Devices), len(env.DeviceProfiles))
	}
	for _, p := range env.DeviceProfiles {
		if d := Devices[p.Name]; d == nil || d.DeviceProfile != p {
			t.Errorf("env's %s is not the device of that name: %+v", p.Name, d)
		}
	}
	for name, d := range Devices {
		if d.Name != name || d.Missing != env.DeviceTelemetry[name] {
			t.Errorf("%s: named %q, Missing %q, env says %q", name, d.Name, d.Missing, env.DeviceTelemetry[name])
		}
		if d.Dialect == Sonic {
			continue
		}
		var served env.Telemetry
		for _, f := range d.StateFields() {
			served |= telemetryOf(f)
		}
		if d.Serves(BufferSize) {
			served |= env.TelBuffer
		}
		served |= env.TelPortSpeed
		if got := env.AllTelemetry &^ served; got != d.Missing {
			t.Errorf("%s: serves all but %q, profile says it lacks %q", name, got, d.Missing)
		}
	}
	if _, err := LookupDevice("cisco"); err == nil || !strings.Contains(err.Error(), "arista-eos") {
		t.Fatalf("unknown device error %v", err)
	}
}
