package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy/builtin"
	"github.com/ecntune/ecntune/policy/nn"
	"github.com/ecntune/ecntune/simenv/scenario"
)

// TestTrainFromBuiltinWidens: train --scenario ... --from builtin
// continues the built-in model (obs-v3, 44 features) on this build's
// spec, its network widened with zero weights: after two episodes, all
// of them the critic's warm-up, the stored actor is the built-in one
// widened, bit for bit, so the run started deciding exactly as the
// built-in model does, and stderr says the run did not update it; the
// provenance names where it started.
func TestTrainFromBuiltinWidens(t *testing.T) {
	dir := t.TempDir()
	sc, _ := writeTwin(t, dir)
	db := filepath.Join(dir, "reg.db")
	_, errOut, err := runTrainCmd(t, "--scenario", sc, "--from", "builtin", "--episodes", "2", "--workers", "1",
		"--name", "wide", "--db", db, "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	// stored as trained, it is said to be the starting one, as train --twin
	// says it (it was stored and reported as trained in silence)
	if !strings.Contains(errOut, "warning: the fine-tuned network is the starting one, weight for weight: 2 episodes did not update it (ppo's critic warms up for the first 16); give more --episodes or --budget") {
		t.Fatalf("no warning of a network the run did not update:\n%s", errOut)
	}
	m, err := models.Load(db, "wide")
	if err != nil {
		t.Fatal(err)
	}
	b, err := builtin.Model()
	if err != nil {
		t.Fatal(err)
	}
	bn, err := nn.UnmarshalNet(b.Weights)
	if err != nil {
		t.Fatal(err)
	}
	want, err := bn.WithInputs(env.NumFeatures)
	if err != nil {
		t.Fatal(err)
	}
	got, err := nn.UnmarshalNet(m.Weights)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(want) {
		t.Fatal("after the critic's warm-up alone the actor is not the built-in one widened")
	}
	if m.Algorithm != "ppo" || m.ObsSpec != env.SpecVersion || m.ActSpec != "act-v2" || m.Hyper["init"] != "builtin" ||
		m.Hyper["critic_warm_up"] == "" || !strings.Contains(m.Hyper["command"], " --algo ppo ") ||
		!strings.HasSuffix(m.Hyper["command"], " --from builtin") {
		t.Fatalf("provenance: algo %s, spec %s/%s, hyper %v", m.Algorithm, m.ObsSpec, m.ActSpec, m.Hyper)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--spec", env.SpecVersion + "/act-v3"}, "--from builtin acts on act-v2"},
		{[]string{"--algo", "ddqn"}, "--from builtin is a ppo model"},
		{[]string{"--hidden", "32,32"}, "--from builtin has hidden layers [64 64]"},
		{[]string{"--from", "model:none"}, "--from model:none"},
	} {
		args := append([]string{"--scenario", sc, "--from", "builtin", "--episodes", "2", "--db", db}, c.args...)
		if _, _, err := runTrainCmd(t, args...); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v: %v, want %q", c.args, err, c.says)
		}
	}
}

// A fine-tuning run may start from either embedded ECN model, and is
// evaluated under the spec it was named by; anything else is refused by
// name.
func TestLoadStartEmbeddedModels(t *testing.T) {
	for _, c := range []struct{ from, name, obs string }{
		{"builtin", "builtin", "obs-v3"},
		{"builtin:400g", "builtin-400g", "obs-v5"},
	} {
		ft, spec, valid, err := loadStart(c.from, "")
		if err != nil {
			t.Fatal(err)
		}
		if spec != c.from || ft.From != c.from || ft.Model.Name != c.name || ft.Model.ObsSpec != c.obs || valid != "200µs-1s" {
			t.Fatalf("%s: spec %s, from %s, model %s %s, valid %q", c.from, spec, ft.From, ft.Model.Name, ft.Model.ObsSpec, valid)
		}
	}
	for _, bad := range []string{"builtin:prefer=1", "rate:builtin;400G=builtin:400g", "builtin:800g"} {
		if _, _, _, err := loadStart(bad, ""); err == nil || !strings.Contains(err.Error(), "want builtin, builtin:400g or model:NAME") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// Without --from, a fine-tuning run starts from the model the default
// policy runs on the fabric's host ports.
func TestTwinDefaultStartByHostRate(t *testing.T) {
	for file, want := range map[string]string{
		"../../scenarios/heldout/star400-websearch-incast.yaml":        "builtin:400g",
		"../../scenarios/heldout4/leafspine400-800-allreduce-rpc.yaml": "builtin:400g",
		"../../scenarios/websearch-50.yaml":                            "builtin", // 100G hosts, 400G fabric
		"../../scenarios/heldout/incast-hadoop-25g.yaml":               "builtin",
	} {
		sc, err := scenario.LoadNamed(file)
		if err != nil {
			t.Fatal(err)
		}
		if got := defaultStart(sc.Config); got != want {
			t.Errorf("%s: starts from %s, want %s", file, got, want)
		}
	}
}
