package main

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

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/eval"
	"github.com/ecntune/ecntune/internal/cputime"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/policy/builtin"
	"github.com/ecntune/ecntune/policy/train"
	"github.com/ecntune/ecntune/scenarios/cdf"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/gym"
	"github.com/ecntune/ecntune/simenv/scenario"
)

// builtinBenchScenario is the default --scenario of "bench policy": the
// built-in model's policy/builtin/scenarios/train-websearch.yaml, embedded
// in the binary so that the command runs from any directory.
const builtinBenchScenario = "builtin:train-websearch"

// policyBenchOpts are the flags of "ecntune bench policy".
type policyBenchOpts struct {
	scenario string
	spec     string
	algo     string // "" follows the policy (benchAlgo)
	queues   []int
	minTime  time.Duration
	episodes int
	workers  int
	asJSON   bool
	db       string
}

type decideBench struct {
	Queues      int     `json:"queues"`
	Batches     int     `json:"batches"`
	NsPerQueue  float64 `json:"ns_per_queue"`
	BatchP50Ms  float64 `json:"batch_p50_ms"`
	BatchP99Ms  float64 `json:"batch_p99_ms"`
	AllocsBatch float64 `json:"allocs_per_batch"`
}

type trainBench struct {
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

type policyBenchResult struct {
	Policy   string        `json:"policy"`
	Scenario string        `json:"scenario"`
	Pool     int           `json:"observation_pool"`
	Decide   []decideBench `json:"decide"`
	Train    *trainBench   `json:"train,omitempty"`
}

// observationPool runs the scenario under a fixed setting and keeps every
// valid observation, so that the decisions are timed on real inputs.
func observationPool(sc train.Scenario) ([]env.Observation, error) {
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

// benchDecide times Decide on batches of n observations drawn round-robin
// from pool (each with its own queue key) for at least minTime.
func benchDecide(res policy.Resolver, spec string, pool []env.Observation, n int, minTime time.Duration) (decideBench, error) {
	p, err := res.Lookup(spec)
	if err != nil {
		return decideBench{}, err
	}
	obs := make([]env.Observation, n)
	for i := range obs {
		obs[i] = pool[i%len(pool)]
		obs[i].Key = env.QueueKey{Target: "sw" + strconv.Itoa(i/64), Port: "Ethernet" + strconv.Itoa(i%64/2), Queue: 3 + i%2}
	}
	p.Decide(obs) // warm-up: lazy loading, first allocations
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	var lat []time.Duration
	start := time.Now()
	for len(lat) < 5 || time.Since(start) < minTime {
		t := time.Now()
		ds := p.Decide(obs)
		lat = append(lat, time.Since(t))
		if len(ds) != n {
			return decideBench{}, fmt.Errorf("policy %s: %d decisions for %d observations", spec, len(ds), n)
		}
	}
	total := time.Since(start)
	runtime.ReadMemStats(&ms1)
	return decideBench{Queues: n, Batches: len(lat), NsPerQueue: float64(total.Nanoseconds()) / float64(len(lat)*n),
		BatchP50Ms: ms(percentile(lat, 50)), BatchP99Ms: ms(percentile(lat, 99)),
		AllocsBatch: float64(ms1.Mallocs-ms0.Mallocs) / float64(len(lat))}, nil
}

// loadBuiltinBenchScenario loads the embedded default scenario, with the
// flow-size CDF it names, laid out as in the repository.
func loadBuiltinBenchScenario() (train.Scenario, error) {
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
		return train.Scenario{}, fmt.Errorf("--scenario %s: %w", builtinBenchScenario, err)
	}
	sum := sha256.Sum256([]byte(builtin.TrainWebsearchScenario))
	return train.Scenario{Name: cfg.Name, Path: builtinBenchScenario, SHA256: hex.EncodeToString(sum[:]), Config: cfg}, nil
}

// benchAlgo is the training algorithm of the throughput measurement:
// --algo when given, else the algorithm the policy under test was trained
// with (the registry's record for model:NAME, the embedded model's for
// builtin), else PPO (the built-in model's algorithm) for the policies
// that learn nothing.
func benchAlgo(db, flag, spec string) (string, error) {
	algo := strings.ToLower(strings.TrimSpace(flag))
	if algo == "" {
		prefix, arg, _ := strings.Cut(strings.TrimSpace(spec), ":")
		var m models.Model
		var err error
		switch prefix {
		case "builtin":
			m, err = builtin.Model()
		case "model":
			m, err = registryModel(db, arg)
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

// registryModel reads the metadata of the model of a "model:REF[,prefer=P]"
// spec's argument from the model registry.
func registryModel(db, arg string) (models.Model, error) {
	ref, _, _, err := policy.SplitPreference(arg)
	if err != nil {
		return models.Model{}, err
	}
	var m models.Model
	err = withRegistry(modelsDBPath(db), models.Options{ReadOnly: true}, func(r *models.Registry) error {
		m, err = r.Info(ref) // metadata only: the algorithm is all that is needed
		return err
	})
	return m, err
}

// benchTrain runs a short training with algo (train's default settings)
// and then the same number of episodes as rollouts only, acting with the
// trained network and learning nothing.
func benchTrain(sc train.Scenario, algo string, episodes, workers int) (*trainBench, error) {
	cfg := train.Config{Algo: algo, Scenarios: []train.Scenario{sc}, Episodes: episodes, Workers: workers, Seed: 1}
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
	tb := &trainBench{Algo: cfg.Algo, Episodes: res.Episodes, Workers: workers, AgentSteps: steps, WallS: wall.Seconds(),
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
			_, err := eval.Play(eval.Scenario{Name: sc.Name, Config: sc.Config}, c, "bench", sc.Config.Seed+uint64(ep), train.DefaultInterval)
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

func runPolicyBench(o policyBenchOpts) (*policyBenchResult, error) {
	if len(o.queues) == 0 {
		return nil, errors.New("--queues: give at least one batch size")
	}
	for _, n := range o.queues {
		if n < 1 || n > 1_000_000 {
			return nil, fmt.Errorf("--queues %d: allowed 1..1000000", n)
		}
	}
	if o.episodes < 0 || o.workers < 1 {
		return nil, fmt.Errorf("--train-episodes %d / --workers %d: want >= 0 and >= 1", o.episodes, o.workers)
	}
	algo, err := benchAlgo(o.db, o.algo, o.spec)
	if err != nil {
		return nil, err
	}
	var sc train.Scenario
	if o.scenario == builtinBenchScenario {
		sc, err = loadBuiltinBenchScenario()
	} else {
		var scs []train.Scenario
		if scs, err = train.LoadScenarios([]string{o.scenario}); err == nil {
			sc = scs[0]
		}
	}
	if err != nil {
		return nil, err
	}
	pool, err := observationPool(sc)
	if err != nil {
		return nil, err
	}
	r := &policyBenchResult{Policy: o.spec, Scenario: o.scenario, Pool: len(pool)}
	for _, n := range o.queues {
		d, err := benchDecide(policyResolver(o.db), o.spec, pool, n, o.minTime)
		if err != nil {
			return nil, err
		}
		r.Decide = append(r.Decide, d)
	}
	if o.episodes > 0 {
		if r.Train, err = benchTrain(sc, algo, o.episodes, o.workers); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func printPolicyBench(w io.Writer, r *policyBenchResult) error {
	fmt.Fprintf(w, "decisions of %s, batched, on %d observations of %s (each batch cycles through them):\n", r.Policy, r.Pool, r.Scenario)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "queues\tbatches\tns/queue\tbatch p50 ms\tbatch p99 ms\tallocs/batch\t")
	for _, d := range r.Decide {
		fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.2f\t%.2f\t%.0f\t\n", d.Queues, d.Batches, d.NsPerQueue, d.BatchP50Ms, d.BatchP99Ms, d.AllocsBatch)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if t := r.Train; t != nil {
		fmt.Fprintf(w, "training (%s, %d episodes, %d workers): %d agent steps in %.1f s wall, %.1f s CPU = %.0f agent steps/s, %.2f episodes/s\n",
			t.Algo, t.Episodes, t.Workers, t.AgentSteps, t.WallS, t.CPUS, t.StepsPerSec, t.EpisodesPerS)
		fmt.Fprintf(w, "rollouts only (same episodes, no learning): %d agent steps in %.1f s = %.0f agent steps/s (learning costs %.1fx)\n",
			t.RolloutSteps, t.RolloutWallS, t.RolloutPerSec, t.RolloutPerSec/max(t.StepsPerSec, 1e-9))
	}
	return nil
}

func newBenchPolicyCmd() *cobra.Command {
	o := policyBenchOpts{scenario: builtinBenchScenario, spec: "builtin", queues: []int{1000, 10000},
		minTime: time.Second, episodes: 24, workers: runtime.GOMAXPROCS(0)}
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Decision latency per queue (batched) and training throughput (agent steps per second)",
		Long: `Time a policy's decisions on batches of real observations (taken from one episode of the
scenario), and a short training run on the scenario with the algorithm the policy was trained
with (PPO for builtin, the registry's record for model:NAME, PPO for policies that learn
nothing; --algo overrides it) and train's default settings, then the same episodes as rollouts
only, to show what learning costs. The default scenario is embedded in the binary.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := runPolicyBench(o)
			if err != nil {
				return err
			}
			if o.asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			return printPolicyBench(cmd.OutOrStdout(), r)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", o.scenario, "scenario FILE the observations and the training episodes come from; the default, "+
		builtinBenchScenario+", is the built-in model's policy/builtin/scenarios/train-websearch.yaml embedded in the binary")
	f.StringVar(&o.algo, "algo", "", "training algorithm of the throughput measurement, ppo or ddqn (default: the one the policy was trained with: "+
		"a model:NAME's recorded algorithm, ppo for builtin and for policies that learn nothing)")
	f.StringVar(&o.spec, "policy", o.spec, "policy spec to time (static:NAME, fixed:KMIN/KMAX/PMAX, schedule:..., adaptive, builtin[:prefer=P], model:NAME[,prefer=P])")
	f.IntSliceVar(&o.queues, "queues", o.queues, "batch sizes (queues per decision call)")
	f.DurationVar(&o.minTime, "min-time", o.minTime, "time each batch size for at least this long")
	f.IntVar(&o.episodes, "train-episodes", o.episodes, "episodes of the training measurement (0: skip it)")
	f.IntVar(&o.workers, "workers", o.workers, "episodes run in parallel in the training measurement")
	f.BoolVar(&o.asJSON, "json", false, "print the result as JSON")
	f.StringVar(&o.db, "db", "", "model registry for model:NAME (default $ECNTUNE_DB or "+modelsDefaultDB+")")
	return cmd
}

func init() { benchCmd.AddCommand(newBenchPolicyCmd()) }
