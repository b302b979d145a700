package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/internal/bench"
)

func newBenchAgentCmd() *cobra.Command {
	o := bench.DefaultAgentOptions()
	var (
		serve, asJSON bool
		niceSwitches  bool
		mode, level   string
		cpuProfile    string
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Agent scale over gNMI: CPU and heap per 1,000 queues, decision and Set latency",
		Long: `Serve a generated fabric of simulated switches over gNMI on 127.0.0.1 (in a child process of this
binary, so that this process's CPU time and heap are the agent's alone), run the agent against every
switch at --interval, and report the queues under control, the agent's CPU time per interval (per
1,000 queues), its live Go heap, the decision latency (observations to the guard's plan) and the
latency of its gNMI Sets and read-back Gets, with a verdict against the goal of 10,000 queues per
agent in under half a core.

The default fabric is 2 pods of 32 leaves x 18 spines with 14 hosts per leaf: 100 switches of 32
ports each, 2 lossless queues (priorities 3 and 4) per port, 6,400 queues, light cdf traffic. The
switches start at 1.5x the thresholds of the static policy's preset, so that in closed loop every
queue wants one change, made --change-budget queues per interval (default 64, the guardrails'
default). The simulated switches run at nice 19 (--nice-switches) so that on a small machine they,
not the agent, fall behind; their Set latency then includes waiting for the CPU.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tuneGCForAgent()
			if serve {
				// The child: the fabric described in $ECNTUNE_BENCH_AGENT_SERVE.
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				return bench.ServeFabric(ctx, os.Stdin, cmd.OutOrStdout())
			}
			o.Mode = config.Mode(mode)
			if err := o.LogLevel.UnmarshalText([]byte(level)); err != nil {
				return fmt.Errorf("--log-level: %q is not debug, info, warn or error", level)
			}
			o.Log = cmd.ErrOrStderr()
			o.InitialECN = bench.InitialECN(o.Policy)
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			stopProfile, err := startCPUProfile(cpuProfile, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer stopProfile()
			stopProgress := progressOverTime(cmd.ErrOrStderr(), "bench agent", time.Duration(o.Warmup+o.Intervals)*o.Interval)
			r, err := bench.RunAgent(ctx, o, bench.ChildCommand(ctx, niceSwitches, exe, "bench", "agent", "--serve"))
			stopProgress()
			if err != nil {
				return err
			}
			return writeReport(cmd.OutOrStdout(), r, asJSON)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Pods, "pods", o.Pods, "independent leaf-spine pods")
	f.IntVar(&o.Leaves, "leaves", o.Leaves, "leaves per pod (= ports of a spine)")
	f.IntVar(&o.Spines, "spines", o.Spines, "spines per pod")
	f.IntVar(&o.HostsPerLeaf, "hosts-per-leaf", o.HostsPerLeaf, "hosts per leaf (a leaf has hosts + spines ports)")
	f.Float64Var(&o.Load, "load", o.Load, "offered load of each cdf workload (two per pod, priorities 3 and 4)")
	f.Float64Var(&o.Timescale, "timescale", o.Timescale, "wall seconds per simulated second")
	f.DurationVar(&o.Step, "step", o.Step, "wall time between simulation steps")
	f.Uint64Var(&o.Seed, "seed", o.Seed, "simulation seed")
	f.DurationVar(&o.Interval, "interval", o.Interval, "sample and control interval")
	f.IntVar(&o.Intervals, "intervals", o.Intervals, "intervals measured")
	f.IntVar(&o.Warmup, "warmup", o.Warmup, "intervals before the measurement (the first has no rates)")
	f.StringVar(&mode, "mode", string(o.Mode), "agent mode: closed-loop or shadow")
	f.StringVar(&o.Policy, "policy", o.Policy, "policy: static:NAME, fixed:KMIN/KMAX/PMAX, schedule:..., adaptive, builtin[:prefer=P], model:NAME[:prefer=P] or roles:host=SPEC;fabric=SPEC")
	f.StringVar(&o.Encoding, "encoding", o.Encoding, "telemetry encoding: json_ietf, json or proto")
	f.IntVar(&o.ChangeBudget, "change-budget", o.ChangeBudget, "guardrail change budget per interval")
	f.StringVar(&level, "log-level", "warn", "agent log level (to stderr): debug, info, warn or error")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.BoolVar(&niceSwitches, "nice-switches", true, "run the simulated switches at the lowest CPU priority (nice 19), so the agent is not starved")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the agent process to this file")
	f.BoolVar(&serve, "serve", false, "internal: serve the fabric described in $"+bench.ServeEnv)
	f.MarkHidden("serve")
	return cmd
}
