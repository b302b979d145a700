package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A training run is its run name in one registry file: its checkpoint is
// stored under that name (models.SwapCheckpoint) and its model under the
// same name. One trainer at a time may hold a run: runLock is an OS file
// lock (flock) on DB.train-RUN.lock beside the registry, taken when train
// starts and released when it has stored the model. The OS drops the lock
// when the process dies, so a killed trainer leaves nothing to clean up
// (the file may stay; it is only a name to lock). The registry's own lock
// is not held during training (models and eval use the file meanwhile), so
// it cannot serve.

// errLockHeld: another open file holds the lock.
var errLockHeld = errors.New("lock held")

// runLock is a held run; release gives it up.
type runLock struct {
	f    *os.File
	path string
}

// runLockPath is the lock file of run beside the registry db.
func runLockPath(db, run string) string { return db + ".train-" + run + ".lock" }

// resolvedDB is the registry file db names, symlinks followed, so that a
// registry reached through a link locks the same run as the file itself
// (a hard link under another name is still another name).
func resolvedDB(db string) string {
	if p, err := filepath.EvalSymlinks(db); err == nil {
		db = p
	}
	if p, err := filepath.Abs(db); err == nil {
		db = p
	}
	return db
}

// acquireRunLock takes the run, or fails at once naming the trainer that
// holds it.
func acquireRunLock(db, run string) (*runLock, error) {
	path := runLockPath(resolvedDB(db), run)
	for range 5 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("training run %s in %s: lock file: %w", run, db, err)
		}
		if err := tryLock(f); err != nil {
			f.Close()
			if errors.Is(err, errLockHeld) {
				return nil, fmt.Errorf("training run %s in %s: another trainer holds it (%s; lock %s): wait for it to finish or train under another --name",
					run, db, lockOwner(path), path)
			}
			return nil, fmt.Errorf("training run %s in %s: lock %s: %w", run, db, path, err)
		}
		// The previous holder removes the file when it is done: a lock
		// taken on a file opened just before that is a lock on a name
		// nobody else sees, so take it again on the current file.
		fi, err1 := f.Stat()
		cur, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(fi, cur) {
			f.Close()
			continue
		}
		host, _ := os.Hostname()
		owner := fmt.Sprintf("pid %d on %s since %s", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt([]byte(owner+"\n"), 0)
		}
		return &runLock{f: f, path: path}, nil
	}
	return nil, fmt.Errorf("training run %s in %s: lock %s keeps being replaced", run, db, path)
}

// lockOwner is what the holder wrote into the lock file.
func lockOwner(path string) string {
	b, err := os.ReadFile(path)
	if s := strings.TrimSpace(string(b)); err == nil && s != "" && len(s) < 200 {
		return s
	}
	return "owner unknown"
}

// release removes the lock file and then drops the lock (in that order, so
// that no other trainer takes a lock on the name being removed).
func (l *runLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	rerr := os.Remove(l.path)
	cerr := l.f.Close()
	l.f = nil
	return errors.Join(rerr, cerr)
}

// runLockHolder reports whether a trainer holds run in the registry db
// now, and what it wrote into its lock file. It creates nothing: no lock
// file, no trainer.
func runLockHolder(db, run string) (string, bool) {
	path := runLockPath(resolvedDB(db), run)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return "", false
	}
	defer f.Close() // drops the lock if this probe took it
	if errors.Is(tryLock(f), errLockHeld) {
		return lockOwner(path), true
	}
	return "", false
}
