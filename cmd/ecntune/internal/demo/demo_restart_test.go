package demo

import (
	"bufio"
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/journal"
)

// metricValue is the value of the series line of name (with its labels)
// on d's /metrics; 0 when absent.
func metricValue(t *testing.T, url, series string) float64 {
	t.Helper()
	resp, err := http.Get(url + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// A second closed-loop start on a kept --db: the simulator starts afresh
// at its defaults while the db remembers the agent's own writes; the
// agent is told the switches restarted and takes their defaults as the
// baseline (it took every queue for another writer's: 48 "queue changed
// by another writer ... yielding for 1m0s", no tuning for a minute).
func TestDemoSecondStartOnKeptDBIsNoOtherWriter(t *testing.T) {
	db := filepath.Join(t.TempDir(), "demo.db")
	run := func(until func(url string) bool) string {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		d, err := Start(ctx, Config{Scenario: smallFabric(), Listen: "127.0.0.1:0", Timescale: 100,
			Interval: 100 * time.Millisecond, ClosedLoop: true, DB: db})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- d.Run(runCtx, nil) }()
		defer func() { stop(); <-done; http.DefaultClient.CloseIdleConnections() }()
		for !until(d.URL()) {
			if ctx.Err() != nil {
				t.Fatal("timed out")
			}
			time.Sleep(100 * time.Millisecond)
		}
		return d.URL()
	}
	run(func(url string) bool { return metricValue(t, url, `ecntune_agent_sets_total{result="ok"}`) >= 3 })
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	es, err := j.Entries("", 0)
	j.Close()
	if err != nil || len(es) == 0 {
		t.Fatalf("first run: %d audit entries, %v", len(es), err)
	}
	ticks := 0.0
	var alarms float64
	run(func(url string) bool {
		alarms = metricValue(t, url, `ecntune_agent_alarms_total{rule="external-writer"}`)
		if ticks == 0 {
			ticks = metricValue(t, url, "ecntune_agent_intervals_total") + 1
		}
		return alarms > 0 || metricValue(t, url, "ecntune_agent_intervals_total") >= ticks+8
	})
	if alarms > 0 {
		t.Errorf("second start on the kept db: %v external-writer alarms (the fresh simulator's defaults taken for another writer's)", alarms)
	}
}
