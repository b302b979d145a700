package models

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func exportOf(t *testing.T, r *Registry, ref string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := r.Export(ref, &buf); err != nil {
		t.Fatalf("Export %s: %v", ref, err)
	}
	return buf.Bytes()
}

func TestExportImportRoundTrip(t *testing.T) {
	src, _ := openNew(t)
	mustPut(t, src, sample("ddqn", 1, 100))
	m := sample("ddqn", 2, 7000)
	m.Parent = "ddqn@1"
	mustPut(t, src, m)
	if _, err := src.Promote("ddqn@2", t0); err != nil {
		t.Fatal(err)
	}
	file := exportOf(t, src, "ddqn@promoted")
	// Layout: 8 magic + 4 version + 4 length + metadata + 8 length + weights + 32 sum.
	if string(file[:8]) != "\x89ECNTUNE" || binary.BigEndian.Uint32(file[8:]) != 1 {
		t.Fatalf("header % x", file[:12])
	}
	ml := int(binary.BigEndian.Uint32(file[12:]))
	if len(file) != 16+ml+8+7000+32 {
		t.Fatalf("export is %d bytes, want %d", len(file), 16+ml+8+7000+32)
	}

	dst, _ := openNew(t)
	mustPut(t, dst, sample("other", 5, 10)) // takes id 1 here
	res, err := dst.Import(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	got := res.Model
	if res.Existing || res.Renumbered || res.FileVersion != 2 || got.Ref() != "ddqn@2" || got.ID != 2 || got.Status != StatusCandidate {
		t.Fatalf("import result %+v", res)
	}
	full, err := dst.Get("ddqn", 2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(full.Weights, weights(2, 7000)) || full.Parent != "ddqn@1" || !full.Created.Equal(m.Created) ||
		full.Hyper["lr"] != "0.0005" || string(full.Eval) != string(m.Eval) || full.Scenarios[0] != m.Scenarios[0] {
		t.Fatalf("imported model differs: %+v", full)
	}
	// The next automatic version follows the imported one.
	if n := mustPut(t, dst, sample("ddqn", 3, 10)); n.Version != 3 {
		t.Fatalf("next version after importing @2 is %d", n.Version)
	}

	// The same file again: recognised, nothing written.
	res, err = dst.Import(bytes.NewReader(file))
	if err != nil || !res.Existing || res.Model.ID != 2 {
		t.Fatalf("re-import: %+v %v", res, err)
	}
	// Another model under the same name@version: stored as the next free version.
	file1 := exportOf(t, src, "ddqn@1")
	other := sample("ddqn", 8, 50)
	other.Version = 1
	mustPut(t, dst, other)
	res, err = dst.Import(bytes.NewReader(file1))
	if err != nil || !res.Renumbered || res.FileVersion != 1 || res.Model.Version != 4 {
		t.Fatalf("import on a clash: %+v %v", res, err)
	}
	if g, _ := dst.Get("ddqn", 4); !bytes.Equal(g.Weights, weights(1, 100)) {
		t.Fatal("renumbered import holds other weights")
	}
	// The renumbered file again: recognised as @4, not @5, @6... (each
	// re-import made one more copy of the same weights)
	for range 2 {
		res, err = dst.Import(bytes.NewReader(file1))
		if err != nil || !res.Existing || res.Model.Version != 4 {
			t.Fatalf("re-import of a renumbered file: %+v %v", res, err)
		}
	}

	// Files: ExportFile writes atomically and ImportFile names the file.
	dir := t.TempDir()
	p := filepath.Join(dir, "ddqn.ecnm")
	if _, err := src.ExportFile("ddqn@2", p); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, file) {
		t.Fatal("ExportFile and Export differ")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("export left %d files behind", len(ents))
	}
	if _, err := src.ExportFile("ddqn@9", p); !errors.Is(err, ErrNotFound) {
		t.Fatalf("export of a missing version: %v", err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, file) {
		t.Fatal("a failed export replaced the existing file")
	}
}

func TestImportRejectsDamagedExports(t *testing.T) {
	src, _ := openNew(t)
	mustPut(t, src, sample("ddqn", 1, 3000))
	file := exportOf(t, src, "ddqn@1")

	dst, path := openNew(t)
	mustPut(t, dst, sample("keep", 2, 500))
	intact := func() {
		t.Helper()
		ms, err := dst.List("")
		if err != nil || len(ms) != 1 || ms[0].Ref() != "keep@1" {
			t.Fatalf("registry changed by a failed import: %d models, %v", len(ms), err)
		}
		if _, err := dst.Get("keep", 1); err != nil {
			t.Fatal(err)
		}
	}
	try := func(what string, data []byte, msg string) {
		t.Helper()
		_, err := dst.Import(bytes.NewReader(data))
		if !errors.Is(err, ErrBadExport) {
			t.Fatalf("%s: got %v, want ErrBadExport", what, err)
		}
		if !strings.Contains(err.Error(), msg) {
			t.Fatalf("%s: error %q does not say %q", what, err, msg)
		}
		intact()
	}
	ml := int(binary.BigEndian.Uint32(file[12:]))
	cuts := map[int]string{
		0: "empty input", 5: "truncated in the header", 16: "truncated in the metadata", 16 + ml - 1: "truncated in the metadata",
		16 + ml + 3: "truncated before the weights length", 16 + ml + 8 + 10: "truncated in the weights",
		len(file) - 32: "truncated in the checksum", len(file) - 1: "truncated in the checksum",
	}
	for n, msg := range cuts {
		try("cut", file[:n], msg)
	}
	for _, pos := range []int{9, 20, 16 + ml + 8, len(file) - 40, len(file) - 1} {
		b := bytes.Clone(file)
		b[pos] ^= 0x01
		msg := "sha256 checksum mismatch"
		if pos == 9 {
			msg = "export format version 65537"
		}
		try("flipped byte", b, msg)
	}
	try("trailing byte", append(bytes.Clone(file), 0), "unexpected bytes after the checksum")
	try("garbage", weights(3, 5000), "not an ecntune model export")
	try("short garbage", []byte("hello"), "not an ecntune model export")
	huge := bytes.Clone(file[:16+ml])
	huge = binary.BigEndian.AppendUint64(huge, 1<<40)
	try("absurd weights length", huge, "weights length 1099511627776")

	// A file with a valid checksum whose weights do not match their
	// recorded sha256 (a broken exporter): refused too.
	m, err := src.Resolve("ddqn@1")
	if err != nil {
		t.Fatal(err)
	}
	m.Weights[0] ^= 0xff
	var buf bytes.Buffer
	if err := WriteExport(&buf, m); err == nil {
		t.Fatal("WriteExport accepted weights that do not match their sha256")
	}
	m.Weights[0] ^= 0xff
	m.Name = "bad name"
	buf.Reset()
	if err := WriteExport(&buf, m); err != nil {
		t.Fatal(err)
	}
	try("invalid metadata", buf.Bytes(), "model name")

	// ImportModel checks what it is given as closely as ReadExport does.
	m.Name = "ddqn"
	m.Weights = bytes.Clone(m.Weights)
	m.Weights[7] ^= 1
	_, err = dst.ImportModel(m)
	wantErr(t, err, ErrInvalid, "ddqn@1", "sha256")
	m.Weights[7] ^= 1
	m.Version = 0
	_, err = dst.ImportModel(m)
	wantErr(t, err, ErrInvalid, "version 0")
	intact()

	// The registry file itself survived all of it.
	dst.Close()
	if err := useAll(path, true); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Registry{}).ImportFile(filepath.Join(t.TempDir(), "none.ecnm")); err == nil || !strings.Contains(err.Error(), "none.ecnm") {
		t.Fatalf("import of a missing file: %v", err)
	}
}
