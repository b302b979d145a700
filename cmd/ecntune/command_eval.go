package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/cmd/ecntune/internal/loop"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/eval"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/gym"
	"github.com/ecntune/ecntune/simenv/scenario"
)

// evalLong is the help text of "ecntune eval".
const evalLong = `Run every policy on every scenario and seed in the simulator, in parallel. A policy
decides every control interval from switch counters only (through the same environment
as training). Prints per scenario and policy the FCT slowdown p50/p99 per flow-size
bucket, the small-flow (<100KB) p99, large-flow goodput, utilisation, goodput, PFC pause
time, drops and ECN mark rate as mean ± 95% confidence interval over seeds (Student's t).

Policies: static:NAME (a vendor preset), fixed:KMIN/KMAX/PMAX (an explicit setting at
100 Gb/s, scaled to each port, e.g. fixed:387KB/774KB/0.3%), schedule:WHAT,OFFSET=WHAT,...
(by time from the start, each WHAT a preset name, KMIN/KMAX/PMAX or a policy without a comma
other than roles: and another schedule, e.g. schedule:sonic-default,3ms=387KB/774KB/0.3% or
schedule:builtin:prefer=-1,3ms=builtin:prefer=1; a +headroom=/+alpha= rule after the last entry
applies to every entry),
daily:[tz=ZONE,]HH:MM=WHAT,... (by the time of day, UTC or an IANA zone; simulated time starts at
midnight UTC), adaptive, builtin, model:NAME (from the
registry --db), a learned one with a preference (builtin:prefer=P, model:NAME:prefer=P; P in
[-1, 1], below 0 favouring long flows' throughput, above 0 latency: builtin:prefer=P is the
embedded preference model and a model trained with train --preference-scale, which read P
as an input; another model takes the latest-marking (P < 0) or earliest-marking (P > 0)
setting it rates nearly as good as its best), and static:best, the oracle fixed setting: every preset and sixteen
catalogue settings are run per scenario and the one with the lowest mean small-flow p99
slowdown, among those with no drops and mean large-flow goodput within 5% of the best, is
reported (chosen once per scenario on means over all seeds, so a preset that gives up more
than 5% of the goodput can show a lower p99; the table names the pick, a catalogue
setting as "cat KMIN/KMAX/PMAX" at 100 Gb/s). Only static:NAME counts as a vendor preset in the comparison with the best one.

agent:FILE runs the loop as deployed: the agent as the configuration FILE sets it up (its policy,
guardrails, confidence gate, hold, dwell, budget and rollback; a model:NAME policy from the file's
registry:, else from --db) against the scenario's switches
served over gNMI, in lockstep with the simulation (one control interval of simulated time, then
the agent reads the counters, decides, and its Sets and read-backs take effect before time goes
on), deterministic for a seed. The file's durations are scaled to --interval (min-hold 5s at
interval 1s is 5 intervals). agent:FILE,shadow runs the same configuration in shadow mode.

Every policy's runs add how often the queues' settings changed (a table under the flow
figures, "loop" in --json): changes per queue per 100 intervals, in all and past the first
10 intervals, and flaps (a queue set back to a setting it left within 10 intervals); a
deployed loop's add its fallbacks, rollbacks, safety repairs, the guard's rejections by
rule, how often what it would run changed past the first 10 intervals (in shadow mode: what
it would have set, under the same rules), and the share of idle queue-intervals it held.
--loop-audit DIR keeps each deployed loop's audit log (a shadow run's: the changes it would have made).

schedule:best@OFFSET,... (e.g. schedule:best@3ms,6ms) is the timed plan in hindsight for a
scenario whose traffic changes at those offsets: one of static:best's candidates per phase,
found by coordinate descent from static:best's pick by the same objective (every candidate in
each phase in turn, until a round changes nothing, at most 3 rounds) and named in the table.
It is a yardstick for policies on such scenarios, as static:best is for one fixed setting, and
costs up to C + 3·P·(C-1) runs per seed (C = 24 candidates, P phases; C fewer with --frontier
or static:best, whose runs of the candidates it reuses). With ,by=frontier after the offsets
(schedule:best@3ms,6ms,by=frontier) it rates plans by their frontier ratio against the
candidates run on the same seeds instead of static:best's objective (add --frontier to see
the ratio in the table; a plan with more goodput than every candidate, which the table shows
as beyond the frontier, is rated against the candidate with the most). Either way it picks on the seeds it runs: check the plan on other seeds.

--duration runs every scenario for that long instead of its own duration (the tables,
plots and report then name the scenario NAME@DURATION; --json keeps NAME, as sim --json
does, with the simulated time in sim_time_s; workloads keep their own start and end
times, and a workload or a schedule: entry that starts after it is warned about): the 6 ms of a training-sized scenario hardly lets a 10 MB flow finish, 20 ms or more shows
what a setting costs long flows. --interval sets the control interval Δ (default:
min(500µs, duration/25), so an episode holds at least 20 decisions, raised towards 200µs
while 20 decisions still fit: a 4 ms scenario decides every 190µs, inside the built-in
model's validated intervals, not every 160µs). --hide-peer tells the
policies no port's peer (host or switch), as an agent whose targets have no fabric-ports; without
it a deployed loop (agent:FILE) is told each switch's fabric-ports, as the bare policies are told
the peers (unless FILE's target says fabric-ports: lldp: then the agent discovers them).`

// evalOpts are the flags of "ecntune eval".
type evalOpts struct {
	scenarios, policies []string
	hpccConfigs         []string
	seeds, workers      int
	asJSON              bool
	jsonOut             string
	summaryOut          string
	plotDir, htmlOut    string
	db                  string
	duration, interval  string
	stretch             int
	warmup              string
	goodput             string
	frontierShape       string
	pmaxStep            float64
	hidePeer, frontier  bool
	device              string
	wide                bool
	loopAudit           string
}

// newEvalCmd builds the "eval" command (a fresh one per call, so tests get
// fresh flags).
func newEvalCmd() *cobra.Command {
	var o evalOpts
	cmd := &cobra.Command{
		Use:   "eval (--scenario FILE... | --hpcc-config FILE...) --policy SPEC...",
		Short: "Evaluate policies on scenarios in the simulator (mean ± 95% CI over seeds)",
		Long:  evalLong,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.addFlags(cmd)
	return cmd
}

// addFlags registers the flags of "ecntune eval" on cmd.
func (o *evalOpts) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&o.scenarios, "scenario", nil, "scenario file (YAML); repeat for several")
	f.StringArrayVar(&o.hpccConfigs, "hpcc-config", nil, "ns-3 HPCC config file (config_*.txt, as sim --hpcc-config); repeat for several")
	f.StringArrayVar(&o.policies, "policy", nil, "policy spec: static:NAME, fixed:KMIN/KMAX/PMAX, schedule:..., adaptive, builtin[:prefer=P], model:NAME[:prefer=P], roles:host=SPEC;fabric=SPEC (per port role), rate:SPEC;RATE=SPEC (by port speed: rate:builtin;400G=builtin:400g runs the model for 400G and faster ports there), static:best or schedule:best@OFFSET,...[,by=frontier] (the best timed plan in hindsight), any of them with +headroom=floor[*F] (every PG at its lossless floor) or +headroom=model:NAME (a switch-level headroom model), and +alpha=A (every PG's dynamic-threshold alpha), or truth:small=SPEC;else=SPEC (a bound, not a policy: the first spec's decision on every queue a small flow crosses at the decision, read from the simulator's ground truth, else the second's; truth:arriving=SPEC;else=SPEC: on every queue a small flow starting in the coming interval will cross); repeat")
	f.IntVar(&o.seeds, "seeds", 3, "seeds per scenario and policy (scenario seed, +1, ...)")
	f.IntVar(&o.workers, "workers", 0, "simulations run at once (default: GOMAXPROCS)")
	f.BoolVar(&o.asJSON, "json", false, "print the results as one indented JSON document (each run one object in the sim --json shape; --json-out writes the same to a file)")
	f.StringVar(&o.jsonOut, "json-out", "", "also write the --json output to FILE (the text tables still go to stdout): one run, both forms")
	f.StringVar(&o.summaryOut, "summary-out", "", "write the comparisons as JSON to FILE: per scenario and policy the cut and goodput against the best preset, "+
		"the frontier ratio with its CI, the collective iteration ratio, and every fixed setting that ran (means, on_frontier)")
	f.StringVar(&o.plotDir, "plot", "", "write slowdown CDF and per-bucket p99 plots (PNG) into DIR")
	f.StringVar(&o.htmlOut, "report", "", "write a self-contained HTML report to FILE")
	f.StringVar(&o.duration, "duration", "", "simulated time per run, e.g. 20ms (default: each scenario's own)")
	f.IntVar(&o.stretch, "stretch", 1, "run each scenario N times as long as written, at the control interval its written duration gives (unless --interval): "+
		"a loop runs for days, and 25 intervals say little of how it settles; named NAME@xN")
	f.BoolVar(&o.wide, "wide", false, "print every metric (FCT slowdown p50/p99 per flow-size bucket, utilisation, ...), not the compact table")
	f.BoolVar(&o.frontier, "frontier", false, "also run static:best's fixed settings (presets and a catalogue grid) without listing static:best, "+
		"so that every policy gets its frontier ratio: its small-flow p99 over the frontier's of fixed settings at its large-flow goodput (--frontier-shape)")
	f.StringVar(&o.frontierShape, "frontier-shape", eval.FrontierInterpolated, "how the frontier stands between the fixed settings run: "+eval.FrontierInterpolated+
		" (the straight line between the two either side of the policy's large-flow goodput: a setting on the frontier scores 1, and the ratio moves as little as the goodput) or "+
		eval.FrontierStep+" (the best setting that keeps 98% of the policy's goodput, every figure before 2026-12-01: the ratio jumps where the goodput crosses a setting's)")
	f.Float64Var(&o.pmaxStep, "pmax-step", 0, "run every decision of the policies and fixed settings at the Pmax a switch of this resolution holds: 0.01 is whole percents, "+
		"as OpenConfig and SONiC switches hold it (0.3% runs as 1%), so a bare policy is judged as switches would run it; 0: as decided. agent:FILE loops run at their switches' own")
	f.BoolVar(&o.hidePeer, "hide-peer", false, "tell policies no port's peer (host or switch), as an agent without fabric-ports does")
	f.StringVar(&o.device, "device", "ecntune", "judge policies with the telemetry this kind of switch exports ("+strings.Join(deviceNames(), ", ")+"): the others are masked as missing")
	f.StringVar(&o.interval, "interval", "", "control interval Δ, e.g. 1ms (default: the scenario's interval, if it names one, else min(500µs, duration/25), raised towards 200µs while 20 decisions fit)")
	f.StringVar(&o.goodput, "goodput", eval.GoodputCensored, "the large-flow goodput the frontier ratio and the tables read: "+eval.GoodputCensored+
		" (every flow of 1 MB or more that had time to finish at line rate, an unfinished one at the rate it got so far) or "+eval.GoodputFinished+
		" (the finished ones only, every figure before 2026-12-01: a setting that leaves large flows running is judged by those it let finish)")
	f.StringVar(&o.warmup, "warmup", "", "leave the flows that start before this time out of every policy's flow figures (FCT, small-flow p99, large-flow goodput), "+
		"e.g. 1ms, or \"interval\" for one control interval: a fixed setting acts from the start, a policy that decides from counters only after its first interval "+
		"(default: the scenario's warmup, if it names one; 0: none)")
	f.StringVar(&o.loopAudit, "loop-audit", "", "write each agent:FILE run's audit log into DIR as JSON lines, one file per scenario, spec and seed (SCENARIO_FILE_SEED.jsonl), as agent history --json prints it; for agent:FILE,shadow the recommendations at which what the loop would run moved (SCENARIO_FILEshadow_SEED.jsonl)")
	f.StringVar(&o.db, "db", "", "model registry for model:NAME (default $ECNTUNE_DB or "+modelsDefaultDB+")")
}

// run evaluates the policies on the scenarios and writes the plots,
// files and report the flags ask for.
func (o *evalOpts) run(cmd *cobra.Command) error {
	if len(o.scenarios) == 0 && len(o.hpccConfigs) == 0 {
		return fmt.Errorf("no --scenario or --hpcc-config given")
	}
	if len(o.policies) == 0 {
		return fmt.Errorf("no --policy given (e.g. --policy builtin --policy static:best)")
	}
	if o.seeds < 1 {
		return fmt.Errorf("--seeds %d: want at least 1", o.seeds)
	}
	inputs := append(append([]string{o.db}, o.scenarios...), o.hpccConfigs...)
	outs := map[string]string{} // cleaned path → the flag that writes it
	for _, out := range []struct{ flag, path string }{{"json-out", o.jsonOut}, {"summary-out", o.summaryOut}, {"report", o.htmlOut}} {
		if err := notAnInput(out.flag, out.path, inputs...); err != nil {
			return err
		}
		if out.path != "" {
			// two outputs on one path: the last written replaced the other
			abs, _ := filepath.Abs(out.path)
			if other, ok := outs[abs]; ok {
				return fmt.Errorf("--%s and --%s both name %s: give each its own file", other, out.flag, out.path)
			}
			outs[abs] = out.flag
		}
		if out.path != "" {
			if err := checkOutPath(out.flag, out.path, ""); err != nil {
				return err // before the simulations, not after them
			}
		}
	}
	if o.plotDir != "" {
		if err := checkOutPath("plot", o.plotDir, "the plots"); err != nil {
			return err
		}
	}
	if o.loopAudit != "" {
		if err := checkOutPath("loop-audit", o.loopAudit, "the loop audit files"); err != nil {
			return err // before the simulations, not after them
		}
	}
	dur, dt, err := o.simTimes(cmd)
	if err != nil {
		return err
	}
	scs, err := o.loadScenarios(cmd.ErrOrStderr(), dur)
	if err != nil {
		return err
	}
	if err := o.stretchScenarios(scs, dur); err != nil {
		return err
	}
	for _, sc := range scs {
		warnAll(cmd.ErrOrStderr(), sc.Name, scenario.Warnings(sc.Config))
		if dur > 0 {
			warnAll(cmd.ErrOrStderr(), sc.Name, pastEndNotes(sc.Config))
		}
	}
	for _, spec := range o.policies {
		warnAll(cmd.ErrOrStderr(), spec, eval.SpecWarnings(spec))
		if dur > 0 {
			warnAll(cmd.ErrOrStderr(), spec, scheduleEndNotes(spec, dur))
		}
		// A deployed loop's file is read by each of its runs; a bad one
		// is refused here, not after every simulation has run.
		if strings.HasPrefix(spec, loop.Prefix) {
			if err := loop.CheckSpec(spec, o.agentResolver); err != nil {
				return fmt.Errorf("--policy %s: %w", spec, err)
			}
		}
	}
	if o.workers == 0 {
		o.workers = runtime.GOMAXPROCS(0)
	}
	wu, wuIntervals, err := parseWarmup(o.warmup)
	if err != nil {
		return err
	}
	missing, ok := env.DeviceTelemetry[o.device]
	if !ok {
		return fmt.Errorf("--device %q: unknown (allowed: %s)", o.device, strings.Join(deviceNames(), ", "))
	}
	res, err := runEvalWithProgress(cmd.ErrOrStderr(), scs, o.policies, eval.Options{Seeds: o.seeds, Workers: o.workers, Interval: dt, HidePeer: o.hidePeer, Frontier: o.frontier, Trace: o.htmlOut != "",
		Missing: missing, Warmup: wu, WarmupIntervals: wuIntervals, Goodput: o.goodput, FrontierShape: o.frontierShape, PmaxStep: o.pmaxStep,
		Lookup: policyResolver(o.db).Lookup, Loops: map[string]eval.LoopRunner{loop.Prefix: loop.EvalRunner(o.agentResolver, o.loopAudit, o.hidePeer)}})
	if err != nil {
		return err
	}
	// the results first: a file that cannot be written after all (the
	// disk filled meanwhile) loses none of them
	res.Wide = o.wide
	if err := writeReport(cmd.OutOrStdout(), res, o.asJSON); err != nil {
		return err
	}
	return o.writeFiles(cmd.ErrOrStderr(), res)
}

// agentResolver finds an agent:FILE loop's models where that agent would:
// in the registry its file names (registry:), else in eval's --db.
func (o *evalOpts) agentResolver(registry string) policy.Resolver {
	if registry == "" {
		registry = o.db
	}
	return policyResolver(registry)
}

// simTimes reads --duration and --interval, each 0 when not given.
func (o *evalOpts) simTimes(cmd *cobra.Command) (dur, dt simenv.Time, err error) {
	for _, d := range []struct {
		flag, val string
		to        *simenv.Time
	}{{"duration", o.duration, &dur}, {"interval", o.interval, &dt}} {
		if cmd.Flags().Changed(d.flag) {
			v, err := positiveSimTime(d.flag, d.val)
			if err != nil {
				return 0, 0, err
			}
			if d.to == &dt && v < gym.MinInterval {
				return 0, 0, fmt.Errorf("--interval %s: at least %v (a control interval shorter measures nothing a decision acts on)", d.val, gym.MinInterval.Duration())
			}
			*d.to = v
		}
	}
	return dur, dt, nil
}

// stretchScenarios runs each scenario --stretch times as long as written,
// each at the control interval its written duration gives: its workloads'
// start and end times are stretched with it (a workload with end: stopped
// where written, the fabric fell idle and the run ended there: 24
// decisions at --stretch 4, as unstretched), so its phases keep their
// shares of the run.
func (o *evalOpts) stretchScenarios(scs []eval.Scenario, dur simenv.Time) error {
	switch {
	case o.stretch < 1 || o.stretch > 1000:
		return fmt.Errorf("--stretch %d: allowed 1..1000", o.stretch)
	case o.stretch == 1:
		return nil
	case dur > 0:
		return fmt.Errorf("--stretch and --duration: give one (--duration sets every scenario's time, --stretch multiplies each one's own)")
	}
	for i := range scs {
		sc := &scs[i]
		sc.Interval = gym.IntervalFor(sc.Config)
		sc.Config.Duration *= simenv.Time(o.stretch)
		ws := slices.Clone(sc.Config.Workloads)
		for k := range ws {
			ws[k].Start *= simenv.Time(o.stretch)
			ws[k].End *= simenv.Time(o.stretch) // 0 (to the end of the run) stays 0
		}
		sc.Config.Workloads = ws
		if sc.BaseName == "" {
			sc.BaseName = sc.Name
		}
		sc.Name = fmt.Sprintf("%s@x%d", sc.BaseName, o.stretch)
	}
	return nil
}

// loadScenarios loads the --scenario files, then the --hpcc-config ones
// (warning to stderr about the keys they ignore); with dur > 0 each runs
// for dur and is named NAME@DURATION.
func (o *evalOpts) loadScenarios(stderr io.Writer, dur simenv.Time) ([]eval.Scenario, error) {
	scs, err := evalScenarios(o.scenarios, dur, o.duration)
	if err != nil {
		return nil, err
	}
	for _, p := range o.hpccConfigs {
		n, ignored, err := loadHPCCNamed(p)
		if err != nil {
			return nil, err
		}
		for _, w := range ignored {
			fmt.Fprintln(stderr, "warning:", w)
		}
		sc := eval.Scenario{Named: n}
		if dur > 0 {
			sc.Config.Duration = dur
			sc.Name, sc.BaseName = n.Name+"@"+o.duration, n.Name
		}
		scs = append(scs, sc)
	}
	return scs, nil
}

// parseWarmup reads --warmup: a positive time, "interval" (one control
// interval: 1 interval and no time) or empty or "0" for none.
func parseWarmup(warmup string) (simenv.Time, int, error) {
	switch {
	case warmup == "":
		return 0, 0, nil // the scenario's own, if it names one
	case warmup == "0":
		return -1, 0, nil // none, not even the scenario's
	case warmup == "interval":
		return 0, 1, nil
	}
	v, err := positiveSimTime("warmup", warmup)
	if err != nil {
		return 0, 0, fmt.Errorf("%w (or \"interval\": one control interval)", err)
	}
	return v, 0, nil
}

// runEvalWithProgress runs eval.RunAll with a progress bar of the
// simulations on stderr.
func runEvalWithProgress(stderr io.Writer, scs []eval.Scenario, policies []string, opt eval.Options) (*eval.Result, error) {
	prog := newLazyProgress(stderr, "eval", "simulations")
	var done, total atomic.Int64
	opt.Progress = func(d, t int) {
		done.Store(int64(d))
		total.Store(int64(t))
		prog.set(int64(d), int64(t))
	}
	// Ctrl-C (or SIGTERM) ends the run saying how far it got: it ended
	// silently, and a user could not tell an interrupt from a crash
	ch := make(chan os.Signal, 1)
	stop := trainSignals(ch)
	quit, watched := make(chan struct{}), make(chan struct{})
	interrupted := func() {
		prog.finish()
		fmt.Fprintf(stderr, "\neval: interrupted after %d of %d simulations: no figures (each comparison needs every seed of every policy) and no file written\n",
			done.Load(), total.Load())
		trainExit(130)
	}
	go func() {
		defer close(watched)
		select {
		case <-ch:
			interrupted()
		case <-quit:
			select {
			case <-ch: // a Ctrl-C before the run's end still stops it
				interrupted()
			default:
			}
		}
	}()
	res, err := eval.RunAll(scs, policies, opt)
	close(quit)
	<-watched
	stop()
	prog.finish()
	return res, err
}

// writeFiles writes the --plot images, then the --report, --json-out and
// --summary-out files, saying on stderr what it wrote; one that fails
// does not keep the others from being written.
func (o *evalOpts) writeFiles(stderr io.Writer, res *eval.Result) error {
	var errs []error
	if o.loopAudit != "" {
		// written as each loop ran: said here, as every output is
		if ents, err := os.ReadDir(o.loopAudit); err == nil {
			n := 0
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), ".jsonl") {
					n++
				}
			}
			fmt.Fprintf(stderr, "wrote %s (%d loop audit files)\n", o.loopAudit, n)
		}
	}
	if o.plotDir != "" {
		files, err := writeEvalPlots(res, o.plotDir)
		for _, f := range files {
			fmt.Fprintln(stderr, "wrote", f)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, out := range []struct {
		file, flag string
		write      func(io.Writer) error
	}{{o.htmlOut, "--report", res.WriteHTML}, {o.jsonOut, "--json-out", res.WriteJSON}, {o.summaryOut, "--summary-out", res.WriteSummaryJSON}} {
		if out.file == "" {
			continue
		}
		// one output that fails (a full disk) leaves the others written:
		// they are the run's only record
		var b bytes.Buffer
		err := out.write(&b)
		if err == nil {
			err = os.MkdirAll(filepath.Dir(out.file), 0o755) // made when written (checkOutPath)
		}
		if err == nil {
			err = os.WriteFile(out.file, b.Bytes(), 0o644)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", out.flag, err))
			continue
		}
		fmt.Fprintln(stderr, "wrote", out.file)
	}
	return errors.Join(errs...)
}

// evalScenarios loads the scenario files; with dur > 0 (--duration
// durFlag) each runs for dur and is named NAME@durFlag.
func evalScenarios(paths []string, dur simenv.Time, durFlag string) ([]eval.Scenario, error) {
	var scs []eval.Scenario
	for _, p := range paths {
		n, err := scenario.LoadNamed(p)
		if err != nil {
			return nil, err
		}
		if n.Config.Name == "" {
			n.Name = p // eval labels an unnamed scenario by its path
		}
		sc := eval.Scenario{Named: n}
		if dur > 0 {
			sc.Config.Duration = dur
			sc.Name, sc.BaseName = n.Name+"@"+durFlag, n.Name
		}
		scs = append(scs, sc)
	}
	return scs, nil
}

// loadHPCCNamed reads an ns-3 HPCC config as a named scenario (named by
// the config, as sim names it) and the warnings about the keys it ignores.
func loadHPCCNamed(path string) (scenario.Named, []string, error) {
	cfg, ignored, err := scenario.LoadHPCCConfigWarn(path)
	if err != nil {
		return scenario.Named{}, nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return scenario.Named{}, nil, err
	}
	sum := sha256.Sum256(data)
	return scenario.Named{Name: cfg.Name, Path: filepath.ToSlash(path), SHA256: hex.EncodeToString(sum[:]), Config: cfg}, ignored, nil
}

// writeEvalPlots writes each scenario's slowdown CDF, per-bucket p99 and
// (with fixed settings run) frontier plots into dir (--plot), and returns
// the files written.
func writeEvalPlots(res *eval.Result, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--plot %s: %w", dir, err)
	}
	var files []string
	used := map[string]int{}
	for _, sc := range res.Scenarios {
		// names that differ only in characters a file name cannot hold
		// ("inc ast", "inc_ast") get a number, not each other's plots
		name := fileSafe(sc)
		for n := 2; used[strings.ToLower(name)] > 0; n++ {
			name = fmt.Sprintf("%s-%d", fileSafe(sc), n)
		}
		used[strings.ToLower(name)]++
		base := filepath.Join(dir, name)
		plots := []struct {
			suffix string
			draw   func(io.Writer, string) error
		}{{"-cdf.png", res.PlotCDF}, {"-p99.png", res.PlotBuckets}}
		if res.HasFrontier(sc) {
			plots = append(plots, struct {
				suffix string
				draw   func(io.Writer, string) error
			}{"-frontier.png", res.PlotFrontier})
		}
		for _, pl := range plots {
			var b bytes.Buffer
			if err := pl.draw(&b, sc); err != nil {
				return files, err
			}
			if err := os.WriteFile(base+pl.suffix, b.Bytes(), 0o644); err != nil {
				return files, fmt.Errorf("--plot: %w", err)
			}
			files = append(files, base+pl.suffix)
		}
	}
	return files, nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func fileSafe(s string) string { return unsafeChars.ReplaceAllString(s, "_") }

// deviceNames lists env.DeviceTelemetry's profiles, sorted.
func deviceNames() []string {
	out := make([]string, 0, len(env.DeviceTelemetry))
	for n := range env.DeviceTelemetry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
