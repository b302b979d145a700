package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
)

// recsDB is an agent db (one audited change) with intervals one second
// apart up to a minute ago, of queues queues each; changing(i) says
// whether interval i recommends a change. It is returned open.
func recsDB(t *testing.T, intervals, queues int, changing func(i int) bool) (string, *journal.Journal) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "a.db")
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-time.Minute)
	k0 := env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}
	if _, err := j.Intent([]core.AuditEntry{{TimeNs: now.UnixNano(), Target: "sw0", State: core.StateApplied,
		Change: core.Change{Key: k0, Kind: core.KindTune, Reason: "test"}}}); err != nil {
		t.Fatal(err)
	}
	cur := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	for i := range intervals {
		rec := cur
		if changing(i) {
			rec.KminBytes = 300_000
		}
		var rs []core.Recommendation
		for q := range queues {
			rs = append(rs, core.Recommendation{TimeNs: now.Add(time.Duration(i-intervals) * time.Second).UnixNano(),
				Key: env.QueueKey{Target: "sw0", Port: fmt.Sprintf("Ethernet%d", q), Queue: 3}, Current: cur, Recommended: rec, Valid: true})
		}
		if err := j.PutRecommendations(rs); err != nil {
			t.Fatal(err)
		}
	}
	return db, j
}

// --changing --limit N is the newest N changing recommendations, from the
// db and from a running agent (the limit was applied first: the newest N
// were holds, and it said "no recommendations stored").
func TestAgentRecommendationsChangingLimit(t *testing.T) {
	db, j := recsDB(t, 10, 1, func(i int) bool { return i < 5 }) // 5 change, then 5 hold
	srv := httptest.NewServer(fakeAgentAPI(j))
	defer srv.Close()
	live, _, err := runAgentCmd(t, context.Background(), "recommendations", "--url", srv.URL, "--changing", "--limit", "3")
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	out, _, err := runAgentCmd(t, context.Background(), "recommendations", "--db", db, "--changing", "--limit", "3")
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]string{"db": out, "running agent": live} {
		if rows := strings.Count(o, "→ 300KB"); rows != 3 {
			t.Errorf("recommendations --changing --limit 3 of the %s: %d changing rows, want 3 of the 5 stored:\n%s", name, rows, o)
		}
	}
}

// A window of more rows than --limit is cut at an interval's boundary and
// said so on stderr (it was cut silently, its oldest interval with 16 of
// its 48 queues).
func TestAgentRecommendationsCutAtInterval(t *testing.T) {
	db, j := recsDB(t, 30, 48, func(int) bool { return false })
	j.Close()
	out, errOut, err := runAgentCmd(t, context.Background(), "recommendations", "--db", db, "--since", "10m", "--limit", "1000")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")[1:]
	first := strings.Fields(lines[0])[0]
	if len(lines) != 20*48 || strings.Count(out, first) != 48 {
		t.Errorf("--limit 1000 of 30 intervals of 48 queues: %d rows, the oldest interval (%s) with %d queues; want 20 whole intervals (960 rows)",
			len(lines), first, strings.Count(out, first))
	}
	if !strings.Contains(errOut, "more than --limit 1000 recommendations") || !strings.Contains(errOut, "shown from "+first) {
		t.Errorf("stderr of a window cut by --limit: %q", errOut)
	}
	out, errOut, err = runAgentCmd(t, context.Background(), "recommendations", "--db", db, "--limit", "1440")
	if err != nil || strings.Count(out, "\n") != 1441 || errOut != "" {
		t.Errorf("--limit 1440 of 1440 rows: %d lines, stderr %q, %v; want all and nothing said", strings.Count(out, "\n"), errOut, err)
	}
}

// --limit below the queues of an interval shows the newest N rows, the
// newest interval cut and said so on stderr, from the db and from a running
// agent, in the table and in JSON (it showed none: stdout said "no
// recommendations stored for that selection", --json printed nothing).
func TestAgentRecommendationsLimitInsideAnInterval(t *testing.T) {
	db, j := recsDB(t, 3, 8, func(int) bool { return false })
	srv := httptest.NewServer(fakeAgentAPI(j))
	defer srv.Close()
	live, liveErr, err := runAgentCmd(t, context.Background(), "recommendations", "--url", srv.URL, "--limit", "5")
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	out, errOut, err := runAgentCmd(t, context.Background(), "recommendations", "--db", db, "--limit", "5")
	if err != nil {
		t.Fatal(err)
	}
	js, _, err := runAgentCmd(t, context.Background(), "recommendations", "--db", db, "--limit", "5", "--json")
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string][2]string{"db": {out, errOut}, "running agent": {live, liveErr}} {
		lines := strings.Split(strings.TrimSpace(o[0]), "\n")[1:]
		if len(lines) != 5 {
			t.Errorf("--limit 5 of intervals of 8 queues (%s): %d rows, want 5; stderr %q:\n%s", name, len(lines), o[1], o[0])
			continue
		}
		first := strings.Fields(lines[0])[0]
		if strings.Count(o[0], first) != 5 || strings.Contains(o[0], "no recommendations") || !strings.Contains(o[0], "Ethernet7") {
			t.Errorf("--limit 5 of intervals of 8 queues (%s): want the newest interval's last 5 rows:\n%s", name, o[0])
		}
		if !strings.Contains(o[1], "the newest interval ("+first+") alone holds more than --limit 5 recommendations: shown 5 of its rows") {
			t.Errorf("stderr of a cut inside the newest interval (%s): %q", name, o[1])
		}
	}
	if n := strings.Count(js, "\n"); n != 5 {
		t.Errorf("--json --limit 5: %d lines, want 5:\n%s", n, js)
	}
}

// A closed loop without store-recommendations: agent recommendations says
// why none is stored, as agent report does, from the db and from the
// running agent (it said "no recommendations stored for that selection").
func TestAgentRecommendationsNoneStoredSaysWhy(t *testing.T) {
	_, db, j := runningAgentDB(t)
	k := env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}
	if _, err := j.Intent([]core.AuditEntry{{TimeNs: time.Now().UnixNano(), Target: "sw0", State: core.StateApplied,
		Change: core.Change{Key: k, Kind: core.KindTune, Reason: "test"}}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fakeAgentAPI(j))
	defer srv.Close()
	live, _, err := runAgentCmd(t, context.Background(), "recommendations", "--url", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	out, _, err := runAgentCmd(t, context.Background(), "recommendations", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]string{"db": out, "running agent": live} {
		if !strings.Contains(o, "store-recommendations: true") || strings.Contains(o, "for that selection") {
			t.Errorf("recommendations of a closed loop's %s without store-recommendations: %q", name, o)
		}
	}
	if out, _, err := runAgentCmd(t, context.Background(), "recommendations", "--db", db, "--target", "sw9"); err != nil || strings.Contains(out, "for that selection") {
		t.Errorf("--target sw9 of a db without recommendations: %v %q, want the reason", err, out)
	}
}
