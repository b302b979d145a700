package models

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// flipAll flips one bit in every occurrence of pattern in the file (bbolt
// copies pages on write, so stale copies may sit in free pages too).
func flipAll(t *testing.T, path string, pattern []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; ; {
		j := bytes.Index(b[i:], pattern)
		if j < 0 {
			break
		}
		b[i+j+len(pattern)/2] ^= 0x10
		i += j + len(pattern)
		n++
	}
	if n == 0 {
		t.Fatalf("pattern not found in %s", path)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// filled builds a registry with a few models and returns its path, closed.
func filled(t *testing.T) string {
	t.Helper()
	r, path := openNew(t)
	for i := uint64(1); i <= 6; i++ {
		mustPut(t, r, sample(fmt.Sprintf("m%d", i%3), i, 20000))
	}
	if _, err := r.Promote("m1@1", t0); err != nil {
		t.Fatal(err)
	}
	if err := r.SaveCheckpoint("run", 3, weights(99, 9000)); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// useAll opens path and reads everything in it. It returns the first error;
// the point of the callers is that it returns at all instead of panicking.
func useAll(path string, ro bool) error {
	r, err := Open(path, Options{ReadOnly: ro, Timeout: -1})
	if err != nil {
		return err
	}
	defer r.Close()
	ms, err := r.List("")
	if err != nil {
		return err
	}
	for _, m := range ms {
		if _, err := r.Resolve(m.Ref()); err != nil {
			return err
		}
	}
	if _, err = r.LoadCheckpoint("run"); errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

func TestWeightsTamperDetected(t *testing.T) {
	r, path := openNew(t)
	w := weights(42, 2000)
	m := sample("ddqn", 42, 2000)
	mustPut(t, r, m)
	mustPut(t, r, sample("ddqn", 43, 2000))
	r.Close()
	flipAll(t, path, w[500:540])

	r, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("a flipped weight byte must not stop Open: %v", err)
	}
	defer r.Close()
	_, err = r.Get("ddqn", 1)
	wantErr(t, err, ErrCorrupt, path, "ddqn@1", "sha256")
	_, err = r.Export("ddqn@1", &bytes.Buffer{})
	wantErr(t, err, ErrCorrupt, "sha256")
	if _, err := r.Info("ddqn@1"); err != nil {
		t.Fatalf("metadata must stay readable: %v", err)
	}
	if got, err := r.Get("ddqn", 2); err != nil || len(got.Weights) != 2000 {
		t.Fatalf("the other version: %v", err)
	}
	// never promoted (it was, and list showed it as any other): the
	// agent would meet it at its start; nor rolled back to
	_, err = r.Promote("ddqn@1", t0)
	wantErr(t, err, ErrCorrupt, "promote ddqn@1", "sha256")
	if _, err := r.Promote("ddqn@2", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rollback("ddqn", t0); err == nil {
		t.Fatal("rolled back to nothing")
	}
	if m, err := r.Info("ddqn@1"); err != nil || m.Status == StatusPromoted {
		t.Fatalf("damaged version: %+v, %v", m, err)
	}
	// the list says which is damaged (it showed it as any other)
	if ms, err := r.List("ddqn"); err != nil || len(ms) != 2 || !ms[0].Damaged || ms[1].Damaged {
		t.Fatalf("list: %+v, %v", ms, err)
	}
	if _, err := r.Delete("ddqn@1", false); err != nil {
		t.Fatalf("a damaged version must stay deletable: %v", err)
	}
}

// A version whose weights were damaged after it was promoted is not
// rolled back to.
func TestRollbackToDamagedWeightsRefused(t *testing.T) {
	r, path := openNew(t)
	w := weights(42, 2000)
	mustPut(t, r, sample("ddqn", 42, 2000))
	mustPut(t, r, sample("ddqn", 43, 2000))
	for _, ref := range []string{"ddqn@1", "ddqn@2"} {
		if _, err := r.Promote(ref, t0); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	flipAll(t, path, w[500:540])
	r, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Rollback("ddqn", t0)
	wantErr(t, err, ErrCorrupt, "roll back ddqn to ddqn@1", "sha256")
	if m, err := r.Info("ddqn@2"); err != nil || m.Status != StatusPromoted {
		t.Fatalf("the promoted version after a refused rollback: %+v, %v", m, err)
	}
}

func TestTruncatedDatabase(t *testing.T) {
	path := filled(t)
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := useAll(path, true); err != nil {
		t.Fatalf("intact file: %v", err)
	}
	// bbolt grows files ahead of use; the pages in use end at the high
	// water mark of the newer meta page.
	m0, why0, _ := parseMeta(full)
	m1, why1, _ := parseMeta(full[4096:])
	if why0 != "" || why1 != "" {
		t.Fatalf("meta pages: %s %s", why0, why1)
	}
	used := int(max(m0.hwm, m1.hwm)) * 4096
	if used < 12*4096 || used > len(full) {
		t.Fatalf("%d bytes in use of %d", used, len(full))
	}
	sizes := []int{1, 15, 100, 4095, 4096, 4097, 8191, 8192, 3 * 4096, used / 2, used - 4096, used - 1}
	for _, n := range sizes {
		for _, ro := range []bool{true, false} {
			p := filepath.Join(t.TempDir(), "cut.db")
			if err := os.WriteFile(p, full[:n], 0o600); err != nil {
				t.Fatal(err)
			}
			err := useAll(p, ro)
			if err == nil {
				t.Fatalf("file cut to %d of %d bytes (read-only %v): no error", n, len(full), ro)
			}
			if !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(p)) {
				t.Fatalf("cut to %d bytes: %v (want ErrCorrupt naming the file)", n, err)
			}
		}
	}
	// An empty file is no registry to read, and a fresh one to write.
	p := filepath.Join(t.TempDir(), "empty.db")
	os.WriteFile(p, nil, 0o600)
	_, err = Open(p, Options{ReadOnly: true})
	wantErr(t, err, ErrNoRegistry, p, "train a model first, or name the registry (--db, or registry: in an agent config)")
	r, err := Open(p, Options{})
	if err != nil {
		t.Fatalf("writable open of an empty file: %v", err)
	}
	r.Close()
}

func TestGarbageFiles(t *testing.T) {
	dir := t.TempDir()
	cases := map[string][]byte{
		"random.db": weights(1, 64<<10),
		"text.db":   bytes.Repeat([]byte("not a database\n"), 1000),
		"zeros.db":  make([]byte, 32<<10),
	}
	for name, data := range cases {
		p := filepath.Join(dir, name)
		os.WriteFile(p, data, 0o600)
		for _, ro := range []bool{true, false} {
			_, err := Open(p, Options{ReadOnly: ro})
			wantErr(t, err, ErrCorrupt, p, "not a bbolt database")
		}
		if b, _ := os.ReadFile(p); !bytes.Equal(b, data) {
			t.Fatalf("%s was modified by a failed open", name)
		}
	}
	// A bbolt file of some other program is refused, not adopted.
	p := filepath.Join(dir, "journal.db")
	db, err := bolt.Open(p, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("journal")); return err })
	db.Close()
	for _, ro := range []bool{true, false} {
		_, err := Open(p, Options{ReadOnly: ro})
		wantErr(t, err, ErrInvalid, p, "not an ecntune model registry")
	}
	_, err = Open(filepath.Join(dir, "missing.db"), Options{ReadOnly: true})
	wantErr(t, err, ErrNoRegistry, "no registry at "+filepath.Join(dir, "missing.db")+": train a model first, or name the registry (--db, or registry: in an agent config)")
	_, err = Open(filepath.Join(dir, "missing.db"), Options{MustExist: true})
	wantErr(t, err, ErrNoRegistry)
	_, err = Open(dir, Options{})
	wantErr(t, err, ErrInvalid, "directory")
}

// TestDamagedPages overwrites pages past the meta pages with random bytes
// (the meta pages and file length stay valid, so only bbolt's own reading
// meets the damage). Every attempt must end in an error or a clean read,
// never a panic or a fault.
func TestDamagedPages(t *testing.T) {
	path := filled(t)
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	pages := len(full) / page
	rng := rand.New(rand.NewPCG(11, 12))
	failures := 0
	trials := 60
	if s := os.Getenv("ECNTUNE_DAMAGE_TRIALS"); s != "" {
		fmt.Sscan(s, &trials)
	}
	for trial := 0; trial < trials; trial++ {
		b := bytes.Clone(full)
		n := 1 + rng.IntN(3)
		for range n {
			p := 2 + rng.IntN(pages-2)
			off := p*page + rng.IntN(page-64)
			l := 8 + rng.IntN(page/2)
			if trial%3 == 0 { // a whole page
				off, l = p*page, page
			}
			for i := off; i < off+l && i < len(b); i++ {
				b[i] = byte(rng.Uint32())
			}
		}
		p := filepath.Join(t.TempDir(), "damaged.db")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := useAll(p, trial%2 == 0); err != nil {
			failures++
			if testing.Verbose() {
				t.Logf("trial %d: %v", trial, err)
			}
		}
	}
	// Random damage to a file this small lands almost always on a page in
	// use; most trials must notice it.
	t.Logf("%d of %d damaged files gave an error", failures, trials)
	if failures < trials/2 {
		t.Fatalf("only %d of %d damaged files gave an error", failures, trials)
	}
}

func TestFailedWriteKeepsDatabase(t *testing.T) {
	r, path := openNew(t)
	mustPut(t, r, sample("m", 1, 5000))
	testHookInsert = func() error { return errors.New("disk on fire") }
	_, err := r.Put(sample("m", 2, 5000))
	testHookInsert = nil
	if err == nil || err.Error() != "disk on fire" {
		t.Fatalf("Put with a failing write: %v", err)
	}
	ms, err := r.List("m")
	if err != nil || len(ms) != 1 {
		t.Fatalf("after the failed write List = %d models, %v", len(ms), err)
	}
	// Nothing of the failed transaction stuck: not the id, not the version.
	if got := mustPut(t, r, sample("m", 3, 10)); got.ID != 2 || got.Version != 2 {
		t.Fatalf("next put got %s id %d, want m@2 id 2", got.Ref(), got.ID)
	}
	r.Close()
	if err := useAll(path, true); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentOpenIsLocked(t *testing.T) {
	r, path := openNew(t)
	mustPut(t, r, sample("m", 1, 10))
	for _, ro := range []bool{false, true} {
		start := time.Now()
		_, err := Open(path, Options{ReadOnly: ro, Timeout: 150 * time.Millisecond})
		took := time.Since(start)
		wantErr(t, err, ErrLocked, path, "database locked by another process", "150ms",
			"stop the other ecntune process, or name another registry (--db, or registry: in an agent config)")
		if took < 50*time.Millisecond || took > 5*time.Second {
			t.Fatalf("lock error after %v, want about the 150ms timeout", took)
		}
	}
	r.Close()
	// Readers share the file.
	a, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path, Options{ReadOnly: true, Timeout: -1})
	if err != nil {
		t.Fatalf("second reader: %v", err)
	}
	defer b.Close()
	if m, err := b.Get("m", 1); err != nil || len(m.Weights) != 10 {
		t.Fatalf("read through the second reader: %v", err)
	}
}

func TestPanicDuringWrite(t *testing.T) {
	r, path := openNew(t)
	mustPut(t, r, sample("m", 1, 3000))
	testHookInsert = func() error { panic("simulated crash inside the write") }
	_, err := r.Put(sample("m", 2, 3000))
	testHookInsert = nil
	wantErr(t, err, ErrCorrupt, path, "simulated crash")
	// The handle is no longer trusted; the file is.
	_, err = r.List("")
	wantErr(t, err, ErrCorrupt, "simulated crash")
	r.Close()
	r2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	ms, err := r2.List("m")
	if err != nil || len(ms) != 1 {
		t.Fatalf("after the crashed write: %d models, %v", len(ms), err)
	}
	if got := mustPut(t, r2, sample("m", 2, 10)); got.ID != 2 || got.Version != 2 {
		t.Fatalf("next put %s id %d", got.Ref(), got.ID)
	}
}
