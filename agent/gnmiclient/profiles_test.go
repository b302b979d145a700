package gnmiclient

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/internal/simtest"
	"github.com/ecntune/ecntune/simenv"
)

// hasProfile reports whether a decoded tree holds a leaf of profile name.
func hasProfile(t gnmipath.Tree, name string) bool {
	for l := range t {
		if l.Name == name {
			return true
		}
	}
	return false
}

// The agent subscribes to, and reads back, only the profiles its queues
// are bound to, never a whole profile table: any client can fill one (a
// switch with 30k junk profiles sent a 47 MB notification, which the
// agent's 4 MB limit refused), and it follows a queue rebound to a new
// profile by another client.
func TestGNMISwitchOnlyProfilesInUse(t *testing.T) {
	for _, d := range []gnmipath.Dialect{gnmipath.OpenConfig, gnmipath.Sonic} {
		_, addr := simtest.Start(t, simtest.Star(poorECN), d, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		tt := gnmipath.Target{Name: "sw0", Dialect: d}
		// A raw client (another Switch's connection) adds a profile
		// nobody uses.
		other, err := Dial(ctx, target0(addr, string(d)), 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		junk := &gnmi.SetRequest{Prefix: &gnmi.Path{Target: "sw0"}, Update: []*gnmi.Update{{
			Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "qos"}, {Name: "queue-management-profiles"}, {Name: "queue-management-profile", Key: map[string]string{"name": "junk"}}}},
			Val:  &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`{"wred":{"uniform":{"config":{"min-threshold":"1","max-threshold":"2","max-drop-probability-percent":1}}}}`)}}}}}
		if d == gnmipath.Sonic {
			junk = &gnmi.SetRequest{Prefix: &gnmi.Path{Target: gnmipath.ConfigDB}, Update: []*gnmi.Update{
				{Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "WRED_PROFILE"}, {Name: "junk"}}},
					Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`{"green_min_threshold":"1","green_max_threshold":"2","green_drop_probability":"1"}`)}}},
				{Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "BUFFER_PROFILE"}, {Name: "junk"}}},
					Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`{"xoff":"1","size":"1","pool":"ingress_lossless_pool"}`)}}}}}
		}
		if _, err := other.conn.Set(ctx, junk); err != nil {
			t.Fatalf("%s: %v", d, err)
		}

		sw, err := Dial(ctx, target0(addr, string(d)), 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		defer sw.Close()
		// Read-back without a subscription.
		key := env.QueueKey{Target: "sw0", Port: "Ethernet1", Queue: 3}
		got, err := sw.Read(ctx, []env.QueueKey{key})
		if err != nil || got[key].KminBytes != poorECN.KminBytes || got[key].KmaxBytes != poorECN.KmaxBytes {
			t.Fatalf("%s: read %+v, %v", d, got, err)
		}
		sw.mu.Lock()
		read := sw.dec.Tree()
		sw.mu.Unlock()
		// its own profile, not another queue's (sonic: the queues share
		// AZURE_LOSSLESS; each PG has a buffer profile of its own)
		bound, other2 := gnmipath.ECNProfileName("Ethernet1", 3), gnmipath.ECNProfileName("Ethernet2", 3)
		if d == gnmipath.Sonic {
			bound, other2 = gnmipath.SonicSharedProfile, gnmipath.PGProfileName("Ethernet2", 3)
		}
		if hasProfile(read, "junk") || !hasProfile(read, bound) || hasProfile(read, other2) {
			t.Fatalf("%s: a read-back of Ethernet1 queue 3 has other profiles: %v", d, read)
		}

		// Subscription.
		out, errs := make(chan env.Snapshot, 64), make(chan error, 64)
		go sw.Subscribe(ctx, out, errs)
		next := func() env.Snapshot {
			for {
				select {
				case s := <-out:
					return s
				case err := <-errs:
					var dn *DeviceNote
					if errors.As(err, &dn) {
						continue
					}
					t.Fatalf("%s: %v", d, err)
				case <-ctx.Done():
					t.Fatalf("%s: no snapshot", d)
				}
			}
		}
		if s := next(); len(s.Queues) != 4 {
			t.Fatalf("%s: first snapshot has %d queues", d, len(s.Queues))
		}
		sw.mu.Lock()
		tree := sw.dec.Tree()
		sw.mu.Unlock()
		if hasProfile(tree, "junk") {
			t.Fatalf("%s: the subscription carries the unused profile", d)
		}

		// Another client rebinds the queue to a profile of its own.
		want := env.Setting{KminBytes: 123_000, KmaxBytes: 456_000, Pmax: 0.02}
		req, err := gnmipath.SetRequest(tt, key, want, gnmipath.Binding{ECNShared: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.conn.Set(ctx, req); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		for {
			s := next()
			if len(s.Queues) == 4 && s.Queues[1].Key == key && s.Queues[1].Setting.KminBytes == want.KminBytes {
				if g, w := s.Queues[1].Setting, gnmipath.Quantize(want); g.KmaxBytes != w.KmaxBytes || g.Pmax != w.Pmax {
					t.Fatalf("%s: after rebinding: %+v", d, s.Queues[1].Setting)
				}
				break
			}
		}
		cancel()
	}
}

// A queue bound to a profile the switch lacks does not stop the others:
// that profile is reported and left out, the session goes on.
func TestGNMISwitchMissingProfile(t *testing.T) {
	for _, d := range []gnmipath.Dialect{gnmipath.OpenConfig, gnmipath.Sonic} {
		_, addr := simtest.Start(t, simtest.Star(poorECN), d, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		tc := target0(addr, string(d))
		tc.Queues = []int{3, 5} // 5 is not lossless on the simulated switch: it may name any profile
		sw, out, errs := subscribed(t, ctx, tc)
		var reports []string
		snaps := 0
		wait := func(n int) {
			for n += snaps; snaps < n; {
				select {
				case s := <-out:
					if len(s.Queues) != 4 {
						t.Fatalf("%s: snapshot of %d queues", d, len(s.Queues))
					}
					snaps++
				case err := <-errs:
					var dn *DeviceNote
					var aq *AbsentQueuesNote
					if errors.As(err, &dn) || errors.As(err, &aq) {
						continue // the device it runs with, the queues it lacks: notes, not reports
					}
					reports = append(reports, err.Error())
				case <-ctx.Done():
					t.Fatalf("%s: %d snapshots; reports %v", d, snaps, reports)
				}
			}
		}
		wait(1)
		// Two queues bound at once to profiles that do not exist: simswitch
		// refuses a subscription whose paths all match nothing, as
		// sonic-gnmi does one with any such path.
		bind := &gnmi.SetRequest{Prefix: &gnmi.Path{Target: "sw0"}}
		for i, port := range []string{"Ethernet0", "Ethernet1"} {
			ghost := &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "ghost" + strconv.Itoa(i)}}
			if d == gnmipath.Sonic {
				bind.Prefix.Target = gnmipath.ConfigDB
				bind.Update = append(bind.Update, &gnmi.Update{Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "QUEUE"}, {Name: port + "|5"}, {Name: "wred_profile"}}}, Val: ghost})
				continue
			}
			bind.Update = append(bind.Update, &gnmi.Update{Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "qos"}, {Name: "interfaces"},
				{Name: "interface", Key: map[string]string{"interface-id": port}}, {Name: "output"}, {Name: "queues"},
				{Name: "queue", Key: map[string]string{"name": "5"}}, {Name: "config"}, {Name: "queue-management-profile"}}}, Val: ghost})
		}
		if _, err := sw.conn.Set(ctx, bind); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		wait(5)
		if len(reports) != 2 || !strings.Contains(strings.Join(reports, " "), "ghost0") || !strings.Contains(strings.Join(reports, " "), "ghost1") ||
			!strings.Contains(reports[0], "NotFound") {
			t.Fatalf("%s: reports %v, want one naming each missing profile", d, reports)
		}
		if d != gnmipath.Sonic {
			cancel()
			continue // openconfig: priority 5 has no headroom leaf to read back
		}
		// A read-back of a queue with a missing profile and one without.
		rd, err := Dial(ctx, tc, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		ghosted, fine := env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 5}, env.QueueKey{Target: "sw0", Port: "Ethernet1", Queue: 3}
		got, err := rd.Read(ctx, []env.QueueKey{ghosted, fine})
		if _, bad := got[ghosted]; err != nil || bad || got[fine].KminBytes != poorECN.KminBytes {
			t.Fatalf("%s: read %+v, %v", d, got, err)
		}
		cancel()
	}
}

// poorECN marks late: queues grow deep before ECN slows senders.
var poorECN = simenv.ECN{KminBytes: 2_000_000, KmaxBytes: 2_800_000, Pmax: 0.01}

// target0 is the simulated switch at addr as target sw0, queue 3 of every port.
func target0(addr string, d string) config.Target {
	return config.Target{Name: "sw0", Address: addr, Insecure: true, Timeout: 3 * time.Second,
		RetryTimer: 100 * time.Millisecond, Dialect: d, AllPorts: true, Queues: []int{3}}
}
