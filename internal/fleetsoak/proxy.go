package fleetsoak

import (
	"io"
	"net"
	"sync"
)

// Proxy is a TCP proxy on 127.0.0.1 between one agent and etcd that can be
// cut: every connection closed and new ones refused (accepted and closed
// at once) until it is restored. It forwards to the etcd members in turn,
// skipping one that does not answer, so that a member stopped does not cut
// the agent off.
type Proxy struct {
	ln      net.Listener
	targets []string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
	next  int
	wg    sync.WaitGroup
}

// NewProxy listens on 127.0.0.1 (a free port) and forwards to targets.
func NewProxy(targets []string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, targets: targets, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address, the agent's etcd endpoint.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection and refuses new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	cs := p.conns
	p.conns = map[net.Conn]bool{}
	p.mu.Unlock()
	for c := range cs {
		c.Close()
	}
}

// Restore accepts connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		go p.serve(c)
	}
}

// serve dials a member for c and copies both ways until either side ends
// or the proxy is cut.
func (p *Proxy) serve(c net.Conn) {
	var up net.Conn
	for range p.targets {
		p.mu.Lock()
		t := p.targets[p.next%len(p.targets)]
		p.next++
		p.mu.Unlock()
		var err error
		if up, err = net.Dial("tcp", t); err == nil {
			break
		}
	}
	if up == nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}
