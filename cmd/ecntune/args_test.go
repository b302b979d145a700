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

// An explicit 0 is refused, not read as "the default" (train --episodes 0
// ran 400 episodes, eval --seeds 0 three seeds, demo --interval 0s one
// second), and so is an interval too short to measure anything (eval
// --interval 1ns took 27 s for 2 ms); nothing runs.
func TestExplicitZeroRefused(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sc, []byte("name: s\nduration: 1ms\ntopology: {kind: star, hosts: 2, host_rate: 100Gbps}\nworkloads:\n  - {kind: incast, fanin: 1, size: 10KB, every: 500us}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "m.db")
	for _, c := range []struct {
		cmd  *cobra.Command
		args []string
		want string
	}{
		{newTrainCmd(), []string{"--scenario", sc, "--episodes", "0", "--db", db}, "--episodes 0 / --budget 0s: give a positive number"},
		{newTrainCmd(), []string{"--scenario", sc, "--budget", "0s", "--db", db}, "give a positive number"},
		{newEvalCmd(), []string{"--scenario", sc, "--policy", "static:hpcc", "--seeds", "0"}, "--seeds 0: want at least 1"},
		{newEvalCmd(), []string{"--scenario", sc, "--policy", "static:hpcc", "--interval", "1ns"}, "--interval 1ns: at least 10µs"},
		{newDemoCmd(), []string{"--interval", "0s"}, "--interval 0s: the agent's control interval is at least 100ms"},
	} {
		if _, err := runCmd(t, c.cmd, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want %q", c.cmd.Name(), c.args, err, c.want)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("a refused train made its registry")
	}
	// a --report that is a file is refused before the simulation, not
	// after it (sim wrote the report last)
	if _, err := runCmd(t, newSimCmd(), "--scenario", sc, "--report", sc); err == nil || !strings.Contains(err.Error(), "--report "+sc+" is a file: want a folder for the report") {
		t.Errorf("sim --report FILE: %v", err)
	}
}
