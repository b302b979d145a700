package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy/builtin"
	"github.com/ecntune/ecntune/policy/rl"
	"github.com/ecntune/ecntune/policy/train"
)

func TestBenchPolicySmall(t *testing.T) {
	o := policyBenchOpts{scenario: "../../policy/builtin/scenarios/train-websearch.yaml", spec: "builtin", queues: []int{10, 300},
		minTime: time.Millisecond, episodes: 2, workers: 2}
	r, err := runPolicyBench(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Pool < 8 || len(r.Decide) != 2 {
		t.Fatalf("pool %d, %d decide results", r.Pool, len(r.Decide))
	}
	for _, d := range r.Decide {
		if d.Batches < 5 || !(d.NsPerQueue > 0) || !(d.BatchP99Ms >= d.BatchP50Ms) || d.BatchP50Ms <= 0 {
			t.Fatalf("decide result %+v", d)
		}
	}
	tb := r.Train
	// 8-host star: 8 queues x 20 decisions per 5 ms episode at Δ = 200 µs.
	if tb == nil || tb.Episodes != 2 || tb.AgentSteps == 0 || tb.RolloutSteps != tb.AgentSteps || !(tb.StepsPerSec > 0) || !(tb.RolloutPerSec > 0) {
		t.Fatalf("train result %+v", tb)
	}
	var buf bytes.Buffer
	if err := printPolicyBench(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ns/queue", "agent steps/s", "rollouts only"} {
		if !strings.Contains(buf.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestBenchPolicyErrors(t *testing.T) {
	base := policyBenchOpts{scenario: "../../policy/builtin/scenarios/train-websearch.yaml", spec: "builtin", queues: []int{10},
		minTime: time.Millisecond, workers: 1}
	for _, c := range []struct {
		edit func(*policyBenchOpts)
		want string
	}{
		{func(o *policyBenchOpts) { o.queues = nil }, "--queues"},
		{func(o *policyBenchOpts) { o.queues = []int{0} }, "--queues 0"},
		{func(o *policyBenchOpts) { o.workers = 0 }, "--workers"},
		{func(o *policyBenchOpts) { o.scenario = "nope.yaml" }, "nope.yaml"},
		{func(o *policyBenchOpts) { o.spec = "static:nope" }, "nope"},
	} {
		o := base
		c.edit(&o)
		if _, err := runPolicyBench(o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want %q", err, c.want)
		}
	}
}

// TestBenchPolicyEmbeddedScenario checks that the default scenario is the
// repository's train-websearch.yaml (same bytes, same parsed config) and
// that "bench policy" with it runs outside the repository.
func TestBenchPolicyEmbeddedScenario(t *testing.T) {
	fromFile, err := train.LoadScenarios([]string{"../../policy/builtin/scenarios/train-websearch.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := loadBuiltinBenchScenario()
	if err != nil {
		t.Fatal(err)
	}
	want := fromFile[0]
	want.Path = builtinBenchScenario
	if !reflect.DeepEqual(embedded, want) {
		t.Fatalf("embedded scenario differs from the file:\n got %+v\nwant %+v", embedded, want)
	}

	t.Chdir(t.TempDir())
	out, err := runCmd(t, newBenchPolicyCmd(), "--queues", "10", "--min-time", "1ms", "--train-episodes", "1", "--workers", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r policyBenchResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if r.Scenario != builtinBenchScenario || r.Pool < 8 || len(r.Decide) != 1 || r.Train == nil || r.Train.Algo != train.AlgoPPO {
		t.Fatalf("result %+v (train %+v)", r, r.Train)
	}
}

// putModel stores the built-in model's network in the registry at db under
// name, recorded as trained by algo, with the output kind DDQN or PPO would
// give it.
func putModel(t *testing.T, db, name, algo string) {
	t.Helper()
	m, err := builtin.Model()
	if err != nil {
		t.Fatal(err)
	}
	net, err := rl.UnmarshalNet(m.Weights)
	if err != nil {
		t.Fatal(err)
	}
	net.Kind = rl.OutputLogits
	if algo == train.AlgoDDQN {
		net.Kind = rl.OutputQ
	}
	if m.Weights, err = net.MarshalBinary(); err != nil {
		t.Fatal(err)
	}
	m.ID, m.Version, m.Status, m.WeightsSHA256, m.Name, m.Algorithm = 0, 0, "", "", name, algo
	reg, err := models.Open(db, models.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if _, err := reg.Put(m); err != nil {
		t.Fatal(err)
	}
}

// TestBenchPolicyAlgoFollowsPolicy checks that the training measurement
// uses the algorithm of the policy under test unless --algo says otherwise.
func TestBenchPolicyAlgoFollowsPolicy(t *testing.T) {
	db := filepath.Join(t.TempDir(), "reg.db")
	putModel(t, db, "qnet", train.AlgoDDQN)
	putModel(t, db, "pnet", train.AlgoPPO)
	putModel(t, db, "odd", "a2c")
	for _, c := range []struct{ flag, spec, want, err string }{
		{"", "model:qnet", train.AlgoDDQN, ""},
		{"", "model:qnet,prefer=0.5", train.AlgoDDQN, ""},
		{"", "model:pnet", train.AlgoPPO, ""},
		{"", "builtin", train.AlgoPPO, ""},
		{"", "builtin:prefer=-1", train.AlgoPPO, ""},
		{"", "adaptive", train.AlgoPPO, ""},
		{"", "static:whatever", train.AlgoPPO, ""},
		{"ppo", "model:qnet", train.AlgoPPO, ""},
		{" DDQN", "builtin", train.AlgoDDQN, ""},
		{"sarsa", "builtin", "", `--algo "sarsa"`},
		{"", "model:odd", "", "give --algo"},
		{"", "model:missing", "", "missing"},
	} {
		got, err := benchAlgo(db, c.flag, c.spec)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("benchAlgo(%q, %q) = %q, %v; want error %q", c.flag, c.spec, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("benchAlgo(%q, %q) = %q, %v; want %q", c.flag, c.spec, got, err, c.want)
		}
	}

	o := policyBenchOpts{db: db, scenario: "../../policy/builtin/scenarios/train-websearch.yaml", spec: "model:qnet", queues: []int{10},
		minTime: time.Millisecond, episodes: 1, workers: 1}
	r, err := runPolicyBench(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Train == nil || r.Train.Algo != train.AlgoDDQN || r.Train.AgentSteps == 0 {
		t.Fatalf("train result %+v, want a ddqn run", r.Train)
	}
}
