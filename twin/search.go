package twin

import (
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/ecntune/ecntune/simenv"
)

// PhaseReport is how one window was fitted.
type PhaseReport struct {
	From, To   int // observed intervals [From, To)
	Start, End simenv.Time
	Workload   string
	// SearchLoss is the best search run's loss (over its shorter run);
	// FinalLoss the window's in the whole twin's run.
	SearchLoss, FinalLoss float64
	// Runs and Time are the window's search's simulations and wall time,
	// the first window's with the lead-in's search (chooseLead): they
	// add up to the fit's but for the final run.
	Runs int
	Time time.Duration
	// Rivals are the fit's runners-up for the window: the best of each
	// other kind of workload, refined, whose loss with its parameters
	// counted is within rivalBound of the winner's, nearest first.
	Rivals []Rival
	// Edge is the winner's own kind at the edge of what the observations
	// allow: of the candidates of its kind tried, within rivalBound, the
	// one whose parameters lie farthest from the winner's (nil: none).
	// Rival twins take it only where too few other kinds qualify.
	Edge *Rival
	// Untried are the kinds of workload the window's budget ended before
	// trying (flows of a family, incast, allreduce, alltoall): the rivals
	// stand for the kinds tried only.
	Untried   []string `json:",omitempty"`
	penalised float64  // the winner's loss with its parameters counted
	noise     Stats    // what the loss counted errors against
}

// Rival is a workload the fit nearly chose for a window.
type Rival struct {
	Workload   string
	SearchLoss float64
	// Penalised is its loss with its parameters counted (what the
	// candidates were ranked by); Excess how far it is above the
	// winner's.
	Penalised, Excess float64
	w                 Workload
}

// A rival's loss (parameters counted) is at most RivalLossFactor times
// the winner's, or RivalNoiseLoss: a loss is the mean z² of the
// statistics' errors counted against their noise, about 1 for a
// workload that differs from the observed one by noise alone, so the fit
// cannot tell apart two workloads both within it; one further off, and
// more than twice as far as the winner, is not a rival.
const (
	RivalLossFactor = 2.0
	RivalNoiseLoss  = 1.0
)

// rivalBound is the largest loss of a rival of a winner of penalised
// loss pen.
func rivalBound(pen float64) float64 { return math.Max(RivalNoiseLoss, RivalLossFactor*pen) }

// fitWindow fits one window's workload within budget: each flow-size
// family at three loads (or the candidates seed, tried on the window
// before: chooseLead's), calibration of the noise, each family's load
// refined; then incasts and collectives beside the better family on a
// coarse grid, the best of each of their kinds refined in turn; the best
// candidate, its parameters counted (penalised), wins.
func (ft *fitter) fitWindow(i int, obs observed, prefix []Phase, from, to simenv.Time, budget time.Duration, seed []scored) (Workload, PhaseReport) {
	start := ft.o.Clock()
	runs0 := ft.runs
	to = min(to, from+searchIntervals*ft.iv)
	to = max(to, from+5*ft.iv)
	s := &search{ft: ft, obs: obs, prefix: prefix, from: from, to: to, deadline: ft.clock().Add(budget), loss: math.Inf(1),
		byKind: map[string]scored{}, refined: map[string]scored{}}
	if len(seed) > 0 {
		for _, c := range seed {
			s.tried = append(s.tried, c)
			s.keep(c)
		}
	} else {
		s.flows()
	}
	s.calibrated()
	for _, fam := range Families {
		s.refineKind(i, "flows of "+fam, ft.clock().Add(s.deadlineLeft()/time.Duration(2*len(Families)+1)))
	}
	s.extras()
	kinds := s.ranked()
	for k, c := range kinds {
		s.refineKind(i, c.kind, ft.clock().Add(s.deadlineLeft()/time.Duration(len(kinds)-k)))
	}
	best := scored{loss: math.Inf(1)}
	for _, kind := range slices.Sorted(maps.Keys(s.refined)) { // a tie goes the same way every run
		if c := s.refined[kind]; s.penalised(c.w, c.loss) < s.penalised(best.w, best.loss) {
			best = c
		}
	}
	pr := PhaseReport{Workload: best.w.Describe(), SearchLoss: best.loss, Runs: ft.runs - runs0, Time: ft.o.Clock().Sub(start), noise: s.obs.noise,
		penalised: s.penalised(best.w, best.loss)}
	pr.Rivals = s.rivals(best, pr.penalised)
	pr.Edge = s.edge(best, pr.penalised)
	tried := map[string]bool{}
	for _, c := range s.tried {
		tried[kindOf(c.w)] = true
	}
	for _, k := range allKinds() {
		if !tried[k] {
			pr.Untried = append(pr.Untried, k)
		}
	}
	return best.w, pr
}

// edge is the candidate of best's kind tried whose parameters lie
// farthest from best's (paramDistance) with a penalised loss within
// rivalBound of best's (pen); nil when none differs.
func (s *search) edge(best scored, pen float64) *Rival {
	var out *Rival
	far := 0.0
	kind, d0 := kindOf(best.w), best.w.Describe()
	for _, c := range s.tried {
		if kindOf(c.w) != kind {
			continue
		}
		rv, ok := s.rivalOf(c, pen)
		if !ok || rv.Workload == d0 {
			continue
		}
		d := paramDistance(best.w, c.w, s.ft.iv)
		if out == nil || d > far || d == far && rv.Penalised < out.Penalised {
			far, out = d, &rv
		}
	}
	return out
}

// rivalOf is candidate c as a rival of a winner of penalised loss pen;
// ok false when its loss is not within rivalBound.
func (s *search) rivalOf(c scored, pen float64) (rv Rival, ok bool) {
	p := s.penalised(c.w, c.loss)
	if math.IsInf(p, 0) || math.IsNaN(p) || p > rivalBound(pen) {
		return Rival{}, false
	}
	return Rival{Workload: c.w.Describe(), SearchLoss: c.loss, Penalised: p, Excess: p - pen, w: c.w}, true
}

// paramDistance is how far b's parameters lie from a's: the sum of the
// absolute log ratios of the load, an incast's fan-in, size and period, a
// collective's ranks, size and gap (plus one interval iv), and 1 for
// another flow family.
func paramDistance(a, b Workload, iv simenv.Time) float64 {
	lr := func(x, y float64) float64 {
		if x <= 0 || y <= 0 {
			return 0
		}
		return math.Abs(math.Log(y / x))
	}
	d := lr(a.Load, b.Load)
	if a.Family != b.Family {
		d++
	}
	if x, y := a.Incast, b.Incast; x != nil && y != nil {
		d += lr(float64(x.Fanin), float64(y.Fanin)) + lr(float64(x.SizeBytes), float64(y.SizeBytes)) + lr(float64(x.Every), float64(y.Every))
	}
	if x, y := a.Collective, b.Collective; x != nil && y != nil {
		d += lr(float64(x.Ranks), float64(y.Ranks)) + lr(float64(x.SizeBytes), float64(y.SizeBytes)) + lr(float64(x.Gap+iv), float64(y.Gap+iv))
	}
	return d
}

// rivals are the refined best of each kind but the winner's, within
// rivalBound of its penalised loss pen, nearest first (one per
// workload as Describe names it: two kinds' refinements may meet, and the
// nearer stands for both; ties go by kind, so every run keeps the same).
func (s *search) rivals(best scored, pen float64) []Rival {
	type cand struct {
		rv   Rival
		kind string
	}
	var all []cand
	for _, kind := range slices.Sorted(maps.Keys(s.refined)) {
		if rv, ok := s.rivalOf(s.refined[kind], pen); ok {
			all = append(all, cand{rv, kind})
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].rv.Penalised != all[j].rv.Penalised {
			return all[i].rv.Penalised < all[j].rv.Penalised
		}
		return all[i].rv.Workload < all[j].rv.Workload
	})
	var out []Rival
	seen := map[string]bool{best.w.Describe(): true}
	for _, c := range all {
		if !seen[c.rv.Workload] {
			seen[c.rv.Workload] = true
			out = append(out, c.rv)
		}
	}
	return out
}

// refineKind refines the best candidate of kind until until, once.
func (s *search) refineKind(i int, kind string, until time.Time) {
	c, ok := s.byKind[kind]
	if _, done := s.refined[kind]; done || !ok {
		return
	}
	s.ft.o.Log("window %d: grid's best %s: %s (loss %.3f)", i, kind, c.w.Describe(), c.loss)
	s.best, s.loss = c.w, c.loss
	s.refine(until)
	s.refined[kind] = scored{kind: kind, w: s.best, loss: s.loss}
	s.ft.o.Log("window %d: refined to %s (loss %.3f, with its parameters counted %.3f)", i, s.best.Describe(), s.loss, s.penalised(s.best, s.loss))
}

// penalised is loss with the parameters of w counted as the Bayesian
// information criterion counts them: the loss is a mean z² over N
// statistics (a χ² over N), each parameter beyond the flows' family and
// load adds ln(N) to the χ², so that an incast or a collective (3 more
// parameters) is chosen only where it explains what flows alone cannot,
// not the draw of flows of one observation.
func (s *search) penalised(w Workload, loss float64) float64 {
	n := float64(len(s.obs.stats.Roles()) * len(statDefs))
	k := 0.0
	if w.Incast != nil {
		k += 3
	}
	if w.Collective != nil {
		k += 3
	}
	return loss + k*math.Log(n)/n
}

// scored is a candidate with its loss, statistics and the kind of
// workload it is.
type scored struct {
	kind  string
	w     Workload
	loss  float64
	stats Stats
	ramp  float64 // rampRatio of its runs (evaluateSeeds)
}

// kindOf names the kind of a workload: flows of a family alone (each
// family its own kind: a family's load is refined apart from the
// other's), or what stands beside the flows.
func kindOf(w Workload) string {
	switch {
	case w.Collective != nil:
		return w.Collective.Kind
	case w.Incast != nil:
		return "incast"
	}
	return "flows of " + w.Family
}

// allKinds are the kinds of workload a window's search tries (kindOf), in
// the order it tries them.
func allKinds() []string {
	var out []string
	for _, fam := range Families {
		out = append(out, "flows of "+fam)
	}
	return append(out, "incast", "allreduce", "alltoall")
}

// ranked lists the best candidate of each kind, best first, at most 4.
func (s *search) ranked() []scored {
	var out []scored
	for _, c := range s.byKind {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].loss != out[j].loss {
			return out[i].loss < out[j].loss
		}
		return out[i].kind < out[j].kind // ties the same way every run
	})
	return out[:min(4, len(out))]
}

func (s *search) deadlineLeft() time.Duration { return max(0, s.deadline.Sub(s.ft.clock())) }

// search is one window's search.
type search struct {
	ft       *fitter
	obs      observed
	prefix   []Phase     // the windows before, as fitted
	from, to simenv.Time // the window's simulated span
	deadline time.Time
	best     Workload
	loss     float64
	ramp     float64 // best's
	// byKind is the best candidate of each kind tried (kindOf).
	byKind map[string]scored
	// tried are every candidate evaluated, to score again when the
	// noise the loss counts against changes (calibration).
	tried []scored
	// refined holds the best of each kind once refined.
	refined map[string]scored
}

// try evaluates candidates and keeps the best, within the window's
// budget; it says whether one beat the best so far.
func (s *search) try(ws []Workload) bool {
	better := false
	for len(ws) > 0 {
		// Workers at a time, and none once the window's budget is spent
		// (but for the first: a window gets at least one candidate).
		if len(s.tried) > 0 && !s.ft.clock().Before(s.deadline) {
			break
		}
		n := min(len(ws), s.ft.o.Workers)
		stats, ramps := s.ft.evaluateAll(ws[:n], s.prefix, s.from, s.to)
		for i, st := range stats {
			if st == nil {
				continue
			}
			c := scored{kind: kindOf(ws[i]), w: ws[i], loss: Loss(s.obs.stats, st, s.obs.noise, s.ft.o.Seeds), stats: st, ramp: ramps[i]}
			s.tried = append(s.tried, c)
			better = s.keep(c) || better
		}
		ws = ws[n:]
	}
	return better
}

// keep notes c as the best of its kind and overall where it is; it says
// whether it is the best overall.
func (s *search) keep(c scored) bool {
	if b, ok := s.byKind[c.kind]; !ok || c.loss < b.loss {
		s.byKind[c.kind] = c
	}
	if c.loss < s.loss-1e-9 {
		s.best, s.loss, s.ramp = c.w, c.loss, c.ramp
		return true
	}
	return false
}

// calibrated counts errors against what a statistic may differ by
// between runs of the same traffic: within the observed window (its
// noise) or between draws of flows of the best candidate so far
// (calibrate), whichever is larger; every candidate tried is scored
// again.
func (s *search) calibrated() {
	s.obs.noise = maxStats(s.obs.noise, s.ft.calibrate(s.best, s.prefix, s.from, s.to))
	s.best, s.loss, s.byKind = Workload{}, math.Inf(1), map[string]scored{}
	for i := range s.tried {
		s.tried[i].loss = Loss(s.obs.stats, s.tried[i].stats, s.obs.noise, s.ft.o.Seeds)
		s.keep(s.tried[i])
	}
}

// refBDP is the reference queue at the host rate (env's RefRTT, 20 µs).
func (s *search) refBDP() int64 { return int64(s.ft.f.HostRateBps * 20e-6 / 8) }

// flows tries each family at half, one and one and a half times the
// observed host utilisation.
func (s *search) flows() {
	u0 := clamp(s.obs.stats[RoleHost]["util_mean"], 0.02, 0.9)
	var ws []Workload
	for _, fam := range Families {
		for _, m := range []float64{0.5, 1, 1.5} {
			ws = append(ws, Workload{Family: fam, Load: roundLoad(u0 * m)})
		}
	}
	s.try(ws)
}

// extras tries incasts and collectives beside the best flows so far, on
// a coarse grid.
func (s *search) extras() {
	base := s.bestFlows()
	h, iv, bdp := s.ft.f.HostCount(), s.ft.iv, s.refBDP()
	var ws []Workload
	for _, fanin := range uniq(max(1, h/4), h-1) {
		for _, size := range []int64{bdp / 2, 4 * bdp} {
			for _, every := range []simenv.Time{iv, 5 * iv} {
				w := Workload{Family: base.Family, Load: roundLoad(base.Load * 0.7)}
				w.Incast = &Incast{Fanin: fanin, SizeBytes: roundSize(size), Every: roundTime(every)}
				ws = append(ws, w)
			}
		}
	}
	for _, kind := range []string{"allreduce", "alltoall"} {
		for _, ranks := range uniq(h, max(2, h/2)) {
			for _, size := range []int64{8 * bdp, 64 * bdp} {
				for _, gap := range []simenv.Time{0, 2 * iv} {
					w := Workload{Family: base.Family, Load: roundLoad(base.Load * 0.3)}
					w.Collective = &Collective{Kind: kind, Ranks: ranks, SizeBytes: roundSize(size), Gap: roundTime(gap)}
					ws = append(ws, w)
				}
			}
		}
	}
	s.try(ws)
}

// bestFlows is the best flows-alone candidate refined so far, the
// extras' base: the lowest loss over the families refined (the search's
// current candidate, the last family refined, where none is lower; ties
// go to the earlier family).
func (s *search) bestFlows() Workload {
	base, bestLoss := s.best, s.loss
	for _, fam := range Families {
		if c, ok := s.refined["flows of "+fam]; ok && c.loss < bestLoss {
			base, bestLoss = c.w, c.loss
		}
	}
	return base
}

// refine moves one parameter of the best candidate at a time, up and
// down by a step that halves when no move helps, until until or the
// step is below 1/16.
func (s *search) refine(until time.Time) {
	timeLeft := func() bool { return s.ft.clock().Before(until) }
	for step := 0.5; step >= 1.0/16 && timeLeft(); {
		improved := false
		for _, mv := range s.moves() {
			if !timeLeft() {
				return
			}
			var ws []Workload
			for _, dir := range []int{-1, 1} {
				if w, ok := mv(s.best, step, dir); ok {
					ws = append(ws, w)
				}
			}
			improved = s.try(ws) || improved
		}
		if !improved {
			step /= 2
		}
	}
}

// move changes one parameter of w by step in direction dir; ok false
// when it cannot (at a bound, or not in w).
type move func(w Workload, step float64, dir int) (Workload, bool)

// moves are the parameters the refinement moves.
func (s *search) moves() []move {
	base := []move{
		func(w Workload, step float64, dir int) (Workload, bool) {
			if w.Family == "" {
				return w, false
			}
			w.Load = roundLoad(w.Load * math.Pow(2, step*float64(dir)))
			return w, true
		},
		func(w Workload, _ float64, dir int) (Workload, bool) { return otherFamily(w, dir) },
	}
	return append(append(base, s.incastMoves()...), s.collectiveMoves()...)
}

// factor is the multiplier of a step in direction dir: 2^(±2·step).
func factor(step float64, dir int) float64 { return math.Pow(2, 2*step*float64(dir)) }

// countMove moves a count n by step (a fraction of half the hosts, at
// least 1) within lo..hi.
func (s *search) countMove(n int, step float64, dir, lo, hi int) int {
	h := s.ft.f.HostCount()
	return min(max(n+dir*max(1, int(math.Round(step*float64(h)/2))), lo), hi)
}

// incastMoves move an incast's fan-in, size and period.
func (s *search) incastMoves() []move {
	h, iv := s.ft.f.HostCount(), s.ft.iv
	change := func(f func(c *Incast, step float64, dir int) bool) move {
		return func(w Workload, step float64, dir int) (Workload, bool) {
			if w.Incast == nil {
				return w, false
			}
			c := *w.Incast
			ok := f(&c, step, dir)
			w.Incast = &c
			return w, ok
		}
	}
	return []move{
		change(func(c *Incast, step float64, dir int) bool {
			n := s.countMove(c.Fanin, step, dir, 1, h-1)
			moved := n != c.Fanin
			c.Fanin = n
			return moved
		}),
		change(func(c *Incast, step float64, dir int) bool {
			c.SizeBytes = roundSize(int64(float64(c.SizeBytes) * factor(step, dir)))
			return true
		}),
		change(func(c *Incast, step float64, dir int) bool {
			c.Every = max(roundTime(simenv.Time(float64(c.Every)*factor(step, dir))), iv/10)
			return true
		}),
	}
}

// collectiveMoves move a collective's ranks, size and gap.
func (s *search) collectiveMoves() []move {
	h, iv := s.ft.f.HostCount(), s.ft.iv
	change := func(f func(c *Collective, step float64, dir int) bool) move {
		return func(w Workload, step float64, dir int) (Workload, bool) {
			if w.Collective == nil {
				return w, false
			}
			c := *w.Collective
			ok := f(&c, step, dir)
			w.Collective = &c
			return w, ok
		}
	}
	return []move{
		change(func(c *Collective, step float64, dir int) bool {
			n := s.countMove(c.Ranks, step, dir, 2, h)
			moved := n != c.Ranks
			c.Ranks = n
			return moved
		}),
		change(func(c *Collective, step float64, dir int) bool {
			c.SizeBytes = max(roundSize(int64(float64(c.SizeBytes)*factor(step, dir))), int64(c.Ranks)*1000)
			return true
		}),
		change(func(c *Collective, step float64, dir int) bool {
			switch {
			case c.Gap == 0 && dir > 0:
				c.Gap = roundTime(simenv.Time(step * float64(iv)))
			case c.Gap == 0:
				return false
			case dir < 0 && c.Gap < iv/8:
				c.Gap = 0
			default:
				c.Gap = roundTime(simenv.Time(float64(c.Gap) * factor(step, dir)))
			}
			return true
		}),
	}
}

// otherFamily switches w's flow-size family: dir 1 to the next of
// Families, dir -1 to none (when w has an incast or collective to stand
// on) or back to the first.
func otherFamily(w Workload, dir int) (Workload, bool) {
	if dir < 0 {
		if w.Family == "" {
			w.Family, w.Load = Families[0], 0.1
			return w, true
		}
		if w.Incast == nil && w.Collective == nil {
			return w, false
		}
		w.Family, w.Load = "", 0
		return w, true
	}
	if w.Family == "" {
		return w, false
	}
	for i, f := range Families {
		if f == w.Family {
			w.Family = Families[(i+1)%len(Families)]
			return w, true
		}
	}
	return w, false
}

func clamp(v, lo, hi float64) float64 { return math.Min(math.Max(v, lo), hi) }

// roundLoad keeps a load in 0.01..0.95 at three significant digits.
func roundLoad(v float64) float64 {
	v = clamp(v, 0.01, 0.95)
	p := math.Pow(10, 2-math.Floor(math.Log10(v)))
	return math.Round(v*p) / p
}

// roundSize rounds a size to whole KB, at least 1 KB.
func roundSize(b int64) int64 { return max(1, (b+500)/1000) * 1000 }

// roundTime rounds a duration to whole microseconds.
func roundTime(t simenv.Time) simenv.Time {
	return simenv.Time(math.Round(float64(t)/float64(simenv.Microsecond))) * simenv.Microsecond
}

func uniq(a, b int) []int {
	if a == b {
		return []int{a}
	}
	return []int{a, b}
}

// maxStats is the larger of a and b per role and statistic.
func maxStats(a, b Stats) Stats {
	out := Stats{}
	for _, s := range []Stats{a, b} {
		for role, byName := range s {
			if out[role] == nil {
				out[role] = map[string]float64{}
			}
			for k, v := range byName {
				out[role][k] = math.Max(out[role][k], v)
			}
		}
	}
	return out
}
