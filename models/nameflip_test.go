package models

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// nameRecords finds every copy of a name record (the key, then its JSON
// value and seal) in a registry file: [start, end) of key and value.
func nameRecords(t *testing.T, file []byte) [][2]int {
	t.Helper()
	var out [][2]int
	for i := 0; ; {
		j := bytes.Index(file[i:], []byte(`"next_version":`))
		if j < 0 {
			break
		}
		start := bytes.LastIndexByte(file[:i+j], '{')
		var raw json.RawMessage
		if err := json.NewDecoder(bytes.NewReader(file[start:])).Decode(&raw); err != nil {
			t.Fatalf("name record at %d: %v", start, err)
		}
		end := start + len(raw)
		if bytes.HasPrefix(file[end:], []byte(sealTag)) {
			end += len(sealTag) + 64
		}
		out = append(out, [2]int{start - len("m1"), end}) // the names in filled() are 2 bytes
		i = end
	}
	return out
}

// Every single-bit flip in a name's record (its key, its next version, its
// promoted version, its promotion stack and history) is detected: the
// registry refuses to read it rather than saying a promoted model was never
// promoted, an action "pr\x7fmote" or a promotion in 3026. A copy of a
// record in a free page (bbolt copies pages on write) is never read: flips
// there leave the data as it was.
func TestNameRecordBitFlipsDetected(t *testing.T) {
	src := filled(t)
	r, err := Open(src, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Promote("m1@2", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rollback("m1", t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Promote("m2@2", t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	want, err := snapshotOf(src)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	recs := nameRecords(t, orig)
	p := filepath.Join(t.TempDir(), "flip.db")
	flips, detected, stale := 0, 0, 0
	for _, rec := range recs {
		var silent []string
		copyDetected, copyFlips := 0, 0
		for off := rec[0]; off < rec[1]; off++ {
			for bit := range 8 {
				b := append([]byte(nil), orig...)
				b[off] ^= 1 << bit
				if err := os.WriteFile(p, b, 0o600); err != nil {
					t.Fatal(err)
				}
				copyFlips++
				got, err := snapshotOf(p)
				switch {
				case err != nil:
					copyDetected++
				case !reflect.DeepEqual(got, want):
					silent = append(silent, string(b[rec[0]:rec[1]]))
				}
			}
		}
		if copyDetected == 0 && len(silent) == 0 {
			stale++ // a copy in a free page: never read
			continue
		}
		flips += copyFlips
		detected += copyDetected
		if n := copyFlips - copyDetected; n > 0 {
			t.Errorf("name record at byte %d: %d of %d single-bit flips undetected (%d read as other data), e.g. %q",
				rec[0], n, copyFlips, len(silent), silent[:min(len(silent), 3)])
		}
	}
	if flips == 0 {
		t.Fatalf("no live name record found among %d copies", len(recs))
	}
	t.Logf("%d single-bit flips in %d live name records: %d detected; %d stale copies", flips, len(recs)-stale, detected, stale)
}

// A name record written before seals (no name, no seal) is read as it is
// and sealed when it is next written; an unsealed record naming itself is
// refused (its seal was cut off).
func TestLegacyNameRecord(t *testing.T) {
	src := filled(t)
	legacy := `{"next_version":3,"promoted":1,"stack":[1],"history":[{"seq":1,"action":"promote","version":1,"at":"2026-11-20T12:00:00Z"}]}`
	setRaw := func(v string) {
		db, err := bolt.Open(src, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bktNames).Put([]byte("m1"), []byte(v)) }); err != nil {
			t.Fatal(err)
		}
	}
	setRaw(legacy)
	r, err := Open(src, Options{NoSync: true})
	if err != nil {
		t.Fatalf("legacy name record: %v", err)
	}
	if h, err := r.History("m1"); err != nil || len(h) != 1 || h[0].Action != "promote" {
		t.Fatalf("legacy history: %v, %v", h, err)
	}
	if _, err := r.Promote("m1@2", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	raw, _ := os.ReadFile(src)
	if !bytes.Contains(raw, []byte(`{"name":"m1","next_version":3,"promoted":2`)) || !bytes.Contains(raw, []byte(sealTag)) {
		t.Fatal("the record was not sealed when written again")
	}
	setRaw(`{"name":"m1","next_version":3}`)
	if _, err := Open(src, Options{ReadOnly: true}); err == nil || !contains(err.Error(), "record of model name", "m1", "sealed", src) {
		t.Fatalf("unsealed record with a name: %v", err)
	}
}
