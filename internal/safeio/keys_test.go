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
