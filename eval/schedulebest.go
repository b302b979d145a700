package eval

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
)

// ScheduleBestPrefix starts the spec of the best timed plan in hindsight,
// "schedule:best@OFFSET,...": for a scenario whose traffic changes at known
// times (the phases of a training job, day and night), the schedule of
// fixed settings, one per phase and switched at those offsets, that
// static:best's objective (PickOracle) rates best. It is a yardstick, as
// static:best is for one fixed setting: an engineer who knows the phases
// could run it by hand (schedule:...), a policy that reads counters has to
// find the phases itself.
//
// The search is coordinate descent over static:best's candidates (the
// presets and OracleCatalogue): it starts from static:best's pick in every
// phase, then tries every candidate in each phase in turn, keeping the one
// with the lowest mean small-flow p99 among those without drops and within
// 5% of the best fixed setting's mean large-flow goodput, and stops after a
// round through the phases that changes nothing, or after
// ScheduleBestRounds rounds. Each candidate plan runs on every seed, so a
// search with P phases and C candidates costs at most C + R·P·(C-1) runs
// per seed (R rounds), C fewer when static:best or Options.Frontier runs
// the candidates anyway (the one-setting plans are those candidates, and
// the search takes their runs). Aggregate.Chosen names the plan found.
//
// With ",by=frontier" after the offsets the search rates a plan by the
// report's own measure instead, its frontier ratio against the candidates
// run as one fixed setting on the same seeds (Comparison.FrontierRatio:
// its mean small-flow p99 over the frontier's of the candidates that
// never drop at its mean large-flow goodput, in Options.FrontierShape; a
// plan with more goodput than every such candidate is rated against the
// one with the most). It starts from the candidate that static:best's
// objective picks, as the default search does, and never takes a plan
// that drops.
const ScheduleBestPrefix = "schedule:best@"

// ScheduleByFrontier, the last item of a schedule:best@ spec, makes the
// search rate plans by their frontier ratio.
const ScheduleByFrontier = "by=frontier"

// ScheduleBestRounds bounds the coordinate-descent rounds of
// schedule:best@.
const ScheduleBestRounds = 3

// scheduleBest is a parsed schedule:best@ spec.
type scheduleBest struct {
	offsets    []string        // as written, for the plan's spec
	at         []time.Duration // the same, parsed
	byFrontier bool            // rate plans by frontier ratio (ScheduleByFrontier)
}

// parseScheduleBest reads a schedule:best@ spec: one or more offsets, each
// above 0 and after the one before it, as a schedule's offsets, then
// optionally ScheduleByFrontier.
func parseScheduleBest(spec string) (scheduleBest, error) {
	var sb scheduleBest
	list, ok := strings.CutPrefix(spec, ScheduleBestPrefix)
	if items := strings.Split(list, ","); strings.TrimSpace(items[len(items)-1]) == ScheduleByFrontier {
		list, sb.byFrontier = strings.Join(items[:len(items)-1], ","), true
	}
	if !ok || strings.TrimSpace(list) == "" {
		return sb, fmt.Errorf("%s: no offset (want %s3ms,6ms: where the phases change; then ,%s to rate plans by frontier ratio)", spec, ScheduleBestPrefix, ScheduleByFrontier)
	}
	if strings.Contains(list, "+") {
		return sb, fmt.Errorf("%s: schedule:best@ takes no +headroom= or +alpha= rule (it searches ECN settings only)", spec)
	}
	for i, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if strings.HasPrefix(f, "by=") {
			return sb, fmt.Errorf("%s: item %d (%s): the one objective there is %s, after the offsets", spec, i+1, f, ScheduleByFrontier)
		}
		d, err := units.ParseDuration(f)
		if err != nil {
			return sb, fmt.Errorf("%s: offset %d: %w", spec, i+1, err)
		}
		if d == 0 {
			return sb, fmt.Errorf("%s: offset %d is 0 (the first phase starts at 0 anyway; list where the phases change)", spec, i+1)
		}
		if i > 0 && d <= sb.at[i-1] {
			return sb, fmt.Errorf("%s: offset %d (%s) is not after offset %d (%s)", spec, i+1, f, i, sb.offsets[i-1])
		}
		sb.offsets, sb.at = append(sb.offsets, f), append(sb.at, d)
	}
	return sb, nil
}

// isScheduleBest tells a schedule:best@ spec (or the bare schedule:best,
// which parseScheduleBest refuses by name).
func isScheduleBest(spec string) bool { return specResolver.KindOf(spec) == scheduleBestKind }

// checkScheduleBest refuses a schedule:best@ spec whose last offset comes
// after the last decision on sc (deciding every interval, from 0 to the
// last multiple of it before the end): that phase would never run, and
// every candidate would tie there.
func checkScheduleBest(spec string, sc Scenario, interval simenv.Time) error {
	sb, err := parseScheduleBest(spec)
	if err != nil {
		return err
	}
	last := simenv.Time(sb.at[len(sb.at)-1].Nanoseconds()) * simenv.Nanosecond
	lastDecision := (sc.Config.Duration - 1) / interval * interval
	if last > lastDecision {
		return fmt.Errorf("%s: offset %s comes after the last decision on scenario %s (at %v, deciding every %v over %v): its phase would never run",
			spec, sb.offsets[len(sb.offsets)-1], sc.Name, time.Duration(lastDecision/simenv.Nanosecond),
			time.Duration(interval/simenv.Nanosecond), time.Duration(sc.Config.Duration/simenv.Nanosecond))
	}
	return nil
}

// scheduleEntry is a candidate as a schedule entry: a preset's name, or
// its setting at 100 Gb/s as KMIN/KMAX/PMAX (Pmax as a probability, so
// that the entry parses back to the very setting).
func scheduleEntry(c candidate) string {
	if c.set == nil {
		return strings.TrimPrefix(c.spec, policy.StaticPrefix)
	}
	return exactBytes(c.set.KminBytes) + "/" + exactBytes(c.set.KmaxBytes) + "/" + strconv.FormatFloat(c.set.Pmax, 'g', -1, 64)
}

// exactBytes is units.FormatBytes(b) where that parses back to b, else b
// in bytes.
func exactBytes(b int64) string {
	s := units.FormatBytes(b)
	if v, err := units.ParseBytes(s); err == nil && v == b {
		return s
	}
	return strconv.FormatInt(b, 10) + "B"
}

// schedulePlan is the schedule spec of entries switched at offsets.
func schedulePlan(entries, offsets []string) string {
	var b strings.Builder
	b.WriteString(policy.SchedulePrefix + entries[0])
	for i, off := range offsets {
		b.WriteString("," + off + "=" + entries[i+1])
	}
	return b.String()
}

// scheduleSearchMax is the most runs searchSchedule can make for one
// scenario (for the progress total).
func scheduleSearchMax(spec string, nCands, seeds int) int {
	sb, err := parseScheduleBest(spec)
	if err != nil {
		return 0
	}
	return (nCands + ScheduleBestRounds*(len(sb.at)+1)*(nCands-1)) * seeds
}

// searchSchedule finds schedule:best@ (spec) on sc by the coordinate descent
// that ScheduleBestPrefix describes and returns the plan found, its runs
// labelled spec with Chosen set to the plan, and the number of runs made.
// opt is the plan's, with its defaults; progress(n) is told every run.
// fixed holds runs of static:best's candidates on sc by candidate spec
// (static:NAME, catalogue:...), run by the plan for static:best or the
// frontier: a plan with one candidate in every phase is that candidate,
// so the search takes its runs instead of playing them again.
func searchSchedule(sc Scenario, spec string, opt Options, fixed map[string][]Run, progress func(n int)) ([]Run, int, error) {
	sb, err := parseScheduleBest(spec)
	if err != nil {
		return nil, 0, err
	}
	offsets := sb.offsets
	cands := oracleCandidates(opt.OracleCatalogue, opt.PmaxStep)
	entries := make([]string, len(cands))
	for i, c := range cands {
		entries[i] = scheduleEntry(c)
	}
	s := newPlanSearch(sc, opt, progress)
	phases := len(offsets) + 1
	uniform := make([]string, len(entries)) // one candidate in every phase
	for i, e := range entries {
		uniform[i] = schedulePlan(slices.Repeat([]string{e}, phases), offsets)
	}
	for i, c := range cands {
		if rs := fixed[c.spec]; len(rs) == opt.Seeds {
			s.runs[uniform[i]] = rs
		}
	}
	if err := s.play(uniform); err != nil {
		return nil, s.made, fmt.Errorf("%s: %w", spec, err)
	}
	bestGood := maxGoodput(uniform, s.runs)
	cur := slices.Repeat([]string{entries[slices.Index(uniform, pickBy(uniform, s.runs, bestGood))]}, phases)
	rate := func(order []string) string { return pickBy(order, s.runs, bestGood) }
	if sb.byFrontier {
		rate = func(order []string) string { return pickByFrontier(order, uniform, s.runs, opt.FrontierShape) }
	}
	if err := s.descend(cur, entries, offsets, rate); err != nil {
		return nil, s.made, fmt.Errorf("%s: %w", spec, err)
	}
	pick := schedulePlan(cur, offsets)
	out := make([]Run, 0, len(s.runs[pick]))
	for _, r := range s.runs[pick] {
		r.Policy, r.Chosen = spec, pick
		out = append(out, r)
	}
	return out, s.made, nil
}

// planSearch plays schedule plans on one scenario for searchSchedule, each
// plan once, and keeps their runs.
type planSearch struct {
	sc   Scenario
	opt  Options          // the plans' options: no frontier or trace, progress counted on from made
	runs map[string][]Run // by plan
	made int              // runs played so far
}

// newPlanSearch starts a search on sc with the plan's options opt, telling
// progress the runs made so far after every run.
func newPlanSearch(sc Scenario, opt Options, progress func(n int)) *planSearch {
	s := &planSearch{sc: sc, opt: opt, runs: map[string][]Run{}}
	s.opt.Frontier, s.opt.Trace = false, false
	s.opt.Progress = func(done, _ int) { progress(s.made + done) }
	return s
}

// play runs the plans that have no runs yet, on every seed.
func (s *planSearch) play(plans []string) error {
	var todo []string
	for _, p := range plans {
		if _, ok := s.runs[p]; !ok && !slices.Contains(todo, p) {
			todo = append(todo, p)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	res, err := RunAll([]Scenario{s.sc}, todo, s.opt)
	if err != nil {
		return err
	}
	for _, r := range res.Runs {
		s.runs[r.Policy] = append(s.runs[r.Policy], r)
	}
	s.made += len(res.Runs)
	return nil
}

// descend improves cur, an entry per phase, in place by coordinate
// descent: each round tries every entry in each phase in turn and keeps
// rate's pick, until a round changes nothing or after ScheduleBestRounds
// rounds.
func (s *planSearch) descend(cur, entries, offsets []string, rate func(order []string) string) error {
	for round := 0; round < ScheduleBestRounds; round++ {
		changed := false
		for k := range cur {
			plans := make([]string, len(entries))
			for i, e := range entries {
				try := slices.Clone(cur)
				try[k] = e
				plans[i] = schedulePlan(try, offsets)
			}
			if err := s.play(plans); err != nil {
				return err
			}
			if best := pickPhase(plans, slices.Index(entries, cur[k]), rate); entries[best] != cur[k] {
				cur[k], changed = entries[best], true
			}
		}
		if !changed {
			break
		}
	}
	return nil
}

// pickPhase is the index among plans (one per candidate, the current one at
// index cur) that rate picks, the current plan winning ties (rate gives
// ties to the earlier plan): a phase whose setting makes no difference
// keeps it, and the round that found nothing better counts as no change.
func pickPhase(plans []string, cur int, rate func(order []string) string) int {
	order := append([]string{plans[cur]}, slices.Delete(slices.Clone(plans), cur, cur+1)...)
	return slices.Index(plans, rate(order))
}

// pickByFrontier is the plan in order with the lowest frontier ratio
// against the fixed settings' runs (fixed, each a plan of one candidate
// throughout), among the plans that never drop; ties go to the earlier
// plan. If no plan gets a finite ratio (every plan drops, or every fixed
// setting does) it falls back to pickBy, which still prefers a plan
// without drops.
func pickByFrontier(order, fixed []string, runs map[string][]Run, shape string) string {
	best, bestR := "", math.Inf(1)
	for _, p := range order {
		if rs := runs[p]; !anyDrops(rs) {
			if r := frontierRatio(rs, fixed, runs, shape); r < bestR {
				best, bestR = p, r
			}
		}
	}
	if best == "" {
		return pickBy(order, runs, maxGoodput(fixed, runs))
	}
	return best
}

// frontierRatio is rs's mean small-flow p99 over the frontier's (of the
// fixed settings among fixed, by their runs, in shape) for rs's mean
// large-flow goodput, as Compare reckons it (frontierAt); where no
// setting keeps that much, over that of the drop-free setting with the
// most goodput (+Inf if every setting drops).
func frontierRatio(rs []Run, fixed []string, runs map[string][]Run, shape string) float64 {
	p, g := SmallP99Mean(rs), mean(rs, largeGoodput)
	if !(p > 0) {
		return math.Inf(1) // no small flow finished: no ratio, not the best one
	}
	if f := frontierAt(runs, fixed, g, shape); f.at != "" {
		return p / f.p99
	}
	top, topG := "", -1.0
	for _, f := range fixed {
		if fr := runs[f]; !anyDrops(fr) {
			if g := mean(fr, largeGoodput); g > topG {
				top, topG = f, g
			}
		}
	}
	if v := SmallP99Mean(runs[top]); top != "" && v > 0 {
		return p / v
	}
	return math.Inf(1)
}

// FixedSpec is the policy spec that runs the fixed setting a comparison
// names (Comparison.Frontier, AtGoodput, static:best's choice): a preset's
// static:NAME as it is, a catalogue setting of grid (nil:
// DefaultOracleGrid) as fixed:KMIN/KMAX/PMAX with its exact values (the
// catalogue's name rounds them). ok is false for a name that is neither.
func FixedSpec(name string, grid [][3]int) (spec string, ok bool) {
	if grid == nil {
		grid = DefaultOracleGrid
	}
	for _, c := range oracleCandidates(grid, 0) {
		if c.spec != name {
			continue
		}
		if c.set == nil {
			return c.spec, true
		}
		e := scheduleEntry(c)
		if pct := strconv.FormatFloat(100*c.set.Pmax, 'g', -1, 64) + "%"; exactPercent(pct, c.set.Pmax) {
			e = e[:strings.LastIndex(e, "/")+1] + pct
		}
		return policy.FixedPrefix + e, true
	}
	return "", false
}

// exactPercent says whether the percentage pct ("1%") reads back as p.
func exactPercent(pct string, p float64) bool {
	s, err := policy.ParseFixed("1B/1B/" + pct)
	return err == nil && s.Pmax == p
}
