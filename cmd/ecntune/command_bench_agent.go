package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/cmd/ecntune/internal/bench"
)

// benchAgentOpts are the flags of "ecntune bench agent".
type benchAgentOpts struct {
	agent         bench.AgentOptions // the benchmark's, from its defaults
	serve, asJSON bool
	niceSwitches  bool
	mode, level   string
	cpuProfile    string
}

// newBenchAgentCmd builds the "bench agent" command (a fresh one per call,
// so tests get fresh flags).
func newBenchAgentCmd() *cobra.Command {
	o := benchAgentOpts{agent: bench.DefaultAgentOptions()}
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
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.addFlags(cmd)
	return cmd
}

// addFlags registers the flags of "ecntune bench agent" on cmd, defaulting
// to the benchmark's defaults.
func (o *benchAgentOpts) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&o.agent.Pods, "pods", o.agent.Pods, "independent leaf-spine pods")
	f.IntVar(&o.agent.Leaves, "leaves", o.agent.Leaves, "leaves per pod (= ports of a spine)")
	f.IntVar(&o.agent.Spines, "spines", o.agent.Spines, "spines per pod")
	f.IntVar(&o.agent.HostsPerLeaf, "hosts-per-leaf", o.agent.HostsPerLeaf, "hosts per leaf (a leaf has hosts + spines ports)")
	f.Float64Var(&o.agent.Load, "load", o.agent.Load, "offered load of each cdf workload (two per pod, priorities 3 and 4)")
	f.Float64Var(&o.agent.Timescale, "timescale", o.agent.Timescale, "wall seconds per simulated second")
	f.DurationVar(&o.agent.Step, "step", o.agent.Step, "wall time between simulation steps")
	f.Uint64Var(&o.agent.Seed, "seed", o.agent.Seed, "simulation seed")
	f.DurationVar(&o.agent.Interval, "interval", o.agent.Interval, "sample and control interval")
	f.IntVar(&o.agent.Intervals, "intervals", o.agent.Intervals, "intervals measured")
	f.IntVar(&o.agent.Warmup, "warmup", o.agent.Warmup, "intervals before the measurement (the first has no rates)")
	f.StringVar(&o.mode, "mode", string(o.agent.Mode), "agent mode: closed-loop or shadow")
	f.StringVar(&o.agent.Policy, "policy", o.agent.Policy, "policy: static:NAME, fixed:KMIN/KMAX/PMAX, schedule:..., adaptive, builtin[:prefer=P], model:NAME[:prefer=P], roles:host=SPEC;fabric=SPEC or rate:SPEC;RATE=SPEC (by port speed, e.g. rate:builtin;400G=builtin:400g)")
	f.StringVar(&o.agent.Encoding, "encoding", o.agent.Encoding, "telemetry encoding: json_ietf, json or proto")
	f.IntVar(&o.agent.ChangeBudget, "change-budget", o.agent.ChangeBudget, "guardrail change budget per interval")
	f.StringVar(&o.level, "log-level", "warn", "agent log level (to stderr): debug, info, warn or error")
	f.BoolVar(&o.asJSON, "json", false, "print JSON")
	f.BoolVar(&o.niceSwitches, "nice-switches", true, "run the simulated switches at the lowest CPU priority (nice 19), so the agent is not starved")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the agent process to this file")
	f.BoolVar(&o.serve, "serve", false, "internal: serve the fabric described in $"+bench.ServeEnv)
	f.MarkHidden("serve")
}

// run serves the fabric when it is the child (--serve), else runs the
// agent benchmark against a child serving it and reports.
func (o *benchAgentOpts) run(cmd *cobra.Command) error {
	tuneGCForAgent()
	if o.serve {
		// The child: the fabric described in $ECNTUNE_BENCH_AGENT_SERVE.
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return bench.ServeFabric(ctx, os.Stdin, cmd.OutOrStdout())
	}
	o.agent.Mode = config.Mode(o.mode)
	if err := o.agent.LogLevel.UnmarshalText([]byte(o.level)); err != nil {
		return fmt.Errorf("--log-level: %q is not debug, info, warn or error", o.level)
	}
	o.agent.Log = cmd.ErrOrStderr()
	o.agent.InitialECN = bench.InitialECN(o.agent.Policy)
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfile, err := startCPUProfile(o.cpuProfile, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer stopProfile()
	prog := newProgress(cmd.ErrOrStderr(), "bench agent", "intervals", int64(o.agent.Warmup+o.agent.Intervals))
	o.agent.Progress = benchAgentProgress(prog)
	r, err := bench.RunAgent(ctx, o.agent, bench.ChildCommand(ctx, o.niceSwitches, exe, "bench", "agent", "--serve"))
	prog.finish()
	if err != nil {
		return err
	}
	return writeReport(cmd.OutOrStdout(), r, o.asJSON)
}

// benchAgentProgress counts bench agent's intervals on prog, the time
// left measured from the agent's start (the switches' start-up is not
// the rate of its intervals).
func benchAgentProgress(prog *progress) func(done, total int) {
	return func(done, _ int) {
		if done == 0 {
			prog.begin(0)
			return
		}
		prog.set(int64(done))
	}
}
