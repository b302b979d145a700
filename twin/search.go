package twin

import (
	"math"
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
	Runs                  int
	Time                  time.Duration
}

// fitWindow fits one window's workload within budget: a coarse grid of
// family × load, then incasts and collectives beside the best family,
// then a coordinate search from the best candidate.
func (ft *fitter) fitWindow(i int, obs Stats, prefix []Phase, from, to simenv.Time, budget time.Duration) (Workload, PhaseReport) {
	start := ft.o.Clock()
	runs0 := ft.runs
	to = min(to, from+searchIntervals*ft.iv)
	to = max(to, from+5*ft.iv)
	s := &search{ft: ft, obs: obs, prefix: prefix, from: from, to: to, deadline: start.Add(budget), loss: math.Inf(1),
		byKind: map[string]scored{}}
	s.grid()
	// The best of each kind of workload (flows alone, with an incast,
	// with a collective) is refined in turn, the better ones first and
	// with more of the budget left, and the best refined one wins: a
	// kind is not chosen on the grid's coarse points alone.
	kinds := s.ranked()
	best := scored{loss: math.Inf(1)}
	for k, c := range kinds {
		ft.o.Log("window %d: grid's best %s: %s (loss %.3f)", i, c.kind, c.w.Describe(), c.loss)
		left := s.deadlineLeft()
		s.best, s.loss = c.w, c.loss
		s.refine(ft.o.Clock().Add(left / time.Duration(len(kinds)-k)))
		ft.o.Log("window %d: refined to %s (loss %.3f)", i, s.best.Describe(), s.loss)
		if s.loss < best.loss {
			best = scored{w: s.best, loss: s.loss}
		}
	}
	pr := PhaseReport{Workload: best.w.Describe(), SearchLoss: best.loss, Runs: ft.runs - runs0, Time: ft.o.Clock().Sub(start)}
	return best.w, pr
}

// scored is a candidate with its loss and the kind of workload it is.
type scored struct {
	kind string
	w    Workload
	loss float64
}

// kindOf names the kind of a workload: flows alone, or what stands beside
// them.
func kindOf(w Workload) string {
	switch {
	case w.Collective != nil:
		return w.Collective.Kind
	case w.Incast != nil:
		return "incast"
	}
	return "flows"
}

// ranked lists the best candidate of each kind, best first, at most 3.
func (s *search) ranked() []scored {
	var out []scored
	for _, c := range s.byKind {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].loss < out[j].loss })
	return out[:min(3, len(out))]
}

func (s *search) deadlineLeft() time.Duration { return max(0, s.deadline.Sub(s.ft.o.Clock())) }

// search is one window's search.
type search struct {
	ft       *fitter
	obs      Stats
	prefix   []Phase     // the windows before, as fitted
	from, to simenv.Time // the window's simulated span
	deadline time.Time
	best     Workload
	loss     float64
	// byKind is the best candidate of each kind tried (kindOf).
	byKind map[string]scored
}

// try evaluates candidates and keeps the best; it says whether one beat
// the best so far.
func (s *search) try(ws []Workload) bool {
	if len(ws) == 0 {
		return false
	}
	losses := s.ft.evaluateAll(ws, s.obs, s.prefix, s.from, s.to)
	better := false
	for i, l := range losses {
		k := kindOf(ws[i])
		if c, ok := s.byKind[k]; !ok || l < c.loss {
			s.byKind[k] = scored{kind: k, w: ws[i], loss: l}
		}
		if l < s.loss-1e-9 {
			s.best, s.loss, better = ws[i], l, true
		}
	}
	return better
}

// refBDP is the reference queue at the host rate (env's RefRTT, 20 µs).
func (s *search) refBDP() int64 { return int64(s.ft.f.HostRateBps * 20e-6 / 8) }

// grid runs the coarse grid.
func (s *search) grid() {
	u0 := clamp(s.obs[RoleHost]["util_mean"], 0.02, 0.9)
	var ws []Workload
	for _, fam := range Families {
		for _, m := range []float64{0.5, 1, 1.5} {
			ws = append(ws, Workload{Family: fam, Load: roundLoad(u0 * m)})
		}
	}
	s.try(ws)
	base := s.best
	h, iv, bdp := s.ft.f.HostCount(), s.ft.iv, s.refBDP()
	ws = nil
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

// refine moves one parameter of the best candidate at a time, up and
// down by a step that halves when no move helps, until until or the
// step is below 1/16.
func (s *search) refine(until time.Time) {
	timeLeft := func() bool { return s.ft.o.Clock().Before(until) }
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
