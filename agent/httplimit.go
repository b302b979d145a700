package agent

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// reclaimListener serves at most max connections at once, as
// netutil.LimitListener does, but a connection that comes when all are
// taken closes the one idle the longest (a kept-alive connection waiting
// for its next request) rather than waiting for it: 64 idle keep-alive
// connections held /healthz, /metrics and /pause for their 30 s idle
// timeout, and about two requests a second from one host kept it so.
// Connections in the middle of a request are never closed; they are
// bounded by the server's read and write timeouts.
type reclaimListener struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	once  sync.Once

	mu   sync.Mutex
	idle map[net.Conn]time.Time // since when each idle connection waits
}

func newReclaimListener(ln net.Listener, max int) *reclaimListener {
	return &reclaimListener{Listener: ln, slots: make(chan struct{}, max), done: make(chan struct{}), idle: map[net.Conn]time.Time{}}
}

// connState is the http.Server's ConnState hook: it tracks which
// connections are idle.
func (l *reclaimListener) connState(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st == http.StateIdle {
		l.idle[c] = time.Now()
	} else {
		delete(l.idle, c)
	}
}

// reclaim closes the connection idle the longest, if any.
func (l *reclaimListener) reclaim() {
	l.mu.Lock()
	var oldest net.Conn
	var since time.Time
	for c, t := range l.idle {
		if oldest == nil || t.Before(since) {
			oldest, since = c, t
		}
	}
	delete(l.idle, oldest)
	l.mu.Unlock()
	if oldest != nil {
		oldest.Close()
	}
}

func (l *reclaimListener) Accept() (net.Conn, error) {
	// all taken: close the longest idle, and again while none frees (a
	// connection busy now may be idle in a moment)
	for taken := false; !taken; {
		select {
		case l.slots <- struct{}{}:
			taken = true
		case <-l.done:
			return nil, net.ErrClosed
		default:
			l.reclaim()
			select {
			case l.slots <- struct{}{}:
				taken = true
			case <-l.done:
				return nil, net.ErrClosed
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *reclaimListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// slotConn gives its listener's slot back when it closes, once.
type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
