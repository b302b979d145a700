package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/cmd/ecntune/internal/bench"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/scenario"
)

func newBenchSimCmd() *cobra.Command {
	var (
		scenarioPath, hpccPath string
		cpuProfile             string
		o                      bench.SimOptions
		asJSON                 bool
	)
	cmd := &cobra.Command{
		Use:   "sim (--scenario FILE | --hpcc-config FILE)",
		Short: "Simulator speed: packet-hops per second, wall per simulated second, peak memory",
		Long: `Run the simulator on a scenario (default scenarios/websearch-50.yaml) or an ns-3 HPCC config
(e.g. ../shared/reference/ns3-hpcc/config_fat_ws30_dcqcn.txt, the reference for speed) and report
packet-hops per wall second and, one run at a time, per CPU second (steadier than wall time on a loaded
machine), wall time per simulated second, events, and the process's peak resident memory. On the
reference run (config_fat_ws30_dcqcn.txt) it gives the ratio to ns-3 HPCC's 0.42 M/s on one core of this
kind of machine; speed depends on the scenario, so elsewhere it gives none. --runs N runs N seeds (one
at a time: the median and range per CPU second), --parallel P of them at once (one Sim per goroutine),
to show that independent runs use every core.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Config, o.Input, err = loadBenchSimInput(scenarioPath, hpccPath); err != nil {
				return err
			}
			o.Reseed = cmd.Flags().Changed("seed") || o.Runs > 1
			prog := newLazyProgress(cmd.ErrOrStderr(), "bench sim", "µs simulated over all runs")
			o.Progress = prog.set
			defer func() { prog.finish() }()
			b, err := bench.NewSim(o)
			if err != nil {
				return err
			}
			stopProfile, err := startCPUProfile(cpuProfile, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer stopProfile()
			r := b.Run()
			return writeReport(cmd.OutOrStdout(), r, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&scenarioPath, "scenario", "", "YAML scenario (default scenarios/websearch-50.yaml)")
	f.StringVar(&hpccPath, "hpcc-config", "", "ns-3 HPCC config file")
	f.IntVar(&o.Runs, "runs", 1, "independent runs (seeds seed, seed+1, ...)")
	f.IntVar(&o.Parallel, "parallel", 1, "runs at once")
	f.Uint64Var(&o.Seed, "seed", 1, "first seed")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the runs to this file")
	return cmd
}

// loadBenchSimInput loads --scenario (default scenarios/websearch-50.yaml)
// or --hpcc-config, and says which file it was.
func loadBenchSimInput(scenarioPath, hpccPath string) (simenv.Config, string, error) {
	switch {
	case scenarioPath != "" && hpccPath != "":
		return simenv.Config{}, "", fmt.Errorf("--scenario and --hpcc-config both given; give exactly one")
	case hpccPath != "":
		c, err := scenario.LoadHPCCConfig(hpccPath)
		return c, hpccPath, err
	default:
		p := scenarioPath
		if p == "" {
			p = "scenarios/websearch-50.yaml"
		}
		c, err := scenario.Load(p)
		return c, p, err
	}
}
