package agent

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
)

// openHTTP opens an agent on one fake switch serving its HTTP endpoint
// with lim, and returns the endpoint's address.
func openHTTP(t *testing.T, lim HTTPLimits) string {
	t.Helper()
	cfg := openTestConfig(t, "leaf0")
	cfg.Policy = "static:hpcc"
	cfg.Metrics = "127.0.0.1:0"
	var logs strings.Builder
	a, err := Open(context.Background(), cfg, Deps{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Dial: func(_ context.Context, tc config.Target, _ time.Duration) (Switch, error) {
			return newFakeSwitch(tc.Name, kA), nil
		},
		HTTP: lim,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	addr := regexp.MustCompile(`addr=(\S+)`).FindStringSubmatch(logs.String())
	if addr == nil {
		t.Fatalf("no listen address logged:\n%s", logs.String())
	}
	return addr[1]
}

// dialGet connects to addr and sends one keep-alive GET /healthz.
func dialGet(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: agent\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return c
}

// readResponse reads one response from c within wait; the error is a
// timeout when none came.
func readResponse(c net.Conn, br *bufio.Reader, wait time.Duration) error {
	c.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestMetricsConnectionCap: the HTTP endpoint serves at most MaxConns
// connections at once; more wait in the kernel's accept queue (they hold
// no descriptor of the agent) and are served as the held ones close. The
// held ones are in the middle of a request (its headers not finished):
// an idle one gives its place up (TestMetricsIdleConnectionsMakeRoom).
func TestMetricsConnectionCap(t *testing.T) {
	const max, extra = 4, 6
	addr := openHTTP(t, HTTPLimits{MaxConns: max, IdleTimeout: time.Hour, ReadHeaderTimeout: time.Hour, ReadTimeout: time.Hour})
	var held []net.Conn
	for range max {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n")); err != nil { // headers not ended
			t.Fatal(err)
		}
		held = append(held, c)
	}
	time.Sleep(200 * time.Millisecond) // accepted and reading
	var waiting []net.Conn
	var readers []*bufio.Reader
	for range extra {
		c := dialGet(t, addr) // the kernel completes the handshake
		waiting = append(waiting, c)
		readers = append(readers, bufio.NewReader(c))
	}
	// Not served while the cap is held: the agent never accepts them.
	for i, c := range waiting {
		if err := readResponse(c, readers[i], 100*time.Millisecond); !isTimeout(err) {
			t.Fatalf("connection %d beyond the cap of %d was served (%v)", max+i+1, max, err)
		}
	}
	for _, c := range held {
		c.Close()
	}
	// Served once the held ones go, each within a generous bound.
	for i, c := range waiting {
		if err := readResponse(c, readers[i], 10*time.Second); err != nil {
			t.Fatalf("connection %d not served after the held ones closed: %v", max+i+1, err)
		}
		c.Close()
	}
}

// TestMetricsIdleConnectionsMakeRoom: when every place is taken by idle
// keep-alive connections, a new one is served at once and the connection
// idle the longest is closed (64 idle ones held /healthz and /pause for
// the 30 s idle timeout).
func TestMetricsIdleConnectionsMakeRoom(t *testing.T) {
	const max = 4
	addr := openHTTP(t, HTTPLimits{MaxConns: max, IdleTimeout: time.Hour})
	var held []net.Conn
	var readers []*bufio.Reader
	for range max {
		c := dialGet(t, addr)
		br := bufio.NewReader(c)
		if err := readResponse(c, br, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		held, readers = append(held, c), append(readers, br) // idle, kept alive
		time.Sleep(20 * time.Millisecond)                    // an order of idleness
	}
	c := dialGet(t, addr)
	if err := readResponse(c, bufio.NewReader(c), 5*time.Second); err != nil {
		t.Fatalf("a connection beyond %d idle ones: %v", max, err)
	}
	c.Close()
	// the first, idle the longest, was closed by the agent
	held[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := readers[0].ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("the longest idle connection: %v, want it closed", err)
	}
	for _, c := range held {
		c.Close()
	}
}

// TestMetricsIdleTimeout: an idle keep-alive connection is closed by the
// agent after IdleTimeout, which frees its place under the cap.
func TestMetricsIdleTimeout(t *testing.T) {
	const max = 3
	addr := openHTTP(t, HTTPLimits{MaxConns: max, IdleTimeout: 200 * time.Millisecond})
	for i := range max {
		c := dialGet(t, addr)
		br := bufio.NewReader(c)
		if err := readResponse(c, br, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		// Idle now: the agent must hang up (EOF), well before the bound.
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := br.ReadByte(); !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) && !strings.Contains(errString(err), "reset") {
			t.Fatalf("idle connection %d: want it closed by the agent, got %v", i+1, err)
		}
		c.Close()
	}
	// The places are free again.
	c := dialGet(t, addr)
	if err := readResponse(c, bufio.NewReader(c), 10*time.Second); err != nil {
		t.Fatalf("after the idle ones were closed: %v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestHTTPLimitsDefaults: every timeout is set, and the cap is the
// configuration's.
func TestHTTPLimitsDefaults(t *testing.T) {
	l := HTTPLimits{}.withDefaults(0)
	if l.MaxConns != config.DefaultMetricsMaxConns || l.ReadHeaderTimeout <= 0 || l.ReadTimeout <= 0 || l.WriteTimeout <= 0 || l.IdleTimeout <= 0 {
		t.Fatalf("defaults %+v", l)
	}
	if l := (HTTPLimits{}).withDefaults(7); l.MaxConns != 7 {
		t.Fatalf("configured cap 7 gave %d", l.MaxConns)
	}
	if l := (HTTPLimits{MaxConns: 2, IdleTimeout: time.Second}).withDefaults(7); l.MaxConns != 2 || l.IdleTimeout != time.Second {
		t.Fatalf("explicit limits not kept: %+v", l)
	}
}
