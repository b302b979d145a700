package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A configuration file above MaxConfigBytes is refused before it is read
// in full.
func TestLoadConfigSizeLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	doc := "targets:\n  sw0:\n    address: h:1\n"
	pad := strings.Repeat("# padding padding padding padding padding padding padding padding\n", 4<<20/64)
	if err := os.WriteFile(p, []byte(doc+pad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), p+": larger than the limit of 4 MiB") {
		t.Fatalf("got %v", err)
	}
	os.WriteFile(p, []byte(doc+pad[:1<<20]), 0o644)
	if _, err := Load(p); err != nil {
		t.Fatalf("a 1 MiB file: %v", err)
	}
}

// Aliases cannot make a small file expand without bound: the document is
// counted with its aliases expanded before it is decoded.
func TestParseConfigAliasLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("targets:\n  t0: &s\n    address: h:1\n    ports: [")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "e%d, ", i)
	}
	b.WriteString("e100]\n")
	for i := 1; i < 5000; i++ {
		fmt.Fprintf(&b, "  t%d: *s\n", i)
	}
	_, err := Parse([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "more than 500000 YAML nodes once aliases are expanded") {
		t.Fatalf("got %v", err)
	}
	// An anchor that contains itself.
	_, err = Parse([]byte("targets:\n  sw0: &a\n    address: h:1\n    ports: [*a]\n"))
	if err == nil || !strings.Contains(err.Error(), "contains itself") {
		t.Fatalf("self-referencing anchor: got %v", err)
	}
}

// A typo inside an anchored target is reported once, with its line, not
// once per alias of the anchor.
func TestParseConfigTypoOnceThroughAliases(t *testing.T) {
	doc := "targets:\n  leaf0: &sim\n    address: h:1\n    colour: red\n  leaf1: *sim\n  leaf2: *sim\n  leaf3: *sim\n"
	_, err := Parse([]byte(doc))
	if err == nil || strings.Count(err.Error(), "colour") != 1 || !strings.Contains(err.Error(), "line 4: targets.leaf0.colour: unknown key; allowed: address, ") {
		t.Fatalf("got %v", err)
	}
}

// A value the agent cannot use inside an anchor (a duration without its
// unit) is reported once, at its first path, as a typo is, however many
// aliases reach it; the same mistake in two places of the file is two
// errors (it was listed once per alias: 6 times for 6 targets).
func TestParseConfigBadValueOnceThroughAliases(t *testing.T) {
	doc := "targets:\n  leaf0: &sim\n    address: h:1\n    timeout: 5\n  leaf1: *sim\n  leaf2: *sim\n  leaf3: *sim\n" +
		"  spine0:\n    address: h:2\n    timeout: 5\n"
	_, err := Parse([]byte(doc))
	if err == nil || strings.Count(err.Error(), `cannot parse duration "5"`) != 2 ||
		!strings.Contains(err.Error(), `line 4: targets.leaf0.timeout: cannot parse duration "5"`) ||
		!strings.Contains(err.Error(), `line 10: targets.spine0.timeout: cannot parse duration "5"`) {
		t.Fatalf("got %v", err)
	}
}

// TestMetricsQueuesKey: metrics-queues takes a number or all, and says
// what it wants otherwise.
func TestMetricsQueuesKey(t *testing.T) {
	for v, want := range map[string]int{"": DefaultMetricsQueues, "5": 5, "all": AllQueues, " 1000 ": 1000} {
		if got, err := parseMetricsQueues(v); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"0", "-1", "1001", "top20", "20KB"} {
		if _, err := parseMetricsQueues(v); err == nil || !strings.Contains(err.Error(), "metrics-queues") {
			t.Errorf("%q: %v, want an error naming metrics-queues", v, err)
		}
	}
}
