package agent

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/web"
	"github.com/ecntune/ecntune/env"
)

func getHealth(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHealthzFailsOnStaleOrUnreachable: /healthz is 503 with the reason
// while no target has sent telemetry, 200 once it does, and 503 again
// when the telemetry is older than config.HealthStaleIntervals intervals.
func TestHealthzFailsOnStaleOrUnreachable(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	srv := httptest.NewServer(r.a.Handler())
	defer srv.Close()
	code, body := getHealth(t, srv.URL)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "no target reachable") || !strings.Contains(body, "leaf0") {
		t.Fatalf("before any telemetry: %d %q, want 503 naming no target reachable", code, body)
	}
	r.interval(t)
	if code, body = getHealth(t, srv.URL); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("with fresh telemetry: %d %q, want 200 ok", code, body)
	}
	r.clk.Add(config.HealthStaleIntervals*time.Second - time.Millisecond)
	if code, body = getHealth(t, srv.URL); code != http.StatusOK {
		t.Fatalf("telemetry just under %d intervals old: %d %q, want 200", config.HealthStaleIntervals, code, body)
	}
	r.clk.Add(2 * time.Millisecond)
	code, body = getHealth(t, srv.URL)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "leaf0: telemetry stale: the last arrived 3.001s ago (limit 3s = 3 intervals)") {
		t.Fatalf("telemetry over %d intervals old: %d %q, want 503 naming leaf0's stale telemetry", config.HealthStaleIntervals, code, body)
	}
	r.interval(t)
	if code, _ = getHealth(t, srv.URL); code != http.StatusOK {
		t.Fatalf("after fresh telemetry again: %d, want 200", code)
	}
}

// TestHealthzNamesTheSilentTarget: with two targets, one that never
// reports fails /healthz once the grace of config.HealthStaleIntervals intervals
// from the start is over, while the other is fine.
func TestHealthzNamesTheSilentTarget(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	silent := newFakeSwitch("leaf1")
	r.a.targets["leaf1"] = config.Target{Name: "leaf1", AllPorts: true, Queues: []int{3}}
	r.a.switches["leaf1"] = silent
	r.a.names = append(r.a.names, "leaf1")
	r.a.lastSeen["leaf1"] = r.clk.Now()
	r.interval(t)
	if p, _ := r.a.Health(); len(p) != 0 {
		t.Fatalf("within the grace: %q, want healthy", p)
	}
	r.clk.Add(3 * time.Second)
	r.a.Ingest(r.sw.snapshot(r.tns + sec))
	p, ages := r.a.Health()
	if len(p) != 1 || !strings.HasPrefix(p[0], "leaf1: no telemetry since the agent started 4s ago") || ages["leaf0"] != 0 {
		t.Fatalf("after the grace: problems %q, ages %v; want leaf1 named alone", p, ages)
	}
}

// A target whose telemetry went stale loses its interval series on
// /metrics (its last depth and utilisation stood there as if current for
// as long as the switch was silent), and has them again when it reports.
func TestMetricsDropASilentTargetsIntervalSeries(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	r.obs.metrics[kA] = env.Metrics{IntervalNs: sec, Util: 0.44, MarkFrac: 0.1, MaxDelayNs: 8_000, AvgDelayNs: 4_000}
	r.interval(t)
	m := get(t, r.a.Handler(), "/metrics").Body.String()
	for _, want := range []string{`ecntune_target_queues{target="leaf0"}`, `ecntune_queue_utilisation{`} {
		if !strings.Contains(m, want) {
			t.Fatalf("/metrics lacks %s with fresh telemetry", want)
		}
	}
	// silent: intervals pass with no snapshot
	for range config.HealthStaleIntervals + 1 {
		r.clk.Add(time.Second)
		if err := r.a.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	m = get(t, r.a.Handler(), "/metrics").Body.String()
	for _, gone := range []string{`ecntune_target_queues{target="leaf0"}`, `ecntune_target_queue_depth_max_bytes{target="leaf0"}`, `ecntune_queue_utilisation{`} {
		if strings.Contains(m, gone) {
			t.Errorf("/metrics keeps %s of a target silent for %d intervals", gone, config.HealthStaleIntervals+1)
		}
	}
	if !strings.Contains(m, `ecntune_target_tx_bytes_total{target="leaf0"}`) {
		t.Error("the silent target's counters were dropped")
	}
	r.interval(t)
	if m = get(t, r.a.Handler(), "/metrics").Body.String(); !strings.Contains(m, `ecntune_target_queues{target="leaf0"}`) {
		t.Error("no interval series once the target reports again")
	}
}

// The dashboard's counts are of the newest telemetry's recommendations:
// a switch gone silent leaves none ("48 queues decided, 12 would change"
// stood after every switch had stopped sending).
func TestOverviewCountsFreshRecommendationsOnly(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	r.interval(t)
	var ov web.Overview
	if err := json.Unmarshal(get(t, r.a.Handler(), "/api/overview").Body.Bytes(), &ov); err != nil || ov.Queues != 2 {
		t.Fatalf("overview with fresh telemetry: %d queues, %v", ov.Queues, err)
	}
	for range config.HealthStaleIntervals + 1 {
		r.clk.Add(time.Second)
		if err := r.a.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := json.Unmarshal(get(t, r.a.Handler(), "/api/overview").Body.Bytes(), &ov); err != nil || ov.Queues != 0 || ov.WouldChange != 0 {
		t.Fatalf("overview with every switch silent: %d queues, %d would change, %v", ov.Queues, ov.WouldChange, err)
	}
}

// A loop that yields to another writer on most queues is up but tunes
// almost nothing: /healthz says ok with a note naming it, and the
// dashboard's overview carries the note (it said "ok" alone while every
// queue yielded for a minute).
func TestHealthNotesYieldOnMostQueues(t *testing.T) {
	db := filepath.Join(t.TempDir(), "agent.db")
	r := newRig(t, config.ModeClosedLoop, false, db, nil)
	r.interval(t)
	r.j.Close()
	r2 := newRig(t, config.ModeClosedLoop, false, db, newFakeSwitch("leaf0", kA, kB)) // runs other settings than the agent set
	r2.clk.t, r2.tns = r.clk.Now().Add(time.Hour), r.tns
	h := r2.a.Handler()
	r2.interval(t)
	if w := get(t, h, "/healthz"); w.Code != 200 || strings.Contains(w.Body.String(), "another writer") {
		t.Fatalf("/healthz before any yield: %d %s", w.Code, w.Body)
	}
	for range 3 {
		r2.interval(t)
	}
	w := get(t, h, "/healthz")
	if w.Code != 200 || !strings.HasPrefix(w.Body.String(), "ok\n") || !strings.Contains(w.Body.String(), "the loop yields to another writer on 2 of 2 queues") {
		t.Errorf("/healthz with every queue yielding: %d %s", w.Code, w.Body)
	}
	var ov web.Overview
	if err := json.Unmarshal(get(t, h, "/api/overview").Body.Bytes(), &ov); err != nil {
		t.Fatal(err)
	}
	if !ov.Healthy || len(ov.Notes) != 1 || !strings.Contains(ov.Notes[0], "yields to another writer on 2 of 2 queues") {
		t.Errorf("overview healthy %v, notes %q", ov.Healthy, ov.Notes)
	}
}
