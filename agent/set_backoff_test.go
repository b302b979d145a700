package agent

import (
	"errors"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/agent/config"
)

// A switch that fails every Set (sonic-gnmi with its config updater down)
// is not sent one every interval: from the second failure in a row the
// target's writes back off, 1, 2, 4, ... intervals, /healthz says why, and
// a Set that succeeds ends it.
func TestFailedSetsBackOff(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	r.sw.mu.Lock()
	r.sw.setErr = errors.New("rpc error: code = Unknown desc = dial unix /var/run/dbus/system_bus_socket: connect: no such file or directory")
	r.sw.mu.Unlock()
	for range 120 {
		r.interval(t)
	}
	n := r.sw.setCount()
	// without a backoff: a Set every five intervals (min-hold), 24; with
	// it, waits of 1, 2, 4, ... 64 intervals after the second failure
	if n == 0 || n > 9 {
		t.Fatalf("%d Sets over 120 intervals to a switch that fails them all: want at most 9, backing off", n)
	}
	t.Logf("%d Sets over 120 intervals", n)
	ps, _ := r.a.Health()
	h := strings.Join(ps, "; ")
	if !strings.Contains(h, "leaf0: the last ") || !strings.Contains(h, "Sets failed (rpc error: code = Unknown desc = dial unix") {
		t.Fatalf("health %q: want the failed Sets", h)
	}
	// the switch takes Sets again: the next try succeeds, the backoff ends
	r.sw.mu.Lock()
	r.sw.setErr = nil
	r.sw.mu.Unlock()
	for range 140 {
		r.interval(t)
	}
	if r.sw.setCount() == n {
		t.Fatal("no Set after the switch recovered")
	}
	if ps, _ := r.a.Health(); strings.Contains(strings.Join(ps, "; "), "Sets failed") {
		t.Fatalf("health after recovery: %v", ps)
	}
}
