package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/simenv"
)

// needDevZero skips on systems without /dev/zero, an endless file.
func needDevZero(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
}

// TestFileCaps: every file the loaders read has a size cap; an endless
// file (/dev/zero) is refused after reading the cap, with an error naming
// the file and the cap.
func TestFileCaps(t *testing.T) {
	needDevZero(t)
	dir := writeFiles(t, map[string]string{"ws.txt": testCDF, "topo.txt": testTopo, "flows.txt": testFlows})
	star := "duration: 20ms\ntopology: {kind: star, hosts: 4}\n"
	cases := []struct {
		name string
		load func() error
		want []string
	}{
		{"scenario", func() error { _, err := Load("/dev/zero"); return err }, []string{"/dev/zero", "larger than 4 MiB"}},
		{"cdf in a scenario", func() error {
			_, err := Parse([]byte(star+"workloads: [{kind: cdf, cdf: /dev/zero, load: 0.5}]\n"), dir, "s.yaml")
			return err
		}, []string{"s.yaml: line 3: workloads[0].cdf", "/dev/zero", "larger than 1 MiB"}},
		{"topology in a scenario", func() error {
			_, err := Parse([]byte("topology: {kind: hpcc, file: /dev/zero}\nworkloads: [{kind: cdf, cdf: ws.txt, load: 0.5}]\n"), dir, "s.yaml")
			return err
		}, []string{"topology.file", "/dev/zero", "larger than 32 MiB"}},
		{"trace in a scenario", func() error {
			_, err := Parse([]byte("topology: {kind: hpcc, file: topo.txt}\nworkloads: [{kind: trace, file: /dev/zero}]\n"), dir, "s.yaml")
			return err
		}, []string{"workloads[0].file", "/dev/zero", "larger than 64 MiB"}},
		{"LoadCDF", func() error { _, err := LoadCDF("/dev/zero"); return err }, []string{"/dev/zero", "larger than 1 MiB"}},
		{"LoadHPCCTopology", func() error { _, err := LoadHPCCTopology("/dev/zero"); return err }, []string{"/dev/zero", "larger than 32 MiB"}},
		{"LoadFlowFile", func() error { _, err := LoadFlowFile("/dev/zero"); return err }, []string{"/dev/zero", "larger than 64 MiB"}},
		{"LoadHPCCConfig", func() error { _, err := LoadHPCCConfig("/dev/zero"); return err }, []string{"/dev/zero", "larger than 1 MiB"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.load()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// A regular file one byte over the cap.
	big := filepath.Join(t.TempDir(), "big.yaml")
	src := star + "workloads: [{kind: cdf, cdf: ws.txt, load: 0.5}]\n"
	pad := strings.Repeat("#", 4<<20-len(src)) + "\n"
	if err := os.WriteFile(big, []byte(src+pad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than 4 MiB") {
		t.Errorf("a scenario of 4 MiB + 1 B: %v", err)
	}
}

// TestYAMLAliasBomb: a small scenario whose aliases expand to millions of
// nodes (2,000 workloads, each an alias of one listing 2,000 hosts) is
// refused before anything walks or decodes the expansion.
func TestYAMLAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("duration: 20ms\ntopology: {kind: star, hosts: 4}\nworkloads:\n  - &w {kind: cdf, cdf: ws.txt, load: 0.5, hosts: [")
	for i := 0; i < 2000; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("host0")
	}
	b.WriteString("]}\n")
	for i := 0; i < 2000; i++ {
		b.WriteString("  - *w\n")
	}
	src := b.String()
	start := time.Now()
	done := make(chan error, 1)
	go func() { _, err := Parse([]byte(src), t.TempDir(), "bomb.yaml"); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "bomb.yaml") || !strings.Contains(err.Error(), "nodes") {
			t.Fatalf("alias bomb of %d B: %v", len(src), err)
		}
		t.Logf("%d B refused in %v: %v", len(src), time.Since(start), err)
	case <-time.After(2 * time.Second):
		panic(fmt.Sprintf("alias bomb of %d B not refused within 2 s", len(src)))
	}
}

// TestBoundsAgree: simenv states the bounds of internal/units again (it
// depends on nothing of the project); they must agree.
func TestBoundsAgree(t *testing.T) {
	if simenv.MaxRateBps != units.MaxRateBps || simenv.MinRateBps != units.MinRateBps || simenv.MaxBytes != units.MaxBytes ||
		simenv.MaxDuration != simenv.FromDuration(units.MaxSimDuration) {
		t.Errorf("simenv bounds %g..%g bps, %d B, %v differ from internal/units' %g..%g bps, %d B, %v",
			simenv.MinRateBps, simenv.MaxRateBps, simenv.MaxBytes, simenv.MaxDuration,
			units.MinRateBps, units.MaxRateBps, units.MaxBytes, units.MaxSimDuration)
	}
}

// TestHPCCConfigAbsolutePaths: file keys holding absolute paths are used
// as they are, not appended to the config's folder.
func TestHPCCConfigAbsolutePaths(t *testing.T) {
	other := writeFiles(t, map[string]string{"topo.txt": testTopo, "flows.txt": testFlows})
	cfgDir := writeFiles(t, map[string]string{"config_abs.txt": hpccWith(map[string]string{
		"TOPOLOGY_FILE": "TOPOLOGY_FILE " + filepath.Join(other, "topo.txt"),
		"FLOW_FILE":     "FLOW_FILE " + filepath.Join(other, "flows.txt"),
	})})
	cfg, err := LoadHPCCConfig(filepath.Join(cfgDir, "config_abs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Topology.Nodes) != 6 || len(cfg.Workloads) != 1 || len(cfg.Workloads[0].Flows) != 2 {
		t.Errorf("loaded %d nodes, workloads %+v", len(cfg.Topology.Nodes), cfg.Workloads)
	}
	// Relative paths stay relative to the config's folder.
	if _, err := LoadHPCCConfig(filepath.Join(cfgDir, "missing.txt")); err == nil {
		t.Errorf("a missing config loaded")
	}
}

// TestHPCCConfigBinary: a binary file handed over as a config gets an
// error that shows its bytes escaped (no NUL or control byte reaches the
// terminal) and echoes at most a short prefix of them.
func TestHPCCConfigBinary(t *testing.T) {
	var junk []byte
	for i := 0; i < 5000; i++ {
		junk = append(junk, byte(i*7), 0, 0x1b, '[', '2', 'J', 0x7f, 0xff)
	}
	for _, data := range [][]byte{junk, append([]byte("CC_MODE "), junk...), append([]byte("RP_TIMER \x1b]0;pwned\x07"), '\n')} {
		_, err := ParseHPCCConfig(data, t.TempDir(), "bin.txt")
		if err == nil {
			t.Fatal("a binary config loaded")
		}
		msg := err.Error()
		for _, r := range msg {
			if r < 0x20 || r == 0x7f || r == 0xfffd {
				t.Fatalf("error echoes a control byte %q: %q", r, msg)
			}
		}
		allowed := len(strings.Join(allHPCCKeys(), ", "))
		if len(msg) > allowed+400 {
			t.Errorf("error of %d bytes echoes too much of the file: %.300q", len(msg), msg)
		}
		t.Logf("%.200s", msg)
	}
}

// TestHPCCConfigBufferTooSmall: a BUFFER_SIZE below what the fat tree's
// switches carve out (a ToR's 16 host ports and 4 uplinks need about 1.3 MB
// of reserves and headroom) is an error at its line.
func TestHPCCConfigBufferTooSmall(t *testing.T) {
	needRef(t)
	ref, err := filepath.Abs(refDir)
	if err != nil {
		t.Fatal(err)
	}
	src := hpccWith(map[string]string{
		"TOPOLOGY_FILE": "TOPOLOGY_FILE " + filepath.Join(ref, "fat.txt"),
		"FLOW_FILE":     "FLOW_FILE " + filepath.Join(ref, "ws30_5ms.txt"),
		"KMAX_MAP":      "KMAX_MAP 2 100000000000 1600 400000000000 6400",
		"KMIN_MAP":      "KMIN_MAP 2 100000000000 400 400000000000 1600",
		"PMAX_MAP":      "PMAX_MAP 2 100000000000 0.2 400000000000 0.2",
	}, "BUFFER_SIZE 1")
	_, err = ParseHPCCConfig([]byte(src), t.TempDir(), "cfg.txt")
	if err == nil || !strings.Contains(err.Error(), "line 13: BUFFER_SIZE: buffer 1048576 B is below what the MMU needs: switch sw") {
		t.Errorf("BUFFER_SIZE 1 on the fat tree: %v", err)
	}
}
