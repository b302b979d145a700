package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
)

// TestRootCommandTree: newRootCmd builds every subcommand, and each call a
// tree of its own (flags set on one do not leak into the next).
func TestRootCommandTree(t *testing.T) {
	var paths []string
	root := newRootCmd()
	for _, c := range root.Commands() {
		paths = append(paths, c.Name())
		for _, s := range c.Commands() {
			paths = append(paths, c.Name()+" "+s.Name())
		}
	}
	want := []string{"agent", "agent approve", "agent history", "agent pause", "agent pending", "agent recommendations", "agent report", "agent resume", "agent rollback", "bench", "bench agent", "bench policy", "bench sim", "demo", "eval", "fleet", "fleet drain", "fleet rebalance", "fleet resign", "fleet status",
		"models", "models compact", "models delete", "models export", "models history", "models import", "models list", "models promote",
		"models rollback", "models show", "sim", "simswitch", "train", "twin"}
	if !slices.Equal(paths, want) {
		t.Fatalf("commands:\n got %s\nwant %s", strings.Join(paths, ", "), strings.Join(want, ", "))
	}
	if _, err := runCmd(t, root, "models", "list", "--db", "x.db", "--lock-timeout", "1ms"); err == nil {
		t.Fatal("models list on a missing registry succeeded")
	}
	fresh, _, err := newRootCmd().Find([]string{"models", "list"})
	if err != nil {
		t.Fatal(err)
	}
	if db := fresh.Flag("db"); db == nil || db.Value.String() != "" || db.Changed {
		t.Fatalf("a second tree's --db: %+v", db)
	}
}

func TestVersionFlag(t *testing.T) {
	root := newRootCmd()
	var out strings.Builder
	root.SetOut(&out)
	root.SetArgs([]string{"--version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "ecntune ") || !strings.Contains(out.String(), env.SpecVersion) || !strings.Contains(out.String(), "go1") {
		t.Fatalf("--version printed %q", out.String())
	}
}

// A mistyped subcommand of a command that groups others is an error (exit
// 1) naming it, as "ecntune bogus" is; the group alone prints its help.
func TestUnknownSubcommandFails(t *testing.T) {
	for _, args := range [][]string{{"models", "promte", "mine"}, {"models", "lsit"}, {"bench", "bogus"}, {"fleet", "bogus"}} {
		if _, err := runCmd(t, newRootCmd(), args...); err == nil || !strings.Contains(err.Error(), `unknown command "`+args[1]+`"`) {
			t.Errorf("ecntune %v: %v", args, err)
		}
	}
	for _, g := range []string{"models", "bench", "fleet"} {
		if out, err := runCmd(t, newRootCmd(), g); err != nil || !strings.Contains(out, "Available Commands") {
			t.Errorf("ecntune %s: %v\n%s", g, err, out)
		}
	}
}

// Negative durations that a flag cannot mean are refused, naming the flag.
func TestNegativeDurationFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"models", "list", "--lock-timeout", "-1s", "--db", filepath.Join(t.TempDir(), "m.db")}, "--lock-timeout -1s: must not be negative"},
		{[]string{"bench", "policy", "--min-time", "-1s", "--queues", "1", "--train-episodes", "0"}, "--min-time -1s: must not be negative"},
	} {
		if _, err := runCmd(t, newRootCmd(), c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v", c.args, err)
		}
	}
}
