package demo

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
)

// TestDemoHTTPBounded: the demo's endpoint has the agent's timeouts, and
// serves at most config.DefaultMetricsMaxConns connections at once: with
// every place taken by a request under way, the next one is served only
// once a held one closes.
func TestDemoHTTPBounded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := Start(ctx, Config{Scenario: smallFabric(), Listen: "127.0.0.1:0", Timescale: 100, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, nil) }()
	defer func() { cancel(); <-done }()
	if s := d.agents[0].http; s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 {
		t.Fatalf("timeouts: header %v, read %v, write %v, idle %v; want all set", s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout)
	}
	addr := d.agents[0].ln.Addr().String()
	get := func() (net.Conn, *bufio.Reader) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: demo\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		return c, bufio.NewReader(c)
	}
	read := func(c net.Conn, br *bufio.Reader, wait time.Duration) error {
		c.SetReadDeadline(time.Now().Add(wait))
		resp, err := http.ReadResponse(br, nil)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return err
	}
	// held in the middle of a request (its headers not finished): an idle
	// kept-alive connection gives its place up to a new one
	var held []net.Conn
	for range config.DefaultMetricsMaxConns {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: demo\r\n"); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	time.Sleep(200 * time.Millisecond) // accepted and reading
	c, br := get()
	var ne net.Error
	if err := read(c, br, 100*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("connection %d was served beyond the cap (%v)", config.DefaultMetricsMaxConns+1, err)
	}
	// (the demo's own keep-alive client may hold a place too, so a held
	// one still queued could take the first place freed: all are closed)
	for _, h := range held {
		h.Close()
	}
	if err := read(c, br, 10*time.Second); err != nil {
		t.Fatalf("not served once a place was free: %v", err)
	}
}
