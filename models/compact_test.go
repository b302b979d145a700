package models

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A checkpoint saved twice and then deleted leaves its pages free in the
// file (bbolt never shrinks it): Space says so, and Compact gives them
// back, keeping every model.
func TestSpaceAndCompact(t *testing.T) {
	r, path := openNew(t)
	m := mustPut(t, r, sample("mine", 1, 50_000))
	for step := 1; step <= 2; step++ {
		if err := r.SaveCheckpoint("mine", step, weights(uint64(step), 4<<20)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := r.Space()
	if err != nil {
		t.Fatal(err)
	}
	if s.Checkpoints != 1 || s.States < 4<<20 || s.Versions != 1 || s.Weights != 50_000 {
		t.Fatalf("space with a checkpoint: %+v", s)
	}
	if err := r.DeleteCheckpoint("mine"); err != nil {
		t.Fatal(err)
	}
	if s, err = r.Space(); err != nil || s.Free < 8<<20 || !s.Wasteful() || s.Checkpoints != 0 {
		t.Fatalf("space after the checkpoint went: %+v, %v: want 8 MiB free or more", s, err)
	}
	r.Close()
	before, after, err := Compact(path, Options{NoSync: true}, Space.Wasteful)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if after.File != st.Size() || st.Size() > 512<<10 || after.Wasteful() || before.File < 8<<20 {
		t.Fatalf("compacted from %+v to %+v (file %d bytes): want at most 512 KiB", before, after, st.Size())
	}
	got, err := Load(path, "mine")
	if err != nil || got.WeightsSHA256 != m.WeightsSHA256 {
		t.Fatalf("model after compaction: %v, %v", got.Ref(), err)
	}
	if _, again, err := Compact(path, Options{NoSync: true}, Space.Wasteful); err != nil || again.File != after.File {
		t.Fatalf("a second compaction: %+v, %v: want nothing done", again, err)
	}
	if left, _ := filepath.Glob(path + ".compact-*"); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// A process that waits for the registry while another replaces the file
// (as Compact does, holding the lock) opens the new file, not the old one
// whose lock it was given: what it wrote there would be lost.
func TestOpenAfterTheFileWasReplaced(t *testing.T) {
	r, path := openNew(t)
	mustPut(t, r, sample("old", 1, 100))
	next := filepath.Join(filepath.Dir(path), "next.db")
	n, err := Open(next, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, n, sample("new", 2, 100))
	n.Close()
	opened := make(chan *Registry, 1)
	go func() {
		w, err := Open(path, Options{NoSync: true, Timeout: 10 * time.Second})
		if err != nil {
			t.Error(err)
		}
		opened <- w
	}()
	time.Sleep(200 * time.Millisecond) // the other open waits for r's lock
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	r.Close()
	w := <-opened
	if w == nil {
		return
	}
	defer w.Close()
	if _, err := w.Info("new"); err != nil {
		t.Fatalf("the waiting open has the old file: %v", err)
	}
}

// Compact through a symlink compacts the file it names, keeping the link
// (it replaced the link with a copy, splitting the registry: promotions
// into the copy, agents reading the original) and the file's mode; a
// temporary file a killed compaction left is removed.
func TestCompactKeepsSymlinkAndMode(t *testing.T) {
	r, path := openNew(t)
	mustPut(t, r, sample("mine", 1, 1000))
	r.Close()
	if err := os.Chmod(path, 0o664); err != nil {
		t.Fatal(err)
	}
	stale := path + ".compact-999999999" // no such process
	if err := os.WriteFile(stale, []byte("left"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "models.db")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Compact(link, Options{NoSync: true}, nil); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link after compaction: %v, %v", st.Mode(), err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o664 {
		t.Fatalf("the file's mode after compaction: %v, %v", st.Mode(), err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("a killed compaction's temporary file left: %v", err)
	}
	if got, err := Load(path, "mine"); err != nil || got.Version != 1 {
		t.Fatalf("model after compaction: %v, %v", got.Ref(), err)
	}
}

// A name whose versions reached the bound (an import of a version at it)
// stores no next version it could never export or import again.
func TestNoVersionBeyondTheBound(t *testing.T) {
	r, _ := openNew(t)
	m := sample("mine", 1, 100)
	m.Version = maxVersion
	mustPut(t, r, m)
	if _, err := r.Put(sample("mine", 2, 100)); err == nil || !strings.Contains(err.Error(), "no version left") {
		t.Fatalf("a version past the bound: %v", err)
	}
}

// A forced delete of the promoted version is in the promotion history, and
// an import does not bring a deleted version number back with other
// weights (the history's and the audit log's "a@2" then named them).
func TestDeletedVersionInHistoryAndNotReused(t *testing.T) {
	r, _ := openNew(t)
	mustPut(t, r, sample("a", 1, 100))
	m2 := mustPut(t, r, sample("a", 2, 100))
	if _, err := r.Promote("a@2", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Delete("a@2", true); err != nil {
		t.Fatal(err)
	}
	h, err := r.History("a")
	if err != nil || len(h) != 2 || h[1].Action != "delete" || h[1].Version != 0 || h[1].Previous != m2.Version {
		t.Fatalf("history %+v, %v", h, err)
	}
	other := sample("a", 3, 100) // other weights, exported elsewhere as a@2
	other.Version = 2
	other.WeightsSHA256 = digest(other.Weights)
	other.WeightsSize = int64(len(other.Weights))
	res, err := r.ImportModel(other)
	if err != nil || !res.Renumbered || !res.Deleted || res.Model.Version != 3 {
		t.Fatalf("import of another a@2 after a@2 was deleted: %+v, %v", res, err)
	}
}

// LoadWithin waits for a writer (a compaction) to release the registry:
// an agent starting during one failed after Load's second.
func TestLoadWithinWaitsForTheWriter(t *testing.T) {
	r, path := openNew(t)
	mustPut(t, r, sample("mine", 1, 100))
	released := make(chan struct{})
	go func() {
		time.Sleep(1500 * time.Millisecond)
		r.Close()
		close(released)
	}()
	m, err := LoadWithin(path, "mine", 30*time.Second)
	if err != nil || m.Version != 1 {
		t.Fatalf("LoadWithin: %v, %v", m.Ref(), err)
	}
	<-released
}
