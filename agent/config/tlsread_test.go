//go:build unix

package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecntune/ecntune/internal/safeio"
)

// parseWithin is Parse, failing the test when it takes longer than 10 s
// (a read that blocks on a FIFO, or that reads /dev/zero for gigabytes).
func parseWithin(t *testing.T, doc string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := Parse([]byte(doc))
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("Parse still reading after 10 s:\n%s", doc)
		return nil
	}
}

// TestTLSFilesNotRegular: tls-ca, tls-cert and tls-key that name a
// device, a FIFO or a directory are refused before anything is read from
// them; a regular file above safeio.MaxPEMBytes is refused at the cap.
func TestTLSFilesNotRegular(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeTLSFiles(t, dir)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO:", err)
	}
	big := filepath.Join(dir, "big.pem")
	if err := os.WriteFile(big, make([]byte, safeio.MaxPEMBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	target := "targets:\n  sw0:\n    address: h:1\n"
	for _, bad := range []struct{ path, want string }{
		{"/dev/zero", "not a regular file (a device)"},
		{fifo, "not a regular file (a named pipe)"},
		{dir, "not a regular file (a directory)"},
		{big, "larger than 1 MiB, the limit for this file"},
	} {
		for _, c := range []struct{ doc, key string }{
			{target + "    tls-ca: " + bad.path + "\n", "targets.sw0.tls-ca: "},
			{target + "    tls-cert: " + bad.path + "\n    tls-key: " + key + "\n", "targets.sw0.tls-cert: "},
			{target + "    tls-cert: " + cert + "\n    tls-key: " + bad.path + "\n", "targets.sw0.tls-key: "},
		} {
			err := parseWithin(t, c.doc)
			if err == nil || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("%s: got %v, want %q and %q", bad.path, err, c.key, bad.want)
			}
		}
	}
}
