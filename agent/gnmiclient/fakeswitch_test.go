package gnmiclient

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// leafSwitch is an openconfig switch that answers Get from a fixed table
// of leaves (full path -> JSON_IETF value), every leaf under a path asked,
// in one notification; it serves nothing else unless embedded.
type leafSwitch struct {
	gnmi.UnimplementedGNMIServer
	leaves map[string]string
}

func (s *leafSwitch) Get(_ context.Context, req *gnmi.GetRequest) (*gnmi.GetResponse, error) {
	n := &gnmi.Notification{}
	for _, p := range req.GetPath() {
		under := gnmipath.PathString(gnmipath.FullElems(req.GetPrefix(), p))
		for k, v := range s.leaves {
			if strings.HasPrefix(k, under) {
				n.Update = append(n.Update, jsonUpdate(k, v))
			}
		}
	}
	return &gnmi.GetResponse{Notification: []*gnmi.Notification{n}}, nil
}

// jsonUpdate is the update of the leaf at path (as gnmipath.ParsePath
// reads it) to the JSON_IETF value v.
func jsonUpdate(path, v string) *gnmi.Update {
	_, el, err := gnmipath.ParsePath(path)
	if err != nil {
		panic(err)
	}
	return &gnmi.Update{Path: &gnmi.Path{Elem: el}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(v)}}}
}

// serveFake serves srv on a free loopback port until the test ends and
// returns its address.
func serveFake(t *testing.T, srv gnmi.GNMIServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	gnmi.RegisterGNMIServer(gs, srv)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

// stampSwitch is an openconfig switch streaming queue 3's counters of
// four 100G ports, each carrying 50 Gb/s, every sample, stamped as a
// cache-based server stamps them: each port's notification with the time
// its counters were read, step after the previous port's; with oldSpeed
// each sample also re-sends the ports' speeds stamped with the time they
// last changed (an hour ago). Its one profile binds every queue.
type stampSwitch struct {
	gnmi.UnimplementedGNMIServer
	sample, step time.Duration
	oldSpeed     bool
}

var stampPorts = []string{"Ethernet1", "Ethernet2", "Ethernet3", "Ethernet4"}

func (s *stampSwitch) Subscribe(st gnmi.GNMI_SubscribeServer) error {
	req, err := st.Recv()
	if err != nil {
		return err
	}
	pfx := &gnmi.Path{Target: "sw0", Origin: "openconfig"}
	send := func(ts int64, us ...*gnmi.Update) error {
		return st.Send(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: &gnmi.Notification{Timestamp: ts, Prefix: pfx, Update: us}}})
	}
	sync := func() error {
		return st.Send(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_SyncResponse{SyncResponse: true}})
	}
	speed := func(port string) *gnmi.Update {
		return jsonUpdate("/interfaces/interface[name="+port+"]/ethernet/state/port-speed", `"openconfig-if-ethernet:SPEED_100GB"`)
	}
	if strings.Contains(fmt.Sprint(req.GetSubscribe().GetSubscription()), "queue-management-profile") {
		p := "/qos/queue-management-profiles/queue-management-profile[name=p]"
		send(time.Now().UnixNano(), jsonUpdate(p+"/config/name", `"p"`), jsonUpdate(p+"/wred/uniform/config/min-threshold", `"100000"`),
			jsonUpdate(p+"/wred/uniform/config/max-threshold", `"400000"`), jsonUpdate(p+"/wred/uniform/config/max-drop-probability-percent", `5`),
			jsonUpdate(p+"/wred/uniform/config/enable-ecn", `true`))
		sync()
		<-st.Context().Done()
		return nil
	}
	changed := time.Now().Add(-time.Hour).UnixNano()
	for _, port := range stampPorts {
		send(changed, jsonUpdate("/qos/interfaces/interface[interface-id="+port+"]/output/queues/queue[name=3]/config/queue-management-profile", `"p"`), speed(port))
	}
	counters := func(n int) error {
		b := uint64(float64(n) * s.sample.Seconds() * 50e9 / 8)
		base := time.Now().UnixNano()
		for i, port := range stampPorts {
			q := "/qos/interfaces/interface[interface-id=" + port + "]/output/queues/queue[name=3]/state/"
			if err := send(base+int64(i)*int64(s.step), jsonUpdate(q+"transmit-pkts", fmt.Sprintf(`"%d"`, b/1000)), jsonUpdate(q+"transmit-octets", fmt.Sprintf(`"%d"`, b)),
				jsonUpdate(q+"dropped-pkts", `"0"`), jsonUpdate(q+"dropped-octets", `"0"`)); err != nil {
				return err
			}
		}
		return nil
	}
	counters(0)
	sync()
	tk := time.NewTicker(s.sample)
	defer tk.Stop()
	for n := 1; ; n++ {
		select {
		case <-st.Context().Done():
			return nil
		case <-tk.C:
		}
		if s.oldSpeed {
			for _, port := range stampPorts {
				send(changed, speed(port))
			}
		}
		if err := counters(n); err != nil {
			return err
		}
	}
}

// observeStamps subscribes to sw for d and returns the snapshots it made,
// the newest observation of each port's queue 3 (as the agent keeps them)
// and what it said.
func observeStamps(t *testing.T, sw *stampSwitch, d time.Duration) (snaps int, latest map[string]env.Observation, said []string) {
	t.Helper()
	tc := target0(serveFake(t, sw), "openconfig")
	tc.Device = "openconfig"
	ctx, cancel := context.WithTimeout(context.Background(), d+10*time.Second)
	defer cancel()
	c, err := Dial(ctx, tc, sw.sample)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out, errs := make(chan env.Snapshot, 64), make(chan error, 64)
	go c.Subscribe(ctx, out, errs)
	obs := env.NewObserver(env.ObserverConfig{})
	latest = map[string]env.Observation{}
	end := time.After(d)
	for {
		select {
		case s := <-out:
			snaps++
			for _, o := range obs.Observe(s) {
				latest[o.Key.Port] = o
			}
		case err := <-errs:
			said = append(said, err.Error())
		case <-end:
			return snaps, latest, said
		}
	}
}

// subscribed dials tc (a 50 ms sample), closed when the test ends, and
// subscribes: its snapshots and errors come on the channels returned.
func subscribed(t *testing.T, ctx context.Context, tc config.Target) (*Switch, chan env.Snapshot, chan error) {
	t.Helper()
	sw, err := Dial(ctx, tc, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	out, errs := make(chan env.Snapshot, 64), make(chan error, 64)
	go sw.Subscribe(ctx, out, errs)
	return sw, out, errs
}
