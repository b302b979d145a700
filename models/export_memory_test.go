package models

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// An export read from a file is read into one buffer the size of its
// weights: reading 32 MiB of weights allocates well under twice that (a
// buffer grown as bytes arrive allocated 2-3 times the weights).
func TestReadExportFromFileAllocatesTheWeightsOnce(t *testing.T) {
	const n = 32 << 20
	r, _ := openNew(t)
	m := mustPut(t, r, sample("big", 1, n))
	path := filepath.Join(t.TempDir(), "big.ecnmodel")
	var buf bytes.Buffer
	if _, err := r.Export(m.Ref(), &buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	buf = bytes.Buffer{}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := ReadExport(f)
	runtime.ReadMemStats(&after)
	if err != nil || got.WeightsSHA256 != m.WeightsSHA256 {
		t.Fatalf("read back: %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > n*5/4 {
		t.Fatalf("reading %d B of weights allocated %d B (%.2fx)", n, alloc, float64(alloc)/n)
	}
}

// A weights length that disagrees with the metadata is refused before the
// weights are read.
func TestReadExportRefusesALengthItsMetadataDenies(t *testing.T) {
	r, _ := openNew(t)
	m := mustPut(t, r, sample("mine", 1, 1000))
	var buf bytes.Buffer
	if _, err := r.Export(m.Ref(), &buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	ml := binary.BigEndian.Uint32(b[12:16])
	binary.BigEndian.PutUint64(b[16+ml:], 1<<30) // claims 1 GiB
	_, err := ReadExport(bytes.NewReader(b))
	if !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), "metadata records 1000 bytes") {
		t.Fatalf("got %v", err)
	}
}
