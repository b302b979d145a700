package journal

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// sinceJournal is an agent db with n audit entries one second apart from
// t0 (targets leaf0..leaf3), whose entries at the seqs in damage hold junk;
// it is returned open.
func sinceJournal(tb testing.TB, n int, damage ...uint64) *Journal {
	tb.Helper()
	j, err := OpenJournal(filepath.Join(tb.TempDir(), "agent.db"), time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	var es []core.AuditEntry
	for i := range n {
		k := env.QueueKey{Target: fmt.Sprintf("leaf%d", i%4), Port: fmt.Sprintf("Ethernet%d", i%32), Queue: 3}
		es = append(es, core.AuditEntry{TimeNs: t0 + int64(i)*int64(time.Second), Target: k.Target, State: core.StateApplied,
			Change: core.Change{Key: k, Kind: core.KindTune, Old: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2},
				New: env.Setting{KminBytes: 300_000, KmaxBytes: 1_200_000, Pmax: 0.2}, Reason: fmt.Sprint("change ", i)}})
		if len(es) == 5000 || i == n-1 {
			if _, err := j.Intent(es); err != nil {
				tb.Fatal(err)
			}
			es = es[:0]
		}
	}
	for _, seq := range damage {
		if err := j.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketAudit).Put(seqKey(seq), []byte("junk")) }); err != nil {
			tb.Fatal(err)
		}
	}
	return j
}

// A --since read stops at the first entry older than since, reading back
// from the newest (entries are written in time order), as Recent does:
// a damaged entry far older than the window is not read, and one inside
// it is shown in its place (ChangesPage continued past every older entry
// and Entries decoded the whole log: the last minute of 100,000 entries
// took 1.15 s, the newest 100 0.9 ms).
func TestSinceReadsTheWindowOnly(t *testing.T) {
	j := sinceJournal(t, 2000, 10, 1995)
	defer j.Close()
	since := t0 + 1990*int64(time.Second) // seqs 1991..2000
	p, err := j.ChangesPage(ChangesQuery{SinceNs: since, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	es, err := j.Entries("", since)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := j.Entries("leaf2", since)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]core.AuditEntry{"ChangesPage": p.Changes, "Entries": es} {
		if len(got) != 10 || got[0].Seq != 1991 || got[9].Seq != 2000 || got[4].State != StateDamaged || got[4].Seq != 1995 {
			t.Errorf("%s since entry 1991: %d entries (seqs %d..%d), want 1991..2000 with 1995 damaged in its place and not entry 10", name, len(got), got[0].Seq, got[len(got)-1].Seq)
		}
	}
	// leaf2: seqs 1991, 1995 (damaged, shown whatever the target), 1999
	if len(leaf) != 3 || leaf[0].Seq != 1991 || leaf[1].State != StateDamaged || leaf[2].Seq != 1999 {
		t.Errorf("Entries(leaf2) since entry 1991: %+v, want 1991, 1995 (damaged), 1999", leaf)
	}
	if all, err := j.Entries("", 0); err != nil || len(all) != 2000 || all[9].State != StateDamaged {
		t.Errorf("Entries without since: %d entries, %v; want 2000 with entry 10 damaged", len(all), err)
	}
}

// The last minute of a day's audit log (100,000 entries) against its
// newest 100 entries.
func BenchmarkChangesPageSince(b *testing.B) {
	j := sinceJournal(b, 100_000)
	defer j.Close()
	since := t0 + (100_000-60)*int64(time.Second)
	b.Run("newest100", func(b *testing.B) {
		for range b.N {
			if _, err := j.ChangesPage(ChangesQuery{Limit: 100}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("since1m", func(b *testing.B) {
		for range b.N {
			if _, err := j.ChangesPage(ChangesQuery{SinceNs: since, Limit: MaxChangesPage}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("entries1m", func(b *testing.B) {
		for range b.N {
			if _, err := j.Entries("", since); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A damaged entry is shown for what it is: in JSON its time, queue and
// settings are null (it read as a change at 1970 from and to 0B/0B/0%),
// and one at the start of a --since window, which cannot be placed in it,
// says so.
func TestDamagedEntryIsNoChange(t *testing.T) {
	j := sinceJournal(t, 100, 90)
	defer j.Close()
	since := t0 + 90*int64(time.Second) // seqs 91..100; 90 damaged, between 89 and 91
	p, err := j.ChangesPage(ChangesQuery{SinceNs: since, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	es, err := j.Entries("leaf1", since)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]core.AuditEntry{"ChangesPage": p.Changes, "Entries": es} {
		if got[0].Seq != 90 || got[0].State != StateDamaged || !strings.Contains(got[0].Error, "written after entry 89") || !strings.Contains(got[0].Error, "may be older than the window") {
			t.Errorf("%s since entry 91: first %+v, want the damaged entry 90 saying it may be older than the window", name, got[0])
		}
		if got[1].State == StateDamaged || strings.Contains(got[1].Error, "older") {
			t.Errorf("%s: %+v", name, got[1])
		}
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Changes []map[string]any `json:"changes"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	d := back.Changes[0]
	if d["state"] != "damaged" || d["seq"] != 90.0 || d["old"] != nil || d["new"] != nil || d["time_ns"] != nil || d["key"] != nil {
		t.Errorf("damaged entry in JSON: %v", d)
	}
	if _, ok := d["old"]; !ok {
		t.Errorf("damaged entry in JSON without an explicit null old: %v", d)
	}
	if intact := back.Changes[1]; intact["old"] == nil || intact["state"] != "applied" {
		t.Errorf("intact entry in JSON: %v", intact)
	}
}
