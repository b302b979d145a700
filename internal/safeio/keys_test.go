package safeio

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type inner struct {
	MaxStep string `yaml:"max-step"`
	Hold    string `yaml:"min-hold"`
}

type common struct {
	Port string `yaml:"port"`
}

type outer struct {
	SampleInterval string           `yaml:"sample-interval"`
	Guard          inner            `yaml:"guardrails"`
	Targets        map[string]inner `yaml:"targets"`
	List           []inner          `yaml:"list"`
	Free           yaml.Node        `yaml:"free"`
	common         `yaml:",inline"`
}

func TestCheckKeys(t *testing.T) {
	doc := `
sample-intreval: 1s
port: 57400
free: {anything: [goes]}
base: &b
  max-stepp: 10%
  min-hold: 3s
guardrails: *b
targets:
  leaf0: *b
  leaf1: {min-hold: 2s, <<: *b}
list:
  - min-hold: 1s
    colour: red
`
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
		t.Fatal(err)
	}
	err := CheckKeys(&root, outer{})
	if err == nil {
		t.Fatal("no error")
	}
	got := strings.Split(err.Error(), "\n  ")
	want := []string{
		"4 unknown keys:",
		"line 2: sample-intreval: unknown key (did you mean sample-interval?); allowed: sample-interval, guardrails, targets, list, free, port",
		"line 5: base: unknown key; allowed: sample-interval, guardrails, targets, list, free, port",
		// used three times through its anchor, reported once
		"line 6: guardrails.max-stepp: unknown key (did you mean max-step?); allowed: max-step, min-hold",
		"line 14: list[0].colour: unknown key; allowed: max-step, min-hold",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

type limits struct {
	Count  *int     `yaml:"count"`
	Seed   uint64   `yaml:"seed"`
	Load   *float64 `yaml:"load"`
	On     *bool    `yaml:"on"`
	Name   string   `yaml:"name"`
	Hosts  []string `yaml:"hosts"`
	Inner  inner    `yaml:"inner"`
	Small  int8     `yaml:"small"`
	Queues map[int]string
}

func parseDoc(t *testing.T, doc string) *yaml.Node {
	t.Helper()
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
		t.Fatal(err)
	}
	return &root
}

func problems(c *YAMLCheck) string {
	var out []string
	for _, p := range c.Problems {
		out = append(out, p.Error())
	}
	return strings.Join(out, "\n")
}

// Strict scalars take only their exact YAML type; every problem comes in
// the order of the document, unknown keys among them.
func TestCheckYAMLStrict(t *testing.T) {
	doc := `count: 1.5
seed: -1
load: .nan
on: yes
name: [a]
hosts: {a: b}
inner: {max-step: 1, colour: red}
count: 2
<<: {name: x}
queues: {1: a, x: b}
`
	c := CheckYAML(parseDoc(t, doc), limits{}, CheckOptions{Strict: true, NoMerge: true})
	want := `line 1: count: want an integer, got "1.5"
line 2: seed: "-1" is not a non-negative integer
line 3: load: ".nan" is not a finite number
line 4: on: want true or false, got "yes"
line 5: name: want a single value, got a list
line 6: hosts: want a list, got a mapping
line 7: inner.colour: unknown key; allowed: max-step, min-hold
line 8: count: given twice (first on line 1)
line 9: <<: unknown key (did you mean on?); allowed: count, seed, load, on, name, hosts, inner, small, queues
line 10: queues: want an integer as a key, got "x"`
	if got := problems(c); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := CheckYAML(parseDoc(t, "small: 300\n"), limits{}, CheckOptions{Strict: true}); problems(got) != `line 1: small: "300" is not an integer in range` {
		t.Errorf("out of range: %s", problems(got))
	}
}

// Without Strict a scalar passes where yaml.v3 would decode it; a node
// reached through several aliases is reported once per type, at the first
// path that reaches it.
func TestCheckYAMLLoose(t *testing.T) {
	doc := `count: 1.5
on: yes
load: &x many
seed: *x
inner: &i {max-step: [1]}
hosts: [a, *i]
name: *x
`
	c := CheckYAML(parseDoc(t, doc), limits{}, CheckOptions{Integer: "a whole number"})
	want := `4 errors:
  line 3: load: want a number, got "many"
  line 3: seed: want a whole number, got "many"
  line 5: inner.max-step: want a single value, got a list
  line 5: hosts[1]: want a single value, got a mapping`
	if err := c.Err(); err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}

// Unknown keys come before other problems in Err; merged keys are checked
// where they land, and keys beside a merge win over the merged ones.
func TestCheckYAMLMerge(t *testing.T) {
	doc := `template: &b {max-step: 1, min-hold: [x]}
inner:
  <<: *b
  min-hold: 2s
`
	c := CheckYAML(parseDoc(t, doc), limits{}, CheckOptions{})
	if err := c.Err(); err == nil || err.Error() != "line 1: template: unknown key; allowed: count, seed, load, on, name, hosts, inner, small, queues" {
		t.Errorf("got %v", err)
	}
	if f := c.Invalid(); len(f) != 0 {
		t.Errorf("min-hold is overridden, yet %v", f)
	}
	if l, ok := c.Line("inner.max-step"); !ok || l != 1 {
		t.Errorf("inner.max-step at %d, %v", l, ok)
	}
	if l, _ := c.Line("inner.min-hold"); l != 4 {
		t.Errorf("inner.min-hold at %d, want 4 (the key beside the merge)", l)
	}
	if got := strings.Join(c.Keys("inner"), ","); got != "min-hold,max-step" {
		t.Errorf("keys of inner: %s", got)
	}
}

// Every field path has its line, inside yaml.Node fields and through
// aliases too; NearestLine falls back to the nearest parent given.
func TestCheckYAMLLines(t *testing.T) {
	doc := `guardrails: &g
  max-step: 1
list:
  - min-hold: 1s
  - *g
free:
  a: [b]
`
	c := CheckYAML(parseDoc(t, doc), outer{}, CheckOptions{})
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"guardrails.max-step": 2, "list[0].min-hold": 4, "list[1]": 5, "list[1].max-step": 2, "free.a[0]": 7} {
		if l, ok := c.Line(path); !ok || l != want {
			t.Errorf("%s: line %d, %v; want %d", path, l, ok, want)
		}
	}
	if _, ok := c.Line("list[0].max-step"); ok {
		t.Error("list[0].max-step is not given")
	}
	if l := c.NearestLine("list[0].max-step"); l != 4 {
		t.Errorf("nearest line of list[0].max-step: %d, want 4", l)
	}
	if l := c.NearestLine("targets.leaf0"); l != 0 {
		t.Errorf("nearest line of targets.leaf0: %d, want 0", l)
	}
}
