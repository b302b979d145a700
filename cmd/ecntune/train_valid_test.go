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

// A model train made acted at 20µs to 2ms only (a decade either side of
// its 200µs), where the agent decides every 100ms or more: it held every
// queue, and nothing said so before it was deployed. train
// --validated-interval records the intervals it was validated at
// (validated_interval, as the agent reads it), a run from a model
// inherits the model's unless given, and train's output and models show
// say at which intervals the model acts and how to make it deployable.
func TestTrainValidatedInterval(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(sc, []byte(tinyTrainScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "reg.db")
	run := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, err := runTrainCmd(t, append([]string{"--scenario", sc, "--algo", "ppo", "--episodes", "2", "--workers", "1", "--db", db, "--out", dir}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut)
		}
		return out, errOut
	}
	valid := func(name string) string {
		t.Helper()
		m, err := models.Load(db, name)
		if err != nil {
			t.Fatal(err)
		}
		return m.Hyper["validated_interval"]
	}

	out, _ := run("--name", "plain")
	if v := valid("plain"); v != "" {
		t.Fatalf("plain: validated_interval %q", v)
	}
	if !strings.Contains(out, "acts at decision intervals 20µs to 2ms") || !strings.Contains(out, "the agent (interval 100ms or more) refuses it") ||
		!strings.Contains(out, "--validated-interval MIN-MAX") {
		t.Fatalf("plain's output says nothing of where it acts:\n%s", out)
	}

	out, _ = run("--name", "slow", "--validated-interval", "100ms-2s")
	m, err := models.Load(db, "slow")
	if err != nil {
		t.Fatal(err)
	}
	if m.Hyper["validated_interval"] != "100ms-2s" || !strings.Contains(m.Hyper["command"], " --validated-interval 100ms-2s") {
		t.Fatalf("slow: validated_interval %q, command %q", m.Hyper["validated_interval"], m.Hyper["command"])
	}
	if !strings.Contains(out, "acts at decision intervals 100ms to 2s (validated)") || strings.Contains(out, "--validated-interval MIN-MAX") {
		t.Fatalf("slow's output:\n%s", out)
	}
	_, errOut, err := runModels(t, nil, "show", "slow", "--db", db)
	if err != nil || !strings.Contains(errOut, "acts at decision intervals 100ms to 2s (validated)") {
		t.Fatalf("models show slow: %v\n%s", err, errOut)
	}
	_, errOut, err = runModels(t, nil, "show", "plain", "--db", db)
	if err != nil || !strings.Contains(errOut, "acts at decision intervals 20µs to 2ms") || !strings.Contains(errOut, "--validated-interval") {
		t.Fatalf("models show plain: %v\n%s", err, errOut)
	}

	// continued from a model: its intervals, unless given
	run("--name", "cont", "--from", "model:slow")
	if v := valid("cont"); v != "100ms-2s" {
		t.Fatalf("cont from slow: validated_interval %q, want slow's", v)
	}
	run("--name", "cont2", "--from", "model:slow", "--validated-interval", "200ms-1s")
	if v := valid("cont2"); v != "200ms-1s" {
		t.Fatalf("cont2: validated_interval %q, want the one given", v)
	}

	db2 := filepath.Join(dir, "none.db")
	for _, bad := range []string{"2s-1s", "1s", "0s-1s", "fast-slow"} {
		_, _, err := runTrainCmd(t, "--scenario", sc, "--episodes", "2", "--db", db2, "--validated-interval", bad)
		if err == nil || !strings.Contains(err.Error(), "--validated-interval "+bad) || !strings.Contains(err.Error(), "want MIN-MAX") {
			t.Errorf("--validated-interval %s: %v", bad, err)
		}
	}
	if _, serr := os.Stat(db2); !errors.Is(serr, fs.ErrNotExist) {
		t.Fatalf("a refused --validated-interval made the registry: %v", serr)
	}
}

// An explicit 0 is not "the default": --gamma 0 trains at 0 and the
// recorded command keeps it (it trained at 0.7, its command without
// --gamma); --lr 0, --select-seeds 0 and --select-every 0 are refused as
// -1 and 1 are (they ran as the defaults), before the registry is made.
func TestTrainExplicitZeros(t *testing.T) {
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
		{[]string{"--scenario", sc, "--lr", "0"}, "--lr 0: allowed (0, 1]"},
		{[]string{"--scenario", sc, "--select-on", val, "--select-seeds", "0"}, "--select-seeds 0: allowed 2..100"},
		{[]string{"--scenario", sc, "--select-on", val, "--select-every", "0"}, "--select-every 0: want at least 1"},
		{[]string{"--twin", sc, "--lr", "0"}, "--lr 0: allowed (0, 1]"},
	} {
		_, _, err := runTrainCmd(t, append([]string{"--episodes", "2", "--workers", "1", "--db", db, "--name", "z"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v: %v, want %q", c.args, err, c.says)
		}
	}
	if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused run made the registry: %v", err)
	}
	for _, algo := range []string{"ddqn", "ppo"} {
		if _, errOut, err := runTrainCmd(t, "--scenario", sc, "--algo", algo, "--episodes", "2", "--workers", "1", "--db", db, "--out", dir,
			"--name", "g0-"+algo, "--gamma", "0"); err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		m, err := models.Load(db, "g0-"+algo)
		if err != nil {
			t.Fatal(err)
		}
		if m.Hyper["gamma"] != "0" || !strings.Contains(m.Hyper["command"], " --gamma 0") {
			t.Fatalf("%s --gamma 0: trained at %q, command %q", algo, m.Hyper["gamma"], m.Hyper["command"])
		}
	}
}
