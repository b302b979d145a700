package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// t0 is the fixture's first intent time.
var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC).UnixNano()

// filledJournal builds an agent db as a closed loop leaves it: 3 targets,
// 40 changes each applied with the guard's memory of the queue, a few
// intervals of recommendations and a pause record; it returns its path,
// closed.
func filledJournal(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.db")
	j, err := OpenJournal(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 120 {
		k := env.QueueKey{Target: fmt.Sprintf("leaf%d", i%3), Port: fmt.Sprintf("Ethernet%d", 4*(i/3%4)), Queue: 3}
		now := t0 + int64(i)*int64(time.Second)
		s := env.Setting{KminBytes: int64(100000 + 1000*i), KmaxBytes: int64(400000 + 1000*i), Pmax: 0.1}
		es, err := j.Intent([]core.AuditEntry{{TimeNs: now, Target: k.Target, Model: "builtin", Owner: "ecntune-agent",
			Change: core.Change{Key: k, Kind: core.KindTune, Old: env.Setting{KminBytes: 1, KmaxBytes: 2, Pmax: 0.2}, New: s, Reason: "test"}}})
		if err != nil {
			t.Fatal(err)
		}
		done := now + int64(20*time.Millisecond)
		mem := core.QueueMemory{Key: k, Changed: true, LastChangeNs: done, LastGood: s}
		if err := j.Resolve(es[0].Seq, core.StateApplied, &s, "", done, mem); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			recs := []core.Recommendation{{TimeNs: now, Key: k, Policy: "builtin", Current: s, Recommended: s, Reason: "hold", Valid: true}}
			if err := j.PutRecommendations(recs); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := j.SetPause(Pause{Paused: false, By: "op", Reason: "done", SinceNs: t0}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// dbView is everything the agent's commands show of a db.
type dbView struct {
	Entries []core.AuditEntry
	Memory  []core.QueueMemory
	Recs    []core.Recommendation
	Pause   Pause
	Repairs []string // GuardMemoryRepairs
}

// readDB reads everything from the db at path read-only (agent history,
// recommendations, report) and then opens it writable as the agent does at
// start and reads its guard memory; a panic is returned as panicked.
func readDB(path string) (v dbView, err error, panicked any) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if p := recover(); p != nil {
			panicked = p
		}
	}()
	j, err := OpenJournalReadOnly(path, 100*time.Millisecond)
	if err != nil {
		return v, err, nil
	}
	v.Entries, err = j.Entries("", 0)
	if err == nil {
		v.Recs, err = j.Recommendations("", 0, 0)
	}
	if err == nil {
		v.Pause, err = j.Pause()
	}
	j.Close()
	if err != nil {
		return v, err, nil
	}
	w, err := OpenJournal(path, 100*time.Millisecond)
	if err != nil {
		return v, err, nil
	}
	defer w.Close()
	v.Memory, err = w.GuardMemory()
	v.Repairs = w.GuardMemoryRepairs()
	return v, err, nil
}

// damaged says whether a read shows an audit entry as damaged, or guard
// memory repaired.
func damaged(v dbView) bool {
	if len(v.Repairs) > 0 {
		return true
	}
	for _, e := range v.Entries {
		if e.State == "damaged" {
			return true
		}
	}
	return false
}

// usedPages is the high-water mark of the bbolt file b (4 KiB pages): the
// meta page of the later transaction says how many pages are in use.
func usedPages(b []byte) int {
	meta := func(pg int) (txid, hwm uint64) {
		m := b[pg*4096+16:]
		return binary.NativeEndian.Uint64(m[48:]), binary.NativeEndian.Uint64(m[40:])
	}
	t0, h0 := meta(0)
	t1, h1 := meta(1)
	if t1 > t0 {
		return int(h1)
	}
	return int(h0)
}

// Single-bit flips anywhere in the used pages of an agent db, and bit 7 of
// each byte of every page's header: reading it never panics, and never
// shows other data without saying so (an error, or an entry marked
// damaged).
func TestAgentDBBitFlips(t *testing.T) {
	src := filledJournal(t)
	want, err, p := readDB(src)
	if err != nil || p != nil {
		t.Fatal(err, p)
	}
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	used := usedPages(orig)
	type flip struct{ off, bit int }
	var flips []flip
	for pg := 0; pg < used; pg++ {
		for o := 0; o < 16; o++ {
			flips = append(flips, flip{pg*page + o, 7})
		}
	}
	headers := len(flips)
	rng := rand.New(rand.NewPCG(38, 10))
	for range 300 {
		flips = append(flips, flip{rng.IntN(used * page), rng.IntN(8)})
	}
	dir := t.TempDir()
	var panics, silent, detected, same [2]int // [0] page headers, [1] random
	for i, f := range flips {
		b := bytes.Clone(orig)
		b[f.off] ^= 1 << f.bit
		path := filepath.Join(dir, strconv.Itoa(i)+".db") // a panic may leave a handle (and its lock) behind
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		kind := 1
		if i < headers {
			kind = 0
		}
		got, err, p := readDB(path)
		switch {
		case p != nil:
			panics[kind]++
			if panics[kind] <= 3 {
				t.Errorf("flip of bit %d at byte %d (page %d): panic: %v", f.bit, f.off, f.off/page, p)
			}
		case err != nil || damaged(got):
			detected[kind]++
		case reflect.DeepEqual(got, want):
			same[kind]++
		default:
			silent[kind]++
			if silent[kind] <= 3 {
				t.Errorf("flip of bit %d at byte %d (page %d) read back as other data without an error", f.bit, f.off, f.off/page)
			}
		}
	}
	t.Logf("bit 7 of every page header byte (%d flips): %d panics, %d detected, %d silent changes, %d harmless",
		headers, panics[0], detected[0], silent[0], same[0])
	t.Logf("300 random flips in the used pages: %d panics, %d detected, %d silent changes, %d harmless",
		panics[1], detected[1], silent[1], same[1])
	if panics != [2]int{} || silent != [2]int{} {
		t.Fatalf("%v panics, %v silent changes", panics, silent)
	}
}

// A flipped digit in a queue's guard memory never shortens its min-hold
// after a restart: the agent either refuses the db or holds the queue at
// least as long as the undamaged memory says.
func TestGuardMemoryDigitFlips(t *testing.T) {
	src := filledJournal(t)
	want, err, _ := readDB(src)
	if err != nil {
		t.Fatal(err)
	}
	last := map[env.QueueKey]int64{}
	for _, m := range want.Memory {
		last[m.Key] = m.LastChangeNs
	}
	orig, _ := os.ReadFile(src)
	dir := t.TempDir()
	n, shortened, refused := 0, 0, 0
	for i := 0; ; {
		j := bytes.Index(orig[i:], []byte(`"last_change_ns":`))
		if j < 0 {
			break
		}
		start := i + j + len(`"last_change_ns":`)
		i = start
		for off := start; orig[off] >= '0' && orig[off] <= '9'; off++ {
			for _, bit := range []int{0, 2} {
				b := bytes.Clone(orig)
				b[off] ^= 1 << bit
				if b[off] < '0' || b[off] > '9' {
					continue
				}
				n++
				path := filepath.Join(dir, strconv.Itoa(n)+".db")
				os.WriteFile(path, b, 0o600)
				got, err, p := readDB(path)
				if p != nil {
					t.Fatalf("panic: %v", p)
				}
				if err != nil {
					refused++
					continue
				}
				for _, m := range got.Memory {
					if m.LastChangeNs < last[m.Key] || !m.Changed {
						shortened++
						break
					}
				}
			}
		}
	}
	t.Logf("%d digit flips in last_change_ns: %d shortened a hold, %d refused", n, shortened, refused)
	if n == 0 || shortened > 0 {
		t.Fatalf("%d of %d digit flips in guard memory shortened a hold", shortened, n)
	}
}

// errDiskFull is what the failing-write seam returns.
var errDiskFull = fmt.Errorf("write: %w", syscall.ENOSPC)

// Disk full: results the journal could not write are kept and written with
// the next write that succeeds (or at Close); meanwhile reads show them,
// and Pending does not hand them to reconcile.
func TestResultsRerecordedAfterDiskFull(t *testing.T) {
	for _, flush := range []string{"next write", "close"} {
		t.Run(flush, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agent.db")
			j, err := OpenJournal(path, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var in []core.AuditEntry
			for i := range 17 {
				k := env.QueueKey{Target: "leaf0", Port: "Ethernet" + strconv.Itoa(i), Queue: 3}
				in = append(in, core.AuditEntry{TimeNs: t0, Target: "leaf0", Change: core.Change{Key: k, Kind: core.KindTune}})
			}
			es, err := j.Intent(in)
			if err != nil {
				t.Fatal(err)
			}
			j.failWrite = func() error { return errDiskFull }
			for _, e := range es {
				s := env.Setting{KminBytes: 1000, KmaxBytes: 2000, Pmax: 0.1}
				mem := core.QueueMemory{Key: e.Key, Changed: true, LastChangeNs: t0 + 5}
				if err := j.Resolve(e.Seq, core.StateApplied, &s, "", t0+5, mem); !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("resolve on a full disk: %v", err)
				}
			}
			if err := j.PutGuardMemory([]core.QueueMemory{{Key: es[0].Key, Changed: true, LastChangeNs: t0 + 6}}); err == nil {
				t.Fatal("a write on a full disk succeeded")
			}
			if p, err := j.Pending(); err != nil || len(p) != 0 {
				t.Fatalf("pending while the results wait: %d entries (%v)", len(p), err)
			}
			j.failWrite = nil
			if flush == "next write" {
				if err := j.SetMeta("owner", "x"); err != nil {
					t.Fatal(err)
				}
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			j, err = OpenJournal(path, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			all, _ := j.Entries("", 0)
			intent := 0
			for _, e := range all {
				if e.State != core.StateApplied {
					intent++
				}
			}
			mem, _ := j.GuardMemory()
			if intent != 0 || len(mem) != 17 {
				t.Fatalf("after the disk freed: %d of %d entries not applied, %d guard memories", intent, len(all), len(mem))
			}
		})
	}
}

// A damaged audit entry: the agent (a writable open) refuses the db,
// naming the file, the entry and what to do; agent history (a read-only
// open) shows every intact entry and the damaged one as damaged, whatever
// target it asks for.
func TestDamagedAuditEntry(t *testing.T) {
	path := filledJournal(t)
	b, _ := os.ReadFile(path)
	i := bytes.Index(b, []byte(`"seq":17,`))
	if i < 0 {
		t.Fatal("entry 17 not found")
	}
	b[bytes.Index(b[i:], []byte(`"kmin_bytes":`))+i+len(`"kmin_bytes":`)] ^= 1 // a digit of its old Kmin
	os.WriteFile(path, b, 0o600)
	if j, err := OpenJournal(path, time.Second); err == nil {
		j.Close()
		t.Fatal("the agent opened a db with a damaged audit entry")
	} else if s := err.Error(); !strings.Contains(s, path) || !strings.Contains(s, "audit entry 17") || !strings.Contains(s, "mv "+path) {
		t.Fatalf("error does not name the file, the entry and the remedy: %v", err)
	}
	j, err := OpenJournalReadOnly(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, target := range []string{"", "leaf0"} {
		es, err := j.Entries(target, 0)
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for _, e := range es {
			if e.State == StateDamaged {
				bad++
				if e.Seq != 17 || !strings.Contains(e.Error, "seal") {
					t.Fatalf("damaged entry shown as %+v", e)
				}
			}
		}
		if want := map[string]int{"": 120, "leaf0": 41}[target]; bad != 1 || len(es) != want {
			t.Fatalf("history of %q: %d entries, %d damaged; want %d and 1", target, len(es), bad, want)
		}
	}
}

// damagePage overwrites the root page of bucket with junk (a branch page
// of that bucket alone when it holds enough records).
func damagePage(t *testing.T, path string, bucket []byte) {
	t.Helper()
	j, err := OpenJournalReadOnly(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var root int64
	psz := int64(j.db.Info().PageSize)
	j.db.View(func(tx *bolt.Tx) error { root = int64(tx.Bucket(bucket).Root()); return nil })
	j.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	junk := make([]byte, psz)
	for i := range junk {
		junk[i] = byte(i*7 + 13)
	}
	if _, err := f.WriteAt(junk, root*psz); err != nil {
		t.Fatal(err)
	}
}

// A damaged page outside the audit log: a read-only open still reads the
// audit log and says what is damaged, the damaged bucket's reads are
// refused naming it, and the agent's writable open refuses the db with
// advice whose read-only command then works (it said to run history on
// DB.damaged, which refused again: "mv DB.damaged DB.damaged.damaged").
func TestReadOnlyOpenPastDamagedBucket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	j, err := OpenJournal(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	k := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	if _, err := j.Intent([]core.AuditEntry{{TimeNs: t0, Target: "leaf0", Change: core.Change{Key: k, Kind: core.KindTune, Reason: "test"}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		var recs []core.Recommendation
		for q := range 32 {
			recs = append(recs, core.Recommendation{TimeNs: t0 + int64(i)*int64(time.Second),
				Key: env.QueueKey{Target: "leaf0", Port: fmt.Sprintf("Ethernet%d", q), Queue: 3}, Reason: strings.Repeat("x", 200), Valid: true})
		}
		if err := j.PutRecommendations(recs); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	damagePage(t, path, bucketRecs)

	_, err = OpenJournal(path, time.Second)
	if err == nil || !strings.Contains(err.Error(), "mv "+path+" "+path+".damaged") {
		t.Fatalf("writable open of a db with a damaged page: %v, want it refused with mv DB DB.damaged", err)
	}
	moved := path + ".damaged"
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	r, err := OpenJournalReadOnly(moved, time.Second)
	if err != nil {
		t.Fatalf("read-only open of %s (damaged outside the audit log): %v", moved, err)
	}
	defer r.Close()
	if d := r.Damage(); !strings.Contains(d, "recommendations") || strings.Contains(d, "audit") {
		t.Errorf("Damage() = %q, want the recommendations bucket named", d)
	}
	if es, err := r.Entries("", 0); err != nil || len(es) != 1 || es[0].State == StateDamaged {
		t.Errorf("audit log of %s: %v %+v, want its 1 intact entry", moved, err, es)
	}
	if _, err := r.Recommendations("", 0, 0); !errors.Is(err, ErrBucketDamaged) || !strings.Contains(err.Error(), "bucket recommendations") ||
		strings.Contains(err.Error(), ".damaged.damaged") {
		t.Errorf("recommendations of %s: %v, want refused naming the damaged bucket, no advice to move it again", moved, err)
	}
}

// A damaged page of the audit log itself: the read-only open refuses, and
// does not send the operator to a read-only command again.
func TestReadOnlyOpenOfDamagedAuditLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	j, err := OpenJournal(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		var es []core.AuditEntry
		for q := range 50 {
			k := env.QueueKey{Target: "leaf0", Port: fmt.Sprintf("Ethernet%d", q), Queue: 3}
			es = append(es, core.AuditEntry{TimeNs: t0 + int64(i), Target: "leaf0", Change: core.Change{Key: k, Kind: core.KindTune, Reason: "test"}})
		}
		if _, err := j.Intent(es); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	damagePage(t, path, bucketAudit)
	_, err = OpenJournalReadOnly(path, time.Second)
	if err == nil || !strings.Contains(err.Error(), "bucket audit") || strings.Contains(err.Error(), "agent history --db") {
		t.Fatalf("read-only open of a damaged audit log: %v, want it refused naming the audit bucket, without sending to agent history", err)
	}
}
