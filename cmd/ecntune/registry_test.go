package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/train"
)

// TestRunRegistryLeavesRegistryFree: between checkpoints a training run
// holds no lock, so models and eval can use the registry.
func TestRunRegistryLeavesRegistryFree(t *testing.T) {
	db := filepath.Join(t.TempDir(), "reg.db")
	s := &runRegistry{path: db}
	r, err := models.Open(db, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := s.LoadCheckpoint("run"); !errors.Is(err, models.ErrNotFound) {
		t.Fatalf("no checkpoint yet: %v", err)
	}
	if err := s.SaveCheckpoint("run", 10, []byte("state 10")); err != nil {
		t.Fatal(err)
	}
	// Another writer gets the file at once (no wait), and sees the checkpoint.
	r, err = models.Open(db, models.Options{Timeout: -1})
	if err != nil {
		t.Fatalf("registry held between checkpoints: %v", err)
	}
	if cps, err := r.Checkpoints(); err != nil || len(cps) != 1 || cps[0].Step != 10 {
		t.Fatalf("checkpoints %+v, %v", cps, err)
	}
	r.Close()
	if err := s.SaveCheckpoint("run", 20, []byte("state 20")); err != nil {
		t.Fatal(err)
	}
	m := models.Model{Name: "run", Algorithm: "ppo", ObsSpec: env.SpecVersion, ActSpec: env.ActionSpecVersion,
		Created: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), Weights: []byte("weights")}
	stored, dropped, err := s.finish(m, "run")
	if err != nil || !dropped || stored.Ref() != "run@1" {
		t.Fatalf("finish: %s dropped %v, %v", stored.Ref(), dropped, err)
	}
	out, _, err := runModels(t, nil, "list", "--db", db)
	if err != nil || strings.Contains(out, "unfinished") || !strings.Contains(out, "run@1") {
		t.Fatalf("list after finish: %v\n%s", err, out)
	}
}

// TestRunRegistryTwoRunsOneName: a second process training the same run
// name is stopped at its first checkpoint, and the first one's model is
// stored without removing the checkpoint it no longer owns.
func TestRunRegistryTwoRunsOneName(t *testing.T) {
	db := filepath.Join(t.TempDir(), "reg.db")
	a, b := &runRegistry{path: db}, &runRegistry{path: db}
	r, err := models.Open(db, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if err := a.SaveCheckpoint("run", 10, []byte("a at 10")); err != nil {
		t.Fatal(err)
	}
	err = b.SaveCheckpoint("run", 10, []byte("b at 10"))
	if !errors.Is(err, models.ErrConflict) || !strings.Contains(err.Error(), "same run name") {
		t.Fatalf("second run's save: %v", err)
	}
	// b resumes from a's checkpoint (as a restarted run would) and moves on.
	if cp, err := b.LoadCheckpoint("run"); err != nil || string(cp.State) != "a at 10" {
		t.Fatalf("load: %q %v", cp.State, err)
	}
	if err := b.SaveCheckpoint("run", 20, []byte("b at 20")); err != nil {
		t.Fatal(err)
	}
	// a no longer owns it: its save is refused, its model still stored.
	if err := a.SaveCheckpoint("run", 20, []byte("a at 20")); !errors.Is(err, models.ErrConflict) {
		t.Fatalf("stale save: %v", err)
	}
	m := models.Model{Name: "run", Algorithm: "ppo", ObsSpec: env.SpecVersion, ActSpec: env.ActionSpecVersion,
		Created: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), Weights: []byte("weights")}
	if _, dropped, err := a.finish(m, "run"); err != nil || dropped {
		t.Fatalf("finish of the stale run: dropped %v, %v", dropped, err)
	}
	if cp, err := b.LoadCheckpoint("run"); err != nil || string(cp.State) != "b at 20" {
		t.Fatalf("b's checkpoint after a finished: %q %v", cp.State, err)
	}
}

// A trained model the registry cannot take is kept in an export file
// beside it, and the error says how to import it (it was lost).
func TestUnstoredModelKept(t *testing.T) {
	db := filepath.Join(t.TempDir(), "reg.db")
	s := &trainSession{o: trainOpts{db: db}}
	m := models.Model{Name: "run", Algorithm: "ddqn", ObsSpec: env.SpecVersion, ActSpec: env.ActionSpecVersion,
		Created: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), Weights: netBlob(t, 4, 0)}
	err := s.keepUnstored(m, errors.New("registry reg.db: database locked by another process"))
	re := regexp.MustCompile(`it is kept in (\S+): ecntune models import \S+ --db `)
	sub := re.FindStringSubmatch(fmt.Sprint(err))
	if sub == nil {
		t.Fatalf("error %v", err)
	}
	if out, _, err := runModels(t, nil, "import", sub[1], "--db", db); err != nil || !strings.Contains(out, "imported run@1") {
		t.Fatalf("import of the kept model: %v\n%s", err, out)
	}
}

// The learning curve of a model the registry could not take is written
// beside the runs as [REG-]NAME-unstored-curve (it was not written at
// all), and a second one of that name does not replace it.
func TestUnstoredModelsCurveNamed(t *testing.T) {
	dir := t.TempDir()
	m := models.Model{Name: "run-unstored"}
	curve := []train.Round{{Round: 1, Episodes: 2, MeanReward: 0.1}, {Round: 2, Episodes: 4, MeanReward: 0.2}}
	for _, want := range []string{"reg-run-unstored-curve", "reg-run-unstored-2-curve"} {
		base, err := runFiles(io.Discard, dir, filepath.Join(dir, "reg.db"), m, curveFiles)
		if err == nil {
			base, err = writeCurve(base, m, curve)
		}
		if err != nil {
			t.Fatal(err)
		}
		if base != filepath.Join(dir, want) {
			t.Fatalf("curve %s, want %s", base, want)
		}
		if _, err := os.Stat(base + ".csv"); err != nil {
			t.Fatal(err)
		}
	}
}
