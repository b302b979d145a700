package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
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

type fixed struct{ name string }

func (f fixed) Name() string                            { return f.name }
func (f fixed) Decide(obs []env.Observation) []Decision { return make([]Decision, len(obs)) }

func TestRegister(t *testing.T) {
	err := Register("testmodel", func(arg string) (Policy, error) {
		if arg == "bad" {
			return nil, errors.New("no such model")
		}
		return fixed{"model:" + arg}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Lookup("testmodel:m7")
	if err != nil || p.Name() != "model:m7" {
		t.Fatalf("registered: %v %v", p, err)
	}
	if _, err := Lookup("testmodel:bad"); err == nil || !strings.Contains(err.Error(), "no such model") || !strings.Contains(err.Error(), "testmodel:bad") {
		t.Fatalf("resolver error: %v", err)
	}
	for _, prefix := range []string{"testmodel", "static", "", "a:b"} {
		if err := Register(prefix, func(string) (Policy, error) { return nil, nil }); err == nil {
			t.Errorf("Register(%q) succeeded, want an error", prefix)
		}
	}
	if specs := strings.Join(Specs(), " "); !strings.Contains(specs, "testmodel[:ARG]") {
		t.Fatalf("Specs() = %q", specs)
	}
}
