package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSameSwitchSpelledTwice: a switch's address written two ways (an
// IPv4-mapped IPv6 address, the unspecified address a dial reaches the
// local host at, localhost) is one switch: refused, naming both entries
// as written.
func TestSameSwitchSpelledTwice(t *testing.T) {
	for _, p := range [][2]string{
		{"127.0.0.1:9339", "[::ffff:127.0.0.1]:9339"},
		{"10.0.0.7:9339", "[::ffff:a00:7]:9339"},
		{"127.0.0.1:9339", "0.0.0.0:9339"},
		{"127.0.0.1:9339", "localhost:9339"},
		{"[::1]:9339", "localhost:9339"},
		{"[::1]:9339", "[::]:9339"},
		{"LocalHost.:9339", "localhost:9339"},
		{"0.0.0.0:9339", "[::ffff:0.0.0.0]:9339"},
	} {
		doc := "targets:\n  a: {address: '" + p[0] + "', dialect: sonic}\n  b: {address: '" + p[1] + "', dialect: sonic}\n"
		_, err := Parse([]byte(doc))
		want := "targets.a (address " + p[0] + ") and targets.b (address " + p[1] + ") name the same switch"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s and %s: got %v, want %q", p[0], p[1], err, want)
		}
	}
	for _, p := range [][2]string{
		{"127.0.0.1:9339", "127.0.0.2:9339"},
		{"127.0.0.1:9339", "127.0.0.1:9340"},
		{"10.0.0.7:9339", "[::a00:7]:9339"}, // IPv4-compatible, not mapped: another address
	} {
		doc := "targets:\n  a: {address: '" + p[0] + "', dialect: sonic}\n  b: {address: '" + p[1] + "', dialect: sonic}\n"
		if _, err := Parse([]byte(doc)); err != nil {
			t.Errorf("%s and %s are distinct: %v", p[0], p[1], err)
		}
	}
}

// TestIntervalMaximum: interval: 100000h is refused for interval, with
// its limit; it used to be refused for guardrails.rollback.retry-after,
// a key derived from it (50 intervals) that overflowed to a negative
// duration.
func TestIntervalMaximum(t *testing.T) {
	base := "targets:\n  sw0: {address: 127.0.0.1:1, insecure: true}\n"
	for _, v := range []string{"100000h", "25h", "2562047h"} {
		_, err := Parse([]byte("interval: " + v + "\n" + base))
		if err == nil || !strings.HasPrefix(err.Error(), "line 1: interval: ") || !strings.Contains(err.Error(), "above the maximum of 24h") {
			t.Errorf("interval %s: %v", v, err)
		}
	}
	c, err := Parse([]byte("interval: 24h\n" + base))
	if err != nil {
		t.Fatalf("interval 24h: %v", err)
	}
	g := c.Guardrails
	for _, d := range []time.Duration{g.MinHold, g.RollbackRetryAfter, g.StaleFreeze, g.StaleRevert, g.ExternalHold} {
		if d <= 0 {
			t.Fatalf("interval 24h derives a non-positive duration: %+v", g)
		}
	}
}

// TestErrorsShowNoFileContent: a file that is not a configuration (here
// shaped like /etc/shadow) is refused without a byte of it in the error,
// and a path with control bytes is shown escaped.
func TestErrorsShowNoFileContent(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "shadow")
	os.WriteFile(p, []byte("root:$6$SECRETHASH:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n"), 0o600)
	_, err := Load(p)
	if err == nil || strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "daemon") ||
		!strings.Contains(err.Error(), "line 1: not a mapping of keys") {
		t.Errorf("shadow-like file: %v", err)
	}
	evil := filepath.Join(dir, "a\nERROR forged\x1b[31m.yaml")
	os.WriteFile(evil, []byte("targets: {}\n"), 0o644)
	for _, path := range []string{evil, filepath.Join(dir, "none\x07.yaml")} {
		_, err := Load(path)
		if err == nil || strings.ContainsAny(err.Error(), "\n\x1b\x07") {
			t.Errorf("%q: %q, want the path escaped", path, err)
		}
	}
	doc := "targets:\n  sw0: {address: 'h:1', tls-ca: \"/none/\\e[2J.pem\"}\n"
	if _, err := Parse([]byte(doc)); err == nil || strings.ContainsAny(err.Error(), "\x1b") || !strings.Contains(err.Error(), `\x1b[2J`) {
		t.Errorf("tls-ca with an escape byte: %q", err)
	}
}
