package models

import (
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Space's free figure is the file less every page in use, exactly: bbolt's
// own count of free and pending pages plus the file's tail past its high
// water mark, as a fresh compaction would give back.
func TestSpaceFreeIsExact(t *testing.T) {
	r, _ := openNew(t)
	mustPut(t, r, sample("mine", 1, 50_000))
	mustPut(t, r, sample("other", 1, 300_000))
	if err := r.SaveCheckpoint("mine", 1, weights(1, 1<<20)); err != nil {
		t.Fatal(err)
	}
	for _, del := range []bool{false, true} {
		if del {
			if err := r.DeleteCheckpoint("mine"); err != nil {
				t.Fatal(err)
			}
		}
		s, err := r.Space()
		if err != nil {
			t.Fatal(err)
		}
		var want int64
		r.view(func(tx *bolt.Tx) error {
			ps := int64(tx.DB().Info().PageSize)
			st := tx.DB().Stats()
			want = int64(st.FreePageN+st.PendingPageN)*ps + (s.File - tx.Size())
			return nil
		})
		if s.Free != want {
			t.Errorf("checkpoint deleted %v: Space says %d B free, bbolt's pages say %d B (%+d)", del, s.Free, want, s.Free-want)
		}
	}
}

// Read-only (as `models list` opens it) it says the same.
func TestSpaceFreeReadOnly(t *testing.T) {
	r, path := openNew(t)
	mustPut(t, r, sample("mine", 1, 50_000))
	if err := r.SaveCheckpoint("mine", 1, weights(1, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteCheckpoint("mine"); err != nil {
		t.Fatal(err)
	}
	rw, err := r.Space()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	s, err := ro.Space()
	if err != nil || s.Free != rw.Free {
		t.Fatalf("read-only: %d B free, %v; read-write said %d B", s.Free, err, rw.Free)
	}
}
