package twin

import (
	"math"
	"sort"

	"github.com/ecntune/ecntune/env"
)

// Timeline is the observed run's control intervals: their times, oldest
// first, and the samples of each.
type Timeline struct {
	Times []int64
	// At holds the samples of each time, by index of Times.
	At [][]Sample
	// IntervalNs is the median measured interval (the counters' own
	// timestamps).
	IntervalNs int64
}

// NewTimeline orders samples by time; samples whose interval was not
// measured are left out.
func NewTimeline(samples []Sample) Timeline {
	by := map[int64][]Sample{}
	var iv []float64
	for _, s := range samples {
		if s.Metrics.IntervalNs <= 0 || s.Metrics.Reset {
			continue
		}
		by[s.TimeNs] = append(by[s.TimeNs], s)
		iv = append(iv, float64(s.Metrics.IntervalNs))
	}
	var tl Timeline
	for t := range by {
		tl.Times = append(tl.Times, t)
	}
	sort.Slice(tl.Times, func(i, j int) bool { return tl.Times[i] < tl.Times[j] })
	for _, t := range tl.Times {
		tl.At = append(tl.At, by[t])
	}
	tl.IntervalNs = int64(percentile(iv, 0.5))
	return tl
}

// Samples are the samples of intervals [from, to).
func (tl Timeline) Samples(from, to int) []Sample {
	var out []Sample
	for i := from; i < to; i++ {
		out = append(out, tl.At[i]...)
	}
	return out
}

// Window is a run of intervals [From, To) of a Timeline.
type Window struct{ From, To int }

// seriesScales are the scales of the per-interval figures Segment looks
// at (Series' columns): a change smaller than twice these is no change of
// traffic.
var seriesScales = []float64{0.05, 0.05, 0.1, 0.01, 0.05, 0.005}

// Series is one row per interval of what changes when traffic does: mean
// utilisation of host and fabric ports, mean queue watermark, marked
// fraction, mean incast score and paused time.
func (tl Timeline) Series() [][]float64 {
	out := make([][]float64, len(tl.At))
	for i, ss := range tl.At {
		var hu, hn, fu, fn, mq, mk, inc, pr float64
		for _, s := range ss {
			m := s.Metrics
			if s.Peer == env.PeerSwitch {
				fu += m.Util
				fn++
			} else {
				hu += m.Util
				hn++
			}
			mq += m.MaxQueueFrac
			mk += m.MarkFrac * m.Util
			inc += m.Incast
			pr += m.PauseRxFrac
		}
		n := float64(len(ss))
		out[i] = []float64{hu / math.Max(hn, 1), fu / math.Max(fn, 1), mq / n, mk / math.Max(hu+fu, 1e-9), inc / n, pr / n}
	}
	return out
}

// Segment splits the timeline into at most maxWindows windows where its
// traffic changes: binary segmentation of Series, spikes of one or two
// intervals taken out (despiked), by the change in median (a burst is no
// change of traffic), a split kept when its
// gain (in units of the series' own noise) passes a penalty growing with
// the log of the intervals and some figure moves by more than twice its
// scale. Windows are at least max(3, n/6) intervals, the first at least
// twice that (its first part may be the traffic's ramp up).
func (tl Timeline) Segment(maxWindows int) []Window {
	x := tl.Series()
	n := len(x)
	ws := []Window{{0, n}}
	if n < 6 || maxWindows < 2 {
		return ws
	}
	sigma := noise(x)
	x = despiked(x, sigma)
	minLen := max(3, n/6)
	penalty := 3 * float64(len(sigma)) * math.Log(float64(n))
	for len(ws) < maxWindows {
		best, bestGain, bestK := -1, 0.0, 0
		for i, w := range ws {
			if k, g := bestSplit(x, w, sigma, minLen); k > 0 && g > bestGain {
				best, bestGain, bestK = i, g, k
			}
		}
		if best < 0 || bestGain < penalty {
			break
		}
		w := ws[best]
		ws = append(ws[:best], append([]Window{{w.From, bestK}, {bestK, w.To}}, ws[best+1:]...)...)
	}
	return ws
}

// despiked is x with each value more than spikeSigmas of its column's
// noise from the median of the five intervals around it replaced by that
// median: a burst of one or two intervals, which is no change of traffic.
// Segment places and weighs its splits on it; a level shift keeps its
// values (three of the five around its first interval are on the new
// level). Why: a split is placed where the means differ most, and a
// burst's share of a mean is largest in the shortest part that holds it:
// a one-interval spike of marks in a column whose noise is a quarter of
// its scale (0.0025) moved a shift at 20 of 60 intervals to 29, the last
// split at which the medians still differed enough.
func despiked(x [][]float64, sigma []float64) [][]float64 {
	out := make([][]float64, len(x))
	for i := range x {
		out[i] = append([]float64(nil), x[i]...)
		lo, hi := max(0, i-2), min(len(x), i+3)
		for j := range sigma {
			if m := colMedian(x, lo, hi, j); math.Abs(x[i][j]-m) > spikeSigmas*sigma[j] {
				out[i][j] = m
			}
		}
	}
	return out
}

// spikeSigmas is how far from its neighbours' median, in noise units, a
// value is a spike (despiked).
const spikeSigmas = 3

// noise estimates each column's noise from its differences at a lag of
// an eighth of the run (median absolute difference / 0.954: robust to a
// level shift, and counting the slow swings of long flows, which
// successive intervals share), at least a quarter of the column's scale.
func noise(x [][]float64) []float64 {
	d := len(seriesScales)
	lag := max(1, len(x)/8)
	out := make([]float64, d)
	for j := 0; j < d; j++ {
		var diffs []float64
		for i := lag; i < len(x); i++ {
			diffs = append(diffs, math.Abs(x[i][j]-x[i-lag][j]))
		}
		out[j] = math.Max(percentile(diffs, 0.5)/0.954, seriesScales[j]/4)
	}
	return out
}

// bestSplit finds the split of w where the means differ most (in noise
// units), among those where the medians move some figure by more than
// twice its scale; its gain is the medians' (robust to a burst of one
// interval). k 0 when there is none.
func bestSplit(x [][]float64, w Window, sigma []float64, minLen int) (k int, gain float64) {
	d := len(sigma)
	bestMean := 0.0
	from := w.From
	if from == 0 {
		// The first intervals may be the traffic's start (an agent started
		// with the fabric, as in a test): a ramp, not a window of its own.
		// They are left out of the first window's figures here (the fit
		// simulates them all the same).
		from = minLen
	}
	for s := from + minLen; s <= w.To-minLen; s++ {
		nl, nr := float64(s-from), float64(w.To-s)
		gMean, gMedian, material := 0.0, 0.0, false
		for j := 0; j < d; j++ {
			ml, mr := colMedian(x, from, s, j), colMedian(x, s, w.To, j)
			z := (ml - mr) / sigma[j]
			gMedian += nl * nr / (nl + nr) * z * z
			material = material || math.Abs(ml-mr) > 2*seriesScales[j]
			z = (colMean(x, from, s, j) - colMean(x, s, w.To, j)) / sigma[j]
			gMean += nl * nr / (nl + nr) * z * z
		}
		if material && gMean > bestMean {
			k, gain, bestMean = s, gMedian, gMean
		}
	}
	return k, gain
}

func colMean(x [][]float64, from, to, j int) float64 {
	s := 0.0
	for i := from; i < to; i++ {
		s += x[i][j]
	}
	return s / float64(to-from)
}

// colMedian is the median of column j over rows [from, to): a burst of
// one interval (a deep watermark, a spike of marks) moves no median.
func colMedian(x [][]float64, from, to, j int) float64 {
	v := make([]float64, 0, to-from)
	for i := from; i < to; i++ {
		v = append(v, x[i][j])
	}
	return percentile(v, 0.5)
}
