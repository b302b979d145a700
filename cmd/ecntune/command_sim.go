package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/report"
	"github.com/ecntune/ecntune/simenv/scenario"
)

// simChunks is how many RunUntil steps a run is cut into, for the progress
// bar.
const simChunks = 200

// newSimCmd builds the "sim" command (a fresh one per call, so tests get
// fresh flags).
func newSimCmd() *cobra.Command {
	var (
		scenarioPath, hpccPath, duration, fctOut, reportDir string
		seed                                                uint64
		asJSON                                              bool
	)
	cmd := &cobra.Command{
		Use:   "sim (--scenario FILE | --hpcc-config FILE)",
		Short: "Run the fabric simulator on a scenario and summarise the run",
		Long: `Run the packet-level fabric simulator on a YAML scenario (scenarios/*.yaml) or on an
ns-3 HPCC config file (config_*.txt with its topology and flow files), until the scenario's
duration or until no traffic is left, and print a summary: FCT slowdown per flow-size bucket,
utilisation, goodput, ECN marks, PFC pauses, drops, and the simulator's speed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg simenv.Config
			var err error
			switch {
			case scenarioPath != "" && hpccPath != "":
				return fmt.Errorf("--scenario and --hpcc-config both given; give exactly one")
			case scenarioPath != "":
				cfg, err = scenario.Load(scenarioPath)
			case hpccPath != "":
				var ignored []string
				cfg, ignored, err = scenario.LoadHPCCConfigWarn(hpccPath)
				for _, w := range ignored {
					fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
				}
			default:
				return fmt.Errorf("no input: give --scenario FILE (YAML) or --hpcc-config FILE (ns-3 HPCC config)")
			}
			if err != nil {
				return err
			}
			warnAll(cmd.ErrOrStderr(), cfg.Name, scenario.Warnings(cfg))
			if cmd.Flags().Changed("seed") {
				cfg.Seed = seed
			}
			if cmd.Flags().Changed("duration") {
				d, err := positiveSimTime("duration", duration)
				if err != nil {
					return err
				}
				cfg.Duration = d
			}
			var fct *os.File
			if fctOut != "" {
				// Open it now, so that a bad path fails before a long run.
				if fct, err = os.Create(fctOut); err != nil {
					return fmt.Errorf("--fct-out: %w", err)
				}
				defer fct.Close()
			}
			sim, err := simenv.New(cfg)
			if err != nil {
				return fmt.Errorf("%s: %w", cfg.Name, err)
			}
			prog := newProgress(cmd.ErrOrStderr(), "simulating "+cfg.Name, "µs simulated", int64(cfg.Duration/simenv.Microsecond))
			ecn := report.ECNInEffect(sim)
			var trace *report.Trace
			if reportDir != "" {
				trace = report.NewTrace(sim)
			}
			begin := time.Now()
			runChunked(sim, cfg.Duration, func(now simenv.Time) {
				prog.set(int64(now / simenv.Microsecond))
				if trace != nil {
					trace.Sample(sim)
				}
			})
			wall := time.Since(begin)
			prog.finish()
			sum := report.Summarize(sim.Flows(), sim.Stats(), wall)
			sum.Collectives = report.Collectives(sim.Collectives(), cfg.Workloads)
			sum.Scenario, sum.Seed, sum.ECN = cfg.Name, cfg.Seed, ecn
			if fct != nil {
				if err := report.WriteFCT(fct, sim.Flows()); err != nil {
					return fmt.Errorf("--fct-out: %w", err)
				}
				if err := fct.Close(); err != nil {
					return fmt.Errorf("--fct-out: %w", err)
				}
				fmt.Fprintln(cmd.ErrOrStderr(), "wrote", fctOut)
			}
			if err := writeReport(cmd.OutOrStdout(), sum, asJSON); err != nil {
				return err
			}
			if trace != nil {
				files, err := trace.WriteHTML(reportDir, sum)
				if err != nil {
					return fmt.Errorf("--report: %w", err)
				}
				for _, f := range files {
					fmt.Fprintln(cmd.ErrOrStderr(), "wrote", f)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&scenarioPath, "scenario", "", "YAML scenario file (e.g. scenarios/websearch-50.yaml)")
	f.StringVar(&reportDir, "report", "", "write an HTML report with heatmaps of every lossless queue over time (peak depth, ECN marks, PFC paused time) into DIR")
	f.StringVar(&hpccPath, "hpcc-config", "", "ns-3 HPCC config file (config_*.txt); its file names are relative to it")
	f.Uint64Var(&seed, "seed", 0, "random seed (default: the scenario's)")
	f.StringVar(&duration, "duration", "", "simulated time to run, e.g. 5ms (default: the scenario's)")
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	f.StringVar(&fctOut, "fct-out", "", "write finished flows to FILE in the ns-3 HPCC fct format")
	return cmd
}

// runChunked advances sim to end in simChunks steps, or until it is idle,
// calling progress after each step.
func runChunked(sim *simenv.Sim, end simenv.Time, progress func(simenv.Time)) {
	step := max(end/simChunks, simenv.Microsecond)
	for t := simenv.Time(0); t < end && !sim.Idle(); {
		t = min(t+step, end)
		sim.RunUntil(t)
		progress(t)
	}
}
