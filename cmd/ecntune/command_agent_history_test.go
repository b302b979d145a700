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

	bolt "go.etcd.io/bbolt"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/agent/web"
	"github.com/ecntune/ecntune/env"
)

// agent history while the agent runs: the database is locked, so it
// reads the audit log from the agent's HTTP API (the metrics address of
// --config, or --url), all pages of it; once the agent is gone it reads
// the file, read-only.
func TestAgentHistoryWhileAgentRuns(t *testing.T) {
	dir, db, j := runningAgentDB(t)
	var es []core.AuditEntry
	now := time.Now()
	n := 2*journal.MaxChangesPage + 100 // sw0 has more than two pages
	for i := 0; i < n; i++ {
		tg := "sw0"
		if i%50 == 0 {
			tg = "sw1"
		}
		es = append(es, core.AuditEntry{TimeNs: now.Add(time.Duration(i-n) * time.Millisecond).UnixNano(), Target: tg,
			Change: core.Change{Key: env.QueueKey{Target: tg, Port: "Ethernet0", Queue: 3}, Kind: core.KindTune,
				Reason: fmt.Sprint("change ", i)}, State: core.StateApplied})
	}
	if _, err := j.Intent(es); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/changes", web.ChangesHandler(j, time.Now))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	conf := filepath.Join(dir, "agent.yaml")
	os.WriteFile(conf, []byte(fmt.Sprintf("db: %s\nmetrics: %s\ntargets:\n  sw0: {address: '127.0.0.1:1', insecure: true}\n  sw1: {address: '127.0.0.1:2', insecure: true}\n",
		db, strings.TrimPrefix(srv.URL, "http://"))), 0o644)
	ctx := context.Background()
	rows := func(out string) int { return strings.Count(out, "\n") - 1 } // minus the header

	out, errOut, err := runAgentCmd(t, ctx, "history", "--config", conf, "--target", "sw0")
	if err != nil || rows(out) != n-n/50 || !strings.Contains(out, "change 1\n") {
		t.Fatalf("history --config while the agent runs: %v, %d rows\n%.300s", err, rows(out), out)
	}
	if !strings.Contains(errOut, "locked") || !strings.Contains(errOut, srv.URL) {
		t.Errorf("stderr does not say where the history came from: %q", errOut)
	}
	out, _, err = runAgentCmd(t, ctx, "history", "--url", srv.URL, "--json", "--target", "sw1", "--since", "1h")
	if err != nil || strings.Count(out, "\n") != n/50 || !strings.Contains(out, `"target":"sw1"`) {
		t.Fatalf("history --url: %v\n%.300s", err, out)
	}
	_, _, err = runAgentCmd(t, ctx, "history", "--db", db)
	if err == nil || !strings.Contains(err.Error(), "locked") || !strings.Contains(err.Error(), "--config") || !strings.Contains(err.Error(), "--url") {
		t.Fatalf("history --db on a locked db without --config: %v", err)
	}

	// the other read commands find the database the same way
	_, _, err = runAgentCmd(t, ctx, "recommendations", "--db", db)
	if err == nil || !strings.Contains(err.Error(), "locked") || !strings.Contains(err.Error(), "serves the recommendations") {
		t.Fatalf("recommendations --db on a locked db without --config: %v", err)
	}
	other := filepath.Join(dir, "other.db") // another agent's, locked too
	j2, err := journal.OpenJournal(other, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = runAgentCmd(t, ctx, "recommendations", "--config", conf, "--db", other)
	j2.Close()
	if err == nil || !strings.Contains(err.Error(), "is not the db of") {
		t.Fatalf("recommendations --db of another locked db than --config's: %v", err)
	}

	j.Close() // the agent stops: the file is read directly
	out, _, err = runAgentCmd(t, ctx, "history", "--config", conf, "--target", "sw1")
	if err != nil || rows(out) != n/50 {
		t.Fatalf("history after the agent stopped: %v, %d rows", err, rows(out))
	}
	// a target the configuration does not name, and the log does not
	// have: misspelt (it printed "no changes recorded", exit 0)
	if _, _, err = runAgentCmd(t, ctx, "history", "--config", conf, "--target", "sw9"); err == nil || !strings.Contains(err.Error(), `--target: "sw9" is not a target of`) {
		t.Fatalf("history of an unknown target: %v", err)
	}
	if _, _, err = runAgentCmd(t, ctx, "recommendations", "--config", conf, "--target", "sw9"); err == nil || !strings.Contains(err.Error(), `--target: "sw9" is not a target of`) {
		t.Fatalf("recommendations of an unknown target: %v", err)
	}
}

// runningAgentDB is a new agent db in a new folder, held open as a running
// agent holds it (locked), closed when the test ends.
func runningAgentDB(t *testing.T) (dir, db string, j *journal.Journal) {
	t.Helper()
	dir = t.TempDir()
	db = filepath.Join(dir, "agent.db")
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return dir, db, j
}

// A damaged page of the recommendations bucket: agent history still reads
// the intact audit log (README: it still opens a damaged db) and says on
// stderr what is damaged; agent report draws the audit log alone and says
// why (history refused the db: "the database is damaged ... run history
// on DB.damaged", which refused again).
func TestAgentHistoryOfDBWithDamagedRecommendations(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "a.db")
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var es []core.AuditEntry
	for i := range 20 {
		k := env.QueueKey{Target: "sw0", Port: fmt.Sprintf("Ethernet%d", i), Queue: 3}
		es = append(es, core.AuditEntry{TimeNs: now.Add(time.Duration(i-20) * time.Second).UnixNano(), Target: "sw0", State: core.StateApplied,
			Change: core.Change{Key: k, Kind: core.KindTune, Reason: fmt.Sprint("change ", i)}})
	}
	if _, err := j.Intent(es); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		var recs []core.Recommendation
		for q := range 32 {
			recs = append(recs, core.Recommendation{TimeNs: now.Add(time.Duration(i-200) * time.Second).UnixNano(),
				Key: env.QueueKey{Target: "sw0", Port: fmt.Sprintf("Ethernet%d", q), Queue: 3}, Reason: strings.Repeat("x", 200), Valid: true})
		}
		if err := j.PutRecommendations(recs); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	bdb, err := bolt.Open(db, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var root int64
	psz := int64(bdb.Info().PageSize)
	bdb.View(func(tx *bolt.Tx) error { root = int64(tx.Bucket([]byte("recommendations")).Root()); return nil })
	bdb.Close()
	junk := make([]byte, psz)
	for i := range junk {
		junk[i] = byte(i*7 + 13)
	}
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(junk, root*psz)
	f.Close()

	ctx := context.Background()
	out, errOut, err := runAgentCmd(t, ctx, "history", "--db", db)
	if err != nil || strings.Count(out, "change ") != 20 || !strings.Contains(errOut, "bucket recommendations") {
		t.Fatalf("history of a db with a damaged recommendations page: %v\n%.400s\nstderr: %s", err, out, errOut)
	}
	out, errOut, err = runAgentCmd(t, ctx, "report", "--db", db, "--out", filepath.Join(dir, "r"))
	if err != nil || !strings.Contains(out, "20 audited changes") || !strings.Contains(errOut, "cannot be read") {
		t.Fatalf("report of a db with a damaged recommendations page: %v\n%s\nstderr: %s", err, out, errOut)
	}
}

// agent history shows a damaged entry as damaged, not as a change at 1970
// from and to 0B/0B/0%: in its table, and in JSON with its settings null.
func TestAgentHistoryShowsDamagedEntry(t *testing.T) {
	db := filepath.Join(t.TempDir(), "a.db")
	damagedAuditDB(t, db, 2)
	out, _, err := runAgentCmd(t, context.Background(), "history", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "2 ") {
			row = l
		}
	}
	if f := strings.Fields(row); len(f) < 7 || f[1] != "unknown" || f[4] != "damaged" || f[5] != "damaged" || f[6] != "damaged" || strings.Contains(row, "0B") || strings.Contains(row, "1970") {
		t.Errorf("history row of the damaged entry 2: %q\n%s", row, out)
	}
	out, _, err = runAgentCmd(t, context.Background(), "history", "--db", db, "--json")
	if err != nil || !strings.Contains(out, `{"seq":2,"state":"damaged","error":`) || !strings.Contains(out, `"time_ns":null,"target":null,"key":null,"old":null,"new":null}`) {
		t.Errorf("history --json of the damaged entry 2: %v\n%s", err, out)
	}
}

// agent report lists a damaged entry as history does, and its window is
// the intact entries': the oldest entry damaged, it said 'from
// 1970-01-01T00:00:00Z' and drew a row at 00:00:00.000 from and to
// 0B/0B/0%.
func TestAgentReportShowsDamagedEntry(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "a.db")
	damagedAuditDB(t, db, 1)
	out, _, err := runAgentCmd(t, context.Background(), "report", "--db", db, "--out", filepath.Join(dir, "r"))
	if err != nil || strings.Contains(out, "1970") || !strings.Contains(out, "3 audited changes (1 damaged") {
		t.Fatalf("report with the oldest entry damaged: %v\n%s", err, out)
	}
	html, err := os.ReadFile(filepath.Join(dir, "r", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `<tr class="damaged"><td>1</td><td>unknown</td><td>damaged</td>`) || strings.Contains(string(html), "1970") || strings.Contains(string(html), "00:00:00.000") {
		t.Errorf("index.html of the damaged entry 1:\n%s", html)
	}
}

// damagedAuditDB writes three tunes of sw0/Ethernet0/q3 to a new agent db
// at db, a second apart and ending a few seconds ago, and damages the
// entry of sequence number seq.
func damagedAuditDB(t *testing.T, db string, seq byte) {
	t.Helper()
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	k := env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}
	var es []core.AuditEntry
	for i := range 3 {
		es = append(es, core.AuditEntry{TimeNs: time.Now().Add(time.Duration(i-3) * time.Second).UnixNano(), Target: "sw0", State: core.StateApplied,
			Change: core.Change{Key: k, Kind: core.KindTune, Old: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2},
				New: env.Setting{KminBytes: 300_000, KmaxBytes: 1_600_000, Pmax: 0.2}, Reason: fmt.Sprint("change ", i)}})
	}
	if _, err := j.Intent(es); err != nil {
		t.Fatal(err)
	}
	j.Close()
	bdb, err := bolt.Open(db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("audit")).Put([]byte{0, 0, 0, 0, 0, 0, 0, seq}, []byte("junk"))
	}); err != nil {
		t.Fatal(err)
	}
	bdb.Close()
}
