package demo

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// A dashboard port another process has: the error says how to take any
// free one (--listen 127.0.0.1:0).
func TestDemoPortTakenSuggestsAnyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := Start(ctx, Config{Scenario: smallFabric(), Listen: ln.Addr().String(), Timescale: 100, Interval: 100 * time.Millisecond})
	if err == nil {
		d.stop()
		t.Fatal("started on a port that is taken")
	}
	if !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), "--listen 127.0.0.1:0") {
		t.Errorf("port taken: %v", err)
	}
}
