package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/models"
)

// Two trainers under one run name: the second stops at start, naming the
// run and that another trainer holds it; the first stores its model alone
// and releases the run when it is done.
func TestTrainRunHeldByAnotherTrainer(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(sc, []byte(tinyTrainScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "reg.db")
	args := func(extra ...string) []string {
		return append([]string{"--scenario", sc, "--workers", "1", "--name", "tiny", "--db", db, "--out", dir, "--hidden", "8", "--checkpoint-every", "1000"}, extra...)
	}
	first := make(chan error, 1)
	go func() { _, err := runCmd(t, newTrainCmd(), args("--budget", "2s")...); first <- err }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(db); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first trainer did not start")
		}
	}
	time.Sleep(300 * time.Millisecond) // the first trainer is training now
	_, err := runCmd(t, newTrainCmd(), args("--episodes", "2")...)
	if err == nil || !strings.Contains(err.Error(), "training run tiny in "+db) || !strings.Contains(err.Error(), "another trainer holds it") {
		t.Errorf("second trainer: got %v, want it refused", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("first trainer: %v", err)
	}
	reg, err := models.Open(db, models.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := reg.List("tiny")
	reg.Close()
	if err != nil || len(ms) != 1 {
		t.Fatalf("models of run tiny: %d (%v), want the first trainer's only", len(ms), err)
	}
	// Released: the run can be trained again, and no lock file is left.
	if _, err := runCmd(t, newTrainCmd(), args("--episodes", "1")...); err != nil {
		t.Fatalf("after the first trainer finished: %v", err)
	}
	if locks, _ := filepath.Glob(filepath.Join(dir, "*.lock")); len(locks) != 0 {
		t.Fatalf("lock files left: %v", locks)
	}
}
