package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// fabricLog builds an agent db as a closed loop over a fabric leaves it:
// per interval one intent of a change on each of targets switches
// (leaf0..), per entries intervals, every other change's result recorded;
// it returns its path, closed.
func fabricLog(tb testing.TB, targets, per int) string { return fabricLogOf(tb, targets, per, true) }

// fabricLogOf is fabricLog, without results unless resolve.
func fabricLogOf(tb testing.TB, targets, per int, resolve bool) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "agent.db")
	j, err := OpenJournal(path, time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	defer j.Close()
	for i := range per {
		var es []core.AuditEntry
		for t := range targets {
			k := env.QueueKey{Target: fmt.Sprintf("leaf%d", t), Port: fmt.Sprintf("Ethernet%d", 4*(i%8)), Queue: 3}
			es = append(es, core.AuditEntry{TimeNs: t0 + int64(i)*int64(time.Second) + int64(t), Target: k.Target, Model: "builtin", Owner: "ecntune-agent",
				Change: core.Change{Key: k, Kind: core.KindTune, Old: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2},
					New: env.Setting{KminBytes: int64(300_000 + i), KmaxBytes: 1_200_000, Pmax: 0.2}, Reason: fmt.Sprint("change ", i)}})
		}
		es, err := j.Intent(es)
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range es {
			if resolve && e.Seq%2 == 0 {
				if err := j.Resolve(e.Seq, core.StateApplied, &e.New, "", e.TimeNs+int64(time.Millisecond)); err != nil {
					tb.Fatal(err)
				}
			}
		}
	}
	return path
}

// The cost of one switch's history is that switch's, not the log's: the
// same 50 entries of leaf1 cost as much in a log of 2 switches as in one
// of 20 (measured in allocations, which a decoded entry makes; reading
// the whole log made them 10 times as many).
func TestTargetHistoryCostIsTheTargets(t *testing.T) {
	allocs := map[int]float64{}
	for _, targets := range []int{2, 20} {
		j, err := OpenJournalReadOnly(fabricLog(t, targets, 50), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		es, err := j.Entries("leaf1", 0)
		if err != nil || len(es) != 50 {
			t.Fatalf("%d switches: leaf1's history %d entries, %v; want 50", targets, len(es), err)
		}
		allocs[targets] = testing.AllocsPerRun(5, func() { j.Entries("leaf1", 0) })
		j.Close()
	}
	t.Logf("allocations of leaf1's history: %.0f in a log of 2 switches, %.0f in one of 20", allocs[2], allocs[20])
	if allocs[20] > 1.5*allocs[2] {
		t.Fatalf("leaf1's 50 entries: %.0f allocations in a log of 20 switches, %.0f in one of 2: the read costs the log's, not the switch's", allocs[20], allocs[2])
	}
}

// withoutIndex copies the db at path as a version before the index wrote
// it (no index bucket, no meta key) and returns the copy's path.
func withoutIndex(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "old.db")
	if err := os.WriteFile(cp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(cp, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketIndex); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Delete([]byte(metaIndex))
	}); err != nil {
		t.Fatal(err)
	}
	return cp
}

// damageLog damages audit entries of the closed db at path: a bit of
// entries 5, 18 and 101, junk in place of 30, junk after the last entry,
// a legacy record (no seal) whose seq is not its key's in place of 40, and
// entry 44 rewritten as an intact legacy record.
func damageLog(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAudit)
		for _, seq := range []uint64{5, 18, 101} {
			v := bytes.Clone(b.Get(seqKey(seq)))
			v[len(v)/3] ^= 0x04
			if err := b.Put(seqKey(seq), v); err != nil {
				return err
			}
		}
		last, _ := b.Cursor().Last()
		put := map[uint64][]byte{30: []byte("junk"), binary.BigEndian.Uint64(last) + 3: []byte(`{"seq":1`), 40: []byte(`{"seq":41,"target":"leaf0"}`)}
		e44, err := decodeEntry(seqKey(44), b.Get(seqKey(44)))
		if err != nil {
			return err
		}
		if put[44], err = json.Marshal(e44); err != nil {
			return err
		}
		for seq, v := range put {
			if err := b.Put(seqKey(seq), v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// sameHistories checks that got (read by the index) and want (a db without
// it: the log scanned) show every target the same history: whole, since a
// time, and page by page.
func sameHistories(t *testing.T, what string, got, want *Journal, targets int) {
	t.Helper()
	for i := range targets + 1 { // and a target without entries
		target := fmt.Sprintf("leaf%d", i)
		if err := got.view(func(tx *bolt.Tx) error {
			if _, ok := got.candidates(tx, target); !ok {
				return fmt.Errorf("the index of %s is not used", target)
			}
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, since := range []int64{0, t0 + 5*int64(time.Second), t0 + 17*int64(time.Second) + 3} {
			g, err1 := got.Entries(target, since)
			w, err2 := want.Entries(target, since)
			if err1 != nil || err2 != nil || !reflect.DeepEqual(g, w) {
				t.Fatalf("%s: history of %s since %d: %d entries by the index (%v), %d by the scan (%v)", what, target, since, len(g), err1, len(w), err2)
			}
		}
		for _, limit := range []int{1, 7, 1000} {
			for _, before := range []uint64{0, 1, 33, 10_000} {
				q := ChangesQuery{Target: target, Limit: limit, Before: before}
				for n := 0; ; n++ {
					g, err1 := got.ChangesPage(q)
					w, err2 := want.ChangesPage(q)
					if err1 != nil || err2 != nil || !reflect.DeepEqual(g, w) {
						t.Fatalf("%s: page %d of %+v: by the index %+v (%v), by the scan %+v (%v)", what, n, q, g, err1, w, err2)
					}
					if q.Before = g.NextBefore; q.Before == 0 {
						break
					}
				}
			}
		}
	}
}

// One switch's history read by the index is the history the whole log's
// scan shows: on the agent's db, on one read-only with damaged entries
// (shown in every switch's history, as by the scan), on a db written
// before the index (read-only: the scan; writable: the index built once),
// and on a db an older version wrote entries to after it was built.
func TestTargetHistoryIndexedAsTheScan(t *testing.T) {
	const targets = 12
	path := fabricLog(t, targets, 20)
	old := withoutIndex(t, path)
	scan, err := OpenJournalReadOnly(old, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	j, err := OpenJournal(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if j.indexBuilt {
		t.Error("the index was built again at a writable open of a db that has it")
	}
	sameHistories(t, "the agent's db", j, scan, targets)
	j.Close()
	scan.Close()

	// damaged entries, read-only (the agent refuses the db)
	damageLog(t, path)
	damageLog(t, old)
	if scan, err = OpenJournalReadOnly(old, time.Second); err != nil {
		t.Fatal(err)
	}
	if j, err = OpenJournalReadOnly(path, time.Second); err != nil {
		t.Fatal(err)
	}
	if es, _ := scan.Entries("leaf3", 0); len(es) != 19+6 {
		t.Fatalf("the scan shows %d entries of leaf3, want its 19 intact (40 is damaged) and the 6 damaged", len(es))
	}
	sameHistories(t, "damaged entries", j, scan, targets)
	j.Close()
	scan.Close()

	// a db without the index: read-only, the scan; writable, built once
	path = fabricLog(t, targets, 20)
	old = withoutIndex(t, path)
	if j, err = OpenJournalReadOnly(old, time.Second); err != nil {
		t.Fatal(err)
	}
	err = j.view(func(tx *bolt.Tx) error {
		if _, ok := j.candidates(tx, "leaf1"); ok || tx.Bucket(bucketIndex) != nil {
			return errors.New("a read-only open of a db without the index reads an index")
		}
		return nil
	})
	if es, err2 := j.Entries("leaf1", 0); err != nil || err2 != nil || len(es) != 20 {
		t.Fatalf("leaf1's history read-only without the index: %d entries, %v %v", len(es), err, err2)
	}
	j.Close()
	for i, built := range []bool{true, false} {
		if j, err = OpenJournal(old, time.Second); err != nil {
			t.Fatal(err)
		}
		if j.indexBuilt != built || j.Meta(metaIndex) != indexVersion {
			t.Fatalf("writable open %d of a db without the index: built %v, meta %q; want %v, %q", i+1, j.indexBuilt, j.Meta(metaIndex), built, indexVersion)
		}
		j.Close()
	}
	if j, err = OpenJournalReadOnly(old, time.Second); err != nil {
		t.Fatal(err)
	}
	if scan, err = OpenJournalReadOnly(path, time.Second); err != nil {
		t.Fatal(err)
	}
	sameHistories(t, "a db migrated", j, scan, targets)
	j.Close()
	scan.Close()

	// an older version (no index) appends entries: read-only, the scan;
	// writable, the index built again
	old = withoutIndex(t, path)
	for _, p := range []string{path, old} {
		db, err := bolt.Open(p, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketAudit)
			seq, err := b.NextSequence()
			if err != nil {
				return err
			}
			return putEntry(b, core.AuditEntry{Seq: seq, TimeNs: t0 + 100*int64(time.Second), Target: "leaf2", State: core.StateIntent})
		}); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	if scan, err = OpenJournalReadOnly(old, time.Second); err != nil {
		t.Fatal(err)
	}
	if j, err = OpenJournalReadOnly(path, time.Second); err != nil {
		t.Fatal(err)
	}
	if es, err := j.Entries("leaf2", 0); err != nil || len(es) != 21 {
		t.Fatalf("leaf2's history after an older version wrote an entry: %d entries, %v; want 21", len(es), err)
	}
	j.Close()
	if j, err = OpenJournal(path, time.Second); err != nil {
		t.Fatal(err)
	}
	if !j.indexBuilt {
		t.Error("the index was not built again after an older version wrote an entry")
	}
	sameHistories(t, "after an older version wrote", j, scan, targets)
	// and it is kept with the entries written since
	k := env.QueueKey{Target: "leaf5", Port: "Ethernet0", Queue: 3}
	if _, err := j.Intent([]core.AuditEntry{{TimeNs: t0 + 200*int64(time.Second), Target: "leaf5", Change: core.Change{Key: k, Kind: core.KindTune}}}); err != nil {
		t.Fatal(err)
	}
	if es, err := j.Entries("leaf5", 0); err != nil || len(es) != 21 || es[20].TimeNs != t0+200*int64(time.Second) {
		t.Fatalf("leaf5's history after a new entry: %d entries, %v", len(es), err)
	}
	j.Close()
	scan.Close()
}

// historiesAgree says whether every switch's history in j, read by the
// index where it can be, is the whole log's filtered by target.
func historiesAgree(j *Journal) error {
	all, err := j.Entries("", 0)
	if err != nil {
		return nil // refused: said, not shown
	}
	for i := range 3 {
		target := fmt.Sprintf("leaf%d", i)
		var want []core.AuditEntry
		for _, e := range all {
			if e.State == StateDamaged || e.Target == target {
				want = append(want, e)
			}
		}
		got, err := j.Entries(target, 0)
		if err == nil && !reflect.DeepEqual(got, want) {
			return fmt.Errorf("%s: %d entries, the log filtered %d", target, len(got), len(want))
		}
		p, err := j.ChangesPage(ChangesQuery{Target: target, Limit: MaxChangesPage})
		if err == nil && !reflect.DeepEqual(p.Changes, append([]core.AuditEntry{}, want...)) {
			return fmt.Errorf("%s: a page of %d entries, the log filtered %d", target, len(p.Changes), len(want))
		}
	}
	return nil
}

// Single-bit flips in the index's page: a switch's history, read-only and
// after the agent's open, is still the whole log's filtered by target (a
// read by an index that does not agree with itself scans the log; the
// agent's open builds it again), never an entry less or another's.
func TestTargetHistoryIndexBitFlips(t *testing.T) {
	src := filledJournal(t)
	j, err := OpenJournalReadOnly(src, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var root int
	psz := j.db.Info().PageSize
	j.db.View(func(tx *bolt.Tx) error { root = int(tx.Bucket(bucketIndex).Root()); return nil })
	j.Close()
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(26, 7))
	used := 16 + bytes.LastIndex(orig[root*psz:(root+1)*psz], []byte("leaf2")) + 5 + 8
	for i := range 120 {
		off := root*psz + rng.IntN(used)
		if i < 16 {
			off = root*psz + i // the page header
		}
		b := bytes.Clone(orig)
		b[off] ^= 1 << rng.IntN(8)
		path := filepath.Join(dir, fmt.Sprint(i, ".db"))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, open := range []func(string, time.Duration) (*Journal, error){OpenJournalReadOnly, OpenJournal} {
			j, err := open(path, 100*time.Millisecond)
			if err != nil {
				continue // refused, naming the damage
			}
			err = historiesAgree(j)
			j.Close()
			if err != nil {
				t.Fatalf("flip %d (byte %d of the index page): %v", i, off-root*psz, err)
			}
		}
	}
}

// One switch's history in a log of 200 switches x 100 changes, by the
// scan of the whole log (a db without the index) and by the index: read
// by an open journal (the agent's /changes?target=), and opened read-only
// for it (agent history --target: the open's page check and the first
// read's damage check of every entry by its seal included).
func BenchmarkTargetHistory(b *testing.B) {
	path := fabricLogOf(b, 200, 100, false)
	paths := map[string]string{"scan": withoutIndex(b, path), "index": path}
	for _, how := range []string{"scan", "index"} {
		b.Run(how, func(b *testing.B) {
			j, err := OpenJournalReadOnly(paths[how], time.Second)
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			if es, err := j.Entries("leaf7", 0); err != nil || len(es) != 100 {
				b.Fatalf("%d entries, %v", len(es), err)
			}
			b.ResetTimer()
			for range b.N {
				j.Entries("leaf7", 0)
			}
		})
		b.Run("open+"+how, func(b *testing.B) {
			for range b.N {
				j, err := OpenJournalReadOnly(paths[how], time.Second)
				if err != nil {
					b.Fatal(err)
				}
				if es, err := j.Entries("leaf7", 0); err != nil || len(es) != 100 {
					b.Fatalf("%d entries, %v", len(es), err)
				}
				j.Close()
			}
		})
	}
}
