package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/models"
)

// TestTrainSelectOn: train --select-on judges the network every
// --select-every rounds against the validation scenario's frontier of
// fixed settings, says each judgement, stores the best network judged and
// records which (and the flags) in the model; the flags are refused
// where they do not belong.
func TestTrainSelectOn(t *testing.T) {
	dir := t.TempDir()
	sc, _ := writeTwin(t, dir)
	b, err := os.ReadFile(sc)
	if err != nil {
		t.Fatal(err)
	}
	val := filepath.Join(dir, "val.yaml")
	if err := os.WriteFile(val, []byte(strings.Replace(string(b), "name: lab-twin", "name: lab-val", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "reg.db")
	_, errOut, err := runTrainCmd(t, "--scenario", sc, "--algo", "ppo", "--episodes", "6", "--workers", "2", "--name", "sel",
		"--db", db, "--out", dir, "--select-on", val, "--select-seeds", "2", "--select-every", "1")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "select: running the fixed settings on 1 validation scenario(s), 2 seeds each") ||
		strings.Count(errOut, "select: round ") != 3 || !strings.Contains(errOut, "frontier ratio ") {
		t.Fatalf("stderr:\n%s", errOut)
	}
	m, err := models.Load(db, "sel")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.Hyper["selected"], "the network after round ") || !strings.Contains(m.Hyper["selected"], "the best of 3 judged") ||
		!strings.HasSuffix(m.Hyper["command"], " --select-on "+filepath.ToSlash(val)+" --select-seeds 2 --select-every 1") {
		t.Fatalf("provenance: selected %q, command %q", m.Hyper["selected"], m.Hyper["command"])
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--scenario", sc, "--select-seeds", "3"}, "--select-seeds goes with --select-on"},
		{[]string{"--scenario", sc, "--select-on", sc}, "is also a training --scenario"},
		{[]string{"--scenario", sc, "--select-on", val, "--select-seeds", "1"}, "--select-seeds 1: allowed 2..100"},
		{[]string{"--twin", sc, "--select-on", val}, "--select-on with --twin"},
		{[]string{"--scenario", sc, "--select-on", filepath.Join(dir, "none.yaml")}, "none.yaml"},
	} {
		args := append([]string{"--episodes", "2", "--db", db, "--name", "refused"}, c.args...)
		if _, _, err := runTrainCmd(t, args...); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v: %v, want %q", c.args, err, c.says)
		}
	}
}

// --select-on judges the network as an ECN policy without a preference
// input: a preference-conditioned model (58 inputs) or a switch-level
// headroom model (19) was accepted, trained to the first judgement and
// failed there ("network reads 58 features, observation spec obs-v5 has
// 57"), storing nothing, at every resume. Both are refused before any
// work, the registry not made.
func TestTrainSelectOnRefusesModelsItCannotJudge(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.yaml")
	val := filepath.Join(dir, "val.yaml")
	for _, f := range []string{sc, val} {
		if err := os.WriteFile(f, []byte(tinyTrainScenario), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(dir, "reg.db")
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--preference-scale", "2"}, "--select-on with --preference-scale"},
		{[]string{"--headroom-for", "builtin"}, "--select-on with --headroom-for"},
	} {
		args := append([]string{"--scenario", sc, "--algo", "ppo", "--episodes", "4", "--workers", "1", "--db", db, "--name", "s",
			"--select-on", val, "--select-seeds", "2", "--select-every", "2"}, c.args...)
		_, errOut, err := runTrainCmd(t, args...)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v: %v, want %q", c.args, err, c.says)
		}
		if strings.Contains(errOut, "select: running") {
			t.Errorf("%v: the validation frontier was run before the refusal:\n%s", c.args, errOut)
		}
	}
	if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused run made the registry: %v", err)
	}
}
