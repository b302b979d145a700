package bench

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/internal/cputime"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/policy/builtin"
	"github.com/ecntune/ecntune/simenv/scenario"
	"github.com/ecntune/ecntune/train"
	"github.com/ecntune/ecntune/train/rl"
)

const trainWebsearch = "../../../../policy/builtin/scenarios/train-websearch.yaml"

func TestPolicySmall(t *testing.T) {
	o := PolicyOptions{Scenario: trainWebsearch, Spec: "builtin", Queues: []int{10, 300},
		MinTime: time.Millisecond, Episodes: 2, Workers: 2}
	r, err := RunPolicy(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Pool < 8 || len(r.Decide) != 2 {
		t.Fatalf("pool %d, %d decide results", r.Pool, len(r.Decide))
	}
	for _, d := range r.Decide {
		if d.Batches < 5 || !(d.NsPerQueue > 0) || !(d.BatchP99Ms >= d.BatchP50Ms) || d.BatchP50Ms <= 0 ||
			d.WithinTarget != (d.CPUNsPerQueue > 0 && d.CPUNsPerQueue <= DecisionTargetNs) {
			t.Fatalf("decide result %+v", d)
		}
	}
	if r.Cores < 1 || r.TargetCPUNsPerQueue != DecisionTargetNs {
		t.Fatalf("cores %d, target %v", r.Cores, r.TargetCPUNsPerQueue)
	}
	tb := r.Train
	// 8-host star: 8 queues x 20 decisions per 5 ms episode at Δ = 200 µs.
	if tb == nil || tb.Episodes != 2 || tb.AgentSteps == 0 || tb.RolloutSteps != tb.AgentSteps || !(tb.StepsPerSec > 0) || !(tb.RolloutPerSec > 0) {
		t.Fatalf("train result %+v", tb)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"wall ns/queue", "CPU ns/queue", "target: at most 5 µs of CPU per queue", "agent steps/s", "rollouts only"} {
		if !strings.Contains(buf.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, buf.String())
		}
	}
}

// The decision cost target (5 µs per queue) is held against the CPU per
// queue, and a CPU per queue above it is said plainly, however low the wall
// time per queue of a batch spread over every core (the report gave the
// wall per queue alone, which on 2 idle cores met the target at 3.1 µs
// with 6.2 µs of CPU per queue).
func TestPolicyTargetAgainstCPU(t *testing.T) {
	r := &PolicyResult{Policy: "builtin", Scenario: BuiltinScenario, Pool: 192, Cores: 2, TargetCPUNsPerQueue: DecisionTargetNs,
		Decide: []DecideResult{
			{Queues: 1000, Batches: 40, NsPerQueue: 3100, CPUNsPerQueue: 6200, WithinTarget: false},
			{Queues: 10000, Batches: 5, NsPerQueue: 2600, CPUNsPerQueue: 4900, WithinTarget: true},
			{Queues: 100, Batches: 5, NsPerQueue: 2600},
		}}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"target: at most 5 µs of CPU per queue decided; the wall per queue is a batch's time spread over 2 cores (GOMAXPROCS), not the cost of a decision",
		"  1000 queues: 6.2 µs of CPU per queue (3.1 µs wall): above the target (1.24x)",
		"  10000 queues: 4.9 µs of CPU per queue (2.6 µs wall): within the target",
		"  100 queues: 0.0 µs of CPU per queue (2.6 µs wall): the process's CPU time cannot be read here: not judged",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestPolicyErrors(t *testing.T) {
	base := PolicyOptions{Scenario: trainWebsearch, Spec: "builtin", Queues: []int{10},
		MinTime: time.Millisecond, Workers: 1}
	for _, c := range []struct {
		edit func(*PolicyOptions)
		want string
	}{
		{func(o *PolicyOptions) { o.Queues = nil }, "--queues"},
		{func(o *PolicyOptions) { o.Queues = []int{0} }, "--queues 0"},
		{func(o *PolicyOptions) { o.Workers = 0 }, "--workers"},
		{func(o *PolicyOptions) { o.Scenario = "nope.yaml" }, "nope.yaml"},
		{func(o *PolicyOptions) { o.Spec = "static:nope" }, "nope"},
	} {
		o := base
		c.edit(&o)
		if _, err := RunPolicy(o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want %q", err, c.want)
		}
	}
}

// TestBuiltinScenario checks that the default scenario is the repository's
// train-websearch.yaml (same bytes, same parsed config).
func TestBuiltinScenario(t *testing.T) {
	want, err := scenario.LoadNamed(trainWebsearch)
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := LoadBuiltinScenario()
	if err != nil {
		t.Fatal(err)
	}
	want.Path = BuiltinScenario
	// the files it names are read from the binary, not the disk: the
	// embedded scenario pins none (scenario.Named.Files)
	want.Files = nil
	if !reflect.DeepEqual(embedded, want) {
		t.Fatalf("embedded scenario differs from the file:\n got %+v\nwant %+v", embedded, want)
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

// registryInfo reads a model's metadata from the registry at db.
func registryInfo(db string) func(ref string) (models.Model, error) {
	return func(ref string) (models.Model, error) {
		r, err := models.Open(db, models.Options{ReadOnly: true})
		if err != nil {
			return models.Model{}, err
		}
		defer r.Close()
		return r.Info(ref)
	}
}

// TestPolicyAlgoFollowsPolicy checks that the training measurement uses
// the algorithm of the policy under test unless --algo says otherwise.
func TestPolicyAlgoFollowsPolicy(t *testing.T) {
	db := filepath.Join(t.TempDir(), "reg.db")
	putModel(t, db, "qnet", train.AlgoDDQN)
	putModel(t, db, "pnet", train.AlgoPPO)
	putModel(t, db, "odd", "a2c")
	info := registryInfo(db)
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
		got, err := Algo(info, c.flag, c.spec)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Algo(%q, %q) = %q, %v; want error %q", c.flag, c.spec, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Algo(%q, %q) = %q, %v; want %q", c.flag, c.spec, got, err, c.want)
		}
	}
	if _, err := Algo(nil, "", "model:qnet"); err == nil || !strings.Contains(err.Error(), "no model registry") {
		t.Errorf("model:NAME without a registry: %v", err)
	}

	o := PolicyOptions{Scenario: trainWebsearch, Spec: "model:qnet", Queues: []int{10},
		MinTime: time.Millisecond, Episodes: 1, Workers: 1, ModelInfo: info,
		Resolver: policy.Resolver{Models: func(ref string) (models.Model, error) { return models.Load(db, ref) }}}
	r, err := RunPolicy(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Train == nil || r.Train.Algo != train.AlgoDDQN || r.Train.AgentSteps == 0 {
		t.Fatalf("train result %+v, want a ddqn run", r.Train)
	}
}

// BenchmarkBuiltinDecide10k times the embedded model's decisions on 10,000
// real observations of its own training scenario, as `ecntune bench policy`
// does: the wall per queue (the batch spread over every core) and the CPU
// per queue, which the ≤ 5 µs per queue target is held against.
func BenchmarkBuiltinDecide10k(b *testing.B) {
	sc, err := LoadBuiltinScenario()
	if err != nil {
		b.Fatal(err)
	}
	pool, err := observationPool(sc)
	if err != nil {
		b.Fatal(err)
	}
	p, err := policy.Lookup("builtin")
	if err != nil {
		b.Fatal(err)
	}
	obs := decideBatch(pool, 10000)
	p.Decide(obs)
	b.ResetTimer()
	cpu0 := cputime.Process()
	for b.Loop() {
		p.Decide(obs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(obs)), "ns/queue")
	b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(b.N)/float64(len(obs)), "cpu-ns/queue")
}
