package safeio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

func TestReadFileCap(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(p, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("at the cap: %q, %v", b, err)
	}
	_, err := ReadFile(p, 9)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Path != p || tl.Max != 9 {
		t.Fatalf("above the cap: %v", err)
	}
	if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "9 B") {
		t.Errorf("message %q does not name the file and the cap", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestReadFileEndless reads /dev/zero, which never ends: the read stops at
// the cap.
func TestReadFileEndless(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := ReadFile("/dev/zero", 1<<20)
	var tl *TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("/dev/zero: %v", err)
	}
	if got := err.Error(); got != "/dev/zero: larger than 1 MiB, the limit for this file" {
		t.Errorf("message %q", got)
	}
}

func TestReadFS(t *testing.T) {
	fsys := fstest.MapFS{"a/b.yaml": {Data: []byte("x: 1\n")}}
	if b, err := ReadFS(fsys, "a/b.yaml", 5); err != nil || string(b) != "x: 1\n" {
		t.Errorf("%q, %v", b, err)
	}
	if _, err := ReadFS(fsys, "a/b.yaml", 4); err == nil {
		t.Errorf("5 B read under a 4 B cap")
	}
}

func TestDecodeYAML(t *testing.T) {
	n, err := DecodeYAML([]byte("a: &x [1, 2, 3]\nb: *x\n"), 0)
	if err != nil {
		t.Fatal(err)
	}
	// mapping + 2 keys + 2 lists of (1 + 3)
	if c, ok := ExpandedNodes(n, 100); !ok || c != 11 {
		t.Errorf("expanded nodes %d, %v; want 11", c, ok)
	}
	if _, err := DecodeYAML([]byte("a: 1\n---\nb: 2\n"), 0); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("two documents: %v", err)
	}
	for _, empty := range []string{"", "# only a comment\n"} {
		if _, err := DecodeYAML([]byte(empty), 0); !errors.Is(err, ErrEmptyYAML) {
			t.Errorf("%q: %v", empty, err)
		}
	}
	if _, err := DecodeYAML([]byte("a: [1, 2\n"), 0); err == nil {
		t.Errorf("syntax error accepted")
	}
	// Exactly at the cap passes; one node more fails.
	if _, err := DecodeYAML([]byte("[1, 2, 3]"), 4); err != nil {
		t.Errorf("at the cap: %v", err)
	}
	if _, err := DecodeYAML([]byte("[1, 2, 3]"), 3); err == nil {
		t.Errorf("above the cap accepted")
	}
}

// TestDecodeYAMLAliasBomb: nine levels of ten aliases each expand to 10^9
// nodes from a document of a few hundred bytes; refused at once.
func TestDecodeYAMLAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 9; i++ {
		b.WriteString("a")
		b.WriteString(string(rune('0' + i)))
		b.WriteString(": &a")
		b.WriteString(string(rune('0' + i)))
		b.WriteString(" [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a")
			b.WriteString(string(rune('0' + i - 1)))
		}
		b.WriteString("]\n")
	}
	start := time.Now()
	_, err := DecodeYAML([]byte(b.String()), 0)
	if err == nil || !strings.Contains(err.Error(), "more than 524288 nodes") {
		t.Fatalf("alias bomb: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refusing the bomb took %v", d)
	}
}

// TestDisplayPath: a printable path is shown as it is, one with control
// bytes Go-quoted, also in the errors of ReadFile and ReadRegularFile.
func TestDisplayPath(t *testing.T) {
	if got := DisplayPath("/etc/ecntune/agent v2.yaml"); got != "/etc/ecntune/agent v2.yaml" {
		t.Errorf("printable path shown as %s", got)
	}
	evil := "/nonexistent/a\nERROR forged line\x1b[31m"
	if got := DisplayPath(evil); got != `"/nonexistent/a\nERROR forged line\x1b[31m"` {
		t.Errorf("control bytes shown as %s", got)
	}
	for name, read := range map[string]func(string, int64) ([]byte, error){"ReadFile": ReadFile, "ReadRegularFile": ReadRegularFile} {
		_, err := read(evil, 10)
		if err == nil || strings.ContainsAny(err.Error(), "\n\x1b") || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %q, want the path escaped and ErrNotExist kept", name, err)
		}
	}
}
