package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/train"
	"github.com/ecntune/ecntune/train/rl"
)

func runCmd(t *testing.T, c *cobra.Command, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(&errOut)
	c.SilenceUsage = true
	c.SilenceErrors = true
	err := c.Execute()
	return out.String(), err
}

const tinyTrainScenario = `name: tiny-train
seed: 1
duration: 1ms
topology: {kind: star, hosts: 4, host_rate: 100Gbps, link_delay: 1us, buffer: 32MB}
workloads:
  - {kind: incast, fanin: 3, size: 60KB, every: 150us}
`

// TestTrainThenEval trains a tiny model, checks what the registry holds
// (weights, provenance, the re-runnable command), the learning curve, and
// evaluates the model with eval --json.
func TestTrainThenEval(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(sc, []byte(tinyTrainScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "reg.db")
	out, err := runCmd(t, newTrainCmd(), "--scenario", sc, "--episodes", "4", "--workers", "2", "--seed", "5",
		"--name", "tiny", "--db", db, "--out", filepath.Join(dir, "curves"), "--hidden", "16,8")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "stored tiny@1 (ddqn, 4 episodes") {
		t.Fatalf("train output:\n%s", out)
	}
	reg, err := models.Open(db, models.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := reg.Resolve("tiny")
	reg.Close()
	if err != nil {
		t.Fatal(err)
	}
	wantCmd := "ecntune train --scenario " + filepath.ToSlash(sc) + " --algo ddqn --episodes 4 --workers 2 --seed 5 --name tiny --db " +
		filepath.ToSlash(db) + " --hidden 16,8"
	if net, err := rl.UnmarshalNet(m.Weights); err != nil || !slices.Equal(net.Arch().Hidden, []int{16, 8}) || m.Hyper["hidden"] != "16,8" {
		t.Fatalf("--hidden 16,8: weights %v (%v), hyper %q", net, err, m.Hyper["hidden"])
	}
	if m.Hyper["command"] != wantCmd || m.Seed != 5 || m.Workers != 2 || m.ObsSpec != env.SpecVersion ||
		m.ActSpec != "act-v2" || len(m.Scenarios) != 1 || len(m.Scenarios[0].SHA256) != 64 || len(m.Eval) == 0 {
		t.Fatalf("provenance: %+v", m)
	}
	if _, err := os.Stat(filepath.Join(dir, "curves", "reg-tiny-v1-curve.png")); err != nil {
		t.Fatal(err)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "curves", "reg-tiny-v1-curve.csv"))
	if err != nil || strings.Count(string(csv), "\n") != 3 { // header + 2 rounds
		t.Fatalf("curve csv (%v):\n%s", err, csv)
	}

	js, err := runCmd(t, newEvalCmd(), "--scenario", sc, "--policy", "model:tiny", "--policy", "static:hpcc", "--seeds", "2",
		"--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var runs []map[string]any
	if err := json.Unmarshal([]byte(js), &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 4 || runs[0]["policy"] != "model:tiny" || runs[0]["scenario"] != "tiny-train" || runs[3]["seed"] != 2.0 {
		t.Fatalf("eval json: %d runs, first %v", len(runs), runs[0])
	}
}

// TestTrainHeadroomThenEval trains a tiny switch-level headroom model
// beside the built-in ECN model and evaluates it as
// builtin+headroom=model:NAME.
func TestTrainHeadroomThenEval(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(sc, []byte(tinyTrainScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "reg.db")
	out, err := runCmd(t, newTrainCmd(), "--scenario", sc, "--algo", "ppo", "--episodes", "4", "--workers", "2", "--seed", "5",
		"--name", "hdrm", "--db", db, "--out", filepath.Join(dir, "curves"), "--headroom-for", "builtin",
		"--randomise", `{"random_pfc":1,"host_rates":[]}`)
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.Load(db, "hdrm")
	if err != nil {
		t.Fatal(err)
	}
	if m.ObsSpec != env.SwitchSpecVersion || m.ActSpec != env.HeadroomActionSpec || !strings.HasSuffix(m.Hyper["command"], " --headroom-for builtin") ||
		m.Hyper["ecn_policy"] != "builtin" {
		t.Fatalf("train output:\n%s\nmodel %s/%s, hyper %v", out, m.ObsSpec, m.ActSpec, m.Hyper)
	}
	js, err := runCmd(t, newEvalCmd(), "--scenario", sc, "--policy", "builtin+headroom=model:hdrm", "--seeds", "1", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js, `"policy": "builtin+headroom=model:hdrm"`) {
		t.Fatalf("eval json:\n%.400s", js)
	}
	// The registry commands know it as a model this build runs.
	exp := filepath.Join(dir, "hdrm.ecnmodel")
	if _, _, err := runModels(t, nil, "export", "hdrm", "--db", db, "-o", exp); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	if _, note, err := runModels(t, nil, "import", exp, "--db", other); err != nil || strings.Contains(note, "note:") {
		t.Fatalf("import: %v, stderr %q", err, note)
	}
	if _, _, err := runModels(t, nil, "promote", "hdrm", "--db", other); err != nil {
		t.Fatalf("promote a switch-level headroom model: %v", err)
	}
	if _, err := runCmd(t, newEvalCmd(), "--scenario", sc, "--policy", "model:hdrm", "--db", db); err == nil || !strings.Contains(err.Error(), "+headroom=model:hdrm") {
		t.Fatalf("a headroom model as an ECN policy: err = %v", err)
	}
}

func TestTrainEvalFlagErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		cmd  *cobra.Command
		args []string
		want string
	}{
		{newTrainCmd(), nil, "no --scenario"},
		{newTrainCmd(), []string{"--scenario", "x.yaml", "--algo", "a3c"}, `--algo "a3c"`},
		{newTrainCmd(), []string{"--scenario", "x.yaml", "--name", "9lives"}, `--name "9lives"`},
		{newTrainCmd(), []string{"--scenario", filepath.Join(dir, "none.yaml"), "--db", filepath.Join(dir, "r.db")}, "none.yaml"},
		{newTrainCmd(), []string{"--scenario", "x.yaml", "--reward", `{"speed":1}`}, "--reward"},
		{newTrainCmd(), []string{"--scenario", "../../scenarios/star-incast.yaml", "--hidden", "64,0", "--db", filepath.Join(dir, "r.db")}, "hidden[1] = 0"},
		{newTrainCmd(), []string{"--scenario", "../../scenarios/star-incast.yaml", "--algo", "ppo", "--headroom-for", "static:hpcc", "--db", filepath.Join(dir, "r.db")}, "want builtin or model:NAME"},
		{newTrainCmd(), []string{"--scenario", "../../scenarios/star-incast.yaml", "--algo", "ppo", "--headroom-for", "builtin:prefer=0.5", "--db", filepath.Join(dir, "r.db")}, "without a preference"},
		{newTrainCmd(), []string{"--scenario", "../../scenarios/star-incast.yaml", "--headroom-for", "builtin", "--db", filepath.Join(dir, "r.db")}, "with ppo, not ddqn"},
		{newTrainCmd(), []string{"--scenario", "../../scenarios/star-incast.yaml", "--lr", "-0.001", "--db", filepath.Join(dir, "r.db")}, "learning rate -0.001"},
		{newTrainCmd(), []string{"--scenario", "../../scenarios/star-incast.yaml", "--out", "../../README.md", "--db", filepath.Join(dir, "r.db")}, "--out ../../README.md is a file: want a folder for the learning curve"},
		{newTrainCmd(), []string{"--twin", "../../scenarios/star-incast.yaml", "--out", "../../README.md/runs", "--db", filepath.Join(dir, "r.db")}, "--out ../../README.md/runs: ../../README.md is a file, not a folder"},
		{newEvalCmd(), nil, "no --scenario"},
		{newEvalCmd(), []string{"--scenario", "x.yaml"}, "no --policy"},
		{newEvalCmd(), []string{"--scenario", filepath.Join(dir, "none.yaml"), "--policy", "adaptive"}, "none.yaml"},
		{newEvalCmd(), []string{"--scenario", "x.yaml", "--policy", "adaptive", "--duration", "soon"}, "--duration"},
		{newEvalCmd(), []string{"--scenario", "x.yaml", "--policy", "adaptive", "--interval", "0ms"}, "--interval: 0ms must be above 0"},
	} {
		if _, err := runCmd(t, c.cmd, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: err = %v, want %q", c.cmd.Name(), c.args, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r.db")); !os.IsNotExist(err) {
		t.Error("a refused train created the registry")
	}
}

// eval --duration runs each scenario for that long (a longer run finishes
// more flows; --json keeps the scenario's own name, as sim --json does),
// --interval sets Δ and one at or above the duration is refused naming the
// scenario.
func TestEvalDurationInterval(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(sc, []byte(tinyTrainScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	flows := func(args ...string) (string, float64) {
		t.Helper()
		run := evalOneRun(t, sc, "static:hpcc", args...)
		return run["scenario"].(string), run["flows"].(float64)
	}
	name1, n1 := flows()
	name2, n2 := flows("--duration", "2ms", "--interval", "100us")
	if name1 != "tiny-train" || name2 != "tiny-train" || !(n2 > n1) {
		t.Fatalf("1 ms: %s %v flows; --duration 2ms: %s %v flows", name1, n1, name2, n2)
	}
	if _, err := runCmd(t, newEvalCmd(), "--scenario", sc, "--policy", "static:hpcc", "--seeds", "1", "--interval", "1ms"); err == nil ||
		!strings.Contains(err.Error(), "tiny-train") || !strings.Contains(err.Error(), "interval") {
		t.Fatalf("interval 1ms on a 1 ms scenario: %v", err)
	}
}

// TestParseRandomise: --randomise overrides the named fields of the
// default randomisation and keeps the others; bad JSON, unknown fields,
// out-of-range rates and a clash with --no-randomise are refused by name.
func TestParseRandomise(t *testing.T) {
	r, err := parseRandomise(`{"host_rates":[25e9,400e9],"hide_peer":0}`, false)
	if err != nil {
		t.Fatal(err)
	}
	def := train.DefaultRandomisation()
	if len(r.HostRates) != 2 || r.HostRates[1] != 400e9 || r.HidePeer != 0 || r.LoadMin != def.LoadMin ||
		r.AddIncast != def.AddIncast || !r.RandomStart {
		t.Fatalf("merged randomisation: %+v", r)
	}
	if r, err := parseRandomise("", false); err != nil || !r.IsZero() {
		t.Fatalf("no flag: %+v, %v", r, err)
	}
	if r, err := parseRandomise("", true); err != nil || !r.Off {
		t.Fatalf("--no-randomise: %+v, %v", r, err)
	}
	for js, want := range map[string]string{
		`{"host_rate":[1]}`: "unknown field",
		`{"load_min":`:      "--randomise",
		`{} {}`:             "one JSON object",
		`{"off":true}`:      "--no-randomise",
		`{"load_min":0,"load_max":0,"fanin_min":0,"fanin_max":0,"size_min":0,"size_max":0,"host_rates":[],"add_incast":0,"random_start":false,"hide_peer":0,"drop_telemetry":0,"random_pfc":0}`: "every perturbation is zero",
	} {
		if _, err := parseRandomise(js, false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--randomise %s: err = %v, want %q", js, err, want)
		}
	}
	if _, err := parseRandomise(`{}`, true); err == nil || !strings.Contains(err.Error(), "one or the other") {
		t.Errorf("both flags: err = %v", err)
	}
	// Range checks are train.Config.Validate's, reached through the command.
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(sc, []byte(tinyTrainScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = runCmd(t, newTrainCmd(), "--scenario", sc, "--episodes", "2", "--db", filepath.Join(dir, "r.db"),
		"--randomise", `{"host_rates":[10]}`)
	if err == nil || !strings.Contains(err.Error(), "host_rates[0]") {
		t.Errorf("host rate 10 bps: err = %v", err)
	}
}

// TestTrainCommandLineRandomise: the recorded command re-runs with the
// same randomisation, and --checkpoint-every (part of the resume
// fingerprint) so that it resumes its own killed run.
func TestTrainCommandLineRandomise(t *testing.T) {
	o := trainOpts{scenarios: []string{"a.yaml"}, algo: "ppo", episodes: 3, workers: 2, seed: 4, name: "m", db: "r.db",
		randomise: `{"host_rates":[100e9,400e9]}`, reward: `{"delay":0.1}`, checkpointEvery: 3, hidden: []int{32, 16}}
	want := `ecntune train --scenario a.yaml --algo ppo --episodes 3 --workers 2 --seed 4 --name m --db r.db ` +
		`--randomise '{"host_rates":[100e9,400e9]}' --reward '{"delay":0.1}' --hidden 32,16 --checkpoint-every 3`
	if got := o.command(); got != want {
		t.Fatalf("command:\n got %s\nwant %s", got, want)
	}
}

func TestProgressLine(t *testing.T) {
	r := train.Round{MeanReward: 0.1234, Epsilon: 0.5, Entropy: 3.21}
	if got := progressStatus(train.AlgoDDQN, r, "-"); got != "reward 0.123, eps 0.50, eval -" {
		t.Fatalf("ddqn: %q", got)
	}
	if got := progressStatus(train.AlgoPPO, r, "0.050"); got != "reward 0.123, entropy 3.21 nats, eval 0.050" {
		t.Fatalf("ppo: %q", got)
	}
	if got := progressCount(30, 120); got != "episode 30/120 (25%)" {
		t.Fatalf("count %q", got)
	}
	if got := progressCount(30, 0); got != "episode 30" {
		t.Fatalf("budget count %q", got)
	}
}

// Without --name a run is named after its algorithm: a PPO run was stored
// as ddqn-default.
func TestTrainDefaultNameIsTheAlgorithms(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(sc, []byte(tinyTrainScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "reg.db")
	if _, err := runCmd(t, newTrainCmd(), "--scenario", sc, "--algo", "ppo", "--episodes", "2", "--workers", "1", "--db", db); err != nil {
		t.Fatal(err)
	}
	m, err := models.Load(db, "ppo-default")
	if err != nil || m.Algorithm != "ppo" || !strings.Contains(m.Hyper["command"], " --name ppo-default ") {
		t.Fatalf("ppo-default: %v, %v", m.Ref(), err)
	}
}

// A --select-on file that cannot be read is refused before the registry
// is made (an empty one was left behind).
func TestTrainSelectOnRefusedBeforeRegistry(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	_, err := runCmd(t, newRootCmd(), "train", "--scenario", "../../scenarios/websearch-50.yaml", "--select-on", filepath.Join(t.TempDir(), "nosuch.yaml"), "--episodes", "1", "--db", db)
	if err == nil || !strings.Contains(err.Error(), "nosuch.yaml") {
		t.Fatalf("train with a missing --select-on: %v", err)
	}
	if _, serr := os.Stat(db); !errors.Is(serr, fs.ErrNotExist) {
		t.Fatalf("the registry was made: %v", serr)
	}
}

// The learning curves of two registries in one folder do not replace each
// other: a registry other than the default one (ecntune.db) puts its file's
// stem before the model's name, and a name already taken (another folder's
// ecntune.db sharing --out) is never replaced: the run takes the next free
// one and says so (both wrote runs/t1-v1-curve.csv, the second silently
// replacing the first).
func TestTrainCurvesOfTwoRegistriesKept(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(sc, []byte(tinyTrainScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	trainOn := func(db string, more ...string) (string, string) {
		t.Helper()
		out, stderr, err := runTrainCmd(t, append([]string{"--scenario", sc, "--episodes", "2", "--hidden", "8", "--name", "t1", "--db", db}, more...)...)
		if err != nil {
			t.Fatalf("train --db %s: %v\n%s", db, err, stderr)
		}
		return out, stderr
	}
	runs := filepath.Join(dir, "runs")
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(runs, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	out, _ := trainOn(filepath.Join(dir, "t1.db"))
	if !strings.Contains(out, "learning curve: "+filepath.Join(runs, "t1-t1-v1-curve.csv")) {
		t.Fatalf("t1.db's curve:\n%s", out)
	}
	first, firstPNG := read("t1-t1-v1-curve.csv"), read("t1-t1-v1-curve.png")
	trainOn(filepath.Join(dir, "t1b.db"), "--seed", "2")
	read("t1b-t1-v1-curve.csv")
	if !bytes.Equal(read("t1-t1-v1-curve.csv"), first) || !bytes.Equal(read("t1-t1-v1-curve.png"), firstPNG) {
		t.Fatal("t1b.db's run replaced t1.db's learning curve")
	}
	// the default registry keeps the names README gives
	trainOn(filepath.Join(dir, "ecntune.db"))
	def := read("t1-v1-curve.csv")
	// another folder's default registry writing into the same --out
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	out, stderr := trainOn(filepath.Join(other, "ecntune.db"), "--out", runs, "--seed", "3")
	if !bytes.Equal(read("t1-v1-curve.csv"), def) {
		t.Fatal("another registry's run replaced runs/t1-v1-curve.csv")
	}
	read("t1-v1-2-curve.csv")
	read("t1-v1-2-curve.png")
	if !strings.Contains(out, "learning curve: "+filepath.Join(runs, "t1-v1-2-curve.csv")) ||
		!strings.Contains(stderr, filepath.Join(runs, "t1-v1-curve.csv")+" is already there") {
		t.Fatalf("a taken name not said:\n%s\n%s", out, stderr)
	}
}
