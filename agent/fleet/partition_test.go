package fleet

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// cutProxy forwards TCP to an etcd until it is cut: a member behind it is
// partitioned from etcd while the others reach it.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.Cut(true) })
	return p
}

// Cut drops every connection and refuses new ones.
func (p *cutProxy) Cut(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = on
	if on {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// A leader cut from etcd stops saying it leads, and lists none of its
// switches, once a ttl has passed since the last renewal etcd confirmed:
// etcd may have expired its lease by then (here it has: b leads and owns
// every switch). Before, 13 s after the cut (ttl 3 s) both a and b said
// they led and a still listed 3 switches as its own, and its health said
// it would lose them "at the ttl".
func TestPartitionedLeaderStepsDownAtTheTTL(t *testing.T) {
	ep := startEtcd(t)
	px := newCutProxy(t, ep)
	ca, err := clientv3.New(clientv3.Config{Endpoints: []string{px.ln.Addr().String()}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	a, err := Join(context.Background(), ca, testConfig("a", 6))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	var changes atomic.Int32
	a.OnChange(func() { changes.Add(1) })
	waitUntil(t, 10*time.Second, "a leads", func() bool { return a.Leader() })
	b := join(t, ep, "b", 6)
	defer b.Close()
	waitUntil(t, 20*time.Second, "both own switches", func() bool { return len(a.Owned()) > 0 && len(b.Owned()) > 0 })
	mine := a.Owned()[0].Switch
	px.Cut(true)
	cut := time.Now()
	before := changes.Load()
	waitUntil(t, 20*time.Second, "b leads and owns all 6", func() bool { return b.Leader() && len(b.Owned()) == 6 })
	if a.Leader() {
		t.Errorf("a still says it leads %v after its cut (ttl %v), beside b", time.Since(cut).Round(100*time.Millisecond), a.cfg.TTL)
	}
	if n := len(a.Owned()); n > 0 || a.Owns(mine) {
		t.Errorf("a still lists %d switches (%s: %v) as its own %v after its cut (ttl %v)", n, mine, a.Owns(mine), time.Since(cut).Round(100*time.Millisecond), a.cfg.TTL)
	}
	waitUntil(t, 2*time.Second, "an OnChange of a as its switches go at the ttl (the agent serves them until one)", func() bool { return changes.Load() > before })
	p := a.LeaseProblem(time.Now())
	if !strings.Contains(p, "lost its switches and the lead") || strings.Contains(p, "loses them all at the ttl") {
		t.Errorf("a's lease problem past the ttl: %q", p)
	}
}
