package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A registry reached through a symlink is the same registry: a second
// trainer of the same run on the link stops at start, as on the file itself.
func TestRunLockFollowsSymlinks(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "reg.db")
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	link := filepath.Join(other, "link.db")
	if err := os.Symlink(db, link); err != nil {
		t.Skip(err)
	}
	first, err := acquireRunLock(db, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	defer first.release()
	second, err := acquireRunLock(link, "tiny")
	if err == nil {
		second.release()
		t.Fatal("a second trainer on a symlink to the same registry took the run")
	}
	if !strings.Contains(err.Error(), "another trainer holds it") || !strings.Contains(err.Error(), link) {
		t.Fatalf("second trainer on the symlink: %v", err)
	}
	// Another run on the link is free.
	third, err := acquireRunLock(link, "other")
	if err != nil {
		t.Fatalf("another run on the link: %v", err)
	}
	third.release()
}
