package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing/fstest"
	"text/tabwriter"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/eval"
	"github.com/ecntune/ecntune/internal/cputime"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/policy/builtin"
	"github.com/ecntune/ecntune/scenarios/cdf"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/gym"
	"github.com/ecntune/ecntune/simenv/scenario"
	"github.com/ecntune/ecntune/train"
)

// BuiltinScenario is the default scenario of "bench policy": the built-in
// model's policy/builtin/scenarios/train-websearch.yaml, embedded in the
// binary so that the command runs from any directory.
const BuiltinScenario = "builtin:train-websearch"

// PolicyOptions are the options of "ecntune bench policy".
type PolicyOptions struct {
	Scenario string // a scenario file, or BuiltinScenario
	Spec     string // the policy spec to time
	Algo     string // the training measurement's algorithm; "" follows the policy (see Algo)
	Queues   []int  // batch sizes (queues per decision call)
	MinTime  time.Duration
	Episodes int // of the training measurement (0: skip it)
	Workers  int
	// Resolver resolves Spec (its Models load model:NAME).
	Resolver policy.Resolver
	// ModelInfo reads the metadata (not the weights) of a stored model,
	// for the algorithm a model:NAME was trained with; nil: no registry.
	ModelInfo func(ref string) (models.Model, error)
}

// DefaultPolicyOptions are the command's defaults.
func DefaultPolicyOptions() PolicyOptions {
	return PolicyOptions{Scenario: BuiltinScenario, Spec: policy.BuiltinSpec, Queues: []int{1000, 10000},
		MinTime: time.Second, Episodes: 24, Workers: runtime.GOMAXPROCS(0)}
}

// DecisionTargetNs is the decision cost target: at most 5 µs of CPU per
// queue decided, batched. It is held against the CPU per queue, not the
// wall time per queue: a batch is decided on every core, so the wall
// time per queue meets it on an idle machine of enough cores whatever a
// decision costs.
const DecisionTargetNs = 5000

// DecideResult is the decision latency at one batch size.
type DecideResult struct {
	Queues  int `json:"queues"`
	Batches int `json:"batches"`
	// NsPerQueue is the wall time of a batch over its queues, the batch
	// spread over PolicyResult.Cores cores.
	NsPerQueue float64 `json:"ns_per_queue"`
	// CPUNsPerQueue is the process CPU per queue (a batch is decided on
	// every core, so it can exceed the wall time per queue): what
	// DecisionTargetNs is held against.
	CPUNsPerQueue float64 `json:"cpu_ns_per_queue"`
	// WithinTarget: CPUNsPerQueue is at most DecisionTargetNs (false
	// where the process's CPU time cannot be read: 0).
	WithinTarget bool    `json:"cpu_within_target"`
	BatchP50Ms   float64 `json:"batch_p50_ms"`
	BatchP99Ms   float64 `json:"batch_p99_ms"`
	AllocsBatch  float64 `json:"allocs_per_batch"`
}

// TrainResult is the training throughput, and the same episodes' as
// rollouts only.
type TrainResult struct {
	Algo          string  `json:"algo"`
	Episodes      int     `json:"episodes"`
	Workers       int     `json:"workers"`
	AgentSteps    uint64  `json:"agent_steps"`
	WallS         float64 `json:"wall_s"`
	CPUS          float64 `json:"cpu_s"`
	StepsPerSec   float64 `json:"agent_steps_per_s"`
	EpisodesPerS  float64 `json:"episodes_per_s"`
	RolloutSteps  uint64  `json:"rollout_agent_steps"`
	RolloutWallS  float64 `json:"rollout_wall_s"`
	RolloutPerSec float64 `json:"rollout_agent_steps_per_s"`
}

// PolicyResult is what "ecntune bench policy" reports.
type PolicyResult struct {
	Policy   string `json:"policy"`
	Scenario string `json:"scenario"`
	Pool     int    `json:"observation_pool"`
	// Cores is GOMAXPROCS, the cores a batch is decided on.
	Cores int `json:"cores"`
	// TargetCPUNsPerQueue is DecisionTargetNs.
	TargetCPUNsPerQueue float64        `json:"target_cpu_ns_per_queue"`
	Decide              []DecideResult `json:"decide"`
	Train               *TrainResult   `json:"train,omitempty"`
}

// RunPolicy times the policy's decisions on batches of real observations
// (from one episode of the scenario under a fixed setting), then, unless
// Episodes is 0, a short training run on the scenario and the same
// episodes as rollouts only.
func RunPolicy(o PolicyOptions) (*PolicyResult, error) {
	if len(o.Queues) == 0 {
		return nil, errors.New("--queues: give at least one batch size")
	}
	for _, n := range o.Queues {
		if n < 1 || n > 1_000_000 {
			return nil, fmt.Errorf("--queues %d: allowed 1..1000000", n)
		}
	}
	if o.MinTime < 0 {
		return nil, fmt.Errorf("--min-time %v: must not be negative", o.MinTime)
	}
	if o.Episodes < 0 || o.Workers < 1 {
		return nil, fmt.Errorf("--train-episodes %d / --workers %d: want >= 0 and >= 1", o.Episodes, o.Workers)
	}
	algo, err := Algo(o.ModelInfo, o.Algo, o.Spec)
	if err != nil {
		return nil, err
	}
	var sc scenario.Named
	if o.Scenario == BuiltinScenario {
		sc, err = LoadBuiltinScenario()
	} else {
		sc, err = scenario.LoadNamed(o.Scenario)
	}
	if err != nil {
		return nil, err
	}
	pool, err := observationPool(sc)
	if err != nil {
		return nil, err
	}
	r := &PolicyResult{Policy: o.Spec, Scenario: o.Scenario, Pool: len(pool), Cores: runtime.GOMAXPROCS(0), TargetCPUNsPerQueue: DecisionTargetNs}
	for _, n := range o.Queues {
		d, err := benchDecide(o.Resolver, o.Spec, pool, n, o.MinTime)
		if err != nil {
			return nil, err
		}
		r.Decide = append(r.Decide, d)
	}
	if o.Episodes > 0 {
		if r.Train, err = benchTrain(sc, algo, o.Episodes, o.Workers); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// observationPool runs the scenario under a fixed setting and keeps every
// valid observation, so that the decisions are timed on real inputs.
func observationPool(sc scenario.Named) ([]env.Observation, error) {
	e, err := gym.New(sc.Config, gym.Options{})
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if _, err := e.Reset(sc.Config.Seed); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	hold := make([]int, len(e.Keys()))
	var pool []env.Observation
	for {
		obs, _, done, _, err := e.Step(hold)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		for _, o := range obs {
			if o.Valid {
				o.Features = slices.Clone(o.Features)
				pool = append(pool, o)
			}
		}
		if done {
			break
		}
	}
	if len(pool) == 0 {
		return nil, fmt.Errorf("scenario %s: no valid observation in a whole episode", sc.Name)
	}
	return pool, nil
}

// decideBatch is n observations drawn round-robin from pool, each with its
// own queue key (64 queues per switch, two per port).
func decideBatch(pool []env.Observation, n int) []env.Observation {
	obs := make([]env.Observation, n)
	for i := range obs {
		obs[i] = pool[i%len(pool)]
		obs[i].Key = env.QueueKey{Target: "sw" + strconv.Itoa(i/64), Port: "Ethernet" + strconv.Itoa(i%64/2), Queue: 3 + i%2}
	}
	return obs
}

// benchDecide times Decide on batches of n observations drawn round-robin
// from pool (each with its own queue key) for at least minTime.
func benchDecide(res policy.Resolver, spec string, pool []env.Observation, n int, minTime time.Duration) (DecideResult, error) {
	p, err := res.Lookup(spec)
	if err != nil {
		return DecideResult{}, err
	}
	obs := decideBatch(pool, n)
	p.Decide(obs) // warm-up: lazy loading, first allocations
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	var lat []time.Duration
	start, cpu0 := time.Now(), cputime.Process()
	for len(lat) < 5 || time.Since(start) < minTime {
		t := time.Now()
		ds := p.Decide(obs)
		lat = append(lat, time.Since(t))
		if len(ds) != n {
			return DecideResult{}, fmt.Errorf("policy %s: %d decisions for %d observations", spec, len(ds), n)
		}
	}
	total, cpu := time.Since(start), cputime.Process()-cpu0
	runtime.ReadMemStats(&ms1)
	cpuPerQueue := float64(cpu.Nanoseconds()) / float64(len(lat)*n)
	return DecideResult{Queues: n, Batches: len(lat), NsPerQueue: float64(total.Nanoseconds()) / float64(len(lat)*n),
		CPUNsPerQueue: cpuPerQueue, WithinTarget: cpuPerQueue > 0 && cpuPerQueue <= DecisionTargetNs,
		BatchP50Ms: ms(percentile(lat, 50)), BatchP99Ms: ms(percentile(lat, 99)),
		AllocsBatch: float64(ms1.Mallocs-ms0.Mallocs) / float64(len(lat))}, nil
}

// LoadBuiltinScenario loads the embedded default scenario, with the
// flow-size CDF it names, laid out as in the repository.
func LoadBuiltinScenario() (scenario.Named, error) {
	const yml = "policy/builtin/scenarios/train-websearch.yaml"
	fsys := fstest.MapFS{yml: {Data: []byte(builtin.TrainWebsearchScenario)}}
	err := fs.WalkDir(cdf.Files, ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		data, err := fs.ReadFile(cdf.Files, p)
		fsys[path.Join("scenarios/cdf", p)] = &fstest.MapFile{Data: data}
		return err
	})
	var cfg simenv.Config
	if err == nil {
		cfg, err = scenario.ParseFS(fsys, yml)
	}
	if err != nil {
		return scenario.Named{}, fmt.Errorf("--scenario %s: %w", BuiltinScenario, err)
	}
	sum := sha256.Sum256([]byte(builtin.TrainWebsearchScenario))
	return scenario.Named{Name: cfg.Name, Path: BuiltinScenario, SHA256: hex.EncodeToString(sum[:]), Config: cfg}, nil
}

// Algo is the training algorithm of the throughput measurement: flag
// (--algo) when given, else the algorithm the policy under test was
// trained with (info's record for model:NAME, the embedded model's for
// builtin), else PPO (the built-in model's algorithm) for the policies
// that learn nothing.
func Algo(info func(ref string) (models.Model, error), flag, spec string) (string, error) {
	algo := strings.ToLower(strings.TrimSpace(flag))
	if algo == "" {
		prefix, arg, _ := strings.Cut(strings.TrimSpace(spec), ":")
		var m models.Model
		var err error
		switch prefix {
		case policy.KindBuiltin.Name:
			m, err = builtin.Model()
		case policy.KindModel.Name:
			m, err = modelInfo(info, arg)
		default:
			return train.AlgoPPO, nil
		}
		if err != nil {
			return "", err
		}
		if algo = m.Algorithm; algo != train.AlgoPPO && algo != train.AlgoDDQN {
			return "", fmt.Errorf("policy %s was trained with %q; give --algo ppo or --algo ddqn for the training measurement", spec, algo)
		}
		return algo, nil
	}
	if algo != train.AlgoPPO && algo != train.AlgoDDQN {
		return "", fmt.Errorf("--algo %q: want ppo or ddqn", flag)
	}
	return algo, nil
}

// modelInfo reads the metadata of the model of a "model:REF[:prefer=P]"
// spec's argument.
func modelInfo(info func(ref string) (models.Model, error), arg string) (models.Model, error) {
	ref, _, _, err := policy.SplitPreference(arg)
	if err != nil {
		return models.Model{}, err
	}
	if info == nil {
		return models.Model{}, fmt.Errorf("model %s: no model registry to read it from", ref)
	}
	return info(ref)
}

// benchTrain runs a short training with algo (train's default settings)
// and then the same number of episodes as rollouts only, acting with the
// trained network and learning nothing.
func benchTrain(sc scenario.Named, algo string, episodes, workers int) (*TrainResult, error) {
	cfg := train.Config{Algo: algo, Scenarios: []scenario.Named{sc}, Episodes: episodes, Workers: workers, Seed: 1}
	cpu0, start := cputime.Process(), time.Now()
	res, err := train.Run(cfg, train.Hooks{})
	if err != nil {
		return nil, err
	}
	wall, cpu := time.Since(start), cputime.Process()-cpu0
	if len(res.Curve) == 0 {
		return nil, errors.New("training ran no round")
	}
	steps := res.Curve[len(res.Curve)-1].Transitions
	tb := &TrainResult{Algo: cfg.Algo, Episodes: res.Episodes, Workers: workers, AgentSteps: steps, WallS: wall.Seconds(),
		CPUS: cpu.Seconds(), StepsPerSec: float64(steps) / wall.Seconds(), EpisodesPerS: float64(res.Episodes) / wall.Seconds()}

	learned, err := policy.NewLearned("bench", res.Net, env.DefaultCatalogue(), 0)
	if err != nil {
		return nil, err
	}
	start = time.Now()
	type out struct {
		steps uint64
		err   error
	}
	ch := make(chan out, episodes)
	sem := make(chan struct{}, workers)
	for ep := range episodes {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			c := &stepCounter{Policy: learned}
			_, err := eval.Play(eval.Scenario{Named: sc}, c, "bench", sc.Config.Seed+uint64(ep), train.DefaultInterval)
			ch <- out{c.steps, err}
		}()
	}
	for range episodes {
		o := <-ch
		if o.err != nil {
			return nil, o.err
		}
		tb.RolloutSteps += o.steps
	}
	tb.RolloutWallS = time.Since(start).Seconds()
	tb.RolloutPerSec = float64(tb.RolloutSteps) / tb.RolloutWallS
	return tb, nil
}

// stepCounter counts the agent steps (queue decisions) of the policy it
// wraps.
type stepCounter struct {
	policy.Policy
	steps uint64
}

func (c *stepCounter) Decide(obs []env.Observation) []policy.Decision {
	c.steps += uint64(len(obs))
	return c.Policy.Decide(obs)
}

// WriteJSON writes the result as indented JSON.
func (r *PolicyResult) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the decision latencies as a table and the training
// throughput as two lines.
func (r *PolicyResult) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "decisions of %s, batched, on %d observations of %s (each batch cycles through them):\n", r.Policy, r.Pool, r.Scenario)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "queues\tbatches\twall ns/queue\tCPU ns/queue\tbatch p50 ms\tbatch p99 ms\tallocs/batch\t")
	for _, d := range r.Decide {
		fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.0f\t%.2f\t%.2f\t%.0f\t\n", d.Queues, d.Batches, d.NsPerQueue, d.CPUNsPerQueue, d.BatchP50Ms, d.BatchP99Ms, d.AllocsBatch)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// the target against the CPU per queue: the wall per queue divides a
	// batch spread over every core, and meets it with idle cores
	fmt.Fprintf(w, "target: at most %.0f µs of CPU per queue decided; the wall per queue is a batch's time spread over %d cores (GOMAXPROCS), not the cost of a decision\n",
		r.TargetCPUNsPerQueue/1000, r.Cores)
	for _, d := range r.Decide {
		verdict := "within the target"
		switch {
		case d.CPUNsPerQueue <= 0:
			verdict = "the process's CPU time cannot be read here: not judged"
		case !d.WithinTarget:
			verdict = fmt.Sprintf("above the target (%.2fx)", d.CPUNsPerQueue/r.TargetCPUNsPerQueue)
		}
		fmt.Fprintf(w, "  %d queues: %.1f µs of CPU per queue (%.1f µs wall): %s\n", d.Queues, d.CPUNsPerQueue/1000, d.NsPerQueue/1000, verdict)
	}
	if t := r.Train; t != nil {
		fmt.Fprintf(w, "training (%s, %d episodes, %d workers): %d agent steps in %.1f s wall, %.1f s CPU = %.0f agent steps/s, %.2f episodes/s\n",
			t.Algo, t.Episodes, t.Workers, t.AgentSteps, t.WallS, t.CPUS, t.StepsPerSec, t.EpisodesPerS)
		fmt.Fprintf(w, "rollouts only (same episodes, no learning): %d agent steps in %.1f s = %.0f agent steps/s (learning costs %.1fx)\n",
			t.RolloutSteps, t.RolloutWallS, t.RolloutPerSec, t.RolloutPerSec/max(t.StepsPerSec, 1e-9))
	}
	return nil
}
