package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// A models command given no argument says which one it wants, not
// "accepts 1 arg(s), received 0".
func TestModelsArgumentNamed(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"history"}, "models history: give the model NAME whose promotions to print (e.g. mine; models list shows the names)"},
		{[]string{"show"}, "models show: give the model REF"},
		{[]string{"history", "a", "b"}, "models history: give one model NAME, not 2 arguments"},
	} {
		_, _, err := runModels(t, nil, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "arg(s)") {
			t.Errorf("models %v: %v, want %q", c.args, err, c.want)
		}
	}
}

// An output flag naming one of the run's inputs (by another path, or a
// link to it) is refused before anything runs, and the input is intact.
func TestOutputsAreNotInputs(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "s.yaml")
	body := []byte("name: s\nduration: 1ms\ntopology: {kind: star, hosts: 2, host_rate: 100Gbps}\nworkloads:\n  - {kind: incast, fanin: 1, size: 10KB, every: 500us}\n")
	if err := os.WriteFile(sc, body, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(sc, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cmd  *cobra.Command
		args []string
		flag string
	}{
		{newSimCmd(), []string{"--scenario", sc, "--fct-out", link}, "--fct-out"},
		{newEvalCmd(), []string{"--scenario", sc, "--policy", "static:hpcc", "--json-out", filepath.Join(dir, ".", "s.yaml")}, "--json-out"},
		{newEvalCmd(), []string{"--scenario", link, "--policy", "static:hpcc", "--summary-out", sc}, "--summary-out"},
		{newTwinCmd(), []string{"--db", sc, "--out", link}, "--out"},
	} {
		_, err := runCmd(t, c.cmd, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.flag+" ") || !strings.Contains(err.Error(), "is an input of this run") {
			t.Errorf("%s %v: %v", c.cmd.Name(), c.args, err)
		}
		if got, _ := os.ReadFile(sc); string(got) != string(body) {
			t.Fatalf("%s %v overwrote its input", c.cmd.Name(), c.args)
		}
	}
}
