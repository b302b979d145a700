package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/cmd/ecntune/internal/bench"
	"github.com/ecntune/ecntune/train"
)

// TestBenchPolicyEmbeddedScenario: "bench policy" with its default,
// embedded scenario runs outside the repository.
func TestBenchPolicyEmbeddedScenario(t *testing.T) {
	t.Chdir(t.TempDir())
	out, err := runCmd(t, newBenchPolicyCmd(), "--queues", "10", "--min-time", "1ms", "--train-episodes", "1", "--workers", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r bench.PolicyResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if r.Scenario != bench.BuiltinScenario || r.Pool < 8 || len(r.Decide) != 1 || r.Train == nil || r.Train.Algo != train.AlgoPPO {
		t.Fatalf("result %+v (train %+v)", r, r.Train)
	}
}

// TestBenchSimCommand: the flags reach the measurement, errors name them.
func TestBenchSimCommand(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(sc, []byte(tinyTrainScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, newBenchSimCmd(), "--scenario", sc, "--runs", "2", "--seed", "4", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r bench.SimReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Runs) != 2 || r.Runs[1].Seed != 5 || r.Runs[0].Input != sc {
		t.Fatalf("%v: %s", err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--scenario", sc, "--hpcc-config", sc}, "give exactly one"},
		{[]string{"--scenario", sc, "--parallel", "0"}, "--runs and --parallel"},
		{[]string{"--scenario", filepath.Join(dir, "none.yaml")}, "none.yaml"},
	} {
		if _, err := runCmd(t, newBenchSimCmd(), c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
