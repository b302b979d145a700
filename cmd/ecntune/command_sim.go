package main

import (
	"fmt"
	"math"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/report"
	"github.com/ecntune/ecntune/simenv/scenario"
)

// simChunks is how many RunUntil steps a run is cut into, for the progress
// bar.
const simChunks = 200

// simOpts are the flags of "ecntune sim".
type simOpts struct {
	scenarioPath, hpccPath, duration, fctOut, reportDir string
	seed                                                uint64
	asJSON                                              bool
}

// newSimCmd builds the "sim" command (a fresh one per call, so tests get
// fresh flags).
func newSimCmd() *cobra.Command {
	var o simOpts
	cmd := &cobra.Command{
		Use:   "sim (--scenario FILE | --hpcc-config FILE)",
		Short: "Run the fabric simulator on a scenario and summarise the run",
		Long: `Run the packet-level fabric simulator on a YAML scenario (scenarios/*.yaml) or on an
ns-3 HPCC config file (config_*.txt with its topology and flow files), until the scenario's
duration or until no traffic is left, and print a summary: FCT slowdown per flow-size bucket,
utilisation, goodput, ECN marks, PFC pauses, drops, and the simulator's speed. The summary
counts every flow: a scenario's warmup (which eval leaves out of its figures) is not applied,
and sim says so.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.addFlags(cmd)
	return cmd
}

// addFlags registers the flags of "ecntune sim" on cmd.
func (o *simOpts) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.scenarioPath, "scenario", "", "YAML scenario file (e.g. scenarios/websearch-50.yaml)")
	f.StringVar(&o.reportDir, "report", "", "write an HTML report with heatmaps of every lossless queue over time (peak depth, ECN marks, PFC paused or pausing time) into DIR")
	f.StringVar(&o.hpccPath, "hpcc-config", "", "ns-3 HPCC config file (config_*.txt); its file names are relative to it")
	f.Uint64Var(&o.seed, "seed", 0, "random seed (default: the scenario's)")
	f.StringVar(&o.duration, "duration", "", "simulated time to run, e.g. 5ms (default: the scenario's)")
	f.BoolVar(&o.asJSON, "json", false, "print the summary as JSON")
	f.StringVar(&o.fctOut, "fct-out", "", "write finished flows to FILE in the ns-3 HPCC fct format")
}

// run simulates the scenario, then writes the --fct-out file, the summary
// and the --report.
func (o *simOpts) run(cmd *cobra.Command) error {
	cfg, err := o.config(cmd)
	if err != nil {
		return err
	}
	if err := notAnInput("fct-out", o.fctOut, o.scenarioPath, o.hpccPath); err != nil {
		return err
	}
	if o.reportDir != "" {
		// before the run, not after it: the report is written last
		if err := checkOutPath("report", o.reportDir, "the report"); err != nil {
			return err
		}
	}
	var fct *os.File
	if o.fctOut != "" {
		// Open it now, so that a bad path fails before a long run.
		if fct, err = os.Create(o.fctOut); err != nil {
			return fmt.Errorf("--fct-out: %w", err)
		}
		defer fct.Close()
	}
	sim, err := simenv.New(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.Name, err)
	}
	sum, trace := o.simulate(cmd, sim, cfg)
	if fct != nil {
		if err := report.WriteFCT(fct, sim.Flows()); err != nil {
			return fmt.Errorf("--fct-out: %w", err)
		}
		if err := fct.Close(); err != nil {
			return fmt.Errorf("--fct-out: %w", err)
		}
		fmt.Fprintln(cmd.ErrOrStderr(), "wrote", o.fctOut)
	}
	if err := writeReport(cmd.OutOrStdout(), sum, o.asJSON); err != nil {
		return err
	}
	if sim.Stats().FlowsStarted == 0 {
		for _, w := range noFlowNotes(sim, cfg) {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
		}
	} else if note := warmupNote(cfg, sim.Flows()); note != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: %s: %s\n", cfg.Name, note)
	}
	if trace != nil {
		files, err := trace.WriteHTML(o.reportDir, sum)
		if err != nil {
			return fmt.Errorf("--report: %w", err)
		}
		for _, f := range files {
			fmt.Fprintln(cmd.ErrOrStderr(), "wrote", f)
		}
	}
	return nil
}

// config loads the --scenario or --hpcc-config scenario, warns about it on
// stderr, and applies --seed and --duration.
func (o *simOpts) config(cmd *cobra.Command) (simenv.Config, error) {
	var cfg simenv.Config
	var err error
	switch {
	case o.scenarioPath != "" && o.hpccPath != "":
		return cfg, fmt.Errorf("--scenario and --hpcc-config both given; give exactly one")
	case o.scenarioPath != "":
		cfg, err = scenario.Load(o.scenarioPath)
	case o.hpccPath != "":
		var ignored []string
		cfg, ignored, err = scenario.LoadHPCCConfigWarn(o.hpccPath)
		for _, w := range ignored {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
		}
	default:
		return cfg, fmt.Errorf("no input: give --scenario FILE (YAML) or --hpcc-config FILE (ns-3 HPCC config)")
	}
	if err != nil {
		return cfg, err
	}
	warnAll(cmd.ErrOrStderr(), cfg.Name, scenario.Warnings(cfg))
	if cmd.Flags().Changed("seed") {
		cfg.Seed = o.seed
	}
	if cmd.Flags().Changed("duration") {
		d, err := positiveSimTime("duration", o.duration)
		if err != nil {
			return cfg, err
		}
		cfg.Duration = d
		if note := traceStartNote(cfg); note != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning:", note)
		} else if notes := pastEndNotes(cfg); len(notes) < len(cfg.Workloads) {
			// (none runs: noFlowNotes says so after the run, with why)
			warnAll(cmd.ErrOrStderr(), cfg.Name, notes)
		}
	}
	return cfg, nil
}

// pastEndNotes says which of cfg's workloads start when its run, cut
// short by --duration, has ended, and so never run: in the scenario file
// such a workload is an error, and the figures would be of the other
// workloads under the scenario's name.
func pastEndNotes(cfg simenv.Config) []string {
	var out []string
	for i, w := range cfg.Workloads {
		start := w.Start
		if w.Kind == simenv.WorkloadTrace && len(w.Flows) > 0 {
			start += w.Flows[0].Start // in start-time order
		}
		if start >= cfg.Duration {
			out = append(out, fmt.Sprintf("workloads[%d] (%s) starts at %v, when the %v run has ended: it never runs (give --duration above %v)",
				i, w.Kind, start, cfg.Duration, start))
		}
	}
	return out
}

// warmupNote says that sim does not apply cfg's warmup (a twin's lead-in),
// which eval does, and what its figures count instead ("" without a
// warmup).
func warmupNote(cfg simenv.Config, flows []simenv.FlowRecord) string {
	if cfg.Warmup <= 0 {
		return ""
	}
	before := 0
	for _, f := range flows {
		if f.Start < cfg.Warmup {
			before++
		}
	}
	return fmt.Sprintf("the scenario's warmup %v is not applied by sim: its figures count all %d flows, %d of which started before it (eval leaves those out)",
		cfg.Warmup, len(flows), before)
}

// scheduleEndNotes says which entries of a schedule: policy start when
// runs of d (--duration) have ended, and so never apply; nil for another
// kind of policy.
func scheduleEndNotes(spec string, d simenv.Time) []string {
	sp, err := policy.ParseSpec(spec)
	if err != nil || sp.Kind != policy.KindSchedule {
		return nil // errors are said where the policy is resolved
	}
	var out []string
	for i, e := range sp.Entries {
		if simenv.FromDuration(e.Offset) >= d {
			out = append(out, fmt.Sprintf("entry %d (at %s) starts when the %v runs (--duration) have ended: it never applies", i+1, e.At, d))
		}
	}
	return out
}

// traceStartNote says, when every flow of cfg's flow files starts after
// its duration, when the first does and what duration reaches it ("" when
// a flow starts in time, or cfg has other traffic).
func traceStartNote(cfg simenv.Config) string {
	first, last, traced := simenv.Time(-1), simenv.Time(0), false
	for _, w := range cfg.Workloads {
		if w.Kind != simenv.WorkloadTrace {
			return ""
		}
		for _, f := range w.Flows {
			at := w.Start + f.Start
			if first < 0 || at < first {
				first = at
			}
			last, traced = max(last, at), true
		}
	}
	if !traced || first < cfg.Duration {
		return ""
	}
	lastNote := ""
	if last > first {
		lastNote = fmt.Sprintf("; the last flow starts at %v", last)
	}
	return fmt.Sprintf("the flow file's first flow starts at %v, after --duration %v ends: no flow starts "+
		"(give --duration %v or more to run it%s)", first, cfg.Duration, first+simenv.Millisecond, lastNote)
}

// noFlowNotes says that a run of cfg started no flow, and why each of its
// workloads could not: it starts after the run, or (cdf) its load is too
// low for the time it has, with the flows it expects.
func noFlowNotes(sim *simenv.Sim, cfg simenv.Config) []string {
	out := []string{fmt.Sprintf("no flow started in the %v run of %s: its figures are of an idle fabric", cfg.Duration, cfg.Name)}
	for i, w := range cfg.Workloads {
		end := cfg.Duration
		if w.End > 0 && w.End < end {
			end = w.End
		}
		what := fmt.Sprintf("workloads[%d] (%s)", i, w.Kind)
		switch rate := sim.FlowArrivalRate(i); {
		case w.Start >= cfg.Duration:
			out = append(out, fmt.Sprintf("%s starts at %v, when the run has ended (give --duration above %v)", what, w.Start, w.Start))
		case end <= w.Start:
			out = append(out, fmt.Sprintf("%s ends at %v, before it starts at %v", what, end, w.Start))
		case w.Kind == simenv.WorkloadCDF && rate > 0:
			window := end - w.Start
			need := simenv.FromDuration(time.Duration(math.Min(3/rate, 1e6) * 1e9)) // about 3 flows
			fix := fmt.Sprintf("raise its load, or give it %v for about 3 flows: --duration %v", need, w.Start+need)
			if w.End > 0 && w.End < cfg.Duration {
				fix = fmt.Sprintf("raise its load, or give it %v for about 3 flows: end at %v", need, w.Start+need)
				if w.Start+need > cfg.Duration {
					fix += fmt.Sprintf(" and --duration %v", w.Start+need)
				}
			}
			out = append(out, fmt.Sprintf("%s at load %g starts %.3g flows/s of %s on average: %.2g expected in its %v, too few to count on (%s)",
				what, w.Load, rate, units.FormatBytes(int64(simenv.CDFMean(w.CDF))), rate*window.Seconds(), window, fix))
		default:
			out = append(out, fmt.Sprintf("%s started no flow between %v and %v", what, w.Start, end))
		}
	}
	return out
}

// simulate runs sim for cfg's duration with a progress bar on stderr,
// sampling a trace of the lossless queues for --report, and summarises
// the run.
func (o *simOpts) simulate(cmd *cobra.Command, sim *simenv.Sim, cfg simenv.Config) (report.Summary, *report.Trace) {
	prog := newProgress(cmd.ErrOrStderr(), "simulating "+cfg.Name, "µs simulated", int64(cfg.Duration/simenv.Microsecond))
	ecn := report.ECNInEffect(sim)
	var trace *report.Trace
	if o.reportDir != "" {
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
	sum.Scenario, sum.Seed, sum.ECN, sum.ECNOff = cfg.Name, cfg.Seed, ecn, cfg.ECNOff
	return sum, trace
}

// runChunked runs sim as Sim.Run does (to end, its Duration, in 100 us
// steps, skipping idle stretches, stopping once it is idle), calling
// progress about simChunks times and once at the end. Stepping it by
// end/simChunks instead ran on up to a step past the last flow (20 ms on a
// 4 s HPCC config), which diluted utilisation and goodput.
func runChunked(sim *simenv.Sim, end simenv.Time, progress func(simenv.Time)) {
	step := max(end/simChunks, simenv.Microsecond)
	next := step
	sim.RunFunc(func(now simenv.Time) {
		if now >= next || now >= end || sim.Idle() {
			progress(now)
			next = (now/step + 1) * step
		}
	})
}
