package agent

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/agent/web"
	"github.com/ecntune/ecntune/env"
)

// A closed loop without store-recommendations stores no interval, but its
// audit log holds every change: agent report draws that and says what is
// missing, instead of refusing.
func TestWriteReportOfTheAuditLogAlone(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	r.obs.metrics[kA] = env.Metrics{IntervalNs: sec, Util: 0.9, MarkFrac: 0.2, MaxDelayNs: 8_000, AvgDelayNs: 2_000}
	for range 5 {
		r.interval(t)
	}
	dir := t.TempDir()
	rf, err := web.WriteReport(r.j, dir, web.ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rf.Intervals != 0 || rf.Changes == 0 || len(rf.Pictures) != 0 || !strings.Contains(rf.Missing, "store-recommendations: true") {
		t.Fatalf("report %+v", rf)
	}
	html, err := os.ReadFile(rf.Index)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"audited changes from", "Missing:", "<td>tune</td>"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
}

// A damaged audit entry (its queue unreadable) is no queue of its own in
// the report's count (it counted a phantom "//q0").
func TestAuditReportCountsNoQueueForADamagedEntry(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	for range 3 {
		r.interval(t)
	}
	before, err := web.WriteReport(r.j, t.TempDir(), web.ReportOptions{})
	if err != nil || before.Queues == 0 {
		t.Fatalf("report %+v, %v", before, err)
	}
	r.j.Close()
	db, err := bolt.Open(r.db, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("audit"))
		k, v := b.Cursor().First()
		bad := append([]byte(nil), v...)
		bad[len(bad)/2] ^= 0x40
		return b.Put(append([]byte(nil), k...), bad)
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	j, err := journal.OpenJournalReadOnly(r.db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	page, err := j.ChangesPage(journal.ChangesQuery{Limit: journal.MaxChangesPage})
	if err != nil {
		t.Fatal(err)
	}
	readable, damaged := map[env.QueueKey]bool{}, 0
	for _, e := range page.Changes {
		if e.State == journal.StateDamaged {
			damaged++
		} else {
			readable[e.Key] = true
		}
	}
	after, err := web.WriteReport(j, t.TempDir(), web.ReportOptions{})
	if err != nil || damaged != 1 || after.Changes != before.Changes || after.Queues != len(readable) {
		t.Fatalf("with %d damaged entry: %+v, %v; want %d queues (the readable entries')", damaged, after, err, len(readable))
	}
}

// damageFirstAuditEntry flips a byte in the oldest audit entry of the
// closed db at path, so that it fails its seal, and returns its seq.
func damageFirstAuditEntry(t *testing.T, path string) uint64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var seq uint64
	if err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("audit"))
		k, v := b.Cursor().First()
		seq = binary.BigEndian.Uint64(k)
		bad := append([]byte(nil), v...)
		bad[len(bad)/2] ^= 0x40
		return b.Put(append([]byte(nil), k...), bad)
	}); err != nil {
		t.Fatal(err)
	}
	return seq
}

// The report's audit log shows a damaged entry as history does: its
// sequence number, time unknown, queue and settings damaged, and its
// damage; the window it states is its intact entries' (it was a row at
// 00:00:00.000 from and to 0B/0B/0%, and the audit log alone was said to
// run from 1970-01-01T00:00:00Z).
func TestReportShowsADamagedAuditEntryAsDamaged(t *testing.T) {
	for _, stored := range []bool{false, true} {
		r := newRig(t, config.ModeClosedLoop, false, "", nil)
		r.a.cfg.StoreRecommendations = &stored
		r.obs.metrics[kA] = env.Metrics{IntervalNs: sec, Util: 0.9, MarkFrac: 0.2, MaxDelayNs: 8_000, AvgDelayNs: 2_000}
		for range 4 {
			r.interval(t)
		}
		r.j.Close()
		seq := damageFirstAuditEntry(t, r.db)
		j, err := journal.OpenJournalReadOnly(r.db, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		rf, err := web.WriteReport(j, t.TempDir(), web.ReportOptions{})
		j.Close()
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(rf.Index)
		if err != nil {
			t.Fatal(err)
		}
		html := string(b)
		row := fmt.Sprintf("<tr class=\"damaged\"><td>%d</td><td>unknown</td><td>damaged</td><td>-</td><td>damaged</td><td>damaged</td><td>damaged</td>", seq)
		if !strings.Contains(html, row) || !strings.Contains(html, "cannot be trusted") {
			t.Errorf("store-recommendations %v: index.html lacks the damaged row %q with its damage:\n%s", stored, row, html)
		}
		if strings.Contains(html, "00:00:00.000") || strings.Contains(html, "1970-01-01") || strings.Contains(html, "0B/0B/0%") {
			t.Errorf("store-recommendations %v: index.html places the damaged entry at time zero:\n%s", stored, html)
		}
		if rf.FromNs == 0 || rf.Damaged != 1 || !strings.Contains(html, "1 of them damaged") {
			t.Errorf("store-recommendations %v: report %+v, want its window from an intact time and 1 damaged entry said", stored, rf)
		}
	}
}
