package simswitch

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmic/pkg/api"
	"github.com/openconfig/gnmic/pkg/api/target"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/internal/await"
	"github.com/ecntune/ecntune/simenv"
)

func simConfig() simenv.Config {
	cfg := simenv.DefaultConfig()
	cfg.Topology = simenv.StarTopology(4, 100e9, simenv.Microsecond)
	cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Fanin: 3, SizeBytes: 300_000, Every: 100 * simenv.Microsecond, Priority: 3}}
	return cfg
}

func start(t *testing.T, d gnmipath.Dialect, mod func(*Config)) (*Server, string) {
	t.Helper()
	cfg := Config{Sim: simConfig(), Dialect: d, Listen: "127.0.0.1:0", Timescale: 200, Step: 2 * time.Millisecond, Logf: t.Logf}
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, addr, err := Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); s.Close() })
	return s, addr
}

func dial(t *testing.T, addr string, opts ...api.TargetOption) *target.Target {
	t.Helper()
	base := []api.TargetOption{api.Address(addr), api.Timeout(5 * time.Second)}
	if len(opts) == 0 {
		base = append(base, api.Insecure(true))
	}
	tg, err := api.NewTarget(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	tg.Config.RetryTimer = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tg.CreateGNMIClient(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	return tg
}

func ctx5(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// ctxLarge is ctx5 for an RPC over a whole large tree (manyPorts): under
// the race detector on a busy 2-core machine a ONCE of 2000 ports took
// over 10 s (5.5 s alone); the tests time what is sent, not how fast.
func ctxLarge(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func wantCode(t *testing.T, err error, c codes.Code, msg string) {
	t.Helper()
	if status.Code(err) != c || !strings.Contains(err.Error(), msg) {
		t.Fatalf("got %v, want %v containing %q", err, c, msg)
	}
}

// onceSnapshot reads one full snapshot of sw0 with ONCE subscriptions: the
// counters, the config, then the profiles the config binds.
func onceSnapshot(t *testing.T, tg *target.Target, tt gnmipath.Target) (env.Snapshot, *gnmipath.Decoder) {
	t.Helper()
	dec := gnmipath.NewDecoder(tt, 3)
	c, g := gnmipath.Subscriptions(tt)
	for i, sub := range []gnmipath.Subscription{c, g, {}} {
		if i == 2 {
			ecn, buf := dec.Profiles()
			sub = gnmipath.ProfileSubscription(tt, ecn, buf)
		}
		req := &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
			Prefix: sub.Prefix, Mode: gnmi.SubscriptionList_ONCE, Encoding: gnmi.Encoding_JSON_IETF}}}
		for _, p := range sub.Paths {
			req.GetSubscribe().Subscription = append(req.GetSubscribe().Subscription, &gnmi.Subscription{Path: p})
		}
		rs, err := tg.SubscribeOnce(ctx5(t), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 {
			t.Fatal("ONCE returned no updates")
		}
		for _, r := range rs {
			if err := dec.Apply(r.GetUpdate()); err != nil {
				t.Fatal(err)
			}
		}
	}
	snap, inc := dec.Snapshot()
	if len(inc) > 0 {
		t.Fatalf("incomplete: %v", inc)
	}
	return snap, dec
}

func TestCapabilities(t *testing.T) {
	for _, d := range []gnmipath.Dialect{gnmipath.OpenConfig, gnmipath.Sonic} {
		_, addr := start(t, d, nil)
		tg := dial(t, addr)
		resp, err := tg.Capabilities(ctx5(t))
		if err != nil {
			t.Fatal(err)
		}
		encs := map[gnmi.Encoding]bool{}
		for _, e := range resp.GetSupportedEncodings() {
			encs[e] = true
		}
		if !encs[gnmi.Encoding_JSON_IETF] || !encs[gnmi.Encoding_JSON] || resp.GetGNMIVersion() == "" {
			t.Fatalf("%s: %v", d, resp)
		}
		want := "openconfig-qos"
		if d == gnmipath.Sonic {
			want = "sonic-db"
		}
		if resp.GetSupportedModels()[0].GetName() != want {
			t.Fatalf("%s: models %v", d, resp.GetSupportedModels())
		}
	}
}

func TestOnceMatchesGroundTruth(t *testing.T) {
	for _, d := range []gnmipath.Dialect{gnmipath.OpenConfig, gnmipath.Sonic} {
		s, addr := start(t, d, nil)
		tg := dial(t, addr)
		ns := ""
		if d == gnmipath.Sonic {
			ns = "sw0"
		}
		// let traffic run a little
		waitSim(t, s, 20*simenv.Microsecond)
		snap, _ := onceSnapshot(t, tg, gnmipath.Target{Name: "sw0", Dialect: d, Namespace: ns})
		if len(snap.Queues) != 4 {
			t.Fatalf("%s: %d queues, want 4 (4 ports x lossless queue 3)", d, len(snap.Queues))
		}
		truth, _ := s.Telemetry("sw0")
		var tx uint64
		for i, q := range snap.Queues {
			if q.Key.Port != "Ethernet"+itoa(i) || q.Key.Queue != 3 || q.RateBps != 100e9 {
				t.Fatalf("%s: queue %d is %+v", d, i, q.Key)
			}
			e := truth.Ports[i].Queues[3].ECN
			if q.Setting.KminBytes != e.KminBytes || q.Setting.KmaxBytes != e.KmaxBytes || q.Setting.Pmax != e.Pmax {
				t.Fatalf("%s: setting %+v, sim has %+v", d, q.Setting, e)
			}
			if q.Setting.HeadroomBytes != truth.Ports[i].PG[3].HeadroomBytes || q.Setting.HeadroomBytes <= 0 {
				t.Fatalf("%s: headroom %d, sim has %d", d, q.Setting.HeadroomBytes, truth.Ports[i].PG[3].HeadroomBytes)
			}
			if q.TxBytes > truth.Ports[i].Queues[3].TxBytes {
				t.Fatalf("%s: counters ahead of the simulation", d)
			}
			tx += q.TxBytes
		}
		if tx == 0 {
			t.Fatalf("%s: no traffic counted after 20us of incast", d)
		}
		if snap.TimeNs <= Epoch || snap.TimeNs > SimTimestamp(truth.Time) {
			t.Fatalf("%s: timestamp %d not sim time (sim at %d)", d, snap.TimeNs, SimTimestamp(truth.Time))
		}
	}
}

func itoa(i int) string { return env.QueueKey{Queue: i}.String()[3:] }

// waitSim waits until the simulation reaches at (await.Reached).
func waitSim(t *testing.T, s *Server, at simenv.Time) {
	t.Helper()
	await.Reached(t, "simulated time (ns)", func() int64 { now, _ := s.Status(); return int64(now) }, int64(at))
}

func TestGetSetReadBack(t *testing.T) {
	for _, d := range []gnmipath.Dialect{gnmipath.OpenConfig, gnmipath.Sonic} {
		s, addr := start(t, d, nil)
		tg := dial(t, addr)
		tt := gnmipath.Target{Name: "sw0", Dialect: d}
		key := env.QueueKey{Target: "sw0", Port: "Ethernet2", Queue: 3}
		prefix, paths := gnmipath.SettingPaths(tt, key)
		// the bindings, then the profiles they name
		get := func() *gnmi.GetResponse {
			resp, err := tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: prefix, Path: paths, Encoding: gnmi.Encoding_JSON_IETF})
			if err != nil {
				t.Fatal(err)
			}
			dec := gnmipath.NewDecoder(tt)
			for _, n := range resp.GetNotification() {
				dec.Apply(n)
			}
			var ecn, buf []string
			if e, b := dec.ProfilesOf(key.Port, key.Queue); e != "" {
				ecn = []string{e}
				if b != "" {
					buf = []string{b}
				}
			}
			ps := gnmipath.ProfileSubscription(tt, ecn, buf)
			r2, err := tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: ps.Prefix, Path: ps.Paths, Encoding: gnmi.Encoding_JSON_IETF})
			if err != nil {
				t.Fatal(err)
			}
			resp.Notification = append(resp.Notification, r2.GetNotification()...)
			return resp
		}
		before, err := gnmipath.ParseSetting(tt, key, get())
		if err != nil {
			t.Fatal(err)
		}
		_, dec := onceSnapshot(t, tg, tt)
		set := env.Setting{KminBytes: 150_000, KmaxBytes: 3_000_000, Pmax: 0.07, HeadroomBytes: before.HeadroomBytes + 1000, Alpha: 0.5}
		want := set
		if d != gnmipath.Sonic {
			want.Alpha = 0 // no alpha leaf: ignored
		}
		req, err := gnmipath.SetRequest(tt, key, set, dec.Binding(key.Port, key.Queue))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tg.Set(ctx5(t), req); err != nil {
			t.Fatalf("%s: set: %v", d, err)
		}
		if h := gnmipath.HeadroomRequest(tt, key, want.HeadroomBytes); h != nil {
			if _, err := tg.Set(ctx5(t), h); err != nil {
				t.Fatalf("%s: set headroom: %v", d, err)
			}
		}
		got, err := gnmipath.ParseSetting(tt, key, get())
		if err != nil || got != want {
			t.Fatalf("%s: read back %+v (%v), want %+v", d, got, err, want)
		}
		truth, _ := s.Telemetry("sw0")
		if e := truth.Ports[2].Queues[3].ECN; e != (simenv.ECN{KminBytes: 150_000, KmaxBytes: 3_000_000, Pmax: 0.07}) {
			t.Fatalf("%s: simulation has %+v", d, e)
		}
		if h := truth.Ports[2].PG[3].HeadroomBytes; h != want.HeadroomBytes {
			t.Fatalf("%s: simulation headroom %d", d, h)
		}
		if a := truth.Ports[2].PG[3].Alpha; (d == gnmipath.Sonic && a != 0.5) || (d != gnmipath.Sonic && a != 0.125) || truth.Ports[1].PG[3].Alpha != 0.125 {
			t.Fatalf("%s: simulation alpha %g (port 1: %g)", d, a, truth.Ports[1].PG[3].Alpha)
		}
		if e := truth.Ports[1].Queues[3].ECN; e.KminBytes != before.KminBytes {
			t.Fatalf("%s: another queue changed: %+v", d, e)
		}
		snap, _ := onceSnapshot(t, tg, tt)
		if snap.Queues[2].Setting != want {
			t.Fatalf("%s: telemetry shows %+v", d, snap.Queues[2].Setting)
		}

		// Rejected Sets change nothing.
		bad := env.Setting{KminBytes: 2_000_000, KmaxBytes: 1_000_000, Pmax: 0.1}
		req.Update = req.Update[:0]
		var badReq *gnmi.SetRequest
		{
			// build a valid request for a valid setting, then corrupt it to kmin > kmax
			r, _ := gnmipath.SetRequest(tt, key, env.Setting{KminBytes: 1, KmaxBytes: 2, Pmax: 0.1}, dec.Binding(key.Port, key.Queue))
			badReq = r
			for _, u := range badReq.Update {
				js := string(u.GetVal().GetJsonIetfVal())
				js = strings.Replace(js, `"1"`, `"`+itoa64(bad.KminBytes)+`"`, 1)
				js = strings.Replace(js, `"2"`, `"`+itoa64(bad.KmaxBytes)+`"`, 1)
				u.Val = &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(js)}}
			}
		}
		_, err = tg.Set(ctx5(t), badReq)
		wantCode(t, err, codes.InvalidArgument, "above kmax")
		unknown := &gnmi.SetRequest{Prefix: prefix, Update: []*gnmi.Update{
			{Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "qos"}, {Name: "nonsense"}}}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 1}}},
			badReq.Update[0]}}
		if d == gnmipath.Sonic {
			unknown.Update[0].Path = &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "NOPE"}, {Name: "x"}, {Name: "y"}}}
		}
		_, err = tg.Set(ctx5(t), unknown)
		wantCode(t, err, codes.NotFound, "nothing changed")
		truth2, _ := s.Telemetry("sw0")
		if truth2.Ports[2].Queues[3].ECN != truth.Ports[2].Queues[3].ECN {
			t.Fatalf("%s: rejected Set changed the simulation", d)
		}
		if got, _ := gnmipath.ParseSetting(tt, key, get()); got != want {
			t.Fatalf("%s: rejected Set changed the config to %+v", d, got)
		}
		// Unknown target
		_, err = tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "leaf9"}, Path: []*gnmi.Path{{}}})
		if d == gnmipath.Sonic {
			wantCode(t, err, codes.NotFound, `database "leaf9"`)
		} else {
			wantCode(t, err, codes.NotFound, `target "leaf9"`)
		}
	}
}

func itoa64(i int64) string { return strconv.FormatInt(i, 10) }

func TestPoll(t *testing.T) {
	s, addr := start(t, gnmipath.OpenConfig, nil)
	tg := dial(t, addr)
	req, err := api.NewSubscribeRequest(api.Target("sw0"), api.SubscriptionListModePOLL(), api.EncodingJSON_IETF(),
		api.Subscription(api.Path("/qos/interfaces/interface[interface-id=Ethernet0]/output/queues/queue[name=3]/state/transmit-octets")))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctx5(t)
	rsp, errs := tg.SubscribeChan(ctx, req, "poll")
	var stamps []int64
	syncs := 0
	for syncs < 3 {
		select {
		case r := <-rsp:
			switch x := r.Response.GetResponse().(type) {
			case *gnmi.SubscribeResponse_Update:
				if len(x.Update.GetUpdate()) != 1 {
					t.Fatalf("poll answer has %d updates, want 1", len(x.Update.GetUpdate()))
				}
				stamps = append(stamps, x.Update.GetTimestamp())
			case *gnmi.SubscribeResponse_SyncResponse:
				syncs++
				if syncs < 3 {
					waitSim(t, s, SimTime(stamps[len(stamps)-1])+simenv.Microsecond)
					if err := tg.SubscribePoll(ctx, "poll"); err != nil {
						t.Fatal(err)
					}
				}
			}
		case e := <-errs:
			t.Fatal(e.Err)
		case <-ctx.Done():
			t.Fatal("timeout")
		}
	}
	if len(stamps) != 3 || !(stamps[0] < stamps[1] && stamps[1] < stamps[2]) {
		t.Fatalf("poll timestamps %v, want 3 increasing", stamps)
	}
}

func TestStreamSample(t *testing.T) {
	for _, d := range []gnmipath.Dialect{gnmipath.OpenConfig, gnmipath.Sonic} {
		_, addr := start(t, d, nil)
		tg := dial(t, addr)
		tt := gnmipath.Target{Name: "sw0", Dialect: d}
		const interval = 40 * time.Millisecond
		_, known := onceSnapshot(t, tg, tt)
		ecn, buf := known.Profiles()
		reqs := append(gnmipath.SubscribeRequests(tt, interval), gnmipath.ProfileSubscribeRequest(tt, ecn, buf))
		ctx, cancel := context.WithCancel(ctx5(t))
		dec := gnmipath.NewDecoder(tt, 3)
		type msg struct {
			r   *gnmi.SubscribeResponse
			sub int
		}
		all := make(chan msg, 1000)
		first := time.Now()
		for i, req := range reqs {
			rsp, errs := tg.SubscribeChan(ctx, req, "s"+itoa(i))
			go func(i int) {
				for {
					select {
					case r, ok := <-rsp:
						if !ok {
							return
						}
						all <- msg{r.Response, i}
					case e, ok := <-errs:
						if ok && ctx.Err() == nil {
							t.Errorf("stream error: %v", e.Err)
						}
						return
					}
				}
			}(i)
		}
		syncs := 0
		var samples []int64 // timestamps of counter notifications after sync
		for len(samples) < 6 {
			select {
			case m := <-all:
				switch x := m.r.GetResponse().(type) {
				case *gnmi.SubscribeResponse_SyncResponse:
					syncs++
				case *gnmi.SubscribeResponse_Update:
					if err := dec.Apply(x.Update); err != nil {
						t.Fatal(err)
					}
					// one sample may come as several notifications
					// (one per container), all with its timestamp
					isCounters := m.sub == 0
					ts := x.Update.GetTimestamp()
					if isCounters && syncs == len(reqs) && (len(samples) == 0 || samples[len(samples)-1] != ts) {
						samples = append(samples, ts)
					}
				}
			case <-ctx.Done():
				t.Fatalf("%s: timeout with %d samples", d, len(samples))
			}
		}
		elapsed := time.Since(first)
		cancel()
		// never faster than the interval: the 6th sample after the initial
		// dump is due 6 intervals after subscribing at the earliest
		if elapsed < 6*interval-interval/4 {
			t.Fatalf("%s: 6 samples in %v, interval %v", d, elapsed, interval)
		}
		for i := 1; i < len(samples); i++ {
			if samples[i] < samples[i-1] {
				t.Fatalf("%s: timestamps go back: %v", d, samples)
			}
		}
		if samples[len(samples)-1] <= samples[0] {
			t.Fatalf("%s: simulated time did not advance over samples: %v", d, samples)
		}
		snap, inc := dec.Snapshot()
		if len(snap.Queues) != 4 || len(inc) != 0 {
			t.Fatalf("%s: stream snapshot %d queues, %v", d, len(snap.Queues), inc)
		}
	}
}

func TestOnChangeAfterSet(t *testing.T) {
	for _, d := range []gnmipath.Dialect{gnmipath.OpenConfig, gnmipath.Sonic} {
		_, addr := start(t, d, nil)
		tg := dial(t, addr)
		tt := gnmipath.Target{Name: "sw0", Dialect: d}
		_, cfgSub := gnmipath.Subscriptions(tt)
		req := &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
			Prefix: cfgSub.Prefix, Mode: gnmi.SubscriptionList_STREAM, Encoding: gnmi.Encoding_JSON_IETF}}}
		key := env.QueueKey{Target: "sw0", Port: "Ethernet1", Queue: 3}
		// the queue's profile, and the one of its own a sonic switch's
		// shared AZURE_LOSSLESS makes the Set create
		profile := gnmipath.ProfileSubscription(tt, []string{gnmipath.ECNProfileName(key.Port, key.Queue), gnmipath.OwnProfileName(key.Port, key.Queue)}, nil)
		for _, p := range append(cfgSub.Paths, profile.Paths...) {
			req.GetSubscribe().Subscription = append(req.GetSubscribe().Subscription, &gnmi.Subscription{Path: p, Mode: gnmi.SubscriptionMode_ON_CHANGE})
		}
		ctx := ctx5(t)
		rsp, errs := tg.SubscribeChan(ctx, req, "cfg")
		dec := gnmipath.NewDecoder(tt)
		want := env.Setting{KminBytes: 50_000, KmaxBytes: 500_000, Pmax: 0.5}
		setDone := false
		updatesAfterSet := 0
		for {
			select {
			case r := <-rsp:
				switch x := r.Response.GetResponse().(type) {
				case *gnmi.SubscribeResponse_SyncResponse:
					b := dec.Binding(key.Port, key.Queue)
					sreq, err := gnmipath.SetRequest(tt, key, want, b)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := tg.Set(ctx, sreq); err != nil {
						t.Fatal(err)
					}
					setDone = true
				case *gnmi.SubscribeResponse_Update:
					if err := dec.Apply(x.Update); err != nil {
						t.Fatal(err)
					}
					if setDone {
						updatesAfterSet += len(x.Update.GetUpdate())
						if got, err := dec.Setting(key.Port, key.Queue); err == nil && got.KminBytes == want.KminBytes {
							if got.KmaxBytes != want.KmaxBytes || got.Pmax != want.Pmax {
								t.Fatalf("%s: on-change gave %+v", d, got)
							}
							// only the changed leaves were sent (sonic: the
							// queue's new profile, five fields, and its binding)
							limit := 5
							if d == gnmipath.Sonic {
								limit = 6
							}
							if updatesAfterSet > limit {
								t.Fatalf("%s: %d leaves sent on change, want only the changed ones", d, updatesAfterSet)
							}
							goto next
						}
					}
				}
			case e := <-errs:
				t.Fatal(e.Err)
			case <-ctx.Done():
				t.Fatalf("%s: no on-change update after Set", d)
			}
		}
	next:
	}
}

func writeCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "simswitch-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestTLSAndPassword(t *testing.T) {
	cert, key := writeCert(t)
	_, addr := start(t, gnmipath.OpenConfig, func(c *Config) {
		c.TLSCert, c.TLSKey, c.Username, c.Password = cert, key, "admin", "s3cret"
	})
	good := dial(t, addr, api.TLSCA(cert), api.Username("admin"), api.Password("s3cret"))
	if _, err := good.Capabilities(ctx5(t)); err != nil {
		t.Fatal(err)
	}
	resp, err := good.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "sw0"}, Path: []*gnmi.Path{{Elem: []*gnmi.PathElem{{Name: "qos"}, {Name: "state"}}}}, Encoding: gnmi.Encoding_PROTO})
	if err != nil || len(resp.GetNotification()) != 1 || resp.GetNotification()[0].GetUpdate()[0].GetVal().GetUintVal() != 32_000_000 {
		t.Fatalf("get over TLS: %v %v", resp, err)
	}
	bad := dial(t, addr, api.TLSCA(cert), api.Username("admin"), api.Password("wrong"))
	_, err = bad.Capabilities(ctx5(t))
	wantCode(t, err, codes.Unauthenticated, "wrong")
	anon := dial(t, addr, api.TLSCA(cert))
	_, err = anon.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "sw0"}})
	wantCode(t, err, codes.Unauthenticated, "missing")
	// plaintext against a TLS server fails
	plain, err := api.NewTarget(api.Address(addr), api.Insecure(true), api.Timeout(time.Second), api.Username("admin"), api.Password("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := plain.CreateGNMIClient(ctx); err == nil {
		if _, err := plain.Capabilities(ctx); err == nil {
			t.Fatal("plaintext client got through to a TLS server")
		}
	}
}

// ONCE with updates_only sends no current state, only the sync (gNMI
// 3.5.1.5.1); it sent every leaf.
func TestOnceUpdatesOnly(t *testing.T) {
	_, addr := start(t, gnmipath.OpenConfig, nil)
	tg := dial(t, addr)
	for _, only := range []bool{false, true} {
		req := &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
			Prefix: &gnmi.Path{Target: "sw0"}, Mode: gnmi.SubscriptionList_ONCE, UpdatesOnly: only,
			Subscription: []*gnmi.Subscription{{Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "qos"}}}}}}}}
		rs, err := tg.SubscribeOnce(ctx5(t), req)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range rs {
			n += len(r.GetUpdate().GetUpdate())
		}
		if only != (n == 0) {
			t.Errorf("updates_only %v: %d updates", only, n)
		}
	}
}

// A path in the deprecated element field is refused, not read as the
// root (a Get of Element ["qos", "interfaces"] returned the whole tree).
func TestDeprecatedElementRefused(t *testing.T) {
	_, addr := start(t, gnmipath.OpenConfig, nil)
	tg := dial(t, addr)
	_, err := tg.Get(ctx5(t), &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "sw0"}, Path: []*gnmi.Path{{Element: []string{"qos", "interfaces"}}}}) //nolint:staticcheck
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "deprecated element") {
		t.Fatalf("Get with element: %v", err)
	}
}
