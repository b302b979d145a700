package gnmipath

import (
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// sonic-gnmi serves a PG's headroom (its profile's xoff) but no lossless
// floor. SONiC's CONFIG_DB states each port's cable length (CABLE_LENGTH,
// one entry, "AZURE", whose fields are the ports) and MTU, from which its
// buffer manager sizes the headroom: the decoder computes the floor from
// them, marks it estimated, and no longer counts the headroom telemetry as
// missing. Without a cable length, under the dynamic buffer model (no
// profile, no headroom) or with a malformed length the floor stays
// unknown; deleting the table takes the floor away again.
func TestDecodeSonicCableLength(t *testing.T) {
	decode := func(t *testing.T, pg string, extra ...*gnmi.Notification) (env.QueueSample, error) {
		t.Helper()
		d := NewDecoder(Target{Name: "leaf0", Dialect: Sonic, Device: Devices["sonic"]}, 3)
		var errs []string
		for _, n := range append(append(sonicConfig(pg), extra...), sonicCounters(2_000_000_000, "200")...) {
			if err := d.Apply(n); err != nil {
				errs = append(errs, err.Error())
			}
		}
		s, inc := d.Snapshot()
		if len(s.Queues) != 1 || len(inc) != 0 {
			t.Fatalf("queues %+v incomplete %v", s.Queues, inc)
		}
		if len(errs) > 0 {
			return s.Queues[0], &decodeErr{strings.Join(errs, "; ")}
		}
		return s.Queues[0], nil
	}
	cable := func(v string) *gnmi.Notification {
		return sonicNote("CONFIG_DB", 1, "/CABLE_LENGTH", `{"AZURE": {"Ethernet0": "`+v+`", "Ethernet4": "5m"}}`)
	}
	for _, c := range []struct {
		name    string
		pg      string
		extra   []*gnmi.Notification
		want    int64
		wantErr string
	}{
		{"40 m, mtu 9100", "pg_lossless_100000_5m_profile", []*gnmi.Notification{cable("40m")}, env.LosslessFloor(100e9, 40, 9100+EthernetOverhead), ""},
		{"300 m, mtu 4200", "pg_lossless_100000_5m_profile", []*gnmi.Notification{cable("300m"),
			sonicNote("CONFIG_DB", 2, "/PORT/Ethernet0/mtu", `"4200"`)}, env.LosslessFloor(100e9, 300, 4200+EthernetOverhead), ""},
		{"no CABLE_LENGTH", "pg_lossless_100000_5m_profile", nil, 0, ""},
		{"dynamic buffer model", "NULL", []*gnmi.Notification{cable("40m")}, 0, ""},
		{"malformed", "pg_lossless_100000_5m_profile", []*gnmi.Notification{cable("40 metres")}, 0, `cable length "40 metres" of Ethernet0 is not metres like 40m`},
		{"negative", "pg_lossless_100000_5m_profile", []*gnmi.Notification{cable("-5m")}, 0, `cable length "-5m" of Ethernet0`},
		{"mtu out of range", "pg_lossless_100000_5m_profile", []*gnmi.Notification{cable("40m"),
			sonicNote("CONFIG_DB", 2, "/PORT/Ethernet0/mtu", `"20000"`)}, env.LosslessFloor(100e9, 40, DefaultMTU+EthernetOverhead), "mtu 20000 of port Ethernet0 is outside 68..9216"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, err := decode(t, c.pg, c.extra...)
			if (err != nil) != (c.wantErr != "") || err != nil && !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err %v, want %q", err, c.wantErr)
			}
			if q.MinHeadroomBytes != c.want || q.FloorEstimated != (c.want > 0) || (q.Missing&env.TelHeadroom == 0) != (c.want > 0) {
				t.Fatalf("floor %d (estimated %v, missing %v), want %d", q.MinHeadroomBytes, q.FloorEstimated, q.Missing, c.want)
			}
		})
	}
	t.Run("deleted after a snapshot", func(t *testing.T) {
		d := NewDecoder(Target{Name: "leaf0", Dialect: Sonic, Device: Devices["sonic"]}, 3)
		floor := func(ns ...*gnmi.Notification) int64 {
			for _, n := range append(ns, sonicCounters(2_000_000_000, "200")...) {
				if err := d.Apply(n); err != nil {
					t.Fatal(err)
				}
			}
			s, _ := d.Snapshot()
			if len(s.Queues) != 1 {
				t.Fatalf("queues %+v", s.Queues)
			}
			return s.Queues[0].MinHeadroomBytes
		}
		if f := floor(append(sonicConfig("pg_lossless_100000_5m_profile"), cable("40m"))...); f != env.LosslessFloor(100e9, 40, 9118) {
			t.Fatalf("floor %d", f)
		}
		if f := floor(cable("100m")); f != env.LosslessFloor(100e9, 100, 9118) {
			t.Fatalf("after a new length: floor %d", f)
		}
		del := &gnmi.Notification{Timestamp: 3, Prefix: &gnmi.Path{Target: "CONFIG_DB"}, Delete: []*gnmi.Path{{Elem: []*gnmi.PathElem{{Name: "CABLE_LENGTH"}}}}}
		if f := floor(del); f != 0 {
			t.Fatalf("after the table's delete: floor %d, want 0", f)
		}
	})
	// The floor at 100G, 40 m of cable and 9100-byte MTU frames is the
	// IEEE worst case: two frames, a PAUSE frame, 400 ns of round trip at
	// line rate, 394 pause quanta.
	if f := env.LosslessFloor(100e9, 40, 9118); f != 2*9118+64+5000+394*64 {
		t.Fatalf("floor %d", f)
	}
}

type decodeErr struct{ s string }

func (e *decodeErr) Error() string { return e.s }
