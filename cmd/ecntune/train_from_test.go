package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy/builtin"
	"github.com/ecntune/ecntune/policy/nn"
)

// TestTrainFromBuiltinWidens: train --scenario ... --from builtin
// continues the built-in model (obs-v3, 44 features) on this build's
// spec, its network widened with zero weights: after two episodes, all
// of them the critic's warm-up, the stored actor is the built-in one
// widened, bit for bit, so the run started deciding exactly as the
// built-in model does; the provenance names where it started.
func TestTrainFromBuiltinWidens(t *testing.T) {
	dir := t.TempDir()
	sc, _ := writeTwin(t, dir)
	db := filepath.Join(dir, "reg.db")
	if _, errOut, err := runTrainCmd(t, "--scenario", sc, "--from", "builtin", "--episodes", "2", "--workers", "1",
		"--name", "wide", "--db", db, "--out", dir); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
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
