package agent

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
)

var errNoSpace = errors.New("write agent.db: no space left on device")

// A closed loop whose db cannot be written (a full disk) writes no
// switch, and says so: /healthz names the db and the error, /metrics
// counts the failed writes; once writes succeed again both clear. It
// answered ok while no change could be recorded or made.
func TestDBWriteFailureOnHealthAndMetrics(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	r.a.o.Journal.SetWriteFault(func() error { return errNoSpace })
	r.interval(t)
	if n := r.sw.setCount(); n != 0 {
		t.Fatalf("%d Sets without a write-ahead record", n)
	}
	p, _ := r.a.Health()
	if s := strings.Join(p, "\n"); !strings.Contains(s, "agent db "+r.db+": writes fail since") || !strings.Contains(s, "no space left on device") ||
		!strings.Contains(s, "no switch is written") {
		t.Fatalf("health with a full disk: %q", p)
	}
	m := get(t, r.a.Handler(), "/metrics").Body.String()
	if !strings.Contains(m, "ecntune_agent_db_write_failures_total ") || strings.Contains(m, "ecntune_agent_db_write_failures_total 0") {
		t.Fatalf("/metrics lacks the failed writes:\n%s", grepLines(m, "db_write"))
	}
	r.a.o.Journal.SetWriteFault(nil)
	r.clk.Add(10 * time.Second)
	r.interval(t)
	if p, _ := r.a.Health(); len(p) != 0 {
		t.Fatalf("health once writes succeed: %q", p)
	}
	if r.sw.setCount() == 0 {
		t.Fatal("no Set once writes succeed")
	}
}

// A shadow agent on a full disk prunes what its retention lets go and
// stores again: before, the prune came after the store, which failed
// every interval, so nothing was ever freed or stored again.
func TestStoreFailurePrunesAndRetries(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	r.a.retention = 3 * time.Second
	for range 5 {
		r.interval(t)
	}
	first, err := r.j.Recommendations("", 0, 0)
	if err != nil || len(first) == 0 {
		t.Fatalf("stored: %d, %v", len(first), err)
	}
	// the disk full: a store fails once, the prune then frees room
	fails := 1
	r.a.o.Journal.SetWriteFault(func() error {
		if fails > 0 {
			fails--
			return errNoSpace
		}
		return nil
	})
	r.clk.Add(10 * time.Second)
	r.interval(t)
	recs, err := r.j.Recommendations("", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	oldest := r.clk.Now().Add(-r.a.retention).UnixNano()
	latest := false
	for _, rc := range recs {
		if rc.TimeNs < oldest {
			t.Fatalf("a recommendation older than the retention kept: %d < %d", rc.TimeNs, oldest)
		}
		latest = latest || rc.TimeNs == r.clk.Now().UnixNano()
	}
	if !latest {
		t.Fatalf("the interval's recommendations not stored after the prune (%d stored)", len(recs))
	}
}

// GET /recommendations?limit=N without since limits the live set too (it
// was ignored), and a bad limit is refused there as with since.
func TestLiveRecommendationsLimit(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	r.interval(t)
	if b := get(t, r.a.Handler(), "/recommendations").Body.String(); strings.Count(b, `"key"`) != 2 {
		t.Fatalf("/recommendations: %s", b)
	}
	if b := get(t, r.a.Handler(), "/recommendations?limit=1").Body.String(); strings.Count(b, `"key"`) != 1 {
		t.Fatalf("/recommendations?limit=1: %s", b)
	}
	if w := get(t, r.a.Handler(), "/recommendations?limit=abc"); w.Code != 400 || !strings.Contains(w.Body.String(), "limit: want a whole number") {
		t.Fatalf("/recommendations?limit=abc: %d %s", w.Code, w.Body)
	}
}

// A switch whose Gets fail (or are too slow for the set timeout) while its
// telemetry streams on gets no change written, and /healthz says so: it
// answered ok, and only a warning a minute told.
func TestDeferredWritesOnHealth(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	r.sw.mu.Lock()
	r.sw.readErr = errors.New("rpc error: code = Unavailable desc = get refused")
	r.sw.mu.Unlock()
	for range 6 {
		r.interval(t)
	}
	if r.sw.setCount() != 0 {
		t.Fatal("written without a read before the write")
	}
	p, _ := r.a.Health()
	if s := strings.Join(p, "\n"); !strings.Contains(s, "leaf0: no change written for") || !strings.Contains(s, "get refused") {
		t.Fatalf("health while every read before a write fails: %q", p)
	}
	r.sw.mu.Lock()
	r.sw.readErr = nil
	r.sw.mu.Unlock()
	for range 8 { // past the min-hold a deferred change starts
		r.interval(t)
	}
	if p, _ := r.a.Health(); len(p) != 0 || r.sw.setCount() == 0 {
		t.Fatalf("health once the switch reads again: %q (%d Sets)", p, r.sw.setCount())
	}
}
