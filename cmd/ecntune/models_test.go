package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
)

func runModels(t *testing.T, stdin []byte, args ...string) (string, string, error) {
	t.Helper()
	c := newModelsCmd()
	var out, errb bytes.Buffer
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(&errb)
	c.SetIn(bytes.NewReader(stdin))
	c.SilenceUsage, c.SilenceErrors = true, true
	err := c.Execute()
	return out.String(), errb.String(), err
}

func seedRegistry(t *testing.T, path string, name string, n int, salt byte) {
	t.Helper()
	r, err := models.Open(path, models.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 1; i <= n; i++ {
		w := bytes.Repeat([]byte{byte(i), 0xA5 ^ salt, byte(len(name))}, 700*i)
		_, err := r.Put(models.Model{
			Name: name, Algorithm: "ddqn", ObsSpec: "obs-v1", ActSpec: "act-v1",
			Hyper:   map[string]string{"lr": "0.001"},
			Seed:    int64(i),
			Created: time.Date(2026, 11, 1, i, 0, 0, 0, time.UTC),
			Weights: w,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestModelsCommandMissingRegistry(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.db")
	for _, args := range [][]string{{"list"}, {"show", "x"}, {"promote", "x"}, {"rollback", "x"}, {"delete", "x"}, {"export", "x"}} {
		_, _, err := runModels(t, nil, append(args, "--db", missing)...)
		if err == nil || err.Error() != "no registry at "+missing+": train a model first or pass --db" {
			t.Fatalf("%v: %v", args, err)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatal("a read command created the registry")
	}
	// $ECNTUNE_DB is the default, then ./ecntune.db.
	t.Setenv("ECNTUNE_DB", filepath.Join(dir, "env.db"))
	if _, _, err := runModels(t, nil, "list"); err == nil || !strings.Contains(err.Error(), "env.db") {
		t.Fatalf("$ECNTUNE_DB not used: %v", err)
	}
	t.Setenv("ECNTUNE_DB", "")
	if got := modelsDBPath(""); got != "ecntune.db" {
		t.Fatalf("default path %q", got)
	}
}

func TestModelsCommandLifecycle(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "reg.db")
	seedRegistry(t, db, "ddqn-default", 3, 0)

	out, _, err := runModels(t, nil, "list", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("list:\n%s", out)
	}
	f := strings.Fields(lines[2])
	// ID MODEL STATUS ALGO OBS ACT WEIGHTS(2 fields) CREATED SHA PARENT
	if f[0] != "2" || f[1] != "ddqn-default@2" || f[2] != "candidate" || f[3] != "ddqn" || f[4] != "obs-v1" ||
		f[6]+" "+f[7] != "4.1 KiB" || f[8] != "2026-11-01T02:00:00Z" || len(f[9]) != 12 || f[10] != "-" {
		t.Fatalf("row %q", lines[2])
	}

	out, note, err := runModels(t, nil, "show", "ddqn-default@2", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	if env.SpecVersion == "obs-v1" && env.ActionSpecVersion == "act-v1" && note != "" {
		t.Fatalf("show of a model matching the running specs printed %q", note)
	}
	var m models.Model
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("show output is not JSON: %v\n%s", err, out)
	}
	if m.ID != 2 || m.Version != 2 || m.WeightsSize != 4200 || m.Hyper["lr"] != "0.001" {
		t.Fatalf("show: %+v", m)
	}

	for _, ref := range []string{"ddqn-default@1", "ddqn-default@3"} {
		if _, _, err := runModels(t, nil, "promote", ref, "--db", db); err != nil {
			t.Fatal(err)
		}
	}
	out, _, _ = runModels(t, nil, "promote", "ddqn-default@2", "--db", db)
	if out != "promoted ddqn-default@2 (id 2); ddqn-default@3 is retired\n" {
		t.Fatalf("promote said %q", out)
	}
	out, _, err = runModels(t, nil, "rollback", "ddqn-default", "--db", db)
	if err != nil || out != "rolled back: ddqn-default@3 (id 3) is promoted again; ddqn-default@2 is retired\n" {
		t.Fatalf("rollback said %q, %v", out, err)
	}
	out, _, _ = runModels(t, nil, "history", "ddqn-default", "--db", db)
	if n := strings.Count(out, "\n"); n != 5 || !strings.Contains(out, "rollback") {
		t.Fatalf("history:\n%s", out)
	}

	// Export to a file and to stdout; import into another registry.
	exp := filepath.Join(dir, "m.ecnm")
	if _, msg, err := runModels(t, nil, "export", "ddqn-default", "--out", exp, "--db", db); err != nil || !strings.Contains(msg, "exported ddqn-default@3") {
		t.Fatalf("export: %q %v", msg, err)
	}
	stdout, _, err := runModels(t, nil, "export", "ddqn-default@3", "--db", db)
	if file, _ := os.ReadFile(exp); err != nil || stdout != string(file) {
		t.Fatalf("export to stdout differs from --out (%v)", err)
	}
	db2 := filepath.Join(dir, "other.db")
	seedRegistry(t, db2, "ddqn-default", 3, 1) // other weights under the same versions
	out, _, err = runModels(t, nil, "import", exp, "--db", db2)
	if err != nil || out != "imported as ddqn-default@4 (id 4): version 3 of ddqn-default is taken here by other weights\n" {
		t.Fatalf("import said %q, %v", out, err)
	}
	db3 := filepath.Join(dir, "new.db")
	out, _, err = runModels(t, []byte(stdout), "import", "-", "--db", db3)
	if err != nil || out != "imported ddqn-default@3 (id 1) as a candidate\n" {
		t.Fatalf("import from stdin said %q, %v", out, err)
	}
	out, _, _ = runModels(t, []byte(stdout), "import", "-", "--db", db3)
	if !strings.Contains(out, "nothing imported") {
		t.Fatalf("re-import said %q", out)
	}
	bad := filepath.Join(dir, "bad.ecnm")
	os.WriteFile(bad, []byte(stdout[:len(stdout)-5]), 0o600)
	_, _, err = runModels(t, nil, "import", bad, "--db", db3)
	if !errors.Is(err, models.ErrBadExport) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("truncated import: %v", err)
	}
	db4 := filepath.Join(dir, "never.db")
	if _, _, err = runModels(t, nil, "import", bad, "--db", db4); !errors.Is(err, models.ErrBadExport) {
		t.Fatalf("truncated import into a new registry: %v", err)
	}
	if _, err := os.Stat(db4); !os.IsNotExist(err) {
		t.Fatal("a failed import created a registry file")
	}

	// Delete: the promoted version needs --force.
	_, _, err = runModels(t, nil, "delete", "ddqn-default@3", "--db", db)
	if !errors.Is(err, models.ErrPromoted) {
		t.Fatalf("delete promoted: %v", err)
	}
	out, _, err = runModels(t, nil, "delete", "ddqn-default@3", "--force", "--db", db)
	if err != nil || out != "deleted ddqn-default@3 (id 3)\n" {
		t.Fatalf("forced delete said %q, %v", out, err)
	}
	_, _, err = runModels(t, nil, "show", "nosuch", "--db", db)
	if !errors.Is(err, models.ErrNotFound) || !strings.Contains(err.Error(), "no model named nosuch in "+db) {
		t.Fatalf("unknown model: %v", err)
	}

	// show prints the metadata of a model with damaged weights, then fails.
	raw, _ := os.ReadFile(db)
	pat := bytes.Repeat([]byte{2, 0xA5, byte(len("ddqn-default"))}, 20)
	for i := bytes.Index(raw, pat); i >= 0; {
		raw[i+10] ^= 1
		j := bytes.Index(raw[i+1:], pat)
		if j < 0 {
			break
		}
		i += 1 + j
	}
	os.WriteFile(db, raw, 0o600)
	out, _, err = runModels(t, nil, "show", "ddqn-default@2", "--db", db)
	if !errors.Is(err, models.ErrCorrupt) || !strings.Contains(out, `"version": 2`) {
		t.Fatalf("show of damaged weights: %v\n%s", err, out)
	}
}

func TestModelsCommandLocked(t *testing.T) {
	db := filepath.Join(t.TempDir(), "reg.db")
	seedRegistry(t, db, "m", 1, 0)
	r, err := models.Open(db, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, _, err = runModels(t, nil, "list", "--db", db, "--lock-timeout", "100ms")
	if !errors.Is(err, models.ErrLocked) || !strings.Contains(err.Error(), "database locked by another process") {
		t.Fatalf("list while locked: %v", err)
	}
}

func TestModelsShowNotesSpecMismatch(t *testing.T) {
	db := filepath.Join(t.TempDir(), "reg.db")
	r, err := models.Open(db, models.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Put(models.Model{Name: "old", Algorithm: "ppo", ObsSpec: "obs-v0", ActSpec: env.ActionSpecVersion,
		Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Weights: []byte{1, 2, 3}})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, note, err := runModels(t, nil, "show", "old", "--db", db)
	want := "note: model old@1 was trained with observation spec obs-v0, this ecntune speaks " + env.SpecVersion + ": retrain or use a matching release\n"
	if err != nil || note != want {
		t.Fatalf("show said %q, %v; want %q", note, err, want)
	}
}
