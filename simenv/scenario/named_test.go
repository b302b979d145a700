package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadNamed(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "unnamed.yaml")
	doc := "seed: 1\nduration: 1ms\ntopology: {kind: star, hosts: 4, host_rate: 100Gbps, link_delay: 1us, buffer: 32MB}\n" +
		"workloads:\n  - {kind: incast, fanin: 3, size: 60KB, every: 150us}\n"
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := LoadNamed(p)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "unnamed" || sc.Path != filepath.ToSlash(p) || len(sc.SHA256) != 64 || sc.Config.Seed != 1 {
		t.Fatalf("scenario %+v", sc)
	}
	missing := filepath.Join(dir, "none.yaml")
	if _, err := LoadNamed(missing); err == nil || !strings.HasPrefix(err.Error(), missing+": cannot read scenario") {
		t.Fatalf("missing file: %v", err)
	}
}

// LoadNamed reads through the same size cap as Load: a file that never
// ends is an error naming the cap, not a read until out of memory.
func TestLoadNamedCapped(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero on this system")
	}
	_, errNamed := LoadNamed("/dev/zero")
	_, errLoad := Load("/dev/zero")
	if errNamed == nil || errLoad == nil || errNamed.Error() != errLoad.Error() {
		t.Fatalf("LoadNamed(/dev/zero) = %v, want Load's error %v", errNamed, errLoad)
	}
}
