package eval

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/gym"
	"github.com/ecntune/ecntune/simenv/report"
	"github.com/ecntune/ecntune/simenv/scenario"
)

// Oracle is the policy spec of the best fixed setting in hindsight.
const Oracle = "static:best"

// SmallFlowBytes and LargeFlowBytes split flows for the objective: small
// flows are below 100 KB, large ones at or above 1 MB.
const (
	SmallFlowBytes = 100_000
	LargeFlowBytes = 1_000_000
)

// Scenario is one scenario to evaluate on: a scenario.Named whose Name
// labels it in the result (Run.Scenario, RunsOf, AggregateOf), the
// tables, plots and report, e.g. "star-incast@2ms".
type Scenario struct {
	scenario.Named
	// BaseName, when set, is the scenario's own name where Name is a
	// label derived from it (NAME@DURATION): WriteJSON writes it as
	// "scenario", as `ecntune sim --json` does, and sim_time_s tells the
	// simulated time. Empty: Name.
	BaseName string
	// Interval is the control interval on this scenario when
	// Options.Interval is 0 (0: gym.IntervalFor its config): a
	// scenario run longer than written keeps the interval its written
	// duration gives (ecntune eval --stretch).
	Interval simenv.Time
}

// interval is the control interval on sc: opt's, else sc's own, else 0
// (gym's default for sc's duration).
func (sc Scenario) interval(opt Options) simenv.Time {
	if opt.Interval > 0 {
		return opt.Interval
	}
	return sc.Interval
}

// warmup is the warmup a run of sc applies given w (Options.Warmup, or
// its WarmupIntervals in time): w when positive, none when negative, the
// scenario's own (simenv.Config.Warmup) when 0.
func (sc Scenario) warmup(w simenv.Time) simenv.Time {
	switch {
	case w < 0:
		return 0
	case w == 0:
		return sc.Config.Warmup
	}
	return w
}

// Options tune Run.
type Options struct {
	// Seeds is the number of seeds per (scenario, policy): seeds are
	// scenario seed + 0, 1, ... (default 3).
	Seeds int
	// Workers runs that many simulations at once (default 1).
	Workers int
	// Interval is the control interval Δ (0: gym.Env's default).
	Interval simenv.Time
	// Warmup leaves the flows that start before it out of every policy's
	// flow figures (FCT slowdowns, small-flow p99, large-flow goodput):
	// a fixed setting acts from the start, a policy that decides from
	// measured counters only from the end of its first interval, and on a
	// run of a few milliseconds that first interval weighs on the result.
	// WarmupIntervals > 0 sets it to that many control intervals of each
	// scenario instead. PFC, goodput and collective figures cover the
	// whole run. Both 0: the scenario's own (simenv.Config.Warmup);
	// Warmup negative: none, not even the scenario's.
	Warmup          simenv.Time
	WarmupIntervals int
	// Goodput is the large-flow goodput the frontier ratio and the tables
	// read: GoodputCensored ("", the default since 2026-12-01:
	// Run.LargeGoodputCensoredGbps) or GoodputFinished (the finished
	// flows', every figure before; docs/model/goodput-eval.txt).
	Goodput string
	// FrontierShape is how the frontier of fixed settings stands between
	// the settings run: FrontierInterpolated ("", the default since
	// 2026-12-01) or FrontierStep (every figure before;
	// docs/model/frontier-shape-eval.txt). See Comparison.Frontier.
	FrontierShape string
	// HidePeer tells the policies no queue's peer (as an agent without
	// fabric-ports does): gym.Options.HidePeer.
	HidePeer bool
	// Missing makes every queue look as a switch lacking this telemetry
	// exports it (gym.Options.Missing): the figures under a device
	// profile's feature set (env.DeviceTelemetry).
	Missing env.Telemetry
	// PmaxStep > 0 runs every decision of a policy or fixed setting at the
	// Pmax a switch of that resolution holds (gym.Options.PmaxStep;
	// env.PmaxStep: whole percents, as OpenConfig and SONiC switches hold
	// it): the bare policy as switches would run it. A deployed loop
	// (Loops) sets its own through its switches. 0: as decided.
	PmaxStep float64
	// OracleCatalogue lists extra fixed settings (catalogue grid indices
	// (kmax level, kmin ratio, pmax level)) that static:best tries besides
	// the presets (nil: DefaultOracleGrid).
	OracleCatalogue [][3]int
	// Lookup resolves a policy spec (default policy.Lookup).
	Lookup func(spec string) (policy.Policy, error)
	// Frontier runs static:best's candidates (the presets and
	// OracleCatalogue) on every scenario even when static:best is not among
	// the policies, so that every comparison has its frontier ratio (see
	// Comparison.FrontierRatio). With static:best they run anyway.
	Frontier bool
	// Trace records every lossless queue at each decision of each
	// policy's first-seed run (report.Trace), for the heatmaps of the
	// HTML report.
	Trace bool
	// Progress, when set, is called after each simulation with how many
	// of all have finished (from several goroutines, one call at a time).
	Progress func(done, total int)
	// Loops run specs that are deployed loops rather than policies, by
	// spec prefix (the CLI registers "agent:": the agent as a
	// configuration file sets it up, over gNMI, in lockstep with the
	// simulation). Their runs get the same flow figures and Run.Loop.
	Loops map[string]LoopRunner
}

// LoopRunner runs the deployed loop spec names on sc with seed, at control
// interval (simulated time), and returns the finished simulation and the
// loop's own figures.
type LoopRunner func(sc Scenario, spec string, seed uint64, interval simenv.Time) (*simenv.Sim, LoopFigures, error)

// SettleIntervals is the warm-up the loop figures leave out of their
// "after" counts: a loop may move every queue once as it starts.
const SettleIntervals = 10

// LoopFigures are what a policy or a deployed loop did to the fabric's
// queues: how often their settings changed and why. Times are control
// intervals; "after" counts leave out the first SettleIntervals.
type LoopFigures struct {
	Intervals int `json:"intervals"`
	Queues    int `json:"queues"`
	// Changes applied (tune, fallback, rollback, repair, revert, ...;
	// for a policy, each interval a queue's setting differs from the one
	// before), and those per queue per 100 intervals.
	Changes               int     `json:"changes"`
	ChangesPerQueuePer100 float64 `json:"changes_per_queue_per_100_intervals"`
	// The same past the first SettleIntervals intervals.
	ChangesAfter               int     `json:"changes_after_settle"`
	ChangesPerQueuePer100After float64 `json:"changes_per_queue_per_100_intervals_after_settle"`
	// Flaps: changes that set a queue back to a setting it left within
	// 10 intervals (env.FlapIntervals).
	Flaps      int `json:"flaps"`
	FlapsAfter int `json:"flaps_after_settle"`
	// Fallbacks, rollbacks and safety repairs among the changes, and the
	// decisions the guard refused, by rule (deployed loops only).
	Fallbacks  int            `json:"fallbacks"`
	Rollbacks  int            `json:"rollbacks"`
	Repairs    int            `json:"repairs"`
	Rejections map[string]int `json:"rejections,omitempty"`
	// RepairsOfOwn are the repairs of a setting the loop had written, a
	// repair's included (the others answer the scenario's own setting).
	RepairsOfOwn int `json:"repairs_of_own_changes"`
	// What the loop would set, interval by interval (deployed loops,
	// shadow or closed): per queue, the setting the guard lets through, or
	// the current one where it holds or rejects. WouldChangesAfter counts
	// its changes past the first SettleIntervals (per queue per 100
	// intervals in WouldChangesPerQueuePer100After); IdleIntervals are the
	// queue-intervals with utilisation under the idle threshold and no
	// marks, pause or drops, IdleHeld those where the loop would keep the
	// setting.
	WouldChangesAfter               int     `json:"would_changes_after_settle,omitempty"`
	WouldChangesPerQueuePer100After float64 `json:"would_changes_per_queue_per_100_intervals_after_settle,omitempty"`
	IdleIntervals                   int     `json:"idle_intervals,omitempty"`
	IdleHeld                        int     `json:"idle_held,omitempty"`
	// Bare is the policy a closed loop ran, as --policy names it (set by
	// the runner only where the loop's models resolve where eval's do, and
	// every change applies: no approval waits). Compare pairs the loop
	// with that policy's bare runs when the same eval ran them.
	Bare string `json:"bare_policy,omitempty"`
}

// MarshalJSON writes a deployed loop's would-change and idle figures
// (Rejections non-nil) even when they are 0, as the text table shows them:
// left out, a shadow run that would change nothing read as a bare policy,
// for which they do not apply.
func (f LoopFigures) MarshalJSON() ([]byte, error) {
	type plain LoopFigures
	if f.Rejections == nil {
		return json.Marshal(plain(f))
	}
	return json.Marshal(struct {
		plain
		WouldChangesAfter               int     `json:"would_changes_after_settle"`
		WouldChangesPerQueuePer100After float64 `json:"would_changes_per_queue_per_100_intervals_after_settle"`
		IdleIntervals                   int     `json:"idle_intervals"`
		IdleHeld                        int     `json:"idle_held"`
	}{plain(f), f.WouldChangesAfter, f.WouldChangesPerQueuePer100After, f.IdleIntervals, f.IdleHeld})
}

// SetRates fills the per-queue-per-100-interval rates from the counts.
func (f *LoopFigures) SetRates() {
	rate := func(n, intervals int) float64 {
		if f.Queues <= 0 || intervals <= 0 {
			return 0
		}
		return float64(n) / float64(f.Queues) * 100 / float64(intervals)
	}
	after := f.Intervals - SettleIntervals
	f.ChangesPerQueuePer100 = rate(f.Changes, f.Intervals)
	f.ChangesPerQueuePer100After = rate(f.ChangesAfter, after)
	f.WouldChangesPerQueuePer100After = rate(f.WouldChangesAfter, after)
}

// loopFor is the LoopRunner of spec's prefix (nil: spec is a policy).
func (o Options) loopFor(spec string) LoopRunner {
	for prefix, run := range o.Loops {
		if strings.HasPrefix(spec, prefix) {
			return run
		}
	}
	return nil
}

// DefaultOracleGrid is the catalogue settings static:best tries besides
// the vendor presets, as (kmax level, kmin ratio, pmax level) indices of
// env.DefaultCatalogue: Kmax from 100 KB to 4.64 MB at 100 Gb/s with Kmin
// at half of it and Pmax 1%, every catalogue level from 100 KB to 1.29 MB
// (the latency end and the steep part of the small-flow/large-flow
// trade-off), plus near-step marking at 1 MB and Pmax 0.3% at 774 KB and
// 1.29 MB. Levels 129-359 KB were added when the preference model at
// prefer=+1 looked beyond the frontier only because nothing stood between
// 100 KB and 278 KB or between 278 KB and 464 KB (docs/model/LAB-NOTES.md).
var DefaultOracleGrid = [][3]int{{0, 0, 1}, {1, 0, 1}, {2, 0, 1}, {3, 0, 1}, {4, 0, 1}, {5, 0, 1}, {6, 0, 1}, {7, 0, 1},
	{8, 0, 1}, {8, 0, 0}, {9, 0, 1}, {9, 1, 1}, {10, 0, 1}, {10, 0, 0}, {12, 0, 1}, {15, 0, 1}}

// Run is the result of one (scenario, policy, seed): the `ecntune sim
// --json` summary plus what eval adds.
type Run struct {
	Policy string `json:"policy"`
	report.Summary
	// Chosen names the fixed setting static:best picked for the scenario.
	Chosen string `json:"chosen,omitempty"`
	// SmallP99 is the p99 FCT slowdown of finished flows under 100 KB.
	SmallP99 float64 `json:"small_flow_p99"`
	// LargeGoodputGbps is the large-flow goodput Options.Goodput reads:
	// LargeGoodputCensoredGbps (the default) or LargeGoodputFinishedGbps.
	LargeGoodputGbps float64 `json:"large_flow_goodput_gbps"`
	// LargeGoodputCensoredGbps counts the unfinished flows too: each flow
	// of 1 MB or more (100 KB or more when there are none) that had time to
	// finish at line rate (its standalone FCT) at the rate it got, the
	// bytes its receiver holds over its time so far when it did not
	// finish. A setting that leaves its large flows unfinished is not
	// judged by the ones it let finish.
	LargeGoodputCensoredGbps float64 `json:"large_flow_goodput_censored_gbps"`
	// LargeGoodputFinishedGbps is the mean rate (size / FCT) of the
	// finished flows of 1 MB or more (100 KB or more when there are none),
	// the definition of every figure before 2026-12-01: a setting that
	// leaves large flows running is judged by those it let finish.
	LargeGoodputFinishedGbps float64 `json:"large_flow_goodput_finished_gbps"`
	// WarmupUs is the warmup this run applied (Options.Warmup or the scenario's; µs; 0: none).
	WarmupUs float64 `json:"warmup_us,omitempty"`
	// PFCPausedUs is the time link ends spent paused by PFC, summed over
	// every link and priority, in µs: hosts and switches held paused by a
	// switch's PAUSE, and switches held paused by a host's.
	PFCPausedUs float64 `json:"pfc_paused_us"`
	// MarkRate is ECN-marked packets per data packet-hop.
	MarkRate float64 `json:"ecn_mark_rate"`
	// Decisions is the number of control intervals.
	Decisions int `json:"decisions"`
	// IterP50Us and IterP99Us are the p50 and p99 collective iteration
	// time over every completed iteration of the run's allreduce and
	// alltoall workloads (Summary.Collectives has them per workload), in
	// µs; 0 when none completed.
	IterP50Us float64 `json:"iter_p50_us"`
	IterP99Us float64 `json:"iter_p99_us"`
	// CollectiveGoodputGbps is the mean goodput of the finished flows of
	// the run's allreduce and alltoall workloads (size over completion
	// time, as LargeGoodputGbps of the large flows): how fast a
	// collective moves, seen even where no iteration completes in the
	// run. Its flows are in the other figures by size as any flow; 0
	// without a collective.
	CollectiveGoodputGbps float64 `json:"collective_goodput_gbps,omitempty"`

	slowdowns []float64     // all finished flows, for CDFs
	trace     *report.Trace // the lossless queues over time (Options.Trace, first seed only)
	heldWhy   string        // the reason of a decision held for its interval
	// HeldForInterval counts the decisions the policy held because the
	// control interval is outside the range its model was validated for.
	HeldForInterval int    `json:"held_for_interval,omitempty"`
	baseName        string // Scenario.BaseName, for WriteJSON
	// Loop is how often the queues' settings changed: what a deployed
	// loop (Options.Loops) did, or the settings a policy's decisions gave.
	Loop *LoopFigures `json:"loop,omitempty"`
	// PmaxStep is the Pmax resolution the run's decisions were held at
	// (Options.PmaxStep; 0: as decided, and a deployed loop's: its
	// switches').
	PmaxStep float64 `json:"pmax_step,omitempty"`
}

// Slowdowns returns the FCT slowdowns of the run's finished flows.
func (r Run) Slowdowns() []float64 { return r.slowdowns }

// Metric is a mean with its 95% confidence half-width over seeds.
type Metric struct {
	Mean float64 `json:"mean"`
	CI95 float64 `json:"ci95"`
	N    int     `json:"n"`
	// FewFlows: a p99 that some seed took from fewer than MinP99Flows
	// flows, so the slowdown of one of its slowest few flows, not a 99th
	// percentile; String marks it with FewFlowsMark.
	FewFlows bool `json:"few_flows,omitempty"`
}

// MinP99Flows is the fewest finished flows a p99 is a 99th percentile of:
// with fewer, it is the slowest flow or one next to it.
const MinP99Flows = 100

// FewFlowsMark follows a p99 some seed took from fewer than MinP99Flows
// flows.
const FewFlowsMark = "*"

// FewFlowsNote explains FewFlowsMark under a table that has one (eval's and
// train --twin's).
var FewFlowsNote = fmt.Sprintf("%s a p99 that some seed took from fewer than %d finished flows of the size: the slowdown of one of its slowest few flows, not a 99th percentile", FewFlowsMark, MinP99Flows)

func (m Metric) String() string {
	mark := ""
	if m.FewFlows {
		mark = FewFlowsMark
	}
	switch {
	case m.N == 0 && m.Mean == 0:
		return "–" // no seed had a figure (no flow of the size finished): not 0
	case m.N < 2:
		return fmtNum(m.Mean) + mark
	}
	return fmtNum(m.Mean) + "±" + fmtNum(m.CI95) + mark
}

// flowsOf is the number of finished flows r's metric k is a percentile
// of (-1: k is not a flow percentile).
func flowsOf(r *Run, k string) int {
	f := r.FCTSlowdown
	switch k {
	case "small_p99":
		return f.Under10KB.N + f.From10KB.N
	case "<10KB_p50", "<10KB_p99":
		return f.Under10KB.N
	case "10KB-100KB_p50", "10KB-100KB_p99":
		return f.From10KB.N
	case "100KB-1MB_p50", "100KB-1MB_p99":
		return f.From100KB.N
	case ">=1MB_p50", ">=1MB_p99":
		return f.From1MB.N
	}
	return -1
}

func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 0.1:
		return fmt.Sprintf("%.2f", v)
	case a >= 0.01:
		// two significant digits at least, as the CI beside it has (mark
		// rates 0.0142 and 0.0113 both read 0.01)
		return fmt.Sprintf("%.3f", v)
	case a >= 0.0001:
		return fmt.Sprintf("%.4f", v)
	}
	return fmt.Sprintf("%.1e", v)
}

// MeanCI is the mean of v and the half-width of its 95% confidence
// interval by Student's t with len(v)-1 degrees of freedom (0 for fewer
// than two values).
func MeanCI(v []float64) Metric {
	m := Metric{N: len(v)}
	if len(v) == 0 {
		return m
	}
	for _, x := range v {
		m.Mean += x
	}
	m.Mean /= float64(len(v))
	if len(v) < 2 {
		return m
	}
	var ss float64
	for _, x := range v {
		ss += (x - m.Mean) * (x - m.Mean)
	}
	sd := math.Sqrt(ss / float64(len(v)-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(v) - 1)}.Quantile(0.975)
	m.CI95 = t * sd / math.Sqrt(float64(len(v)))
	return m
}

// Aggregate is one (scenario, policy) over its seeds.
type Aggregate struct {
	Scenario string            `json:"scenario"`
	Policy   string            `json:"policy"`
	Chosen   string            `json:"chosen,omitempty"`
	Seeds    []uint64          `json:"seeds"`
	Metrics  map[string]Metric `json:"metrics"`
}

// Metric names of an Aggregate, in table order.
var MetricNames = []string{
	"small_p99",
	"<10KB_p50", "<10KB_p99", "10KB-100KB_p50", "10KB-100KB_p99",
	"100KB-1MB_p50", "100KB-1MB_p99", ">=1MB_p50", ">=1MB_p99",
	"large_goodput_gbps", "utilisation", "goodput_gbps", "pfc_paused_us", "drops", "ecn_mark_rate",
	"iter_p50_us", "iter_p99_us",
}

func metricsOf(r *Run) map[string]float64 {
	f := r.FCTSlowdown
	// a run whose flows start late (an HPCC flow file at 2 s) is measured
	// from its first flow, not diluted by the idle lead-in
	util, goodput := r.Utilisation, r.GoodputGbps
	if r.FirstFlowS > 0 {
		util, goodput = r.UtilisationFromFirstFlow, r.GoodputFromFirstFlowGbps
	}
	return map[string]float64{
		"small_p99":          r.SmallP99,
		"<10KB_p50":          f.Under10KB.P50,
		"<10KB_p99":          f.Under10KB.P99,
		"10KB-100KB_p50":     f.From10KB.P50,
		"10KB-100KB_p99":     f.From10KB.P99,
		"100KB-1MB_p50":      f.From100KB.P50,
		"100KB-1MB_p99":      f.From100KB.P99,
		">=1MB_p50":          f.From1MB.P50,
		">=1MB_p99":          f.From1MB.P99,
		"large_goodput_gbps": r.LargeGoodputGbps,
		"utilisation":        util,
		"goodput_gbps":       goodput,
		"pfc_paused_us":      r.PFCPausedUs,
		"drops":              float64(r.Drops),
		"ecn_mark_rate":      r.MarkRate,
		"iter_p50_us":        r.IterP50Us,
		"iter_p99_us":        r.IterP99Us,
	}
}

// Result is everything an evaluation produced.
type Result struct {
	Scenarios  []string
	Policies   []string
	Runs       []Run       // (scenario, policy, seed) order
	Aggregates []Aggregate // (scenario, policy) order
	// OracleRuns holds every candidate run of static:best, for inspection.
	OracleRuns []Run
	// FrontierShape is Options.FrontierShape (Compare reads it; "" is
	// FrontierInterpolated).
	FrontierShape string `json:"-"`
	// PmaxStep is Options.PmaxStep (Compare copies it into each
	// comparison).
	PmaxStep float64 `json:"-"`
	// FixedSettings is how many fixed settings static:best and the
	// frontier choose from (the presets and the catalogue's grid, less the
	// grid points PmaxStep makes another's): the notes print it.
	FixedSettings int `json:"-"`
	// Wide makes WriteText print every metric (per-bucket p50/p99,
	// utilisation, ...); by default it prints the compact table.
	Wide bool `json:"-"`
}

// allRuns are the policies' runs, then static:best's and the frontier's
// candidate runs (a fresh slice).
func (r *Result) allRuns() []Run {
	return append(append([]Run(nil), r.Runs...), r.OracleRuns...)
}

// Runs of one scenario and policy, in seed order.
func (r *Result) RunsOf(scenario, pol string) []Run {
	var out []Run
	for _, x := range r.Runs {
		if x.Scenario == scenario && x.Policy == pol {
			out = append(out, x)
		}
	}
	return out
}

// Aggregate of one scenario and policy (nil if absent).
func (r *Result) AggregateOf(scenario, pol string) *Aggregate {
	for i := range r.Aggregates {
		if r.Aggregates[i].Scenario == scenario && r.Aggregates[i].Policy == pol {
			return &r.Aggregates[i]
		}
	}
	return nil
}

type job struct {
	sc   int
	spec string // policy spec, or the oracle candidate's spec
	set  *env.Setting
	seed uint64
}

// candidate of static:best: a preset, or a catalogue grid setting at 100G
// (set).
type candidate struct {
	spec string
	set  *env.Setting
}

// RunAll evaluates every policy spec on every scenario and seed. A spec is
// anything policy.Lookup takes, or "static:best".
func RunAll(scs []Scenario, specs []string, opt Options) (*Result, error) {
	p, err := newPlan(scs, specs, opt)
	if err != nil {
		return nil, err
	}
	outer := p.opt.Progress
	total := len(p.jobs)
	if len(p.searches) > 0 && outer != nil {
		// One bar over the policies' runs and the searches, whose
		// length is known only as a bound until they stop.
		nCands := len(oracleCandidates(p.opt.OracleCatalogue, p.opt.PmaxStep))
		for _, s := range p.searches {
			total += len(scs) * scheduleSearchMax(s, nCands, p.opt.Seeds)
		}
		p.opt.Progress = func(done, _ int) { outer(done, total) }
	}
	runs, err := p.run()
	if err != nil {
		return nil, err
	}
	base := len(p.jobs)
	for _, s := range p.searches {
		for si, sc := range scs {
			fixed, _ := group(runs, sc.Name, isFixed) // static:best's candidates, when they ran
			rs, made, err := searchSchedule(sc, s, p.opt, fixed, func(n int) {
				if outer != nil {
					outer(base+n, total)
				}
			})
			if err != nil {
				return nil, fmt.Errorf("eval: %s: %w", sc.Name, err)
			}
			base += made
			p.searched[searchKey{si, s}] = rs
		}
	}
	if len(p.searches) > 0 && outer != nil {
		outer(total, total) // a search that stopped early leaves runs it never needed
	}
	return p.result(runs), nil
}

// searchKey names a schedule:best@ search's runs: scenario index and spec.
type searchKey struct {
	sc   int
	spec string
}

// plan is what RunAll runs: the options with their defaults, the policies
// that serve every run of theirs from one instance, and the jobs, the
// policies' first (scenario, spec, seed order), then those of static:best's
// candidates that are not run as policies anyway.
type plan struct {
	scs        []Scenario
	specs      []string
	opt        Options
	shared     map[string]policy.Policy
	wantOracle bool     // static:best is a policy
	wantCands  bool     // its candidates run: static:best or Options.Frontier
	searches   []string // schedule:best@ specs, found after the jobs by searchSchedule
	searched   map[searchKey][]Run
	jobs       []job
	nMain      int // jobs[:nMain] are the policies' runs
}

// newPlan checks the scenarios, specs and options and lists the jobs.
func newPlan(scs []Scenario, specs []string, opt Options) (*plan, error) {
	if len(scs) == 0 {
		return nil, errors.New("eval: no scenario")
	}
	if len(specs) == 0 {
		return nil, errors.New("eval: no policy")
	}
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &plan{scs: scs, specs: specs, opt: opt, shared: map[string]policy.Policy{}, searched: map[searchKey][]Run{}}
	seen := map[string]bool{}
	for _, s := range specs {
		if seen[s] {
			return nil, fmt.Errorf("eval: policy %q given twice", s)
		}
		seen[s] = true
		if err := p.add(s); err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
	}
	names := map[string]int{}
	for i, sc := range scs {
		// runs are kept and compared by scenario name: two of one name
		// were one table, their runs paired across them
		if j, ok := names[sc.Name]; ok {
			return nil, fmt.Errorf("eval: scenarios %d and %d are both named %q: give each its own name (name: in the file), or the same file once", j, i, sc.Name)
		}
		names[sc.Name] = i
		e, err := gym.New(sc.Config, gym.Options{Interval: sc.interval(opt)})
		if err != nil {
			return nil, fmt.Errorf("eval: scenario %d (%s): %w", i, sc.Name, err)
		}
		for _, s := range p.searches {
			if err := checkScheduleBest(s, sc, e.Interval()); err != nil {
				return nil, fmt.Errorf("eval: %w", err)
			}
		}
	}
	for si := range scs {
		for _, s := range specs {
			if s != Oracle && !isScheduleBest(s) {
				p.jobs = append(p.jobs, p.seeds(job{sc: si, spec: s})...)
			}
		}
	}
	p.nMain = len(p.jobs)
	p.wantCands = p.wantOracle || opt.Frontier
	if p.wantCands {
		cands := oracleCandidates(opt.OracleCatalogue, opt.PmaxStep)
		for si := range scs {
			for _, c := range cands {
				if !seen[c.spec] { // else already run as a policy: reused
					p.jobs = append(p.jobs, p.seeds(job{sc: si, spec: c.spec, set: c.set})...)
				}
			}
		}
	}
	return p, nil
}

// add checks spec and notes what it asks for: static:best, a
// schedule:best@ search, a truth: bound, or a policy of Options.Lookup's
// (one instance for all its runs when stateless). eval's own kinds are
// told apart by specResolver.
func (p *plan) add(spec string) error {
	if p.opt.loopFor(spec) != nil {
		return nil
	}
	switch specResolver.KindOf(spec) {
	case oracleKind:
		p.wantOracle = true
		return nil
	case scheduleBestKind:
		if _, err := specResolver.ParseSpec(spec); err != nil {
			return err
		}
		p.searches = append(p.searches, spec)
		return nil
	case truthKind:
		_, err := parseTruthBound(spec, p.opt.Lookup)
		return err
	}
	pol, err := p.opt.Lookup(spec)
	if err != nil {
		return err
	}
	if stateless(pol) {
		p.shared[spec] = pol
	}
	return nil
}

// oneOf is v, or def when v is empty, if it is def or other; else an
// error naming what.
func oneOf(what, v, def, other string) (string, error) {
	switch v {
	case "":
		return def, nil
	case def, other:
		return v, nil
	}
	return v, fmt.Errorf("eval: %s %q: allowed %s, %s", what, v, def, other)
}

// withDefaults fills in the defaults of o and checks it.
func (o Options) withDefaults() (Options, error) {
	if o.Seeds == 0 {
		o.Seeds = 3
	}
	var err error
	if o.Goodput, err = oneOf("goodput", o.Goodput, GoodputCensored, GoodputFinished); err != nil {
		return o, err
	}
	if o.FrontierShape, err = oneOf("frontier shape", o.FrontierShape, FrontierInterpolated, FrontierStep); err != nil {
		return o, err
	}
	if o.Seeds < 1 || o.Seeds > 1000 {
		return o, fmt.Errorf("eval: seeds %d: allowed 1..1000", o.Seeds)
	}
	if o.Workers == 0 {
		o.Workers = 1
	}
	if !(o.PmaxStep >= 0 && o.PmaxStep <= 0.1) {
		return o, fmt.Errorf("eval: pmax step %g: want 0 (as decided) or a resolution up to 0.1", o.PmaxStep)
	}
	if o.Workers < 1 {
		return o, fmt.Errorf("eval: workers %d: want at least 1", o.Workers)
	}
	if o.Lookup == nil {
		o.Lookup = policy.Lookup
	}
	if o.OracleCatalogue == nil {
		o.OracleCatalogue = DefaultOracleGrid
	}
	cat := env.DefaultCatalogue()
	for i, g := range o.OracleCatalogue {
		if _, _, _, ok := cat.Grid(cat.Absolute(g[0], g[1], g[2])); !ok || g[0] < 0 || g[1] < 0 || g[2] < 0 ||
			g[0] >= len(cat.KmaxLevels()) || g[1] >= len(cat.KminRatios()) || g[2] >= len(cat.PmaxLevels()) {
			return o, fmt.Errorf("eval: oracle catalogue entry %d %v is outside the catalogue", i, g)
		}
	}
	return o, nil
}

// seeds is j on each of the plan's seeds of its scenario.
func (p *plan) seeds(j job) []job {
	out := make([]job, p.opt.Seeds)
	for k := range out {
		out[k] = j
		out[k].seed = p.scs[j.sc].Config.Seed + uint64(k)
	}
	return out
}

// oracleCandidates are static:best's candidates: the presets, then the
// settings of the catalogue grid points grid. With pmaxStep > 0
// (Options.PmaxStep) a grid point whose Pmax a switch holds as another
// point's is left out (the 0.3% points run as 1% there: the same
// simulations twice, listed as settings that never ran).
func oracleCandidates(grid [][3]int, pmaxStep float64) []candidate {
	var cands []candidate
	for _, n := range policy.PresetNames() {
		cands = append(cands, candidate{spec: policy.StaticPrefix + n})
	}
	cat := env.DefaultCatalogue()
	var held []env.Setting
	for _, g := range grid {
		s := cat.Point(g[0], g[1], g[2])
		if pmaxStep > 0 {
			q := s
			q.Pmax = env.QuantizePmax(s.Pmax, pmaxStep)
			if slices.Contains(held, q) {
				continue
			}
			held = append(held, q)
		}
		cands = append(cands, candidate{spec: cataloguePrefix + cat.Describe(cat.Absolute(g[0], g[1], g[2])), set: &s})
	}
	return cands
}

// run plays every job, opt.Workers at once; runs are in job order. The
// first run to fail stops the rest: no job is started after it (those
// running finish), and the error of the earliest job that failed is
// returned, so that a bad input is said at once, not after every other
// simulation.
func (p *plan) run() ([]Run, error) {
	runs := make([]Run, len(p.jobs))
	errs := make([]error, len(p.jobs))
	next := make(chan int)
	failed := make(chan struct{})
	var failOnce sync.Once
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for w := 0; w < min(p.opt.Workers, len(p.jobs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				select {
				case <-failed: // handed out as another failed
					continue
				default:
				}
				j := p.jobs[i]
				runs[i], errs[i] = runJob(p.scs[j.sc], j, p.opt, p.shared)
				if errs[i] != nil {
					failOnce.Do(func() { close(failed) })
					continue
				}
				if p.opt.Goodput == GoodputFinished {
					runs[i].LargeGoodputGbps = runs[i].LargeGoodputFinishedGbps
				}
				if p.opt.Progress != nil {
					mu.Lock()
					done++
					p.opt.Progress(done, len(p.jobs))
					mu.Unlock()
				}
			}
		}()
	}
feed:
	for i := range p.jobs {
		select {
		case next <- i:
		case <-failed:
			break feed
		}
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			j := p.jobs[i]
			return nil, fmt.Errorf("eval: %s, policy %s, seed %d: %w", p.scs[j.sc].Name, j.spec, j.seed, err)
		}
	}
	return runs, nil
}

// result gathers the runs (in job order) per scenario and policy, with
// static:best's picked by oracle, and aggregates each over its seeds.
func (p *plan) result(runs []Run) *Result {
	res := &Result{Policies: append([]string(nil), p.specs...), FrontierShape: p.opt.FrontierShape, PmaxStep: p.opt.PmaxStep,
		FixedSettings: len(oracleCandidates(p.opt.OracleCatalogue, p.opt.PmaxStep))}
	for _, sc := range p.scs {
		res.Scenarios = append(res.Scenarios, sc.Name)
	}
	var oracle map[int][]Run
	if p.wantCands {
		res.OracleRuns = runs[p.nMain:]
	}
	if p.wantOracle {
		oracle = p.oracle(runs)
	}
	for si := range p.scs {
		for _, s := range p.specs {
			var rs []Run
			if s == Oracle {
				rs = oracle[si]
			} else if isScheduleBest(s) {
				rs = p.searched[searchKey{si, s}]
			} else {
				for i := 0; i < p.nMain; i++ {
					if p.jobs[i].sc == si && p.jobs[i].spec == s {
						rs = append(rs, runs[i])
					}
				}
			}
			res.Runs = append(res.Runs, rs...)
			res.Aggregates = append(res.Aggregates, aggregate(p.scs[si].Name, s, rs))
		}
	}
	return res
}

// oracle picks static:best per scenario: the fixed setting best by the
// objective (PickOracle) among the runs of its candidates, the policies'
// runs included (a preset run as a policy is a candidate too). It returns
// the chosen candidate's runs, relabelled, by scenario index.
func (p *plan) oracle(runs []Run) map[int][]Run {
	oracle := map[int][]Run{}
	for si, sc := range p.scs {
		byCand, order := group(runs, sc.Name, isFixed)
		best := PickOracle(order, byCand)
		for _, r := range byCand[best] {
			r.Chosen = r.Policy
			r.Policy = Oracle
			oracle[si] = append(oracle[si], r)
		}
	}
	return oracle
}

// stateless policies can serve concurrent runs from one instance.
func stateless(p policy.Policy) bool {
	switch p.(type) {
	case *policy.Learned, policy.Static:
		return true
	}
	return false
}

// PickOracle chooses static:best among candidates (in order) by the
// documented objective: the lowest mean small-flow (< 100 KB) p99 FCT
// slowdown over seeds, among the candidates with no drop in any seed and a
// mean large-flow goodput within 5% of the best such candidate's (one that
// drops does not set the bar). If no candidate qualifies, the goodput
// condition is dropped, then the drop condition. Ties go to the earlier
// candidate.
func PickOracle(order []string, runs map[string][]Run) string {
	return pickBy(order, runs, maxGoodput(order, runs))
}

// maxGoodput is the highest mean large-flow goodput among order's
// candidates that drop nothing (among all of them when every one drops):
// a setting that drops does not set the 5% bar (a dropping preset at
// twice the goodput of every other left no candidate within 5%, and the
// pick fell to the lowest p99 at any goodput).
func maxGoodput(order []string, runs map[string][]Run) float64 {
	g, anyClean := 0.0, false
	for _, c := range order {
		if !anyDrops(runs[c]) {
			g, anyClean = math.Max(g, mean(runs[c], largeGoodput)), true
		}
	}
	if anyClean {
		return g
	}
	for _, c := range order {
		g = math.Max(g, mean(runs[c], largeGoodput))
	}
	return g
}

// pickBy is PickOracle with the goodput to be within 5% of given.
func pickBy(order []string, runs map[string][]Run, bestGood float64) string {
	pick := func(needGood, needNoDrop bool) string {
		best, bestV := "", math.Inf(1)
		for _, c := range order {
			rs := runs[c]
			if needNoDrop && anyDrops(rs) {
				continue
			}
			if needGood && mean(rs, largeGoodput) < 0.95*bestGood {
				continue
			}
			// the lowest small-flow p99; a candidate without one (no small
			// flow finished, or a scenario without small flows) after every
			// one with, the first of them where none has one
			v := SmallP99Mean(rs)
			if v <= 0 {
				v = math.MaxFloat64
			}
			if best == "" || v < bestV {
				best, bestV = c, v
			}
		}
		return best
	}
	for _, c := range [][2]bool{{true, true}, {false, true}, {false, false}} {
		if b := pick(c[0], c[1]); b != "" {
			return b
		}
	}
	return ""
}

func aggregate(sc, spec string, rs []Run) Aggregate {
	a := Aggregate{Scenario: sc, Policy: spec, Metrics: map[string]Metric{}}
	vals := map[string][]float64{}
	few := map[string]bool{}
	for _, r := range rs {
		a.Seeds = append(a.Seeds, r.Seed)
		if r.Chosen != "" {
			a.Chosen = r.Chosen
		}
		for k, v := range metricsOf(&r) {
			if v == 0 && (strings.HasPrefix(k, "iter_") || strings.HasSuffix(k, "_p50") || strings.HasSuffix(k, "_p99")) {
				// no iteration completed, no flow of the size finished (a
				// slowdown is at least 1): no figure, not a figure of 0 (a
				// bucket's p99 was the mean of 10.6 and two zeros, 3.54)
				continue
			}
			vals[k] = append(vals[k], v)
			if n := flowsOf(&r, k); strings.HasSuffix(k, "_p99") && n > 0 && n < MinP99Flows {
				few[k] = true
			}
		}
	}
	for _, k := range MetricNames {
		a.Metrics[k] = MeanCI(vals[k])
		if m := a.Metrics[k]; m.N > 0 && few[k] {
			m.FewFlows = true
			a.Metrics[k] = m
		}
	}
	return a
}

// runJob plays one episode: the policy decides every Δ through gym.Env.
func runJob(sc Scenario, j job, opt Options, shared map[string]policy.Policy) (Run, error) {
	if run := opt.loopFor(j.spec); run != nil && j.set == nil {
		return playLoop(sc, j, opt, run)
	}
	var pol policy.Policy
	switch {
	case j.set != nil:
		pol = policy.FixedSetting(j.spec, *j.set)
	case shared[j.spec] != nil:
		pol = shared[j.spec]
	case specResolver.KindOf(j.spec) == truthKind:
		b, err := parseTruthBound(j.spec, opt.Lookup)
		if err != nil {
			return Run{}, err
		}
		pol = b
	default:
		p, err := opt.Lookup(j.spec)
		if err != nil {
			return Run{}, err
		}
		pol = p
	}
	trace := opt.Trace && j.set == nil && j.seed == sc.Config.Seed
	r, err := playTraced(sc, pol, j.spec, j.seed, gym.Options{Interval: sc.interval(opt), HidePeer: opt.HidePeer, Missing: opt.Missing, PmaxStep: opt.PmaxStep}, trace,
		opt.Warmup, opt.WarmupIntervals)
	r.PmaxStep = opt.PmaxStep
	return r, err
}

// Play runs one episode of sc with seed under pol and summarises it.
func Play(sc Scenario, pol policy.Policy, name string, seed uint64, interval simenv.Time) (Run, error) {
	return play(sc, pol, name, seed, gym.Options{Interval: interval})
}

func play(sc Scenario, pol policy.Policy, name string, seed uint64, eo gym.Options) (Run, error) {
	return playTraced(sc, pol, name, seed, eo, false, 0, 0)
}

// playTraced is play, recording a passive trace of the lossless queues
// after every decision when trace is set, and leaving out of the flow
// figures the flows that start before warmup (or warmupIntervals control
// intervals when > 0).
func playTraced(sc Scenario, pol policy.Policy, name string, seed uint64, eo gym.Options, trace bool, warmup simenv.Time, warmupIntervals int) (Run, error) {
	begin := time.Now()
	bound, _ := pol.(*truthBound)
	eo.Truth = bound != nil && !bound.arriving
	if st, ok := pol.(policy.Static); ok {
		sc.Config = fixedFromStart(sc.Config, st, eo.PmaxStep)
	}
	e, err := gym.New(sc.Config, eo)
	if err != nil {
		return Run{}, err
	}
	if warmupIntervals > 0 {
		warmup = simenv.Time(warmupIntervals) * e.Interval()
	}
	warmup = sc.warmup(warmup)
	if warmup > 0 && warmup >= sc.Config.Duration {
		return Run{}, fmt.Errorf("warmup %v is not before the end of scenario %s (%v): no flow would be left to judge", warmup, sc.Config.Name, sc.Config.Duration)
	}
	var arrivals []arrival
	var firstFlows []simenv.FlowRecord
	if bound != nil && bound.arriving {
		if arrivals, firstFlows, err = smallArrivals(sc, eo, seed); err != nil {
			return Run{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	obs, err := e.Reset(seed)
	if err != nil {
		return Run{}, err
	}
	ecn := report.ECNInEffect(e.Sim()) // the scenario's, before the policy's first decision
	var tr *report.Trace
	if trace {
		tr = report.NewPassiveTrace(e.Sim())
	}
	tally, err := playEpisode(e, obs, pol, name, bound, arrivals, tr)
	if err != nil {
		return Run{}, err
	}
	sim := e.Sim()
	flows := sim.Flows()
	if bound != nil && bound.arriving {
		if err := sameArrivals(firstFlows, flows); err != nil {
			return Run{}, fmt.Errorf("%s on %s: %w", name, sc.Name, err)
		}
	}
	r := summarize(sc, name, seed, sim, flows, warmup, begin)
	r.Decisions, r.ECN, r.trace = tally.decisions, ecn, tr
	r.HeldForInterval, r.heldWhy = tally.held, tally.heldWhy
	r.Loop = tally.loopFigures()
	return r, nil
}

// summarize gives a finished simulation's figures: the flows that started
// after warmup, collectives, PFC and marks.
func summarize(sc Scenario, name string, seed uint64, sim *simenv.Sim, all []simenv.FlowRecord, warmup simenv.Time, begin time.Time) Run {
	flows := startedFrom(all, warmup)
	st := sim.Stats()
	r := Run{Policy: name, Summary: report.Summarize(flows, st, time.Since(begin)), WarmupUs: float64(warmup) / float64(simenv.Microsecond)}
	// the hosts' busy time is the whole run's: so is its first flow
	r.Summary.SetFirstFlow(all, st)
	r.Scenario, r.Seed, r.baseName = sc.Name, seed, sc.BaseName
	r.setCollectives(sim.Collectives(), sc.Config.Workloads)
	r.setFlowFigures(flows, st.Now)
	r.setCollectiveGoodput(all, sc.Config.Workloads) // the collectives' figures are the whole run's (Options.Warmup)
	r.PFCPausedUs = pfcPausedUs(sim)
	if st.DataHops > 0 {
		r.MarkRate = float64(st.ECNMarked) / float64(st.DataHops)
	}
	return r
}

// playLoop runs a deployed loop (Options.Loops) on sc and summarises it
// as play does a policy's run.
func playLoop(sc Scenario, j job, opt Options, run LoopRunner) (Run, error) {
	begin := time.Now()
	interval := sc.interval(opt)
	if interval == 0 {
		interval = gym.IntervalFor(sc.Config)
	}
	warmup := opt.Warmup
	if opt.WarmupIntervals > 0 {
		warmup = simenv.Time(opt.WarmupIntervals) * interval
	}
	warmup = sc.warmup(warmup)
	start, err := simenv.New(sc.Config)
	if err != nil {
		return Run{}, err
	}
	sim, lf, err := run(sc, j.spec, j.seed, interval)
	if err != nil {
		return Run{}, err
	}
	r := summarize(sc, j.spec, j.seed, sim, sim.Flows(), warmup, begin)
	r.ECN, r.Decisions, r.Loop = report.ECNInEffect(start), lf.Intervals, &lf
	return r, nil
}

// episodeTally counts what a policy did in an episode.
type episodeTally struct {
	decisions int    // control intervals
	held      int    // decisions held because of the control interval
	heldWhy   string // the last such decision's reason
	churn     env.Churn
	queues    int
}

// loopFigures are the changes of the queues' settings the episode saw.
func (t *episodeTally) loopFigures() *LoopFigures {
	f := &LoopFigures{Intervals: t.decisions, Queues: t.queues, Changes: t.churn.Changes, ChangesAfter: t.churn.After,
		Flaps: t.churn.Flaps, FlapsAfter: t.churn.FlapsAfter}
	f.SetRates()
	return f
}

// playEpisode steps e from obs until the episode ends on pol's decisions
// (a truth bound's marking the queues first), sampling tr after each when
// set.
func playEpisode(e *gym.Env, obs []env.Observation, pol policy.Policy, name string, bound *truthBound, arrivals []arrival, tr *report.Trace) (episodeTally, error) {
	t := episodeTally{churn: env.Churn{Window: env.FlapIntervals, From: SettleIntervals}, queues: len(obs)}
	t.churn.Observe(0, obs)
	var err error
	n, cursor := 0, 0
	for done := false; !done; n++ {
		if bound != nil {
			cursor = bound.mark(e, len(obs), arrivals, cursor)
		}
		ds := pol.Decide(obs)
		if len(ds) != len(obs) {
			return t, fmt.Errorf("policy %s gave %d decisions for %d queues", name, len(ds), len(obs))
		}
		for i := range ds {
			if ds[i].Held == policy.HoldInterval {
				t.held++
				t.heldWhy = policy.HoldText(ds[i].Reason)
			}
		}
		set := make([]env.Setting, len(ds))
		for i, d := range ds {
			set[i] = d.Setting
		}
		obs, _, done, _, err = e.StepSettings(set)
		if err != nil {
			return t, fmt.Errorf("decision %d: %w", n, err)
		}
		t.churn.Observe(int64(n), obs) // the setting decided at interval n
		if tr != nil {
			tr.Sample(e.Sim())
		}
	}
	t.decisions = n
	return t, nil
}

// fixedFromStart is cfg with every port starting at st's setting for its
// rate (its Pmax as a switch of resolution pmaxStep holds it), so that a
// fixed setting acts from the start: it ran the scenario's own ecn: for
// the first interval, as a policy that decides from counters must, and the
// frontier's figures moved with what a scenario file wrote there.
func fixedFromStart(cfg simenv.Config, st policy.Static, pmaxStep float64) simenv.Config {
	at := func(rate float64) simenv.ECN {
		s := st.Setting(rate)
		if pmaxStep > 0 {
			s.Pmax = env.QuantizePmax(s.Pmax, pmaxStep)
		}
		return simenv.ECN{KminBytes: s.KminBytes, KmaxBytes: s.KmaxBytes, Pmax: s.Pmax}
	}
	byRate := map[float64]simenv.ECN{}
	for _, l := range cfg.Topology.Links {
		if _, ok := byRate[l.RateBps]; !ok && env.KnownRate(l.RateBps) {
			byRate[l.RateBps] = at(l.RateBps)
		}
	}
	cfg.ECN, cfg.ECNByRate = at(100e9), byRate
	return cfg
}

// startedFrom keeps the flows that start at warmup or later (all of them
// when warmup is 0).
func startedFrom(flows []simenv.FlowRecord, warmup simenv.Time) []simenv.FlowRecord {
	if warmup <= 0 {
		return flows
	}
	kept := make([]simenv.FlowRecord, 0, len(flows))
	for _, f := range flows {
		if f.Start >= warmup {
			kept = append(kept, f)
		}
	}
	return kept
}

// setCollectives records the run's collective workloads and the p50 and
// p99 of their iteration times.
func (r *Run) setCollectives(colls []simenv.CollectiveRecord, workloads []simenv.Workload) {
	r.Collectives = report.Collectives(colls, workloads)
	if len(colls) == 0 {
		return
	}
	its := make([]float64, len(colls))
	for i, c := range colls {
		its[i] = float64(c.Finish-c.Start) / float64(simenv.Microsecond)
	}
	sort.Float64s(its)
	r.IterP50Us, r.IterP99Us = report.Percentile(its, 50), report.Percentile(its, 99)
}

// setFlowFigures records the finished flows' slowdowns, the small-flow
// p99 slowdown and the mean large-flow goodput (of the mid-sized flows
// when no large one finished), and the same goodput counting the flows
// unfinished at now (LargeGoodputCensoredGbps).
func (r *Run) setFlowFigures(flows []simenv.FlowRecord, now simenv.Time) {
	var small []float64
	var large, mid, cLarge, cMid []float64
	for _, f := range flows {
		if g, ok := censoredRate(f, now); ok {
			if f.SizeBytes >= LargeFlowBytes {
				cLarge = append(cLarge, g)
			} else if f.SizeBytes >= SmallFlowBytes {
				cMid = append(cMid, g)
			}
		}
		if f.Finish == 0 {
			continue
		}
		sd := f.Slowdown()
		r.slowdowns = append(r.slowdowns, sd)
		if f.SizeBytes < SmallFlowBytes {
			small = append(small, sd)
		}
		if fct := f.FCT(); fct > 0 {
			g := float64(f.SizeBytes) * 8 / fct.Seconds() / 1e9
			if f.SizeBytes >= LargeFlowBytes {
				large = append(large, g)
			} else if f.SizeBytes >= SmallFlowBytes {
				mid = append(mid, g)
			}
		}
	}
	sort.Float64s(small)
	if len(small) > 0 {
		r.SmallP99 = report.Percentile(small, 99)
	}
	r.LargeGoodputFinishedGbps = meanOrFallback(large, mid)
	r.LargeGoodputCensoredGbps = meanOrFallback(cLarge, cMid)
	r.LargeGoodputGbps = r.LargeGoodputCensoredGbps // the default (Options.Goodput)
}

// censoredRate is a flow's rate in Gb/s: size over FCT when it finished;
// when it did not by now but had time to at line rate (its standalone
// FCT), the bytes its receiver holds over its time so far; ok false for a
// flow too young to tell.
func censoredRate(f simenv.FlowRecord, now simenv.Time) (float64, bool) {
	switch {
	case f.Finish > 0 && f.FCT() > 0:
		return float64(f.SizeBytes) * 8 / f.FCT().Seconds() / 1e9, true
	case f.Finish == 0 && now > f.Start && now-f.Start >= f.Standalone:
		return float64(f.Delivered) * 8 / (now - f.Start).Seconds() / 1e9, true
	}
	return 0, false
}

// meanOrFallback is the mean of v, or of fallback when v is empty.
func meanOrFallback(v, fallback []float64) float64 {
	if len(v) == 0 {
		v = fallback
	}
	m := 0.0
	for _, g := range v {
		m += g / float64(len(v))
	}
	return m
}

// setCollectiveGoodput records the mean goodput of the finished flows of
// the collective workloads among workloads.
func (r *Run) setCollectiveGoodput(flows []simenv.FlowRecord, workloads []simenv.Workload) {
	var sum float64
	n := 0
	for _, f := range flows {
		if f.Workload < 0 || f.Workload >= len(workloads) || f.Finish == 0 {
			continue
		}
		if k := workloads[f.Workload].Kind; k != simenv.WorkloadAllReduce && k != simenv.WorkloadAllToAll {
			continue
		}
		if fct := f.FCT(); fct > 0 {
			sum += float64(f.SizeBytes) * 8 / fct.Seconds() / 1e9
			n++
		}
	}
	if n > 0 {
		r.CollectiveGoodputGbps = sum / float64(n)
	}
}

// pfcPausedUs is the paused time of every link end in µs: what switches
// held their peers paused (PAUSE sent: an incast's senders), plus what
// hosts held the switches paused (each switch-to-switch pause is counted
// once).
func pfcPausedUs(sim *simenv.Sim) float64 {
	var us float64
	infos := sim.Switches()
	for si := range infos {
		t := sim.Telemetry(si)
		for pi, p := range t.Ports {
			for q := range p.PFC {
				us += float64(p.PFC[q].PausingNs) / 1e3
				if !infos[si].Ports[pi].PeerSwitch {
					us += float64(p.PFC[q].PausedNs) / 1e3
				}
			}
		}
	}
	return us
}

// Comparison sets one policy against the best vendor preset (chosen per
// scenario by the static:best objective among the presets only) and
// against static:best, on means over seeds.
type Comparison struct {
	Scenario   string `json:"scenario"`
	Policy     string `json:"policy"`
	BestPreset string `json:"best_preset"`
	// SmallP99Cut is 1 - policy/preset small-flow p99 (0.3 = 30% lower);
	// NoSmallP99Cut: there is none, the policy or the preset finished no
	// small flow (SmallP99Cut 0 is then no figure, not "no cut").
	SmallP99Cut   float64 `json:"small_p99_cut"`
	NoSmallP99Cut bool    `json:"no_small_p99_cut,omitempty"`
	// GoodputRatio is the policy's large-flow goodput over the preset's.
	GoodputRatio float64 `json:"goodput_ratio"`
	Drops        uint64  `json:"drops"`
	// VsOracle is policy/static:best small-flow p99 (1.05 = 5% worse); 0
	// when static:best was not run.
	VsOracle float64 `json:"vs_oracle"`
	Oracle   string  `json:"oracle,omitempty"`
	// AtGoodput is, among static:best's candidates (presets and catalogue
	// settings), the one with the lowest mean small-flow p99 that kept at
	// least the policy's mean large-flow goodput and never dropped: the
	// best fixed setting at the policy's own goodput, where static:best
	// may trade up to 5% of goodput for its p99. VsAtGoodput is policy /
	// that small-flow p99 (below 1: no fixed setting does as well at that
	// goodput). Both are empty when no candidate ran or none qualifies.
	AtGoodput   string  `json:"at_goodput,omitempty"`
	VsAtGoodput float64 `json:"vs_at_goodput,omitempty"`
	// PairedVsPreset and PairedVsOracle set the policy's small-flow p99
	// against the best preset's and static:best's seed by seed: every
	// policy runs the same flows on a given seed, so the per-seed ratio
	// removes the workload's variation that the means' intervals carry.
	// Each is the geometric mean of the per-seed ratios with its 95%
	// confidence interval (an interval wholly below 1: the policy's p99 is
	// lower beyond the seeds' chance). Zero when fewer than two seeds pair.
	PairedVsPreset Ratio `json:"paired_vs_preset"`
	// Frontier is, as a step (FrontierStep), the fixed setting (preset or
	// catalogue grid point, among those run: see Options.Frontier) with the
	// lowest mean small-flow p99 among those that keep at least
	// FrontierGoodput of the policy's mean large-flow goodput and never
	// drop (interpolated, see below); FrontierRatio is the policy's
	// small-flow p99 over the frontier's at that goodput (below 1: beyond
	// the frontier of fixed settings) and PairedVsFrontier the same seed
	// by seed with its 95% CI. Empty when no fixed setting qualifies.
	//
	// The settings run are points of a continuum: between two of them on
	// the frontier (a Frontier that keeps the goodput and FrontierBelow,
	// the setting with the most goodput short of it and a lower p99) lie
	// settings nobody ran. Read as a step (FrontierStep), the frontier
	// makes the ratio jump where the policy's goodput crosses a grid
	// point's: a loop with 0.7% less goodput than its bare policy and a 4%
	// lower p99 stood 12% further behind it (heldout leaf-spine web
	// search, 10 seeds). Interpolated (FrontierInterpolated, the default),
	// the frontier's p99 at the goodput is the straight line between the
	// two, FrontierBelowShare being FrontierBelow's weight in it (0: at
	// Frontier, where no such setting ran or the goodput is Frontier's, or
	// past every setting's goodput). Frontier is then the setting with the
	// lowest p99 among those that keep all of the goodput (past every
	// setting's, the loosest, if it keeps FrontierGoodput of it). The line
	// reads at the goodput itself and the step at 98% of it, so neither is
	// always the kinder (docs/model/frontier-shape-eval.txt). The
	// collective figures compare with Frontier alone.
	Frontier      string `json:"frontier,omitempty"`
	FrontierShape string `json:"frontier_shape,omitempty"`
	// PmaxStep is the Pmax resolution every decision of the bare policies
	// and fixed settings ran at (Options.PmaxStep; 0: as decided).
	PmaxStep           float64 `json:"pmax_step,omitempty"`
	FrontierBelow      string  `json:"frontier_below,omitempty"`
	FrontierBelowShare float64 `json:"frontier_below_share,omitempty"`
	FrontierRatio      float64 `json:"frontier_ratio,omitempty"`
	PairedVsFrontier   Ratio   `json:"paired_vs_frontier"`
	// FixedRun counts the fixed settings run on the scenario; with
	// Frontier empty and FixedRun > 0, none of them kept FrontierGoodput
	// of the policy's large-flow goodput without drops: the policy is
	// beyond the frontier in goodput (Beyond), unless NoSmallFlowFigure.
	FixedRun int `json:"fixed_settings_run,omitempty"`
	// NoSmallFlowFigure: a fixed setting keeps FrontierGoodput of the
	// policy's goodput, but the policy or the best of them finished no
	// small flow (a mean small-flow p99 of 0), so there is no ratio; the
	// policy is not beyond the frontier for that.
	NoSmallFlowFigure bool `json:"no_small_flow_figure,omitempty"`
	// IterRatio is the policy's collective iteration time p99 over the
	// best preset's (1.02 = 2% slower), seed by seed over the seeds in
	// which both completed an iteration (a run that completed none has
	// no iteration time; averaging it in as 0 would favour the policy
	// that finishes fewer), as a geometric mean with its CI in PairedIter;
	// 0 when fewer than two seeds pair. IterSeeds and PresetIterSeeds
	// count the seeds in which each completed an iteration.
	IterRatio       float64 `json:"iter_p99_ratio,omitempty"`
	PairedIter      Ratio   `json:"paired_iter"`
	IterSeeds       int     `json:"iter_seeds,omitempty"`
	PresetIterSeeds int     `json:"preset_iter_seeds,omitempty"`
	PairedVsOracle  Ratio   `json:"paired_vs_oracle"`
	// The frontier ratio reads flows, and a collective's flows may be of
	// neither class it counts (a ring all-reduce of 8 MiB over 16 ranks
	// moves 512 KiB chunks): a policy can starve an all-reduce and still
	// stand beyond the frontier. So where the scenario runs a collective,
	// Iterations and FrontierIterations are the mean collective iterations
	// the policy and its Frontier setting completed a run (every allreduce
	// and alltoall workload summed), and VsFrontierIterations the policy's
	// count minus the setting's, seed by seed, with its 95% CI (N 0: no
	// collective, no frontier, or fewer than two seeds pair).
	Iterations           float64    `json:"iterations_per_run,omitempty"`
	FrontierIterations   float64    `json:"frontier_iterations_per_run,omitempty"`
	VsFrontierIterations Difference `json:"vs_frontier_iterations"`
	// VsFrontierCollectiveGoodput is the policy's collective goodput
	// (Run.CollectiveGoodputGbps) over its Frontier setting's, seed by
	// seed: it sees a collective slowed where too few iterations
	// complete to count.
	VsFrontierCollectiveGoodput Ratio `json:"vs_frontier_collective_goodput"`
	// VsFrontierCollectives compares the collectives workload by workload
	// (a sum can hide an all-reduce starved beside an all-to-all that
	// gained), and counts the seeds on which one side finished no
	// collective flow at all (left out of the goodput ratio).
	VsFrontierCollectives CollectiveComparison `json:"vs_frontier_collectives"`
	// Bare, VsBareP99 and VsBareGoodput set a closed loop (an agent:FILE
	// spec) beside its bare policy (LoopFigures.Bare) where the same eval
	// ran it: the loop's small-flow p99 and large-flow goodput over the
	// bare policy's, seed by seed, with their 95% CIs. Two frontier ratios
	// read at two goodputs, and where the frontier is steep in goodput
	// they part far more than the runs do: on leafspine400-800-allreduce-rpc
	// (10 seeds) a loop with 0.2% less goodput and a 2% higher p99 than
	// its bare policy stood at 1.31 against 0.99 (docs/model/loop-eval.txt).
	Bare          string `json:"bare_policy,omitempty"`
	VsBareP99     Ratio  `json:"vs_bare_small_p99"`
	VsBareGoodput Ratio  `json:"vs_bare_large_goodput"`
}

// CollectiveComparison compares one side's collectives with another's
// (CompareCollectives), seed by seed.
type CollectiveComparison struct {
	// Fewer: some collective workload completed fewer iterations a run
	// beyond the seeds' noise (the interval of its per-seed difference
	// wholly below 0).
	Fewer bool `json:"fewer,omitempty"`
	// More: some workload completed more beyond the noise (its interval
	// wholly above 0), and none possibly fewer (every workload's interval
	// at or above 0).
	More bool `json:"more,omitempty"`
	// Starved counts the seeds on which this side finished no collective
	// flow and the other did, Fed the seeds of the reverse.
	Starved int `json:"starved_seeds,omitempty"`
	Fed     int `json:"fed_seeds,omitempty"`
	// Iterations and OtherIterations are each side's collective
	// iterations a run (every workload summed), Difference this side's
	// count minus the other's, seed by seed (Comparison keeps them under
	// its own names).
	Iterations      float64    `json:"-"`
	OtherIterations float64    `json:"-"`
	Difference      Difference `json:"-"`
}

// StarvedSeeds is how many seeds of starving a collective, on one side
// only, count as behind beyond chance (the reverse on none).
const StarvedSeeds = 2

// StarvedBehind says whether this side finished no collective flow on
// at least StarvedSeeds seeds on which the other did, and the reverse
// happened on none: behind, though the goodput ratio (positive seeds
// only) cannot say so.
func (c CollectiveComparison) StarvedBehind() bool {
	return c.Starved >= StarvedSeeds && c.Fed == 0
}

// CompareCollectives compares a's collectives with b's seed by seed:
// their iterations a run, in sum and each collective workload's
// (PairedDifference of its own count), and the seeds where one side
// finished no collective flow. Zero when a runs no collective.
func CompareCollectives(a, b []Run) CollectiveComparison {
	var out CollectiveComparison
	if len(a) == 0 || len(a[0].Collectives) == 0 {
		return out
	}
	out.Iterations, out.OtherIterations = mean(a, Iterations), mean(b, Iterations)
	out.Difference = PairedDifference(a, b, Iterations)
	some, none := false, true
	for _, w := range a[0].Collectives {
		d := PairedDifference(a, b, func(r Run) float64 { return workloadIterations(r, w.Workload) })
		if d.N < 2 {
			continue
		}
		out.Fewer = out.Fewer || d.Hi < 0
		some = some || d.Lo > 0
		none = none && d.Lo >= 0
	}
	out.More = some && none
	for _, v := range perSeed(a, b, CollectiveGoodput, func(x, y float64) (float64, bool) { return x, (x > 0) != (y > 0) }) {
		if v > 0 {
			out.Fed++
		} else {
			out.Starved++
		}
	}
	return out
}

// workloadIterations is the iterations r completed of collective
// workload w (an index into the scenario's workloads).
func workloadIterations(r Run, w int) float64 {
	for _, c := range r.Collectives {
		if c.Workload == w {
			return float64(c.Iterations)
		}
	}
	return 0
}

// Difference is a mean of per-seed differences with its 95% confidence
// interval (Student's t), over N paired seeds.
type Difference struct {
	Mean float64 `json:"mean"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
	N    int     `json:"n"`
}

// FewerIterations reports whether the policy completed fewer iterations
// of some collective workload than its frontier setting beyond the
// seeds' noise (the interval of that workload's per-seed difference
// wholly below 0): behind the frontier in what its ratio does not read.
func (c Comparison) FewerIterations() bool { return c.VsFrontierCollectives.Fewer }

// MoreIterations reports whether the policy completed more iterations
// of some collective workload than its frontier setting beyond the
// seeds' noise, and of none possibly fewer (CollectiveComparison.More).
func (c Comparison) MoreIterations() bool { return c.VsFrontierCollectives.More }

// SlowerCollectives reports whether the policy's collective flows kept
// less than FrontierGoodput of its frontier setting's goodput (the
// seed-by-seed ratio as printed, to two decimals), beyond the seeds'
// noise (its interval wholly below 1): the frontier's own test of
// goodput, turned on the flows its ratio does not read; or it finished
// no collective flow on StarvedSeeds seeds or more on which the setting
// did, and the reverse on none (such seeds have no ratio). It is the
// figure where the iterations do not tell: a policy that completes more
// iterations (MoreIterations) is ahead in its collectives whatever its
// flows' mean goodput, which then averages over the flows of iterations
// the setting never reached.
func (c Comparison) SlowerCollectives() bool {
	if c.MoreIterations() {
		return false
	}
	g := c.VsFrontierCollectiveGoodput
	return g.N >= 2 && math.Round(g.Hi*100)/100 < 1 && math.Round(g.Mean*100)/100 < FrontierGoodput || c.VsFrontierCollectives.StarvedBehind()
}

// Ratio is a geometric mean of per-seed ratios with its 95% confidence
// interval (Student's t on the logarithms), over N paired seeds.
type Ratio struct {
	Mean float64 `json:"mean"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
	N    int     `json:"n"`
}

// PairedRatio pairs runs a and b by seed and returns the geometric mean
// of a's f over b's f with its interval. Seeds where either value is not
// positive are left out; fewer than two pairs give the zero Ratio.
func PairedRatio(a, b []Run, f func(Run) float64) Ratio {
	logs := PairedLogs(a, b, f)
	if len(logs) < 2 {
		return Ratio{}
	}
	m := MeanCI(logs)
	return Ratio{Mean: math.Exp(m.Mean), Lo: math.Exp(m.Mean - m.CI95), Hi: math.Exp(m.Mean + m.CI95), N: m.N}
}

// PairedLogs pairs runs a and b by seed and returns the log of a's f
// over b's f for every seed where both are positive.
func PairedLogs(a, b []Run, f func(Run) float64) []float64 {
	return perSeed(a, b, f, func(x, y float64) (float64, bool) { return math.Log(x / y), x > 0 && y > 0 })
}

// perSeed pairs runs a and b by seed and returns d of a's f and b's f
// for every pair d accepts.
func perSeed(a, b []Run, f func(Run) float64, d func(x, y float64) (float64, bool)) []float64 {
	bySeed := map[uint64]float64{}
	for _, y := range b {
		bySeed[y.Seed] = f(y)
	}
	var out []float64
	for _, x := range a {
		if y, ok := bySeed[x.Seed]; ok {
			if v, ok := d(f(x), y); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// isPreset tells a vendor preset's runs (not static:best's); isFixed
// those of any of static:best's candidates (presets and catalogue
// settings).
func isPreset(pol string) bool {
	return strings.HasPrefix(pol, policy.StaticPrefix) && pol != Oracle && !strings.Contains(pol, "+")
}
func isFixed(pol string) bool { return isPreset(pol) || strings.HasPrefix(pol, cataloguePrefix) }

// cataloguePrefix starts the name of a catalogue setting static:best
// tries ("catalogue:kmin 50KB kmax 100KB pmax 1% @100G").
const cataloguePrefix = "catalogue:"

// group collects the runs of scenario sc whose policy passes keep, by
// policy, and the policies in order of first appearance.
func group(runs []Run, sc string, keep func(string) bool) (map[string][]Run, []string) {
	by := map[string][]Run{}
	var order []string
	for _, r := range runs {
		if r.Scenario != sc || !keep(r.Policy) {
			continue
		}
		if _, ok := by[r.Policy]; !ok {
			order = append(order, r.Policy)
		}
		by[r.Policy] = append(by[r.Policy], r)
	}
	return by, order
}

// bestAtGoodput finds Comparison.AtGoodput among the fixed settings'
// runs byCand (in order) for a policy with mean goodput g and mean
// small-flow p99 p, and says whether some setting qualified (kept g
// without drops) even where it gives no ratio, because the best of them
// or the policy has no small-flow p99.
func bestAtGoodput(byCand map[string][]Run, order []string, g, p float64) (best string, ratio float64, qualified bool) {
	bestP := math.Inf(1)
	for _, c := range order {
		rs := byCand[c]
		if anyDrops(rs) || mean(rs, largeGoodput) < g {
			continue
		}
		qualified = true
		// a setting that finished no small flow has no p99 to stand on
		// the frontier with (its 0 would beat every real figure)
		if cp := SmallP99Mean(rs); cp > 0 && cp < bestP {
			best, bestP = c, cp
		}
	}
	if best == "" || !(p > 0) {
		return "", 0, qualified
	}
	return best, p / bestP, true
}

// The shapes of the frontier between the fixed settings run
// (Options.FrontierShape, Comparison.Frontier).
const (
	FrontierInterpolated = "interpolated"
	FrontierStep         = "step"
)

// frontierPoint is the frontier of fixed settings at one large-flow
// goodput (frontierAt).
type frontierPoint struct {
	at    string  // the setting with the lowest p99 among those that keep the goodput
	below string  // its neighbour on the frontier short of the goodput ("": none, or a step)
	share float64 // below's weight in the line between them (0 with no below)
	p99   float64 // the frontier's mean small-flow p99 at the goodput
	// qualified: some setting kept the goodput without drops, even where
	// none of them has a small-flow p99 (at "")
	qualified bool
}

// frontierAt is the frontier of the fixed settings (order, by their runs
// byCand) for a policy of mean large-flow goodput g, in shape
// (Options.FrontierShape; "" interpolates). A setting that drops, or
// finished no small flow, is no point of it.
//
// As a step, it is the setting with the lowest p99 among those that keep
// FrontierGoodput of g. Interpolated, it is the line between the
// frontier's two settings either side of g itself: a setting on the
// frontier then scores exactly 1 against it, and the ratio moves with g
// as little as g moves (under the step, 98% gave the policy's noise a
// margin at every grid point, and a setting within 2% of its own goodput
// and tighter beat it). Past the loosest setting's goodput, the loosest
// stands for the frontier there (the line's end) as long as it keeps
// FrontierGoodput of g: a policy is beyond the frontier (none qualifies)
// by the same rule in both shapes.
func frontierAt(byCand map[string][]Run, order []string, g float64, shape string) frontierPoint {
	var f frontierPoint
	type point struct {
		name string
		g, p float64
	}
	var pts []point
	for _, c := range order {
		rs := byCand[c]
		if anyDrops(rs) {
			continue
		}
		cg := mean(rs, largeGoodput)
		if cg >= FrontierGoodput*g {
			f.qualified = true
		}
		if cp := SmallP99Mean(rs); cp > 0 {
			pts = append(pts, point{c, cg, cp})
		}
	}
	// lowest is, for the step, the point with the lowest p99 among those
	// that keep keep; of two with the same p99, the first in order (the
	// old rule, kept as it was).
	lowest := func(keep float64) *point {
		var at *point
		for i := range pts {
			if x := &pts[i]; x.g >= keep && (at == nil || x.p < at.p) {
				at = x
			}
		}
		return at
	}
	if shape == FrontierStep {
		if at := lowest(FrontierGoodput * g); at != nil {
			f.at, f.p99 = at.name, at.p
		}
		return f
	}
	// the frontier's points, by goodput (the line eval --plot draws):
	// the first that keeps g, and the one before it
	line := staircase(len(pts), func(i int) (float64, float64) { return pts[i].g, pts[i].p })
	if len(line) == 0 {
		return f
	}
	k := slices.IndexFunc(line, func(i int) bool { return pts[i].g >= g })
	if k < 0 {
		// past every setting's goodput: the loosest stands for the
		// frontier (the line's end) as long as it keeps FrontierGoodput of g
		if top := pts[line[len(line)-1]]; top.g >= FrontierGoodput*g {
			f.at, f.p99 = top.name, top.p
		}
		return f
	}
	at := pts[line[k]]
	f.at, f.p99 = at.name, at.p
	if k == 0 || at.g == g {
		return f // nothing short of g on the frontier, or on the setting itself
	}
	below := pts[line[k-1]]
	w := (at.g - g) / (at.g - below.g) // below's weight: 1 at below's goodput, 0 at at's
	f.below, f.share = below.name, w
	f.p99 = w*below.p + (1-w)*at.p
	return f
}

// staircase is the frontier of n points (goodput, p99 of point i): those
// no other beats (as much goodput or more at a lower p99, or more at the
// same), by goodput, lowest first; of exact twins, the first. The ratio
// reads the line through them (frontierAt), and eval --plot draws it.
func staircase(n int, at func(i int) (g, p float64)) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		ga, pa := at(a)
		gb, pb := at(b)
		return cmp.Or(cmp.Compare(gb, ga), cmp.Compare(pa, pb))
	})
	var out []int
	best := math.Inf(1)
	for _, i := range idx {
		if _, p := at(i); p < best {
			best = p
			out = append(out, i)
		}
	}
	slices.Reverse(out)
	return out
}

// seeds are the frontier's runs seed by seed, for a paired ratio: at's,
// or on the line, each seed's small-flow p99 weighed as the means are
// (the seeds on which both finished a small flow).
func (f frontierPoint) seeds(byCand map[string][]Run) []Run {
	if f.below == "" {
		return byCand[f.at]
	}
	lo := map[uint64]float64{}
	for _, r := range byCand[f.below] {
		if r.SmallP99 > 0 {
			lo[r.Seed] = r.SmallP99
		}
	}
	var out []Run
	for _, r := range byCand[f.at] {
		if p, ok := lo[r.Seed]; ok && r.SmallP99 > 0 {
			x := r
			x.SmallP99 = f.share*p + (1-f.share)*r.SmallP99
			out = append(out, x)
		}
	}
	return out
}

// SmallP99Mean is the mean small-flow p99 over the runs of rs that
// finished a small flow (0 when none did): a run without one has no p99,
// and counting it as 0 would make a policy that finished none look best.
func SmallP99Mean(rs []Run) float64 {
	s, n := 0.0, 0
	for _, r := range rs {
		if r.SmallP99 > 0 {
			s += r.SmallP99
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

// Beyond says whether the policy is beyond the frontier in goodput:
// fixed settings ran and none kept FrontierGoodput of its large-flow
// goodput without drops.
func (c Comparison) Beyond() bool {
	return c.Frontier == "" && c.FixedRun > 0 && !c.NoSmallFlowFigure && c.Drops == 0
}

// mean is the mean of f over rs (0 for no runs).
func mean(rs []Run, f func(Run) float64) float64 {
	s := 0.0
	for _, r := range rs {
		s += f(r)
	}
	return s / float64(max(1, len(rs)))
}

// countIf counts the runs whose f is positive.
func countIf(rs []Run, f func(Run) float64) int {
	n := 0
	for _, r := range rs {
		if f(r) > 0 {
			n++
		}
	}
	return n
}

func smallP99(r Run) float64     { return r.SmallP99 }
func largeGoodput(r Run) float64 { return r.LargeGoodputGbps }
func iterP99(r Run) float64      { return r.IterP99Us }

// Iterations is the collective iterations r completed, over every
// collective workload.
func Iterations(r Run) float64 {
	n := 0
	for _, c := range r.Collectives {
		n += c.Iterations
	}
	return float64(n)
}

// CollectiveGoodput is r's collective goodput (Run.CollectiveGoodputGbps).
func CollectiveGoodput(r Run) float64 { return r.CollectiveGoodputGbps }

// PairedDifference is f(a) - f(b) seed by seed over the seeds both ran,
// with its 95% CI (zero below two pairs).
func PairedDifference(a, b []Run, f func(Run) float64) Difference {
	d := perSeed(a, b, f, func(x, y float64) (float64, bool) { return x - y, true })
	if len(d) < 2 {
		return Difference{}
	}
	m := MeanCI(d)
	return Difference{Mean: m.Mean, Lo: m.Mean - m.CI95, Hi: m.Mean + m.CI95, N: m.N}
}

// anyDrops tells whether any of rs dropped a packet.
func anyDrops(rs []Run) bool {
	for _, r := range rs {
		if r.Drops > 0 {
			return true
		}
	}
	return false
}

// The definitions of large-flow goodput (Options.Goodput).
const (
	GoodputFinished = "finished"
	GoodputCensored = "censored"
)

// FrontierGoodput is the share of a policy's large-flow goodput a fixed
// setting must keep to stand on the frontier it is compared with.
const FrontierGoodput = 0.98

// Compare returns one Comparison per scenario for policy pol. It needs the
// presets' runs: those of static:best's candidates, or presets run as
// policies.
func (r *Result) Compare(pol string) []Comparison {
	var out []Comparison
	all := r.allRuns()
	for _, sc := range r.Scenarios {
		byCand, fixed := group(all, sc, isFixed)
		var order []string // the presets among them
		for _, c := range fixed {
			if isPreset(c) {
				order = append(order, c)
			}
		}
		mine := r.RunsOf(sc, pol)
		if len(order) == 0 || len(mine) == 0 {
			continue
		}
		best := PickOracle(order, byCand)
		myP99, myGood := SmallP99Mean(mine), mean(mine, largeGoodput)
		c := Comparison{Scenario: sc, Policy: pol, BestPreset: best}
		if v := SmallP99Mean(byCand[best]); v > 0 && myP99 > 0 {
			c.SmallP99Cut = 1 - myP99/v
		} else {
			c.NoSmallP99Cut = true
		}
		c.PairedVsPreset = PairedRatio(mine, byCand[best], smallP99)
		if v := mean(byCand[best], largeGoodput); v > 0 {
			c.GoodputRatio = myGood / v
		}
		for _, x := range mine {
			c.Drops += x.Drops
		}
		c.PairedIter = PairedRatio(mine, byCand[best], iterP99)
		c.IterRatio = c.PairedIter.Mean
		c.IterSeeds, c.PresetIterSeeds = countIf(mine, iterP99), countIf(byCand[best], iterP99)
		if o := r.RunsOf(sc, Oracle); len(o) > 0 {
			if v := SmallP99Mean(o); v > 0 && myP99 > 0 {
				c.VsOracle = myP99 / v
				c.Oracle = o[0].Chosen
				c.PairedVsOracle = PairedRatio(mine, o, smallP99)
			}
		}
		c.AtGoodput, c.VsAtGoodput, _ = bestAtGoodput(byCand, fixed, myGood, myP99)
		c.FixedRun = len(fixed)
		c.PmaxStep = r.PmaxStep
		fp := frontierAt(byCand, fixed, myGood, r.FrontierShape)
		c.NoSmallFlowFigure = fp.qualified && (fp.at == "" || !(myP99 > 0))
		if fp.at != "" && myP99 > 0 {
			c.Frontier, c.FrontierBelow, c.FrontierBelowShare = fp.at, fp.below, fp.share
			c.FrontierShape = cmp.Or(r.FrontierShape, FrontierInterpolated)
			c.FrontierRatio = myP99 / fp.p99
			c.PairedVsFrontier = PairedRatio(mine, fp.seeds(byCand), smallP99)
			if len(mine[0].Collectives) > 0 {
				fr := byCand[c.Frontier]
				k := CompareCollectives(mine, fr)
				c.Iterations, c.FrontierIterations, c.VsFrontierIterations, c.VsFrontierCollectives = k.Iterations, k.OtherIterations, k.Difference, k
				c.VsFrontierCollectiveGoodput = PairedRatio(mine, fr, CollectiveGoodput)
			}
		}
		if l := mine[0].Loop; l != nil && l.Bare != "" && l.Bare != pol {
			if bare := r.RunsOf(sc, l.Bare); len(bare) > 0 {
				c.Bare = l.Bare
				c.VsBareP99 = PairedRatio(mine, bare, smallP99)
				c.VsBareGoodput = PairedRatio(mine, bare, largeGoodput)
			}
		}
		out = append(out, c)
	}
	return out
}
