package models

import (
	"os"
	"path/filepath"
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
