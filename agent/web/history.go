package web

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/chart"
)

// DefaultHistory is how many control intervals the dashboard keeps per
// queue (Options.History).
const DefaultHistory = 60

// Metric names a per-queue, per-interval quantity the dashboard draws.
type Metric string

// The dashboard's metrics.
const (
	MetricDepth  Metric = "depth" // peak queue depth in the interval (bytes)
	MetricAvg    Metric = "avg"   // average queue depth (bytes)
	MetricMarks  Metric = "marks" // share of bytes ECN-marked
	MetricPFC    Metric = "pfc"   // share of the interval PFC held the queue paused or the port paused its peer
	MetricUtil   Metric = "util"  // link utilisation
	MetricDrops  Metric = "drops" // share of bytes dropped
	MetricConfid Metric = "confidence"
)

// Metrics lists the dashboard's metrics in display order.
var Metrics = []Metric{MetricDepth, MetricMarks, MetricPFC, MetricUtil, MetricAvg, MetricDrops, MetricConfid}

// Title is m as a human label with its unit.
func (m Metric) Title() string {
	switch m {
	case MetricDepth:
		return "peak queue depth (KB)"
	case MetricAvg:
		return "average queue depth (KB)"
	case MetricMarks:
		return "ECN-marked bytes (%)"
	case MetricPFC:
		return "PFC paused or pausing time (%)"
	case MetricUtil:
		return "utilisation (%)"
	case MetricDrops:
		return "dropped bytes (%)"
	case MetricConfid:
		return "decision confidence (%)"
	}
	return string(m)
}

// sample is one queue's interval as the dashboard draws it, float32 to
// keep 10,000 queues × 60 intervals near 17 MB. NaN: not measured.
type sample struct {
	util, depth, avg, marks, pfc, drops, conf float32
}

var noSample = sample{nan32, nan32, nan32, nan32, nan32, nan32, nan32}

var nan32 = float32(math.NaN())

func (s *sample) get(m Metric) float64 {
	var v float32
	switch m {
	case MetricDepth:
		v = s.depth
	case MetricAvg:
		v = s.avg
	case MetricMarks:
		v = s.marks
	case MetricPFC:
		v = s.pfc
	case MetricUtil:
		v = s.util
	case MetricDrops:
		v = s.drops
	case MetricConfid:
		v = s.conf
	default:
		return math.NaN()
	}
	return float64(v)
}

// scaled is the value of m in the unit Metric.Title names.
func (s *sample) scaled(m Metric) float64 {
	v := s.get(m)
	switch m {
	case MetricDepth, MetricAvg:
		return v / 1e3
	}
	return v * 100
}

// settingAt is a setting from a time on.
type settingAt struct {
	TimeNs  int64       `json:"time_ns"`
	Setting env.Setting `json:"setting"`
}

type queueHist struct {
	pts      []sample    // a ring aligned with history.times
	cur, rec []settingAt // the setting the switch ran and the recommendation, from when each began
	rate     float64
}

// History keeps the last n control intervals of every queue under
// control: what the dashboard draws. It is written once per interval.
type History struct {
	mu     sync.RWMutex
	n      int
	times  []int64 // ring of interval times (ns); slot next is the oldest once full
	next   int
	count  int
	queues map[env.QueueKey]*queueHist
	// peakKB is the deepest peak and average queue (KB) ever recorded:
	// the depth heatmaps' scale only grows (DepthScale).
	peakKB, peakAvgKB float64
}

// NewHistory keeps n intervals (none, and nil, for n <= 0).
func NewHistory(n int) *History {
	if n <= 0 {
		return nil
	}
	return &History{n: n, times: make([]int64, n), queues: map[env.QueueKey]*queueHist{}}
}

// sampleOf is what the dashboard keeps of one observation.
func sampleOf(o *env.Observation, conf float64) sample {
	if !o.Valid {
		return noSample
	}
	m := &o.Metrics
	// PFC: the larger of the time the queue was held paused and the time
	// the port held its peer paused (PAUSE frames sent, PauseTxFrac): a
	// switch's host ports are only ever the latter, as hosts send no PFC.
	s := sample{util: float32(m.Util), marks: float32(m.MarkFrac), pfc: float32(max(m.PauseRxFrac, m.PauseTxFrac)),
		drops: float32(m.DropFrac), conf: float32(conf)}
	s.depth = float32(m.MaxDelayNs * o.RateBps / 8e9)
	s.avg = float32(m.AvgDelayNs * o.RateBps / 8e9)
	if o.Missing.Has(env.TelMarkedPkts | env.TelMarkedBytes) {
		s.marks = nan32
	}
	if o.Missing.Has(env.TelMaxQueue | env.TelAvgQueue | env.TelCurQueue) {
		s.depth, s.avg = nan32, nan32
	}
	if o.Missing.Has(env.TelPFCFrames | env.TelPausedTime) {
		s.pfc = nan32
	}
	if conf < 0 || math.IsNaN(conf) {
		s.conf = nan32
	}
	return s
}

// Record adds one interval: the observations and, where there are, the
// recommendations made from them (recs[i] belongs to obs[i]; nil recs:
// the policy gave none this interval).
func (h *History) Record(nowNs int64, obs []env.Observation, recs []core.Recommendation) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	slot := h.next
	h.times[slot] = nowNs
	h.next = (h.next + 1) % h.n
	if h.count < h.n {
		h.count++
	}
	for _, q := range h.queues {
		q.pts[slot] = noSample
	}
	oldest := h.times[h.next]
	if h.count < h.n {
		oldest = h.times[0]
	}
	for i := range obs {
		o := &obs[i]
		q := h.queues[o.Key]
		if q == nil {
			q = &queueHist{pts: make([]sample, h.n)}
			for j := range q.pts {
				q.pts[j] = noSample
			}
			h.queues[o.Key] = q
		}
		conf := -1.0
		if i < len(recs) {
			conf = recs[i].Confidence
			q.rec = appendSetting(q.rec, nowNs, recs[i].Recommended, oldest)
		}
		q.pts[slot] = sampleOf(o, conf)
		if v := q.pts[slot].scaled(MetricDepth); v > h.peakKB { // NaN is not
			h.peakKB = v
		}
		if v := q.pts[slot].scaled(MetricAvg); v > h.peakAvgKB {
			h.peakAvgKB = v
		}
		q.cur = appendSetting(q.cur, nowNs, o.Current, oldest)
		q.rate = o.RateBps
	}
	// A queue not heard of for a whole window is forgotten.
	for k, q := range h.queues {
		if len(q.cur) > 0 && q.cur[len(q.cur)-1].TimeNs < oldest && allMissing(q.pts) {
			delete(h.queues, k)
		}
	}
}

func allMissing(pts []sample) bool {
	for i := range pts {
		if !math.IsNaN(float64(pts[i].util)) {
			return false
		}
	}
	return true
}

// appendSetting records s from t on when it differs from the last, and
// drops what ended before oldest (keeping the one in force at oldest).
func appendSetting(l []settingAt, t int64, s env.Setting, oldest int64) []settingAt {
	if n := len(l); n == 0 || l[n-1].Setting != s {
		l = append(l, settingAt{TimeNs: t, Setting: s})
	}
	drop := 0
	for drop+1 < len(l) && l[drop+1].TimeNs <= oldest {
		drop++
	}
	if drop > 0 {
		l = append(l[:0], l[drop:]...)
	}
	return l
}

// order returns the ring's slots oldest first.
func (h *History) order() []int {
	out := make([]int, 0, h.count)
	start := 0
	if h.count == h.n {
		start = h.next
	}
	for i := 0; i < h.count; i++ {
		out = append(out, (start+i)%h.n)
	}
	return out
}

// QueueSeries is one queue's history, oldest first: what GET
// /api/queue answers and the dashboard's queue chart draws. Values are in
// the units of Metric.Title; null where not measured.
type QueueSeries struct {
	Key         env.QueueKey          `json:"key"`
	RateBps     float64               `json:"rate_bps"`
	TimesNs     []int64               `json:"times_ns"`
	Values      map[Metric][]*float64 `json:"values"`
	Settings    []settingAt           `json:"settings"`              // the setting the switch ran, from when
	Recommended []settingAt           `json:"recommended,omitempty"` // the policy's recommendation, from when
}

// series returns the history of one queue (false: none kept).
func (h *History) series(k env.QueueKey) (QueueSeries, bool) {
	if h == nil {
		return QueueSeries{}, false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	q, ok := h.queues[k]
	if !ok {
		return QueueSeries{}, false
	}
	qs := QueueSeries{Key: k, RateBps: q.rate, Values: map[Metric][]*float64{},
		Settings: slices.Clone(q.cur), Recommended: slices.Clone(q.rec)}
	for _, slot := range h.order() {
		qs.TimesNs = append(qs.TimesNs, h.times[slot])
		for _, m := range Metrics {
			v := q.pts[slot].scaled(m)
			var p *float64
			if !math.IsNaN(v) {
				v = math.Round(v*1e4) / 1e4 // float32 noise off: 90, not 89.9999976
				p = &v
			}
			qs.Values[m] = append(qs.Values[m], p)
		}
	}
	return qs, true
}

// Grid is a heatmap's data: Values[r][c] in the unit of Metric.Title, NaN
// where not measured.
type Grid struct {
	Metric Metric
	Rows   []string
	Cols   []string
	Values [][]float64
	// Keys are the queues of Rows (the time view only).
	Keys []env.QueueKey
	// TimeNs is the interval drawn (the fabric view), or the newest.
	TimeNs int64
}

// fabric returns switch × port for the interval ago intervals before the
// newest (ago -1: every kept interval): each cell the largest value among
// the port's queues.
func (h *History) fabric(m Metric, ago int) (Grid, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.fabricLocked(m, ago)
}

// fabricAt is fabric at the kept interval of time atNs, to within
// atSlackNs (false: not kept, or never one): a picture pinned to its
// interval while newer ones come.
func (h *History) fabricAt(m Metric, atNs int64) (Grid, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	slots := h.order()
	for i, slot := range slots {
		if d := h.times[slot] - atNs; d >= -atSlackNs && d <= atSlackNs {
			return h.fabricLocked(m, len(slots)-1-i)
		}
	}
	return Grid{}, false
}

// atSlackNs is how far a time the page names may be from the interval's:
// its script reads times in Unix ns as doubles, a few hundred ns off
// (2^53 ns is 104 days), and intervals are milliseconds apart at least.
const atSlackNs = 100_000

func (h *History) fabricLocked(m Metric, ago int) (Grid, bool) {
	if h.count == 0 || ago < -1 || ago >= h.count {
		return Grid{}, false
	}
	slots := h.order()
	if ago >= 0 {
		slots = []int{(h.next - 1 - ago + 2*h.n) % h.n}
	}
	slot := slots[len(slots)-1]
	targets, ports := map[string]int{}, map[string]int{}
	for k := range h.queues {
		targets[k.Target], ports[k.Port] = 0, 0
	}
	g := Grid{Metric: m, Rows: sortedKeys(targets), Cols: sortedKeys(ports), TimeNs: h.times[slot]}
	for i, r := range g.Rows {
		targets[r] = i
	}
	for i, c := range g.Cols {
		ports[c] = i
	}
	g.Values = nanGrid(len(g.Rows), len(g.Cols))
	for k, q := range h.queues {
		cell := &g.Values[targets[k.Target]][ports[k.Port]]
		for _, slot := range slots {
			v := q.pts[slot].scaled(m)
			if !math.IsNaN(v) && (math.IsNaN(*cell) || v > *cell) {
				*cell = v
			}
		}
	}
	return g, true
}

// timeline returns queue × interval (oldest first) for the top queues by
// the sum of m over the window.
func (h *History) timeline(m Metric, top int) (Grid, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.count == 0 {
		return Grid{}, false
	}
	slots := h.order()
	type scored struct {
		k   env.QueueKey
		sum float64
	}
	all := make([]scored, 0, len(h.queues))
	for k, q := range h.queues {
		s := 0.0
		for _, slot := range slots {
			if v := q.pts[slot].scaled(m); !math.IsNaN(v) {
				s += v
			}
		}
		all = append(all, scored{k, s})
	}
	slices.SortFunc(all, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.sum, a.sum), env.CompareQueueKeys(a.k, b.k))
	})
	if emptyWords(m) != "" {
		// Queues with nothing to show are left out: an idle fabric is
		// said in words, not drawn as rows of zeros.
		all = slices.DeleteFunc(all, func(s scored) bool { return !(s.sum > 0) })
	}
	if len(all) > top {
		all = all[:top]
	}
	g := Grid{Metric: m, TimeNs: h.times[slots[len(slots)-1]]}
	for _, s := range all {
		g.Keys = append(g.Keys, s.k)
		g.Rows = append(g.Rows, s.k.Target+" "+s.k.Port+" q"+strconv.Itoa(s.k.Queue))
	}
	var times []int64
	for _, slot := range slots {
		times = append(times, h.times[slot])
	}
	g.Cols = chart.ClockLabels(times)
	g.Values = nanGrid(len(g.Rows), len(slots))
	for r, s := range all {
		q := h.queues[s.k]
		for c, slot := range slots {
			g.Values[r][c] = q.pts[slot].scaled(m)
		}
	}
	return g, true
}

// intervals returns the kept interval times, oldest first.
// queueCount is how many queues were heard in the kept intervals (a queue
// not heard for a whole window is forgotten).
func (h *History) queueCount() int {
	if h == nil {
		return 0
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.queues)
}

func (h *History) intervals() []int64 {
	if h == nil {
		return nil
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]int64, 0, h.count)
	for _, slot := range h.order() {
		out = append(out, h.times[slot])
	}
	return out
}

func nanGrid(r, c int) [][]float64 {
	g := make([][]float64, r)
	for i := range g {
		g[i] = make([]float64, c)
		for j := range g[i] {
			g[i][j] = math.NaN()
		}
	}
	return g
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, env.NaturalCompare)
	return out
}
