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
