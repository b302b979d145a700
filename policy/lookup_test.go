package policy

import (
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	p, err := Lookup("static:cisco")
	if err != nil || p.Name() != "static:cisco" {
		t.Fatalf("static:cisco: %v %v", p, err)
	}
	a, err := Lookup(" adaptive ")
	if err != nil || a.Name() != "adaptive" {
		t.Fatalf("adaptive: %v %v", a, err)
	}
	b, _ := Lookup("adaptive")
	if a == b {
		t.Fatal("each Lookup must return a fresh adaptive policy")
	}
	for spec, want := range map[string]string{
		"static:":        "static:NAME",
		"static:foo":     `unknown preset "foo"`,
		"adaptive:x":     "no argument",
		"modelx:m1":      "unknown policy",
		"":               "unknown policy",
		"nonsense:thing": "static:NAME (cisco",
	} {
		if _, err := Lookup(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Lookup(%q) err = %v, want it to contain %q", spec, err, want)
		}
	}
}
