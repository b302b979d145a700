package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ecntune/ecntune/models"
)

// hasBucket reports whether the bbolt file at path has a top-level bucket name.
func hasBucket(t *testing.T, path, name string) bool {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	found := false
	db.View(func(tx *bolt.Tx) error { found = tx.Bucket([]byte(name)) != nil; return nil })
	return found
}

// The agent database is refused when the file is something else: the
// model registry (whose lock the agent would hold and which it would
// write its buckets into), another bbolt database, or not bbolt at all.
func TestOpenJournalRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "models.db")
	r, err := models.Open(reg, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	other := filepath.Join(dir, "other.db")
	db, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("sessions")); return err })
	db.Close()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte(strings.Repeat("not a database\n", 1000)), 0o644)

	for _, c := range []struct{ path, want string }{
		{reg, "agent db " + reg + ": this is an ecntune model registry, not an agent database"},
		{other, "agent db " + other + ": a bbolt database but not an ecntune agent database (buckets: sessions)"},
		{text, "agent db " + text + ": not a bbolt database"},
	} {
		j, err := OpenJournal(c.path, time.Second)
		if err == nil {
			j.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", filepath.Base(c.path), err, c.want)
		}
	}
	if hasBucket(t, reg, "audit") || hasBucket(t, other, "audit") {
		t.Fatal("a refused file got the agent's buckets")
	}
	if r, err := models.Open(reg, models.Options{ReadOnly: true}); err != nil {
		t.Fatalf("the registry after the refusal: %v", err)
	} else {
		r.Close()
	}

	// A new file, an empty one, and the agent's own database are fine.
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o600)
	for _, p := range []string{filepath.Join(dir, "agent.db"), empty, filepath.Join(dir, "agent.db")} {
		j, err := OpenJournal(p, time.Second)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		j.Close()
	}
}

// A read-only open (agent history, twin, ...) names an empty file or a
// directory for what it is: bbolt alone would fail to write a new
// database into the empty file ("bad file descriptor"), and a directory
// is not "missing".
func TestOpenJournalReadOnlyEmptyFileOrDir(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenJournalReadOnly(empty, time.Second)
	if err == nil || !strings.Contains(err.Error(), "empty.db is an empty file (0 bytes)") {
		t.Fatalf("empty file: %v", err)
	}
	if st, err := os.Stat(empty); err != nil || st.Size() != 0 {
		t.Fatalf("empty file changed: %v %v", st, err)
	}
	_, err = OpenJournalReadOnly(dir, time.Second)
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("directory: %v", err)
	}
	_, err = OpenJournalReadOnly(filepath.Join(dir, "missing.db"), time.Second)
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing: %v", err)
	}
}
