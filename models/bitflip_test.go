package models

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// snapshotOf reads everything a command shows of the registry at path:
// every model's metadata and weights, and every name's history. An error
// anywhere is returned as it is.
func snapshotOf(path string) (map[string]any, error) {
	r, err := Open(path, Options{ReadOnly: true, Timeout: -1})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	ms, err := r.List("")
	if err != nil {
		return nil, err
	}
	out := map[string]any{"list": ms}
	for _, m := range ms {
		full, err := r.Resolve(m.Ref())
		if err != nil {
			return nil, err
		}
		info, err := r.Info(m.Ref())
		if err != nil {
			return nil, err
		}
		h, err := r.History(m.Name)
		if err != nil {
			return nil, err
		}
		out[m.Ref()] = []any{full, info, h}
	}
	return out, nil
}

// Random bit flips anywhere in a registry file: every read either returns
// exactly what the undamaged file holds or an error, never other data
// (a hyper-parameter key train_every read back as vrain_every, invalid
// UTF-8 in the provenance, a listing of 0 B weights) and never a panic.
func TestBitFlipsNeverReadAsOtherData(t *testing.T) {
	src := filled(t)
	want, err := snapshotOf(src)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	// Where the metadata records lie: most flips go there (the weights,
	// which dominate the file, have their own sha256 check).
	var meta [][2]int
	for i := 0; ; {
		j := bytes.Index(orig[i:], []byte(`{"id":`))
		if j < 0 {
			break
		}
		start := i + j
		end := start + bytes.IndexByte(orig[start:], '}') + 1
		if k := bytes.Index(orig[start:], []byte(sealTag)); k > 0 && k < 4096 {
			end = start + k + len(sealTag) + 64
		}
		meta = append(meta, [2]int{start, end})
		i = end
	}
	if len(meta) < 6 {
		t.Fatalf("found %d metadata records in the file", len(meta))
	}
	rng := rand.New(rand.NewPCG(11, 13))
	dir := t.TempDir()
	silent, detected := 0, 0
	for i := 0; i < 300; i++ {
		b := append([]byte(nil), orig...)
		off := rng.IntN(len(b))
		if i%4 != 0 {
			m := meta[rng.IntN(len(meta))]
			off = m[0] + rng.IntN(m[1]-m[0])
		}
		b[off] ^= 1 << rng.IntN(8)
		p := filepath.Join(dir, "flip.db")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := snapshotOf(p)
		if err != nil {
			detected++
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("flip %d at byte %d (page %d) read back as other data without an error", i, off, off/4096)
		}
		silent++ // a flip in free space or padding: harmless
	}
	t.Logf("300 flips: %d detected, %d harmless (same data)", detected, silent)
}

// A metadata record's seal: a changed byte is detected, a legacy record
// (no seal) is read as it is, and an unsealed record with invalid UTF-8
// is refused.
func TestMetadataSeal(t *testing.T) {
	body := []byte(`{"name":"m","hyper":{"train_every":"4"}}`)
	s := seal(body)
	if got, err := unseal(s); err != nil || string(got) != string(body) {
		t.Fatalf("unseal(seal) = %q, %v", got, err)
	}
	for i := range s {
		b := append([]byte(nil), s...)
		b[i] ^= 0x01
		if got, err := unseal(b); err == nil && string(got) != string(body) {
			t.Fatalf("flip at %d read as %q", i, got)
		}
	}
	if got, err := unseal(body); err != nil || string(got) != string(body) {
		t.Fatalf("legacy record: %q, %v", got, err)
	}
	if _, err := unseal([]byte("{\"name\":\"\xff\"}")); err == nil {
		t.Fatal("invalid UTF-8 in a legacy record accepted")
	}
}

// Import judges what this build can use: an unknown algorithm or a
// malformed spec version is refused with the field named.
func TestImportRefusesUnknownAlgorithm(t *testing.T) {
	r, _ := openNew(t)
	m := sample("evil", 1, 100)
	m.Version = 1
	m.Algorithm = "evil"
	m.WeightsSHA256, m.WeightsSize = digest(m.Weights), int64(len(m.Weights))
	if _, err := r.ImportModel(m); err == nil || !contains(err.Error(), "field algorithm", "ddqn, ppo") {
		t.Fatalf("algorithm evil: %v", err)
	}
	m.Algorithm, m.ObsSpec = "ppo", "observations two"
	if _, err := r.ImportModel(m); err == nil || !contains(err.Error(), "spec versions") {
		t.Fatalf("malformed spec: %v", err)
	}
}

func contains(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
