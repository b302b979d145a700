package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/train/rl"
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

// netBlob is the encoded weights of a small network of this build's
// observation and action specs, its weights drawn from a generator seeded
// with hidden and salt.
func netBlob(t *testing.T, hidden int, salt byte) []byte {
	t.Helper()
	n, err := rl.NewNet(rl.Arch{In: env.NumFeatures, Hidden: []int{hidden}, Out: env.DefaultCatalogue().Outputs(), Act: rl.ReLU})
	if err != nil {
		t.Fatal(err)
	}
	n.Kind = rl.OutputQ // as train's DDQN stores it: a network an agent can run
	rng := rand.New(rand.NewPCG(uint64(hidden), uint64(salt)))
	for li := range n.Layers {
		for j := range n.Layers[li].W {
			n.Layers[li].W[j] = rng.Float32() - 0.5
		}
	}
	b, err := n.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// seedRegistry stores versions 1..n of name, version i a network of 4i
// hidden units, and returns their weights.
func seedRegistry(t *testing.T, path string, name string, n int, salt byte) [][]byte {
	t.Helper()
	r, err := models.Open(path, models.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var blobs [][]byte
	for i := 1; i <= n; i++ {
		w := netBlob(t, 4*i, salt)
		_, err := r.Put(models.Model{
			Name: name, Algorithm: "ddqn", ObsSpec: env.SpecVersion, ActSpec: env.ActionSpecVersion,
			Hyper:   map[string]string{"lr": "0.001"},
			Seed:    int64(i),
			Created: time.Date(2026, 11, 1, i, 0, 0, 0, time.UTC),
			Weights: w,
		})
		if err != nil {
			t.Fatal(err)
		}
		blobs = append(blobs, w)
	}
	return blobs
}

func TestModelsCommandMissingRegistry(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.db")
	for _, args := range [][]string{{"list"}, {"show", "x"}, {"promote", "x"}, {"rollback", "x"}, {"delete", "x"}, {"export", "x"}} {
		_, _, err := runModels(t, nil, append(args, "--db", missing)...)
		if err == nil || err.Error() != "no registry at "+missing+": train a model first, or name the registry (--db, or registry: in an agent config)" {
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
	blobs := seedRegistry(t, db, "ddqn-default", 3, 0)

	out, _, err := runModels(t, nil, "list", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "ID") || lines[4] != "" ||
		!strings.HasPrefix(lines[5], db+": ") || !strings.Contains(lines[5], " on disk: 3 model version(s)") {
		t.Fatalf("list:\n%s", out)
	}
	f := strings.Fields(lines[2])
	// ID MODEL STATUS ALGO OBS ACT WEIGHTS CREATED SHA PARENT
	if f[0] != "2" || f[1] != "ddqn-default@2" || f[2] != "candidate" || f[3] != "ddqn" || f[4] != env.SpecVersion ||
		f[6] != units.FormatBytes(int64(len(blobs[1]))) || f[7] != "2026-11-01T02:00:00Z" || len(f[8]) != 12 || f[9] != "-" {
		t.Fatalf("row %q", lines[2])
	}

	out, note, err := runModels(t, nil, "show", "ddqn-default@2", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	if note != "" {
		t.Fatalf("show of a model matching the running specs printed %q", note)
	}
	var m models.Model
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("show output is not JSON: %v\n%s", err, out)
	}
	if m.ID != 2 || m.Version != 2 || m.WeightsSize != int64(len(blobs[1])) || m.Hyper["lr"] != "0.001" {
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
	// bbolt may keep stale copies in free pages: damage every copy.
	pat := blobs[1][len(blobs[1])/2 : len(blobs[1])/2+64]
	if !bytes.Contains(raw, pat) {
		t.Fatal("the weights of ddqn-default@2 are not in the file")
	}
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

// TestModelsPromoteRefusesOtherSpec: a model this build cannot load is not
// promoted (nor rolled back to) unless --force says so.
func TestModelsPromoteRefusesOtherSpec(t *testing.T) {
	db := filepath.Join(t.TempDir(), "reg.db")
	seedRegistry(t, db, "m", 1, 0) // m@1 speaks this build's specs
	r, err := models.Open(db, models.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Put(models.Model{Name: "m", Algorithm: "ppo", ObsSpec: "obs-v0", ActSpec: env.ActionSpecVersion,
		Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Weights: netBlob(t, 4, 9)})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = runModels(t, nil, "promote", "m@2", "--db", db)
	if !errors.Is(err, models.ErrSpecMismatch) || !strings.Contains(err.Error(), "promote m@2") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("promote of an obs-v0 model: %v", err)
	}
	if out, _, _ := runModels(t, nil, "history", "m", "--db", db); !strings.Contains(out, "never been promoted") {
		t.Fatalf("a refused promote left history:\n%s", out)
	}
	// --force promotes it; m@1 on top; rollback to m@2 is refused likewise.
	for _, args := range [][]string{{"promote", "m@2", "--force"}, {"promote", "m@1"}} {
		if _, _, err := runModels(t, nil, append(args, "--db", db)...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	_, _, err = runModels(t, nil, "rollback", "m", "--db", db)
	if !errors.Is(err, models.ErrSpecMismatch) || !strings.Contains(err.Error(), "roll back m to m@2") {
		t.Fatalf("rollback to an obs-v0 model: %v", err)
	}
	out, _, _ := runModels(t, nil, "list", "--db", db)
	if listedStatus(out, "m@1") != "promoted" || listedStatus(out, "m@2") != "retired" {
		t.Fatalf("a refused rollback changed the promoted version:\n%s", out)
	}
	if out, _, err := runModels(t, nil, "rollback", "m", "--force", "--db", db); err != nil || !strings.Contains(out, "m@2") {
		t.Fatalf("forced rollback: %q %v", out, err)
	}
}

// listedStatus is the STATUS column of ref's row in models list output.
func listedStatus(out, ref string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[1] == ref {
			return f[2]
		}
	}
	return ""
}

// TestModelsImportVetsWeights: an export whose weights match their sha256
// but are no network is refused before the registry is touched; a model of
// another spec is imported with a note.
func TestModelsImportVetsWeights(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	r, err := models.Open(src, models.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []models.Model{
		{Name: "junk", Algorithm: "ppo", ObsSpec: env.SpecVersion, ActSpec: env.ActionSpecVersion, Weights: []byte("not a network")},
		{Name: "old", Algorithm: "ppo", ObsSpec: "obs-v0", ActSpec: env.ActionSpecVersion, Weights: netBlob(t, 4, 3)},
	} {
		m.Created = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if _, err := r.Put(m); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	dst := filepath.Join(dir, "dst.db")
	for _, name := range []string{"junk", "old"} {
		if _, _, err := runModels(t, nil, "export", name, "--out", filepath.Join(dir, name+".ecnm"), "--db", src); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = runModels(t, nil, "import", filepath.Join(dir, "junk.ecnm"), "--db", dst)
	if err == nil || !strings.Contains(err.Error(), "junk@1") || !strings.Contains(err.Error(), "not an ecntune network") {
		t.Fatalf("import of junk weights: %v", err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatal("a refused import created the registry")
	}
	out, note, err := runModels(t, nil, "import", filepath.Join(dir, "old.ecnm"), "--db", dst)
	if err != nil || !strings.Contains(out, "imported old@1") || !strings.Contains(note, "obs-v0") || !strings.Contains(note, "will not load or promote it") {
		t.Fatalf("import of an obs-v0 model: %q %q %v", out, note, err)
	}
}

// TestModelsCheckpoints: list shows unfinished runs, delete --checkpoint
// drops one (also a damaged one).
func TestModelsCheckpoints(t *testing.T) {
	db := filepath.Join(t.TempDir(), "reg.db")
	seedRegistry(t, db, "m", 1, 0)
	r, err := models.Open(db, models.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SaveCheckpoint("ppo-run", 120, []byte("state")); err != nil {
		t.Fatal(err)
	}
	r.Close()
	out, _, err := runModels(t, nil, "list", "--db", db)
	if err != nil || !strings.Contains(out, "unfinished training runs") || !strings.Contains(out, "RUN      STATE               EPISODES  SIZE") ||
		!strings.Contains(out, "ppo-run  stopped, resumable  120       5B") || !strings.Contains(out, "1 checkpoint(s), 45B of training state") {
		t.Fatalf("list:\n%s%v", out, err)
	}
	lock, err := acquireRunLock(db, "ppo-run")
	if err != nil {
		t.Fatal(err)
	}
	out, _, err = runModels(t, nil, "list", "--db", db)
	if err != nil || !strings.Contains(out, "ppo-run  running (pid ") {
		t.Fatalf("list while a trainer holds the run:\n%s%v", out, err)
	}
	// the checkpoint of a run training now is not deleted under it (its
	// next checkpoint failed, the run ended with nothing saved)
	_, _, err = runModels(t, nil, "delete", "--checkpoint", "ppo-run", "--db", db)
	if lock.release(); err == nil || !strings.Contains(err.Error(), "run ppo-run is training now") {
		t.Fatalf("delete of a running run's checkpoint: %v", err)
	}
	if out, _, _ := runModels(t, nil, "list", "m", "--db", db); strings.Contains(out, "ppo-run") {
		t.Fatalf("list m shows another run's checkpoint:\n%s", out)
	}
	_, _, err = runModels(t, nil, "delete", "--checkpoint", "nosuch", "--db", db)
	if err == nil || !strings.Contains(err.Error(), "no checkpoint of a training run nosuch") {
		t.Fatalf("delete of a missing checkpoint: %v", err)
	}
	if _, _, err := runModels(t, nil, "delete", "--checkpoint", "--force", "ppo-run", "--db", db); err == nil {
		t.Fatal("--checkpoint with --force accepted")
	}
	out, _, err = runModels(t, nil, "delete", "--checkpoint", "ppo-run", "--db", db)
	if err != nil || out != "deleted the checkpoint of run ppo-run (120 episodes)\n" {
		t.Fatalf("delete --checkpoint: %q %v", out, err)
	}
	if out, _, _ := runModels(t, nil, "list", "--db", db); strings.Contains(out, "unfinished") {
		t.Fatalf("checkpoint still listed:\n%s", out)
	}
}

// TestModelsSpace: list says what takes the registry's space, and compact
// gives back what deleted checkpoints left.
func TestModelsSpace(t *testing.T) {
	db := filepath.Join(t.TempDir(), "reg.db")
	seedRegistry(t, db, "m", 1, 0)
	r, err := models.Open(db, models.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for step := range 3 {
		if err := r.SaveCheckpoint("big", step, bytes.Repeat([]byte{byte(step)}, 4<<20)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.DeleteCheckpoint("big"); err != nil {
		t.Fatal(err)
	}
	r.Close()
	out, _, err := runModels(t, nil, "list", "--db", db)
	if err != nil || !strings.Contains(out, "1 model version(s)") || !strings.Contains(out, "gives it back") {
		t.Fatalf("list:\n%s%v", out, err)
	}
	out, _, err = runModels(t, nil, "compact", "--db", db)
	st, _ := os.Stat(db)
	if err != nil || !strings.Contains(out, "compacted "+db+" from ") || st.Size() > 512<<10 {
		t.Fatalf("compact: %q %v, file %d bytes", out, err, st.Size())
	}
	if out, _, err := runModels(t, nil, "show", "m", "--db", db); err != nil {
		t.Fatalf("show after compact: %q %v", out, err)
	}
	// a second compaction has nothing to give back, and says so (it
	// said "compacted from 8.389MB to 8.389MB")
	if out, _, err := runModels(t, nil, "compact", "--db", db); err != nil || !strings.Contains(out, "had nothing to give back") {
		t.Fatalf("a second compact: %q %v", out, err)
	}
}

// export --out never replaces the registry (it did: every model gone), nor
// an existing file without --force.
func TestModelsExportOutChecked(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "reg.db")
	seedRegistry(t, db, "m", 1, 0)
	if _, _, err := runModels(t, nil, "export", "m@1", "--db", db, "--out", db, "--force"); err == nil || !strings.Contains(err.Error(), "is the registry itself") {
		t.Fatalf("export onto the registry: %v", err)
	}
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(db, link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runModels(t, nil, "export", "m@1", "--db", db, "--out", link, "--force"); err == nil || !strings.Contains(err.Error(), "is the registry itself") {
		t.Fatalf("export onto a link to the registry: %v", err)
	}
	if out, _, err := runModels(t, nil, "list", "--db", db); err != nil || !strings.Contains(out, "m") {
		t.Fatalf("registry after the refused exports: %v\n%s", err, out)
	}
	other := filepath.Join(dir, "m.export")
	if err := os.WriteFile(other, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runModels(t, nil, "export", "m@1", "--db", db, "--out", other); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("export onto an existing file: %v", err)
	}
	if _, _, err := runModels(t, nil, "export", "m@1", "--db", db, "--out", other, "--force"); err != nil {
		t.Fatalf("export --force: %v", err)
	}
}

// promote reads the network, not only its spec's name: one of 3 inputs
// labelled with this build's spec was promoted, and every agent that
// followed it failed at its start.
func TestModelsPromoteRefusesANetworkOfTheWrongSize(t *testing.T) {
	db := filepath.Join(t.TempDir(), "reg.db")
	n, err := rl.NewNet(rl.Arch{In: 3, Hidden: []int{4}, Out: env.DefaultCatalogue().Outputs(), Act: rl.ReLU})
	if err != nil {
		t.Fatal(err)
	}
	n.Kind = rl.OutputQ
	w, err := n.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	r, err := models.Open(db, models.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Put(models.Model{Name: "w", Algorithm: "ddqn", ObsSpec: env.SpecVersion, ActSpec: env.ActionSpecVersion,
		Created: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Weights: w}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, _, err := runModels(t, nil, "promote", "w@1", "--db", db); err == nil || !strings.Contains(err.Error(), "network reads 3 features") {
		t.Fatalf("promote of a network of 3 inputs: %v", err)
	}
}

// An import of a folder says so (it said "truncated in the header"); one
// whose version was deleted here says why it gets another number (it said
// the version was "taken here by other weights").
func TestModelsImportFolderAndDeletedVersion(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	_, _, err := runModels(t, nil, "import", dir, "--db", db)
	if err == nil || !strings.Contains(err.Error(), dir+" is a folder") {
		t.Fatalf("import of a folder: %v", err)
	}
	seedRegistry(t, db, "mine", 1, 0)
	exp := filepath.Join(dir, "mine.export")
	if _, _, err := runModels(t, nil, "export", "mine@1", "--out", exp, "--db", db); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runModels(t, nil, "delete", "mine@1", "--db", db); err != nil {
		t.Fatal(err)
	}
	out, _, err := runModels(t, nil, "import", exp, "--db", db)
	if err != nil || !strings.Contains(out, "version 1 of mine was deleted here, and a version number is never reused") {
		t.Fatalf("import after delete: %v\n%s", err, out)
	}
}
