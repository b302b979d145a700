package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// lldpNotif builds a Get answer of leaf updates: pairs of a path under
// /lldp/interfaces and a JSON_IETF value.
func lldpNotif(t *testing.T, kv ...string) []*gnmi.Notification {
	t.Helper()
	n := &gnmi.Notification{Prefix: &gnmi.Path{Target: "leaf0"}}
	for i := 0; i+1 < len(kv); i += 2 {
		_, el, err := gnmipath.ParsePath("/lldp/interfaces/" + kv[i])
		if err != nil {
			t.Fatal(err)
		}
		n.Update = append(n.Update, &gnmi.Update{Path: &gnmi.Path{Elem: el},
			Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(kv[i+1])}}})
	}
	return []*gnmi.Notification{n}
}

// nbr is the path of neighbour id 1 of port.
func nbr(port, rest string) string {
	return "interface[name=" + port + "]/neighbors/neighbor[id=1]/" + rest
}

func capab(port, c string) string {
	return nbr(port, "capabilities/capability[name="+c+"]/state/enabled")
}

// fakeLLDP is a fakeSwitch that answers LLDP reads with a fixed answer or
// error, and runs its OnConnect hook before its snapshots.
type fakeLLDP struct {
	*fakeSwitch
	mu      sync.Mutex
	ns      []*gnmi.Notification
	err     error
	reads   int
	connect func(ctx context.Context)
}

func (f *fakeLLDP) LLDP(ctx context.Context) ([]*gnmi.Notification, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.ns, f.err
}

func (f *fakeLLDP) OnConnect(fn func(ctx context.Context)) {
	f.mu.Lock()
	f.connect = fn
	f.mu.Unlock()
}

func (f *fakeLLDP) Subscribe(ctx context.Context, out chan<- env.Snapshot, errs chan<- error) {
	f.mu.Lock()
	fn := f.connect
	f.mu.Unlock()
	if fn != nil {
		fn(ctx)
	}
	f.fakeSwitch.Subscribe(ctx, out, errs)
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Discovered peers reach the policy through Ingest; a failed read leaves
// them unknown and says so once, naming the target.
func TestAgentDiscoversPeers(t *testing.T) {
	for _, c := range []struct {
		name string
		ns   []*gnmi.Notification
		err  error
		a, b env.Peer
		log  string
	}{
		{"found", lldpNotif(t, capab(kA.Port, "STATION_ONLY"), "true", capab(kB.Port, "MAC_BRIDGE"), "true"), nil,
			env.PeerHost, env.PeerSwitch, "level=INFO msg=\"LLDP discovery\" target=leaf0 fabric_ports=[" + kB.Port + "] host_ports=1"},
		{"by name", lldpNotif(t, nbr(kA.Port, "state/system-name"), `"leaf1"`), nil, env.PeerSwitch, env.PeerUnknown, "fabric_ports=[" + kA.Port + "]"},
		{"get fails", nil, errors.New("rpc error: code = NotFound desc = no lldp here"), env.PeerUnknown, env.PeerUnknown,
			"level=WARN msg=\"LLDP discovery failed: every port's peer stays unknown (fabric-ports: lldp)\" target=leaf0 err=\"rpc error: code = NotFound desc = no lldp here\""},
		{"unreadable", lldpNotif(t, capab(kA.Port, "ROUTER"), `"yes"`, capab(kB.Port, "ROUTER"), "true"), nil, env.PeerUnknown, env.PeerSwitch,
			"some neighbour state is unreadable"},
	} {
		r := newRig(t, config.ModeShadow, false, "", nil)
		var logs syncBuffer
		r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
		pol := &peerPolicy{fixedPolicy: fixedPolicy{s: target, conf: 0.9}, peers: map[env.QueueKey]env.Peer{}}
		r.a.o.Policy = pol
		tc := config.Target{Name: "leaf0", AllPorts: true, Queues: []int{3, 4}, DiscoverPeers: true}
		r.a.targets["leaf0"] = tc
		r.a.targets["leaf1"] = config.Target{Name: "leaf1"}
		sw := &fakeLLDP{fakeSwitch: r.sw, ns: c.ns, err: c.err}
		r.a.discoverPeers(context.Background(), tc, sw)
		r.interval(t)
		if pol.peers[kA] != c.a || pol.peers[kB] != c.b {
			t.Errorf("%s: peers %q, %q; want %q, %q", c.name, pol.peers[kA], pol.peers[kB], c.a, c.b)
		}
		if !strings.Contains(logs.String(), c.log) {
			t.Errorf("%s: log lacks %q:\n%s", c.name, c.log, logs.String())
		}
		if c.err != nil && strings.Count(logs.String(), "level=WARN") != 1 {
			t.Errorf("%s: want one log line:\n%s", c.name, logs.String())
		}
	}
}

// Run wires discovery to every (re)connection of a fabric-ports: lldp
// target, concurrently with Ingest (run with -race).
func TestAgentRunDiscoversOnConnect(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	pol := &peerPolicy{fixedPolicy: fixedPolicy{s: target, conf: 0.9}, peers: map[env.QueueKey]env.Peer{}}
	r.a.o.Policy = pol
	r.a.targets["leaf0"] = config.Target{Name: "leaf0", AllPorts: true, Queues: []int{3, 4}, DiscoverPeers: true, Timeout: time.Second}
	sw := &fakeLLDP{fakeSwitch: r.sw, ns: lldpNotif(t, capab(kA.Port, "MAC_BRIDGE"), "true")}
	r.a.switches["leaf0"] = sw
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.a.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.sw.snaps <- r.sw.snapshot(time.Now().UnixNano())
		pol.mu.Lock()
		got := pol.peers[kA]
		pol.mu.Unlock()
		if got == env.PeerSwitch {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("discovered peer never reached the policy: %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.reads != 1 {
		t.Fatalf("%d LLDP reads for one connection", sw.reads)
	}
}
