package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/scenario"
)

// ns3HopsPerSec is the speed of ns-3 HPCC on the fat-tree WebSearch 30% run
// on this kind of machine (one core), from the reference README.
const ns3HopsPerSec = 0.42e6

// benchCmd groups the speed and memory measurements; other packages add
// their own "bench X" subcommands to it.
var benchCmd = &cobra.Command{
	Use:   "bench",
	Short: "Measure speed and memory (simulator, decisions, training, agent)",
}

func init() {
	rootCmd.AddCommand(benchCmd)
	benchCmd.AddCommand(newBenchSimCmd())
}

type simBenchResult struct {
	Input         string  `json:"input"`
	Seed          uint64  `json:"seed"`
	SimTimeS      float64 `json:"sim_time_s"`
	ActiveSimS    float64 `json:"active_sim_time_s"` // from the first flow's start
	WallS         float64 `json:"wall_s"`
	PacketHops    uint64  `json:"packet_hops"`
	Events        uint64  `json:"events"`
	HopsPerSec    float64 `json:"packet_hops_per_s"`
	VsNS3         float64 `json:"speed_vs_ns3"`
	WallPerSimSec float64 `json:"wall_s_per_sim_s"`
	Flows         int     `json:"flows"`
	Finished      int     `json:"finished"`
}

func newBenchSimCmd() *cobra.Command {
	var (
		scenarioPath, hpccPath string
		cpuProfile             string
		parallel, runs         int
		seed                   uint64
		asJSON                 bool
	)
	cmd := &cobra.Command{
		Use:   "sim (--scenario FILE | --hpcc-config FILE)",
		Short: "Simulator speed: packet-hops per second, wall per simulated second, peak memory",
		Long: `Run the simulator on a scenario (default scenarios/websearch-50.yaml) or an ns-3 HPCC config
(e.g. ../shared/reference/ns3-hpcc/config_fat_ws30_dcqcn.txt, the reference for speed) and report
packet-hops per wall second, the ratio to ns-3 HPCC's 0.42 M/s on this kind of machine, wall time per
simulated second, events, and the process's peak resident memory. --runs N runs N seeds, --parallel P
of them at once (one Sim per goroutine), to show that independent runs use every core.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			load := func() (simenv.Config, string, error) {
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
			cfg, input, err := load()
			if err != nil {
				return err
			}
			if runs < 1 || parallel < 1 {
				return fmt.Errorf("--runs and --parallel must be at least 1")
			}
			if _, err := simenv.New(cfg); err != nil {
				return fmt.Errorf("%s: %w", input, err)
			}
			stopProfile, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stopProfile()
			results := make([]simBenchResult, runs)
			sem := make(chan struct{}, parallel)
			var wg sync.WaitGroup
			t0 := time.Now()
			for i := 0; i < runs; i++ {
				wg.Add(1)
				sem <- struct{}{}
				go func(i int) {
					defer wg.Done()
					defer func() { <-sem }()
					c := cfg
					if cmd.Flags().Changed("seed") || runs > 1 {
						c.Seed = seed + uint64(i)
					}
					results[i] = benchOne(c, input)
				}(i)
			}
			wg.Wait()
			total := time.Since(t0)
			var hops uint64
			for _, r := range results {
				hops += r.PacketHops
			}
			peak := peakRSSBytes()
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{
					"runs": results, "parallel": parallel, "total_wall_s": total.Seconds(),
					"aggregate_packet_hops_per_s": float64(hops) / total.Seconds(),
					"peak_rss_bytes":              peak, "cores": runtime.NumCPU(),
				})
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(w, "seed\tsim time\twall\tpacket-hops\tM hops/s\tx ns-3\twall/sim s\tevents/hop\tfinished\t")
			for _, r := range results {
				fmt.Fprintf(w, "%d\t%.3f ms\t%.2f s\t%d\t%.2f\t%.1f\t%.0f\t%.2f\t%d/%d\t\n", r.Seed, r.ActiveSimS*1e3, r.WallS,
					r.PacketHops, r.HopsPerSec/1e6, r.VsNS3, r.WallPerSimSec, float64(r.Events)/float64(max(r.PacketHops, 1)), r.Finished, r.Flows)
			}
			w.Flush()
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d run(s), %d at a time on %d cores: %.2f s wall, aggregate %.2f M packet-hops/s (%.1fx ns-3's one-core speed); peak RSS %.0f MB\n",
				input, runs, parallel, runtime.NumCPU(), total.Seconds(), float64(hops)/total.Seconds()/1e6,
				float64(hops)/total.Seconds()/ns3HopsPerSec, float64(peak)/1e6)
			return nil
		},
	}
	cmd.Flags().StringVar(&scenarioPath, "scenario", "", "YAML scenario (default scenarios/websearch-50.yaml)")
	cmd.Flags().StringVar(&hpccPath, "hpcc-config", "", "ns-3 HPCC config file")
	cmd.Flags().IntVar(&runs, "runs", 1, "independent runs (seeds seed, seed+1, ...)")
	cmd.Flags().IntVar(&parallel, "parallel", 1, "runs at once")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "first seed")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the runs to this file")
	return cmd
}

// startCPUProfile starts a pprof CPU profile into path ("" does nothing) and
// returns the function that stops it and closes the file.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func benchOne(c simenv.Config, input string) simBenchResult {
	s, _ := simenv.New(c) // validated by the caller
	t0 := time.Now()
	s.Run()
	wall := time.Since(t0)
	st := s.Stats()
	flows := s.Flows()
	first := st.Now
	finished := 0
	for _, f := range flows {
		first = min(first, f.Start)
		if f.Finish != 0 {
			finished++
		}
	}
	active := (st.Now - first).Seconds()
	r := simBenchResult{Input: input, Seed: c.Seed, SimTimeS: st.Now.Seconds(), ActiveSimS: active, WallS: wall.Seconds(),
		PacketHops: st.PacketHops, Events: st.Events, Flows: len(flows), Finished: finished}
	r.HopsPerSec = float64(st.PacketHops) / wall.Seconds()
	r.VsNS3 = r.HopsPerSec / ns3HopsPerSec
	if active > 0 {
		r.WallPerSimSec = wall.Seconds() / active
	}
	return r
}

// peakRSSBytes reads the process's peak resident set (VmHWM) on Linux, and
// falls back to the Go runtime's view elsewhere.
func peakRSSBytes() uint64 {
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
				fields := strings.Fields(rest)
				if len(fields) >= 1 {
					if kb, err := strconv.ParseUint(fields[0], 10, 64); err == nil {
						return kb * 1024
					}
				}
			}
		}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Sys
}
