package loop

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ecntune/ecntune/eval"
	"github.com/ecntune/ecntune/internal/simtest"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/policy/builtin"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/scenario"
)

// An agent:FILE loop finds model:NAME where the agent run with FILE would:
// in the registry the file names (registry:, relative to the file), and
// the runner is asked for eval's own only when the file names none.
func TestEvalLoopUsesTheConfigsRegistry(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "models", "reg.db")
	var asked []string
	resolverFor := func(registry string) policy.Resolver {
		asked = append(asked, registry)
		return policy.Resolver{Models: func(ref string) (models.Model, error) {
			if registry != reg || ref != "mine" {
				return models.Model{}, errors.New("no model " + ref + " in " + registry)
			}
			return builtin.Model()
		}}
	}
	sim := simtest.Star(simenv.ECN{KminBytes: 2_000_000, KmaxBytes: 2_800_000, Pmax: 0.01})
	sim.Name, sim.Duration = "star", 4*simenv.Millisecond
	scs := []eval.Scenario{{Named: scenario.Named{Name: "star", Config: sim}}}
	opt := eval.Options{Seeds: 1, Workers: 1, Interval: simenv.Millisecond, Loops: map[string]eval.LoopRunner{Prefix: EvalRunner(resolverFor, "", false)}}
	write := func(name, registryLine string) string {
		file := filepath.Join(dir, name)
		body := "mode: shadow\npolicy: model:mine\n" + registryLine + "interval: 1s\ntargets:\n  t: {address: \"127.0.0.1:1\", insecure: true, queues: [3]}\n"
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return Prefix + file
	}
	with := write("with.yaml", "registry: models/reg.db\n")
	res, err := eval.RunAll(scs, []string{with}, opt)
	if err != nil {
		t.Fatalf("a loop whose file names its registry: %v", err)
	}
	if runs := res.RunsOf("star", with); len(runs) != 1 || runs[0].Loop == nil || runs[0].Decisions == 0 {
		t.Fatalf("runs %+v", runs)
	}
	if len(asked) == 0 || asked[0] != reg {
		t.Fatalf("resolver asked for %q, want the file's registry %s", asked, reg)
	}
	asked = nil
	without := write("without.yaml", "")
	if _, err := eval.RunAll(scs, []string{without}, opt); err == nil {
		t.Fatal("a loop whose file names no registry found model:mine")
	}
	if len(asked) == 0 || asked[0] != "" {
		t.Fatalf("resolver asked for %q, want \"\" (eval's own registry)", asked)
	}
}

// eval runs an agent:FILE loop at its own interval, the file's scaled to
// it: a model validated for other intervals (here 100ms to 2s, eval at
// 1ms) is measured holding, as eval measures it bare, not refused as the
// agent refuses it at start (which ended the whole eval).
func TestEvalLoopRunsAModelOutsideItsIntervals(t *testing.T) {
	dir := t.TempDir()
	resolverFor := func(string) policy.Resolver {
		return policy.Resolver{Models: func(ref string) (models.Model, error) {
			m, err := builtin.Model()
			m.Name, m.Version = ref, 1
			m.Hyper = map[string]string{"validated_interval": "100ms-2s"}
			return m, err
		}}
	}
	sim := simtest.Star(simenv.ECN{KminBytes: 2_000_000, KmaxBytes: 2_800_000, Pmax: 0.01})
	sim.Name, sim.Duration = "star", 4*simenv.Millisecond
	scs := []eval.Scenario{{Named: scenario.Named{Name: "star", Config: sim}}}
	opt := eval.Options{Seeds: 1, Workers: 1, Interval: simenv.Millisecond, Loops: map[string]eval.LoopRunner{Prefix: EvalRunner(resolverFor, "", false)}}
	file := filepath.Join(dir, "slow.yaml")
	body := "mode: closed-loop\npolicy: model:slow\ninterval: 1s\ntargets:\n  t: {address: \"127.0.0.1:1\", insecure: true, queues: [3]}\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := eval.RunAll(scs, []string{Prefix + file}, opt)
	if err != nil {
		t.Fatalf("a loop whose model holds at eval's interval: %v", err)
	}
	if runs := res.RunsOf("star", Prefix+file); len(runs) != 1 || runs[0].Loop == nil || runs[0].Loop.Changes != 0 {
		t.Fatalf("runs %+v", runs)
	}
}
