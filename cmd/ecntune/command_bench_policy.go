package main

import (
	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/cmd/ecntune/internal/bench"
)

func newBenchPolicyCmd() *cobra.Command {
	o := bench.DefaultPolicyOptions()
	var (
		db     string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Decision latency per queue (batched) and training throughput (agent steps per second)",
		Long: `Time a policy's decisions on batches of real observations (taken from one episode of the
scenario), and a short training run on the scenario with the algorithm the policy was trained
with (PPO for builtin, the registry's record for model:NAME, PPO for policies that learn
nothing; --algo overrides it) and train's default settings, then the same episodes as rollouts
only, to show what learning costs. The default scenario is embedded in the binary.
A decision's cost is the CPU per queue: the decision cost target, at most 5 µs per queue,
is judged on it (and said when it is above); the wall time per queue beside it is a batch's
time spread over every core (GOMAXPROCS), which meets the target on idle cores.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Resolver, o.ModelInfo = policyResolver(db), registryModelInfo(db)
			r, err := bench.RunPolicy(o)
			if err != nil {
				return err
			}
			return writeReport(cmd.OutOrStdout(), r, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Scenario, "scenario", o.Scenario, "scenario FILE the observations and the training episodes come from; the default, "+
		bench.BuiltinScenario+", is the built-in model's policy/builtin/scenarios/train-websearch.yaml embedded in the binary")
	f.StringVar(&o.Algo, "algo", "", "training algorithm of the throughput measurement, ppo or ddqn (default: the one the policy was trained with: "+
		"a model:NAME's recorded algorithm, ppo for builtin and for policies that learn nothing)")
	f.StringVar(&o.Spec, "policy", o.Spec, "policy spec to time (static:NAME, fixed:KMIN/KMAX/PMAX, schedule:..., adaptive, builtin[:prefer=P], model:NAME[:prefer=P], roles:host=SPEC;fabric=SPEC, rate:SPEC;RATE=SPEC)")
	f.IntSliceVar(&o.Queues, "queues", o.Queues, "batch sizes (queues per decision call)")
	f.DurationVar(&o.MinTime, "min-time", o.MinTime, "time each batch size for at least this long")
	f.IntVar(&o.Episodes, "train-episodes", o.Episodes, "episodes of the training measurement (0: skip it)")
	f.IntVar(&o.Workers, "workers", o.Workers, "episodes run in parallel in the training measurement")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.StringVar(&db, "db", "", "model registry for model:NAME (default $ECNTUNE_DB or "+modelsDefaultDB+")")
	return cmd
}
