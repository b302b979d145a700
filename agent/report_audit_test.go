package agent

import (
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
