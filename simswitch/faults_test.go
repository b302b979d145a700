package simswitch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
)

// fakeEngine scripts telemetry for one switch with nports ports.
type fakeEngine struct {
	nsw       int // switches (0: one)
	now       simenv.Time
	nports    int
	max, cur  int64
	avg       float64
	ecn       []simenv.ECN
	hdrm      []int64
	failECNOn int // port whose SetECN fails (-1: none)
	setCalls  int
}

func newFake(nports int) *fakeEngine {
	f := &fakeEngine{nports: nports, failECNOn: -1}
	for i := 0; i < nports; i++ {
		f.ecn = append(f.ecn, simenv.ECN{KminBytes: 1000, KmaxBytes: 2000, Pmax: 0.1})
		f.hdrm = append(f.hdrm, 5000)
	}
	return f
}

func (f *fakeEngine) Now() simenv.Time       { return f.now }
func (f *fakeEngine) RunUntil(t simenv.Time) { f.now = t }
func (f *fakeEngine) Switches() []simenv.SwitchInfo {
	var out []simenv.SwitchInfo
	for s := 0; s < max(f.nsw, 1); s++ {
		info := simenv.SwitchInfo{Index: s, Name: "sw" + itoa(s), BufferBytes: 1_000_000}
		for i := 0; i < f.nports; i++ {
			info.Ports = append(info.Ports, simenv.PortInfo{Index: i, Name: "Ethernet" + itoa(i), RateBps: 100e9})
		}
		out = append(out, info)
	}
	return out
}
func (f *fakeEngine) LosslessPriorities() []int {
	if f.nsw > 0 {
		return []int{3, 4}
	}
	return []int{3}
}
func (f *fakeEngine) Telemetry(sw int) simenv.SwitchTelemetry {
	t := simenv.SwitchTelemetry{Switch: sw, Name: "sw" + itoa(sw), Time: f.now, BufferBytes: 1_000_000, Ports: make([]simenv.PortTelemetry, f.nports)}
	for i := range t.Ports {
		for _, q := range []int{3, 4} {
			t.Ports[i].Queues[q] = simenv.QueueCounters{MaxBytes: f.max, AvgBytes: f.avg, CurBytes: f.cur, ECN: f.ecn[i]}
			t.Ports[i].PG[q] = simenv.PGState{Lossless: true, HeadroomBytes: f.hdrm[i]}
		}
	}
	return t
}
func (f *fakeEngine) SetECN(q simenv.QueueRef, e simenv.ECN) error {
	f.setCalls++
	if q.Port == f.failECNOn {
		return errors.New("engine refuses")
	}
	f.ecn[q.Port] = e
	return nil
}
func (f *fakeEngine) SetHeadroom(pg simenv.PGRef, b int64) error { f.hdrm[pg.Port] = b; return nil }
func (f *fakeEngine) SetAlpha(pg simenv.PGRef, a float64) error  { return nil }
func (f *fakeEngine) Flows() []simenv.FlowRecord                 { return nil }
func (f *fakeEngine) Stats() simenv.Stats                        { return simenv.Stats{Now: f.now} }

func TestWindowMaxAvg(t *testing.T) {
	f := newFake(1)
	r := newRunner(f, gnmipath.DefaultDevice(gnmipath.OpenConfig), 1000, time.Millisecond, 0)
	f.now, f.max, f.avg, f.cur = 10, 500, 100, 50
	r.publishStep(0)
	f.now, f.max, f.avg, f.cur = 30, 200, 400, 60
	r.publishStep(0)
	tel, _, _ := r.telemetry(0, false)
	if q := tel.Ports[0].Queues[3]; q.MaxBytes != 500 || q.AvgBytes != 300 {
		t.Fatalf("peek: max %d avg %g, want 500 and (100*10+400*20)/30 = 300", q.MaxBytes, q.AvgBytes)
	}
	tel, _, _ = r.telemetry(0, true)
	if q := tel.Ports[0].Queues[3]; q.MaxBytes != 500 || q.AvgBytes != 300 {
		t.Fatalf("consume: max %d avg %g", q.MaxBytes, q.AvgBytes)
	}
	tel, _, _ = r.telemetry(0, true)
	if q := tel.Ports[0].Queues[3]; q.MaxBytes != 60 || q.AvgBytes != 60 {
		t.Fatalf("empty window: max %d avg %g, want the current length 60", q.MaxBytes, q.AvgBytes)
	}
	f.now, f.max, f.avg, f.cur = 40, 70, 65, 10
	r.publishStep(0)
	tel, _, _ = r.telemetry(0, true)
	if q := tel.Ports[0].Queues[3]; q.MaxBytes != 70 || q.AvgBytes != 65 {
		t.Fatalf("new window: max %d avg %g, want 70 and 65", q.MaxBytes, q.AvgBytes)
	}
}

// A Set that changes two queues, the second of which the engine refuses,
// leaves both queues and the config tree as they were.
func TestSetAtomicOnEngineError(t *testing.T) {
	f := newFake(2)
	f.failECNOn = 1
	r := newRunner(f, gnmipath.DefaultDevice(gnmipath.OpenConfig), 1000, time.Millisecond, 0)
	old := r.pub[0].tree
	var ops []gnmipath.SetOp
	for p := 0; p < 2; p++ {
		_, el, _ := gnmipath.ParsePath("/qos/queue-management-profiles/queue-management-profile[name=" + gnmipath.ECNProfileName("Ethernet"+itoa(p), 3) + "]/wred/uniform/config/min-threshold")
		ops = append(ops, gnmipath.SetOp{Op: "update", Elems: el, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 1500}}})
	}
	err := r.applySet(0, ops)
	if err == nil || !strings.Contains(err.Error(), "engine refuses") || !strings.Contains(err.Error(), "Ethernet1") {
		t.Fatalf("got %v", err)
	}
	if f.ecn[0].KminBytes != 1000 || f.ecn[1].KminBytes != 1000 || f.setCalls != 3 {
		t.Fatalf("engine left at %+v after %d calls (want both 1000, 3 calls: set, fail, undo)", f.ecn, f.setCalls)
	}
	if len(r.pub[0].tree) != len(old) || r.pub[0].tree[gnmipath.Leaf{Field: gnmipath.WREDMin, Name: gnmipath.ECNProfileName("Ethernet0", 3)}].U != 1000 {
		t.Fatal("config tree changed")
	}
	// The same Set without the failure applies to both.
	f.failECNOn = -1
	if err := r.applySet(0, ops); err != nil {
		t.Fatal(err)
	}
	if f.ecn[0].KminBytes != 1500 || f.ecn[1].KminBytes != 1500 {
		t.Fatalf("engine at %+v", f.ecn)
	}
	// kmax above the buffer is refused.
	_, el, _ := gnmipath.ParsePath("/qos/queue-management-profiles/queue-management-profile[name=" + gnmipath.ECNProfileName("Ethernet0", 3) + "]/wred/uniform/config/max-threshold")
	err = r.applySet(0, []gnmipath.SetOp{{Op: "update", Elems: el, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 2_000_000}}}})
	if err == nil || !strings.Contains(err.Error(), "exceeds the switch buffer 1000000 B") {
		t.Fatalf("got %v", err)
	}
}

func TestFaults(t *testing.T) {
	s, addr := start(t, gnmipath.OpenConfig, nil)
	tg := dial(t, addr)
	tt := gnmipath.Target{Name: "sw0", Dialect: gnmipath.OpenConfig}
	_, dec := onceSnapshot(t, tg, tt)

	// RejectSets
	s.SetFaults(Faults{RejectSets: true})
	key := env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}
	req, _ := gnmipath.SetRequest(tt, key, env.Setting{KminBytes: 1, KmaxBytes: 2, Pmax: 0.5}, dec.Binding("Ethernet0", 3))
	_, err := tg.Set(ctx5(t), req)
	wantCode(t, err, codes.FailedPrecondition, "fault injection")
	if tel, _ := s.Telemetry("sw0"); tel.Ports[0].Queues[3].ECN.KminBytes == 1 {
		t.Fatal("rejected Set applied")
	}

	// Malformed: the decoder reports it and leaves the queue out.
	s.SetFaults(Faults{Malformed: true})
	c, _ := gnmipath.Subscriptions(tt)
	once := &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{Prefix: c.Prefix, Mode: gnmi.SubscriptionList_ONCE}}}
	for _, p := range c.Paths {
		once.GetSubscribe().Subscription = append(once.GetSubscribe().Subscription, &gnmi.Subscription{Path: p})
	}
	rs, err := tg.SubscribeOnce(ctx5(t), once)
	if err != nil {
		t.Fatal(err)
	}
	var applyErr error
	for _, r := range rs {
		applyErr = errors.Join(applyErr, dec.Apply(r.GetUpdate()))
	}
	if applyErr == nil || !strings.Contains(applyErr.Error(), `"garbage"`) || !strings.Contains(applyErr.Error(), "transmit-octets") {
		t.Fatalf("malformed value not reported: %v", applyErr)
	}
	snap, inc := dec.Snapshot()
	if len(snap.Queues) != 3 || len(inc) != 1 || !strings.Contains(inc[0], "sw0/Ethernet0/q3") {
		t.Fatalf("want Ethernet0/q3 left out: %d queues, %v", len(snap.Queues), inc)
	}
	s.SetFaults(Faults{})

	// MuteTelemetry and DropStreams on a raw STREAM (to see the status code).
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(ctx5(t), metadata.MD{}))
	defer cancel()
	stream, err := tg.Client.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sub := gnmipath.SubscribeRequests(tt, 10*time.Millisecond)[0]
	if err := stream.Send(sub); err != nil {
		t.Fatal(err)
	}
	got := make(chan *gnmi.SubscribeResponse, 10000)
	done := make(chan error, 1)
	go func() {
		for {
			r, err := stream.Recv()
			if err != nil {
				done <- err
				return
			}
			got <- r
		}
	}()
	countFor := func(d time.Duration) int {
		n := 0
		end := time.After(d)
		for {
			select {
			case r := <-got:
				if r.GetUpdate() != nil {
					n++
				}
			case <-end:
				return n
			}
		}
	}
	// waitN waits up to 5s for n notifications.
	waitN := func(n int) {
		deadline := time.After(5 * time.Second)
		for n > 0 {
			select {
			case r := <-got:
				if r.GetUpdate() != nil {
					n--
				}
			case <-deadline:
				t.Fatalf("%d notifications short at a 10ms interval", n)
			}
		}
	}
	waitN(3)
	s.SetFaults(Faults{MuteTelemetry: true})
	// muted: within 5s there must be a silence of 300ms (30 intervals)
	quiet := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !quiet; {
		quiet = countFor(300*time.Millisecond) == 0
	}
	if !quiet {
		t.Fatal("notifications kept coming while muted")
	}
	s.SetFaults(Faults{})
	waitN(3)
	s.DropStreams()
	select {
	case err := <-done:
		wantCode(t, err, codes.Unavailable, "dropped by fault injection")
	case <-time.After(5 * time.Second):
		t.Fatal("stream not dropped")
	}
}

// StopGRPC keeps the simulation running; RestartGRPC serves on the same
// address and a gnmic stream reconnects and re-sends a full snapshot.
func TestRestartKeepsSimulation(t *testing.T) {
	s, addr := start(t, gnmipath.OpenConfig, nil)
	tg := dial(t, addr)
	tt := gnmipath.Target{Name: "sw0", Dialect: gnmipath.OpenConfig}
	ctx := ctx5(t)
	rsp, errs := tg.SubscribeChan(ctx, gnmipath.SubscribeRequests(tt, 20*time.Millisecond)[0], "main")
	nerr := 0
	syncs := 0
	waitSync := func() {
		for {
			select {
			case r := <-rsp:
				if r.Response.GetSyncResponse() {
					syncs++
					return
				}
			case <-errs: // the client reports the broken stream and retries
				nerr++
			case <-ctx.Done():
				t.Fatalf("no sync (have %d)", syncs)
			}
		}
	}
	waitSync()
	before, _ := s.Status()
	s.StopGRPC()
	time.Sleep(50 * time.Millisecond)
	waitSim(t, s, before+20*simenv.Microsecond)
	if err := s.RestartGRPC(); err != nil {
		t.Fatal(err)
	}
	if s.Addrs()[""] != addr {
		t.Fatalf("restarted on %s, was %s", s.Addrs()[""], addr)
	}
	waitSync() // the reconnected stream's full snapshot ends with a sync_response
	if syncs != 2 || nerr == 0 {
		t.Fatalf("syncs %d, client errors %d", syncs, nerr)
	}
	flows, err := s.Flows(ctx)
	if err != nil || len(flows) == 0 {
		t.Fatalf("ground truth: %d flows, %v", len(flows), err)
	}
}

func TestPerSwitchAndNamespaces(t *testing.T) {
	leafSpine := func(c *Config) {
		cfg := simenv.DefaultConfig()
		cfg.Topology = simenv.LeafSpineTopology(2, 1, 2, 100e9, 100e9, simenv.Microsecond)
		cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Fanin: 3, SizeBytes: 100_000, Every: 100 * simenv.Microsecond, Priority: 3}}
		c.Sim = cfg
	}
	// one listener per switch
	s, _ := start(t, gnmipath.OpenConfig, func(c *Config) { leafSpine(c); c.PerSwitch = true })
	addrs := s.Addrs()
	if len(addrs) != 3 || addrs["leaf0"] == "" || addrs["leaf1"] == "" || addrs["spine0"] == "" {
		t.Fatalf("addrs %v", addrs)
	}
	tg := dial(t, addrs["leaf1"])
	resp, err := tg.Get(ctx5(t), &gnmi.GetRequest{Path: []*gnmi.Path{{Elem: []*gnmi.PathElem{{Name: "interfaces"}}}}})
	if err != nil || resp.GetNotification()[0].GetPrefix().GetTarget() != "leaf1" {
		t.Fatalf("%v %v", resp, err)
	}
	// leaf1 has 2 host ports + 1 spine port: 3 port speeds, 3 x 6 PFC leaves, 3 headroom configs
	n := 0
	for _, x := range resp.GetNotification() {
		n += len(x.GetUpdate())
	}
	if n != 3+3*6+3 {
		t.Fatalf("leaf1 /interfaces has %d leaves", n)
	}
	_, err = tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "leaf0"}})
	wantCode(t, err, codes.NotFound, `target "leaf0" is not a switch served here (have leaf1)`)

	// sonic, one listener: the namespace element picks the switch
	s2, addr := start(t, gnmipath.Sonic, leafSpine)
	_ = s2
	tg2 := dial(t, addr)
	for _, sw := range []string{"leaf0", "spine0"} {
		tt := gnmipath.Target{Name: sw, Dialect: gnmipath.Sonic, Namespace: sw}
		snap, _ := onceSnapshot(t, tg2, tt)
		if len(snap.Queues) != 3 && sw == "leaf0" || len(snap.Queues) != 2 && sw == "spine0" {
			t.Fatalf("%s: %d queues", sw, len(snap.Queues))
		}
	}
	_, err = tg2.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: gnmipath.CountersDB}, Path: []*gnmi.Path{{Elem: []*gnmi.PathElem{{Name: "COUNTERS"}}}}})
	wantCode(t, err, codes.InvalidArgument, "leaf0, leaf1, spine0")
	// the switch as gNMI target, database as first element
	resp, err = tg2.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "leaf1"}, Path: []*gnmi.Path{{Elem: []*gnmi.PathElem{{Name: gnmipath.ConfigDB}, {Name: "PORT"}}}}})
	if err != nil || len(resp.GetNotification()[0].GetUpdate()) != 3 {
		t.Fatalf("%v %v", resp, err)
	}
}

// SAMPLE with suppress_redundant sends unchanged leaves only on heartbeats.
func TestSuppressRedundantHeartbeat(t *testing.T) {
	_, addr := start(t, gnmipath.OpenConfig, nil)
	tg := dial(t, addr)
	_, el, _ := gnmipath.ParsePath("/qos/queue-management-profiles")
	mk := func(hb time.Duration) *gnmi.SubscribeRequest {
		return &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
			Prefix: &gnmi.Path{Target: "sw0"}, Mode: gnmi.SubscriptionList_STREAM, Subscription: []*gnmi.Subscription{{
				Path: &gnmi.Path{Elem: el}, Mode: gnmi.SubscriptionMode_SAMPLE, SampleInterval: uint64(10 * time.Millisecond),
				SuppressRedundant: true, HeartbeatInterval: uint64(hb)}}}}}
	}
	count := func(hb time.Duration, wait time.Duration) (afterSync int) {
		ctx, cancel := context.WithCancel(ctx5(t))
		defer cancel()
		rsp, errs := tg.SubscribeChan(ctx, mk(hb), "sr"+hb.String())
		synced := false
		end := time.After(10 * time.Second)
		for {
			select {
			case r := <-rsp:
				if r.Response.GetSyncResponse() {
					synced = true
					end = time.After(wait)
				} else if synced && r.Response.GetUpdate() != nil {
					afterSync++
				}
			case e := <-errs:
				t.Fatal(e.Err)
			case <-end:
				if !synced {
					t.Fatal("no sync")
				}
				return afterSync
			}
		}
	}
	if n := count(0, 200*time.Millisecond); n != 0 {
		t.Fatalf("%d notifications of unchanged config at a 10ms interval with suppress_redundant", n)
	}
	if n := count(50*time.Millisecond, 400*time.Millisecond); n < 2 || n > 9 {
		t.Fatalf("%d heartbeat notifications in 400ms at a 50ms heartbeat, want 2..9", n)
	}
}

// BenchmarkSample100x32x2 is the server's work for one SAMPLE tick of the
// counters of 100 switches x 32 ports x 2 lossless queues: read and clear
// the windows, encode, filter by the subscription paths, wrap.
func BenchmarkSample100x32x2(b *testing.B) {
	f := newFake(32)
	f.nsw = 100
	r := newRunner(f, gnmipath.DefaultDevice(gnmipath.OpenConfig), 1000, time.Millisecond, 0)
	srv := &Server{d: gnmipath.OpenConfig, r: r, byName: map[string]int{}}
	srv.faults.Store(&Faults{})
	for i, info := range r.infos {
		srv.byName[info.Name] = i
	}
	v := &service{s: srv, only: -1}
	var sels []*selection
	for _, info := range r.infos {
		c, _ := gnmipath.Subscriptions(gnmipath.Target{Name: info.Name, Dialect: gnmipath.OpenConfig})
		var subs []*gnmi.Subscription
		for _, p := range c.Paths {
			subs = append(subs, &gnmi.Subscription{Path: p})
		}
		ss, err := v.selections(c.Prefix, subs)
		if err != nil {
			b.Fatal(err)
		}
		sels = append(sels, ss...)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := 0
		for _, sel := range sels {
			ts, its := v.collect(sel, true)
			for _, nt := range v.notifications(sel, its, ts, gnmi.Encoding_PROTO) {
				n += len(nt.Update)
			}
		}
		if n != 100*(1+32*(1+2*15)) {
			b.Fatalf("%d leaves", n)
		}
	}
}

// ON_CHANGE reports a profile created by one Set and deleted by another.
func TestOnChangeDelete(t *testing.T) {
	_, addr := start(t, gnmipath.OpenConfig, nil)
	tg := dial(t, addr)
	_, el, _ := gnmipath.ParsePath("/qos/queue-management-profiles")
	req := &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
		Prefix: &gnmi.Path{Target: "sw0"}, Mode: gnmi.SubscriptionList_STREAM, Subscription: []*gnmi.Subscription{{
			Path: &gnmi.Path{Elem: el}, Mode: gnmi.SubscriptionMode_ON_CHANGE}}}}}
	ctx := ctx5(t)
	rsp, errs := tg.SubscribeChan(ctx, req, "del")
	spare := "/qos/queue-management-profiles/queue-management-profile[name=spare]"
	leaf := func(p string, v *gnmi.TypedValue) *gnmi.Update {
		_, e, err := gnmipath.ParsePath(spare + p)
		if err != nil {
			t.Fatal(err)
		}
		return &gnmi.Update{Path: &gnmi.Path{Elem: e}, Val: v}
	}
	u := func(x uint64) *gnmi.TypedValue { return &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: x}} }
	phase := 0
	for phase < 3 {
		select {
		case r := <-rsp:
			n := r.Response.GetUpdate()
			switch {
			case r.Response.GetSyncResponse():
				_, err := tg.Set(ctx, &gnmi.SetRequest{Prefix: &gnmi.Path{Target: "sw0"}, Update: []*gnmi.Update{
					leaf("/wred/uniform/config/min-threshold", u(10)), leaf("/wred/uniform/config/max-threshold", u(20)),
					leaf("/wred/uniform/config/max-drop-probability-percent", u(3))}})
				if err != nil {
					t.Fatal(err)
				}
				phase = 1
			case phase == 1 && n != nil && len(n.GetUpdate()) == 3:
				for _, x := range n.GetUpdate() {
					if x.GetPath().GetElem()[2].GetKey()["name"] != "spare" {
						t.Fatalf("unexpected update %v", x)
					}
				}
				_, e, _ := gnmipath.ParsePath(spare)
				if _, err := tg.Set(ctx, &gnmi.SetRequest{Prefix: &gnmi.Path{Target: "sw0"}, Delete: []*gnmi.Path{{Elem: e}}}); err != nil {
					t.Fatal(err)
				}
				phase = 2
			case phase == 2 && n != nil && len(n.GetDelete()) > 0:
				if len(n.GetDelete()) != 3 || n.GetPrefix().GetTarget() != "sw0" ||
					!strings.HasPrefix(gnmipath.PathString(n.GetDelete()[0].GetElem()), spare) {
					t.Fatalf("deletes %v", n)
				}
				phase = 3
			}
		case e := <-errs:
			t.Fatal(e.Err)
		case <-ctx.Done():
			t.Fatalf("stuck in phase %d", phase)
		}
	}
}
