package models

import (
	"bytes"
	"path/filepath"
	"testing"
)

const benchWeights = 1 << 20

func benchPut(b *testing.B, noSync bool) {
	r, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	m := sample("bench", 1, benchWeights)
	b.SetBytes(benchWeights)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m.WeightsSHA256 = ""
		if _, err := r.Put(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPut1MB stores a model with 1 MiB of weights per iteration,
// fsync on commit as in production.
func BenchmarkPut1MB(b *testing.B) { benchPut(b, false) }

// BenchmarkPut1MBNoSync is the same without fsync: the registry's own cost.
func BenchmarkPut1MBNoSync(b *testing.B) { benchPut(b, true) }

// BenchmarkGet1MB loads and verifies (sha256) a model with 1 MiB of weights.
func BenchmarkGet1MB(b *testing.B) {
	r, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for i := uint64(1); i <= 8; i++ {
		if _, err := r.Put(sample("bench", i, benchWeights)); err != nil {
			b.Fatal(err)
		}
	}
	want := weights(5, benchWeights)
	b.SetBytes(benchWeights)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m, err := r.Get("bench", 5)
		if err != nil {
			b.Fatal(err)
		}
		if len(m.Weights) != benchWeights {
			b.Fatal("short weights")
		}
	}
	b.StopTimer()
	if m, _ := r.Get("bench", 5); !bytes.Equal(m.Weights, want) {
		b.Fatal("wrong weights")
	}
}

// BenchmarkOpen measures Open (meta check and full page walk) of a
// registry holding 32 models of 1 MiB.
func BenchmarkOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.db")
	r, err := Open(path, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	for i := uint64(1); i <= 32; i++ {
		if _, err := r.Put(sample("bench", i, benchWeights)); err != nil {
			b.Fatal(err)
		}
	}
	r.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := Open(path, Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}
