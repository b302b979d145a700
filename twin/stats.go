package twin

import (
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/ecntune/ecntune/env"
)

// Sample is one queue's figures over one control interval, as the agent
// stored them (a recommendation's Metrics) or as the simulated twin's
// counters give them.
type Sample struct {
	TimeNs  int64
	Key     env.QueueKey
	RateBps float64
	Peer    env.Peer
	Metrics env.Metrics
	// Setting is the ECN setting the queue ran in the interval (the
	// agent's read-back, core.Recommendation.Current; zero: not known).
	Setting env.Setting
}

// Stat is one statistic of a set of samples: its name, what it means and
// the scale its error is measured against (an absolute floor under which
// differences do not count as relative ones).
type Stat struct {
	Name  string
	About string
	Scale float64
}

// Role names the ports a statistic is computed over: those facing hosts
// (the flows' last hop) or another switch.
const (
	RoleHost   = "host"
	RoleFabric = "fabric"
)

// statDefs are the statistics per role, in report order.
var statDefs = []Stat{
	{"util_mean", "mean utilisation of the ports' egress", 0.05},
	{"util_p50", "median utilisation over ports and intervals", 0.05},
	{"util_p90", "90th percentile of utilisation over ports and intervals", 0.05},
	{"util_cv", "variation over time of the mean utilisation (stddev / mean)", 0.1},
	{"avgq_p50", "median average queue (reference BDPs)", 0.1},
	{"avgq_p90", "90th percentile of the average queue (reference BDPs)", 0.1},
	{"maxq_p50", "median queue watermark (reference BDPs)", 0.1},
	{"maxq_p90", "90th percentile of the queue watermark (reference BDPs)", 0.1},
	{"maxq_top", "mean over intervals of the deepest watermark of any port (reference BDPs)", 0.2},
	{"mark", "fraction of bytes ECN-marked", 0.01},
	{"pause_rx", "mean fraction of time paused by the peer", 0.005},
	{"pause_tx", "mean PFC pause rate sent (normalised)", 0.005},
	{"incast", "mean incast score (peaky watermark or pauses sent)", 0.05},
	{"incast_frac", "fraction of port-intervals with an incast score above 0.5", 0.02},
}

// Stats are the statistics of a set of samples, by role and name.
type Stats map[string]map[string]float64

// Roles lists the roles of s in report order.
func (s Stats) Roles() []string {
	var out []string
	for _, r := range []string{RoleHost, RoleFabric} {
		if _, ok := s[r]; ok {
			out = append(out, r)
		}
	}
	return out
}

// Defs are the statistics every role has, in report order.
func Defs() []Stat { return append([]Stat(nil), statDefs...) }

// Compute computes the statistics of samples by the role of their port
// (samples whose interval was not measured are left out; a port whose
// peer is unknown counts as facing a host). A role without samples is
// absent.
func Compute(samples []Sample) Stats {
	by := map[string][]Sample{}
	for _, s := range samples {
		if s.Metrics.IntervalNs <= 0 || s.Metrics.Reset {
			continue
		}
		r := RoleHost
		if s.Peer == env.PeerSwitch {
			r = RoleFabric
		}
		by[r] = append(by[r], s)
	}
	out := Stats{}
	for r, ss := range by {
		out[r] = roleStats(ss)
	}
	return out
}

func roleStats(ss []Sample) map[string]float64 {
	n := float64(len(ss))
	util, avgq, maxq := make([]float64, len(ss)), make([]float64, len(ss)), make([]float64, len(ss))
	var txw, marked, prx, ptx, inc, incHigh float64
	perTime := map[int64]*struct{ util, n, top float64 }{}
	for i, s := range ss {
		m := s.Metrics
		util[i], avgq[i], maxq[i] = m.Util, m.AvgQueueFrac, m.MaxQueueFrac
		txw += m.Util
		marked += m.Util * m.MarkFrac
		prx += m.PauseRxFrac
		ptx += m.PauseTxFrac
		inc += m.Incast
		if m.Incast > 0.5 {
			incHigh++
		}
		t := perTime[s.TimeNs]
		if t == nil {
			t = &struct{ util, n, top float64 }{}
			perTime[s.TimeNs] = t
		}
		t.util += m.Util
		t.n++
		t.top = max(t.top, m.MaxQueueFrac)
	}
	var means []float64
	top := 0.0
	for _, k := range slices.Sorted(maps.Keys(perTime)) { // summed in one order: the same loss, bit for bit, every run
		t := perTime[k]
		means = append(means, t.util/t.n)
		top += t.top
	}
	mark := 0.0
	if txw > 0 {
		mark = marked / txw
	}
	return map[string]float64{
		"util_mean": mean(util), "util_p50": percentile(util, 0.5), "util_p90": percentile(util, 0.9), "util_cv": cv(means),
		"avgq_p50": percentile(avgq, 0.5), "avgq_p90": percentile(avgq, 0.9),
		"maxq_p50": percentile(maxq, 0.5), "maxq_p90": percentile(maxq, 0.9), "maxq_top": top / float64(len(perTime)),
		"mark": mark, "pause_rx": prx / n, "pause_tx": ptx / n, "incast": inc / n, "incast_frac": incHigh / n,
	}
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// cv is the standard deviation of v over its mean (0 for a mean of 0).
func cv(v []float64) float64 {
	m := mean(v)
	if m <= 0 || len(v) < 2 {
		return 0
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss/float64(len(v)-1)) / m
}

// percentile is the q quantile of v, linearly interpolated (v is not
// changed).
func percentile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (pos-float64(lo))*(s[hi]-s[lo])
}

// Errors are the error of each statistic of sim against obs: (sim − obs)
// over max(|obs|, the statistic's scale). A statistic obs has and sim
// lacks (a role the simulation has no samples of) counts as simulated 0.
func Errors(obs, sim Stats) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, r := range obs.Roles() {
		out[r] = map[string]float64{}
		for _, d := range statDefs {
			o, s := obs[r][d.Name], sim[r][d.Name]
			out[r][d.Name] = (s - o) / math.Max(math.Abs(o), d.Scale)
		}
	}
	return out
}

// Noise is the standard error of each statistic of samples: the spread
// of the statistic over contiguous blocks of their intervals (at most 6,
// of at least 3 intervals each) over the square root of their number. A
// statistic measured over a few bursty intervals is known only so well,
// and the fit's loss weighs its error by it. Empty with fewer than 6
// intervals (Loss then uses its floors).
func Noise(samples []Sample) Stats {
	tl := NewTimeline(samples)
	n := len(tl.Times)
	b := min(6, n/3)
	out := Stats{}
	if b < 2 {
		return out
	}
	blocks := make([]Stats, b)
	for k := range blocks {
		blocks[k] = Compute(tl.Samples(k*n/b, (k+1)*n/b))
	}
	for _, role := range blocks[0].Roles() {
		out[role] = map[string]float64{}
		for _, d := range statDefs {
			v := make([]float64, 0, b)
			for _, bl := range blocks {
				v = append(v, bl[role][d.Name])
			}
			out[role][d.Name] = stddev(v) / math.Sqrt(float64(b))
		}
	}
	return out
}

func stddev(v []float64) float64 {
	m, ss := mean(v), 0.0
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(max(1, len(v)-1)))
}

// Loss is the fit's loss: the mean over every statistic of every role obs
// has of z², z the difference of sim from obs over the standard error of
// that difference (noise's, at least a tenth of the statistic's scale,
// for the observation, and the same over √runs for sim, whose statistics
// pool runs runs of the same length: × √(1 + 1/runs)), each z² capped at
// 100 so that one statistic far off does not hide all the others. A model
// that is the observed one scores about 1 (the rivals' bound counts on
// it: with √2 for a search's two pooled seeds the true workload scored
// about 0.75).
func Loss(obs, sim, noise Stats, runs int) float64 {
	k := math.Sqrt(1 + 1/float64(max(1, runs)))
	sum, n := 0.0, 0
	for _, r := range obs.Roles() {
		for _, d := range statDefs {
			se := math.Max(noise[r][d.Name], d.Scale/10) * k
			z := (sim[r][d.Name] - obs[r][d.Name]) / se
			sum += math.Min(z*z, 100)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
