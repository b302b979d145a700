package twin

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
)

// Options bound a fit.
type Options struct {
	// Name is the twin scenario's name (default "twin").
	Name string
	// Budget is the wall time the whole fit may take (default 3 minutes):
	// each window tries candidates, Workers at a time, while its share of
	// it lasts (at least one, and the noise's calibration), then the
	// whole twin runs once.
	Budget time.Duration
	// Seed seeds every simulation (default 1).
	Seed uint64
	// Workers is how many simulations run at once (default 2).
	Workers int
	// Seeds is how many seeds (Seed, Seed+1, ...) each search candidate
	// is simulated on (default 2).
	Seeds int
	// MaxPhases bounds the time windows fitted on their own (default 3).
	MaxPhases int
	// Rivals is how many rival twins to build (default 2; negative:
	// none): the twin with one window's workload replaced by a runner-up
	// of its fit (PhaseReport.Rivals), the nearest first, for judging a
	// model on fabrics the fit could not tell from the twin.
	Rivals int
	// Runs, when above 0, is the budget in simulations instead of wall
	// time (Budget is then not used): the fit shares out and spends about
	// that many simulations whatever the machine's speed or load, so that
	// it gives the same twin on any machine, run after run.
	Runs int
	// Clock reads the wall clock the budget is measured on (default
	// time.Now), and the times the report gives.
	Clock func() time.Time
	// Log, when set, is told each stage's progress.
	Log func(format string, args ...any)
	// Stop, when set and true, ends the search early (an operator's
	// Ctrl-C): every window's budget is spent at once, the twin is built
	// from the best each has found, and its report says so.
	Stop func() bool
}

func (o *Options) defaults() {
	if o.Name == "" {
		o.Name = "twin"
	}
	if o.Budget <= 0 {
		o.Budget = 3 * time.Minute
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.Seeds <= 0 {
		o.Seeds = 2
	}
	if o.MaxPhases <= 0 {
		o.MaxPhases = 3
	}
	if o.Rivals == 0 {
		o.Rivals = 2
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
}

// Input is what the agent observed: every switch's fabric record and the
// samples of its queues (a sample's Peer is taken from the records where
// they name its port).
type Input struct {
	Fabric  []env.FabricRecord
	Samples []Sample
	// Missing is the optional telemetry the observed switches lack (the
	// union of the samples'): the simulated counters lose it too.
	Missing env.Telemetry
	// Damaged of the Read stored records the samples come from failed
	// their seal and were left out (the report says so).
	Read, Damaged int
}

// Limits of the twin's time line.
const (
	// MaxTwinInterval is the longest control interval the twin simulates:
	// an agent reading its switches every second is simulated at
	// CompressedInterval per observed interval.
	MaxTwinInterval    = 2 * simenv.Millisecond
	CompressedInterval = simenv.Millisecond
	// MaxTwinIntervals bounds the twin's run: a longer observation is
	// mapped onto it, each window in proportion.
	MaxTwinIntervals = 200
	// searchIntervals is how many intervals a search run simulates (at
	// most a window's).
	searchIntervals = 30
)

// Fit builds the twin of what in holds: its fabric (BuildFabric), the
// windows its traffic changes at (Timeline.Segment), and per window the
// workload whose simulated statistics come closest to the observed ones;
// then it simulates the whole scenario once and reports the error of
// each statistic.
func Fit(in Input, o Options) (*Result, error) {
	o.defaults()
	start := o.Clock()
	recs, gone := observedRecords(in.Fabric, in.Samples)
	if len(recs) == 0 {
		return nil, fmt.Errorf("none of the %d switches with a fabric record (%s) has telemetry in the intervals read", len(in.Fabric), strings.Join(gone, ", "))
	}
	f, err := BuildFabric(recs)
	if err != nil {
		return nil, err
	}
	for _, g := range gone {
		f.note("%s has a fabric record but no telemetry in the intervals read (a switch no longer watched) and is left out", g)
	}
	samples := f.withPeers(in.Fabric, f.onQueue(in.Samples))
	otherSetting := f.ranSettings(samples)
	tl := NewTimeline(samples)
	if len(tl.Times) < 3 {
		return nil, fmt.Errorf("%d measured intervals: the fit needs at least 3 (let shadow mode run longer)", len(tl.Times))
	}
	ft := &fitter{o: o, f: f, tl: tl, missing: in.Missing, clock: o.Clock}
	if o.Runs > 0 {
		// The budget's clock counts simulations: every one advances it
		// by runTick, and the budget is Runs of them.
		ft.o.Budget = time.Duration(o.Runs) * runTick
		ft.clock = func() time.Time { return time.Unix(0, 0).Add(time.Duration(ft.runCount()) * runTick) }
	}
	if o.Stop != nil {
		// stopped, the budget's clock is past every deadline
		clock := ft.clock
		ft.clock = func() time.Time {
			if o.Stop() {
				return clock().Add(1 << 62)
			}
			return clock()
		}
	}
	ft.deadline = ft.clock().Add(ft.o.Budget)
	ft.timeline()
	if in.Damaged > 0 {
		ft.notes = append(ft.notes, fmt.Sprintf("%d of the %d stored recommendations read failed their seal (damaged on disk) and are left out", in.Damaged, in.Read))
	}
	if in.Missing != 0 {
		ft.notes = append(ft.notes, fmt.Sprintf("the switches export no %s: the twin's counters are read without it too", in.Missing))
	}
	r := &Result{Report: Report{Fabric: f, IntervalNs: tl.IntervalNs, TwinInterval: ft.iv, Intervals: len(tl.Times), OtherSetting: otherSetting}}
	r.Report.Times.Topology = o.Clock().Sub(start)
	windows := tl.Segment(o.MaxPhases)
	searchStart := o.Clock()
	seed := ft.chooseLead(windows[0])
	// the lead-in's search is the first window's: its runs and time
	// count in that window's (they were left out of both)
	leadRuns, leadTime := ft.runCount(), o.Clock().Sub(searchStart)
	var phases []Phase
	for i, w := range windows {
		obs := observed{Compute(tl.Samples(w.From, w.To)), Noise(tl.Samples(w.From, w.To))}
		// The window's share of what is left of the budget (less a part for
		// the final run), in proportion to its length.
		left := max(0, ft.deadline.Sub(ft.clock()))
		share := time.Duration(float64(left) * 0.9 * float64(w.To-w.From) / float64(len(tl.Times)-w.From))
		wl, pr := ft.fitWindow(i, obs, phases, ft.twinTime(w.From), ft.twinTime(w.To), share, seed)
		seed = nil
		if math.IsInf(pr.SearchLoss, 0) {
			return nil, fmt.Errorf("window %d: no candidate workload could be simulated (the log says why)", i)
		}
		pr.From, pr.To, pr.Start, pr.End = w.From, w.To, ft.twinTime(w.From), ft.twinTime(w.To)
		if i == 0 {
			pr.Start = 0 // with the lead-in
			pr.Runs += leadRuns
			pr.Time += leadTime
		}
		phases = append(phases, Phase{Start: pr.Start, End: pr.End, Workload: wl})
		r.Report.Phases = append(r.Report.Phases, pr)
	}
	r.Report.Times.Search = o.Clock().Sub(searchStart)
	r.Scenario = ft.scenario(phases)
	finalStart := o.Clock()
	if err := ft.final(r, windows); err != nil {
		return nil, err
	}
	r.Report.Times.Final = o.Clock().Sub(finalStart)
	if o.Stop != nil && o.Stop() {
		ft.notes = append(ft.notes, "the search was interrupted: the twin is the best each window had found by then (fit again for a closer one)")
	}
	r.Report.Notes = append(append([]string(nil), f.Notes...), ft.notes...)
	r.Rivals = rivalScenarios(r.Scenario, r.Report.Phases, o.Rivals)
	return r, nil
}

// Result is a fitted twin: its scenario and the report of its fit, and
// its rivals.
type Result struct {
	Scenario Scenario
	Report   Report
	Rivals   []RivalScenario
}

// RivalScenario is the twin with one window's workload replaced by a
// rival the fit nearly chose for it.
type RivalScenario struct {
	Scenario Scenario
	Window   int
	Rival    Rival
	// Edge: the window's own kind at the edge of what the observations
	// allow (PhaseReport.Edge), taken as too few other kinds qualified.
	Edge bool
}

// rivalScenarios builds up to n rival twins of s: over every window's
// rivals, the nearest to their window's winner first (the smallest
// excess of penalised loss; ties: the earlier window); where fewer than n
// qualify, the windows' edges (PhaseReport.Edge) after them, nearest
// first.
func rivalScenarios(s Scenario, phases []PhaseReport, n int) []RivalScenario {
	var all, edges []RivalScenario
	for i, p := range phases {
		for _, rv := range p.Rivals {
			all = append(all, RivalScenario{Window: i, Rival: rv})
		}
		if p.Edge != nil {
			edges = append(edges, RivalScenario{Window: i, Rival: *p.Edge, Edge: true})
		}
	}
	byExcess := func(rs []RivalScenario) {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Rival.Excess < rs[j].Rival.Excess })
	}
	byExcess(all)
	byExcess(edges)
	all = append(all, edges...)
	all = all[:max(0, min(n, len(all)))]
	for k := range all {
		rs := &all[k]
		sc := s
		sc.Name = fmt.Sprintf("%s-rival-%d", s.Name, k+1)
		sc.Phases = append([]Phase(nil), s.Phases...)
		sc.Phases[rs.Window].Workload = rs.Rival.w
		sc.Comment = nil
		rs.Scenario = sc
	}
	return all
}

// observedRecords are the fabric records of the switches with samples
// (an agent's db keeps the record of a switch it no longer watches), and
// the names of the others.
func observedRecords(recs []env.FabricRecord, samples []Sample) ([]env.FabricRecord, []string) {
	seen := map[string]bool{}
	for _, s := range samples {
		seen[s.Key.Target] = true
	}
	var out []env.FabricRecord
	var gone []string
	for _, r := range recs {
		if seen[r.Target] {
			out = append(out, r)
		} else {
			gone = append(gone, r.Target)
		}
	}
	return out, gone
}

// onQueue are the samples of the queue the twin simulates (f.Queue): the
// statistics it fits are that queue's, whichever others the agent watched
// (an idle or other class's queue would pull them apart).
func (f *Fabric) onQueue(samples []Sample) []Sample {
	out := make([]Sample, 0, len(samples))
	other := map[int]bool{}
	for _, s := range samples {
		if s.Key.Queue == f.Queue {
			out = append(out, s)
		} else {
			other[s.Key.Queue] = true
		}
	}
	if len(other) > 0 {
		qs := slices.Sorted(maps.Keys(other))
		f.note("the agent also watched queue(s) %v: the twin simulates queue %d and fits its statistics alone", qs, f.Queue)
	}
	return out
}

// withPeers keeps the samples of the ports the twin simulates, each with
// its Peer as BuildFabric read it (facing a host or a switch). A port it
// left out (facing nothing known, or on a star a switch the agent does not
// watch) and a switch without a fabric record in recs would pull the
// observed statistics away from anything the twin can simulate.
func (f *Fabric) withPeers(recs []env.FabricRecord, samples []Sample) []Sample {
	out := make([]Sample, 0, len(samples))
	var unrecorded []string
	for _, s := range samples {
		peer, ok := f.kept[portName{s.Key.Target, s.Key.Port}]
		if !ok {
			recorded := slices.ContainsFunc(recs, func(r env.FabricRecord) bool { return r.Target == s.Key.Target })
			if !recorded && !slices.Contains(unrecorded, s.Key.Target) {
				unrecorded = append(unrecorded, s.Key.Target)
			}
			continue
		}
		s.Peer = peer
		out = append(out, s)
	}
	if len(unrecorded) > 0 {
		slices.Sort(unrecorded)
		f.note("telemetry of %s has no fabric record (the switch's ports are not known) and is left out", strings.Join(unrecorded, ", "))
	}
	return out
}

// runTick is how far a simulation advances the budget's clock of a fit
// with Options.Runs.
const runTick = time.Second

// runCount is how many simulations the fit has run.
func (ft *fitter) runCount() int {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.runs
}

// fitter is one fit under way.
type fitter struct {
	o  Options
	f  Fabric
	tl Timeline
	// clock is the budget's clock (deadline is on it): o.Clock, or with
	// o.Runs one that counts simulations.
	clock    func() time.Time
	deadline time.Time
	iv       simenv.Time // the twin's control interval
	n        int         // the twin's intervals
	lead     simenv.Time // the lead-in before the first observed interval (chooseLead)
	missing  env.Telemetry
	notes    []string

	mu   sync.Mutex
	runs int
}

// timeline sets the twin's interval and length from the observed ones.
func (ft *fitter) timeline() {
	ft.iv = simenv.Time(ft.tl.IntervalNs) * simenv.Nanosecond
	if ft.iv > MaxTwinInterval {
		ft.notes = append(ft.notes, fmt.Sprintf("the agent's interval (%v) is simulated as %v: watermarks and incast scores are over the shorter interval",
			ft.iv.Duration(), CompressedInterval.Duration()))
		ft.iv = CompressedInterval
	}
	ft.iv = max(ft.iv, 10*simenv.Microsecond)
	ft.n = len(ft.tl.Times)
	if ft.n > MaxTwinIntervals {
		ft.notes = append(ft.notes, fmt.Sprintf("%d observed intervals are mapped onto the twin's %d, each window in proportion", ft.n, MaxTwinIntervals))
		ft.n = MaxTwinIntervals
	}
}

// twinIndex maps an observed interval index onto the twin's.
func (ft *fitter) twinIndex(i int) int {
	return int(math.Round(float64(i) * float64(ft.n) / float64(len(ft.tl.Times))))
}

// twinTime is when observed interval i begins in the twin's run (after
// its lead-in).
func (ft *fitter) twinTime(i int) simenv.Time { return ft.lead + simenv.Time(ft.twinIndex(i))*ft.iv }

// scenario is the twin's scenario with phases.
func (ft *fitter) scenario(phases []Phase) Scenario {
	return Scenario{Name: ft.o.Name, Seed: ft.o.Seed, Duration: ft.lead + simenv.Time(ft.n)*ft.iv, Fabric: ft.f, Phases: phases, Lead: ft.lead, Interval: ft.iv}
}

// evaluate simulates the windows fitted before (prefix) and w from from
// to to, on Options.Seeds seeds, and returns the statistics of what it
// measures after from (nil when it cannot run): the window is simulated
// as it was observed, after the traffic that came before it, and its
// statistics are those of every seed's intervals together, so that one
// run's draw of flows weighs less.
func (ft *fitter) evaluate(w Workload, prefix []Phase, from, to simenv.Time) (Stats, float64) {
	return ft.evaluateSeeds(w, prefix, from, to, ft.o.Seed, ft.o.Seeds)
}

// evaluateSeeds is evaluate on n seeds from seed, and the mean over the
// seeds of the run's ramp after from (rampRatio of its host
// utilisation); nil when it cannot run.
func (ft *fitter) evaluateSeeds(w Workload, prefix []Phase, from, to simenv.Time, seed uint64, n int) (Stats, float64) {
	start := from
	if len(prefix) == 0 {
		start = 0 // the first window runs through the lead-in too
	}
	s := ft.scenario(append(prefix[:len(prefix):len(prefix)], Phase{Start: start, End: to, Workload: w}))
	s.Duration = to
	cfg, err := s.Config()
	if err != nil {
		ft.o.Log("candidate %s: %v", w.Describe(), err)
		return nil, 1
	}
	kept, ok := ft.measure(cfg, w, from, seed, n)
	if !ok {
		return nil, 1
	}
	return Compute(kept), pooledRamp(kept)
}

// measure runs cfg on seeds seed, seed+1, ... (n of them) and returns the
// samples after from of them all, each seed's intervals set apart; ok
// false (logged) when a run fails.
func (ft *fitter) measure(cfg simenv.Config, w Workload, from simenv.Time, seed uint64, n int) (kept []Sample, ok bool) {
	for k := range n {
		cfg.Seed = seed + uint64(k)
		samples, err := Measure(cfg, ft.iv, []int{ft.f.Queue}, ft.missing)
		ft.mu.Lock()
		ft.runs++
		ft.mu.Unlock()
		if err != nil {
			ft.o.Log("candidate %s: %v", w.Describe(), err)
			return nil, false
		}
		for _, x := range samples {
			if x.TimeNs > from.Ns() {
				x.TimeNs += int64(k) * seedTimeOffset // each seed's intervals apart
				kept = append(kept, x)
			}
		}
	}
	return kept, true
}

// seedTimeOffset sets the intervals of each seed's run apart (Compute
// groups samples by time).
const seedTimeOffset = int64(1) << 50

// observed is a window's statistics and the noise its loss counts
// errors against.
type observed struct{ stats, noise Stats }

// calibrationSeeds is how many seeds calibrate runs on.
const calibrationSeeds = 3

// calibrate measures how much each statistic differs between runs of w
// on other seeds (another draw of flows, sources and destinations), which
// one window's observation cannot show: the standard deviation over
// calibrationSeeds seeds after those of the search.
func (ft *fitter) calibrate(w Workload, prefix []Phase, from, to simenv.Time) Stats {
	per := make([]Stats, calibrationSeeds)
	var wg sync.WaitGroup
	sem := make(chan struct{}, ft.o.Workers)
	for k := range per {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			per[k], _ = ft.evaluateSeeds(w, prefix, from, to, ft.o.Seed+uint64(ft.o.Seeds+k), 1)
		}()
	}
	wg.Wait()
	out := Stats{}
	for _, role := range []string{RoleHost, RoleFabric} {
		var runs []map[string]float64 // the seeds whose run measured role
		for _, p := range per {
			if st, ok := p[role]; ok {
				runs = append(runs, st)
			}
		}
		if len(runs) == 0 {
			continue
		}
		out[role] = map[string]float64{}
		for _, d := range statDefs {
			var v []float64
			for _, st := range runs {
				v = append(v, st[d.Name])
			}
			if len(v) >= 2 {
				out[role][d.Name] = stddev(v)
			}
		}
	}
	return out
}

// evaluateAll evaluates ws (evaluate), Workers at a time.
func (ft *fitter) evaluateAll(ws []Workload, prefix []Phase, from, to simenv.Time) ([]Stats, []float64) {
	out, ramps := make([]Stats, len(ws)), make([]float64, len(ws))
	sem := make(chan struct{}, ft.o.Workers)
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], ramps[i] = ft.evaluate(w, prefix, from, to)
		}()
	}
	wg.Wait()
	return out, ramps
}

// final simulates the whole twin and fills the report's statistics.
func (ft *fitter) final(r *Result, windows []Window) error {
	cfg, err := r.Scenario.Config()
	if err != nil {
		return fmt.Errorf("twin: the fitted scenario does not load: %w", err)
	}
	samples, err := Measure(cfg, ft.iv, []int{ft.f.Queue}, ft.missing)
	if err != nil {
		return err
	}
	if len(samples) == 0 {
		return errors.New("twin: the fitted scenario measured no queue")
	}
	sim := NewTimeline(samples)
	rep := &r.Report
	rep.Runs = ft.runs + 1
	lead := int(ft.lead / ft.iv) // the lead-in's intervals, not observed
	for i, w := range windows {
		a, b := lead+ft.twinIndex(w.From), lead+ft.twinIndex(w.To)
		obs := Compute(ft.tl.Samples(w.From, w.To))
		got := Compute(sim.Samples(min(a, len(sim.At)), min(b, len(sim.At))))
		rep.addRows(i, obs, got)
		rep.Phases[i].FinalLoss = Loss(obs, got, rep.Phases[i].noise, 1)
	}
	rep.Observed, rep.Simulated = seriesOf(ft.tl), seriesOf(sim)
	for i := range rep.Observed.Time { // on the twin's time line
		rep.Observed.Time[i] = float64(ft.twinIndex(i+1))*ft.iv.Seconds() + ft.lead.Seconds()
	}
	return nil
}
