package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/agent/web"
	"github.com/ecntune/ecntune/env"
)

// agent report while the agent runs: its database is locked, so the
// report is drawn from the agent's HTTP API (its stored recommendations
// and its audit log) and says the same as the report of the db once the
// agent has stopped.
func TestAgentReportWhileAgentRuns(t *testing.T) {
	dir, db, j := runningAgentDB(t)
	now := time.Now()
	k := env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}
	k2 := env.QueueKey{Target: "sw0", Port: "Ethernet4", Queue: 3}
	set := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	for i := range 6 {
		ts := now.Add(time.Duration(i-6) * time.Second).UnixNano()
		var recs []core.Recommendation
		for q, key := range []env.QueueKey{k, k2} {
			recs = append(recs, core.Recommendation{TimeNs: ts, Key: key, Current: set, Recommended: set, Valid: true, RateBps: 100e9,
				Metrics: env.Metrics{IntervalNs: int64(time.Second), Util: 0.5, MaxDelayNs: float64(1000 * (i + q + 1)), AvgDelayNs: 500}})
		}
		if err := j.PutRecommendations(recs); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.Intent([]core.AuditEntry{{TimeNs: now.Add(-3 * time.Second).UnixNano(), Target: "sw0",
		Change: core.Change{Key: k, Kind: core.KindTune, Reason: "deeper"}, State: core.StateApplied}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fakeAgentAPI(j))
	defer srv.Close()
	conf := filepath.Join(dir, "agent.yaml")
	os.WriteFile(conf, []byte(fmt.Sprintf("db: %s\nmetrics: %s\ntargets:\n  sw0: {address: '127.0.0.1:1', insecure: true}\n",
		db, strings.TrimPrefix(srv.URL, "http://"))), 0o644)
	ctx := context.Background()
	live, errOut, err := runAgentCmd(t, ctx, "report", "--config", conf, "--out", filepath.Join(dir, "live"))
	if err != nil || !strings.Contains(errOut, "locked") || !strings.Contains(errOut, srv.URL) {
		t.Fatalf("report while the agent runs: %v\n%s%s", err, live, errOut)
	}
	// --url without a configuration (a running demo has none)
	byURL, _, err := runAgentCmd(t, ctx, "report", "--url", srv.URL, "--out", filepath.Join(dir, "url"))
	if l, _, _ := strings.Cut(byURL, "\n"); err != nil || !strings.HasPrefix(live, l+"\n") {
		t.Fatalf("report --url: %v\n%s\nwant\n%s", err, byURL, live)
	}
	j.Close() // the agent stops: the file is read directly
	stored, _, err := runAgentCmd(t, ctx, "report", "--config", conf, "--out", filepath.Join(dir, "stored"))
	if err != nil {
		t.Fatal(err)
	}
	first := func(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
	if first(live) != first(stored) || !strings.HasPrefix(first(live), "6 intervals") || !strings.Contains(first(live), "1 audited change") {
		t.Fatalf("live report %q, stored %q: want the same 6 intervals and 1 change", first(live), first(stored))
	}
}

// fakeAgentAPI serves j as a running agent does: /changes and
// /recommendations?since=&limit=.
func fakeAgentAPI(j *journal.Journal) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/changes", web.ChangesHandler(j, time.Now))
	mux.HandleFunc("/recommendations", func(w http.ResponseWriter, r *http.Request) {
		web.StoredRecommendations(w, r, j, time.Now) // the agent's own handler, its limits included
	})
	return mux
}

// agent report while the agent runs counts every audited change of its
// window, as the report of the stopped db does: the fetched audit log is
// paged as the journal's (it kept the newest 1,000 of 1,500 in one page).
func TestAgentReportWhileAgentRunsCountsEveryChange(t *testing.T) {
	dir, db, j := runningAgentDB(t)
	now := time.Now()
	k := env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}
	set := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	for i := range 6 {
		ts := now.Add(time.Duration(i-6) * time.Second).UnixNano()
		if err := j.PutRecommendations([]core.Recommendation{{TimeNs: ts, Key: k, Current: set, Recommended: set, Valid: true, RateBps: 100e9,
			Metrics: env.Metrics{IntervalNs: int64(time.Second), Util: 0.5, AvgDelayNs: 500}}}); err != nil {
			t.Fatal(err)
		}
	}
	n := journal.MaxChangesPage*2 + 314
	var es []core.AuditEntry
	for i := range n {
		es = append(es, core.AuditEntry{TimeNs: now.Add(-5*time.Second + time.Duration(i)*time.Millisecond).UnixNano(), Target: "sw0",
			Change: core.Change{Key: k, Kind: core.KindTune, Reason: fmt.Sprint("change ", i)}, State: core.StateApplied})
	}
	if _, err := j.Intent(es); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fakeAgentAPI(j))
	defer srv.Close()
	ctx := context.Background()
	live, _, err := runAgentCmd(t, ctx, "report", "--url", srv.URL, "--out", filepath.Join(dir, "live"))
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	stored, _, err := runAgentCmd(t, ctx, "report", "--db", db, "--out", filepath.Join(dir, "stored"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d audited changes", n)
	first := func(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
	if !strings.Contains(first(live), want) || first(live) != first(stored) {
		t.Fatalf("report of a running agent %q, of the stopped db %q: want %s in both", first(live), first(stored), want)
	}
}
