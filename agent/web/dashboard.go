package web

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"image/color"
	"io/fs"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/agent/metrics"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/chart"
)

// The dashboard's page, script and style, in the binary: it works offline.
//
//go:embed static
var webFS embed.FS

// TargetHealth is a target's line of the dashboard: what TargetInfo says
// plus how fresh its telemetry is.
type TargetHealth struct {
	TargetInfo
	AgeS    float64 `json:"telemetry_age_s"`
	Stale   bool    `json:"stale"`
	Heard   bool    `json:"heard"`
	Queues  int     `json:"queues"`
	Changes int     `json:"changes_in_window"`
}

// HotQueue is one of the most congested queues of the newest interval.
type HotQueue struct {
	Key       env.QueueKey `json:"key"`
	DepthKB   *float64     `json:"depth_kb"`
	MarksPct  *float64     `json:"marks_pct"`
	PFCPct    *float64     `json:"pfc_pct"`
	UtilPct   *float64     `json:"util_pct"`
	Setting   env.Setting  `json:"setting"`
	SettingIs string       `json:"setting_text"`
}

// Overview is what GET /api/overview answers: everything the dashboard
// shows but the pictures.
type Overview struct {
	Mode      string         `json:"mode"`
	Policy    string         `json:"policy"`
	IntervalS float64        `json:"interval_s"`
	NowNs     int64          `json:"now_ns"`
	Intervals []int64        `json:"intervals_ns"` // the kept intervals, oldest first
	Healthy   bool           `json:"healthy"`
	Problems  []string       `json:"problems"`
	Targets   []TargetHealth `json:"targets"`
	Hot       []HotQueue     `json:"hot"`
	// Recommendations are the newest per queue, at most 50: those the
	// guard lets change this interval first, then those it holds that
	// differ from the switch, then the rest, each by confidence.
	Recommendations []core.Recommendation `json:"recommendations"`
	Queues          int                   `json:"queues"`
	// WouldChange counts the queues the guard lets change: in shadow
	// mode the changes it would let through this interval (perhaps
	// clamped), not those it let through before and that the switch, never
	// written, still lacks; in closed loop the changes of the last
	// interval.
	WouldChange int `json:"would_change"`
	// Differing counts the recommendations that differ from the switch's
	// setting, the guard aside: /metrics' target_recommended_changes
	// summed over the targets.
	Differing int `json:"differing"`
	// Changes are the newest entries of the audit log, newest first;
	// ChangesBefore, when not 0, pages to older ones (/changes?before=).
	Changes       []core.AuditEntry `json:"changes"`
	ChangesBefore uint64            `json:"changes_before,omitempty"`
	// ChangesInWindow counts the changes the switches took (AuditEntry.Took)
	// in the audit log over the kept intervals (every target).
	ChangesInWindow int `json:"changes_in_window"`
	// Flaps counts the changes in the window that set a queue back to a
	// setting it left within core.FlapIntervals intervals.
	Flaps int `json:"flaps_in_window"`
	// ChangesPerQueuePer100 is ChangesInWindow per queue heard in the
	// window (WindowQueues: those of a switch gone silent too, whose
	// changes stay counted) per 100 of the kept intervals; Rollbacks, Repairs and Fallbacks count those kinds
	// among the window's applied changes.
	ChangesPerQueuePer100 float64 `json:"changes_per_queue_per_100_intervals"`
	WindowQueues          int     `json:"window_queues"`
	Rollbacks             int     `json:"rollbacks_in_window"`
	Repairs               int     `json:"repairs_in_window"`
	Fallbacks             int     `json:"fallbacks_in_window"`
	// Notes are what /healthz notes beside ok that the page's health says
	// too: the loop yielding to another writer on most queues.
	Notes []string `json:"notes"`
	// Pause is the closed loop's pause, as journaled.
	Pause journal.Pause `json:"pause"`
	// Approve: the closed loop runs in approve mode, its tunes and
	// fallbacks wait for an operator; Pending are those waiting (as
	// GET /pending: plan IDs, and who approved those approved), in key
	// order, at most 50 of PendingN.
	Approve  bool           `json:"approve"`
	Pending  []core.Pending `json:"pending"`
	PendingN int            `json:"pending_n"`
}

// countWindow fills ov's counts over the audit window's entries (recent)
// and returns the changes per target.
func (a *server) countWindow(ov *Overview, recent []core.AuditEntry) map[string]int {
	changes := map[string]int{}
	for _, e := range recent {
		if e.Took() { // as /metrics counts them: a dry run's or a failed Set changed nothing
			changes[e.Target]++
			ov.ChangesInWindow++
		}
	}
	k := core.CountKinds(recent)
	ov.Rollbacks, ov.Repairs, ov.Fallbacks = k.Rollbacks, k.Repairs, k.Fallbacks
	for _, n := range core.Flaps(recent, int64(core.FlapIntervals*a.o.Interval)) {
		ov.Flaps += n
	}
	// per queue heard in the window, as the changes are counted over it:
	// a switch gone silent keeps its changes there and its queues too
	ov.WindowQueues = max(a.o.History.queueCount(), ov.Queues)
	if n := len(ov.Intervals); n > 0 && ov.WindowQueues > 0 {
		ov.ChangesPerQueuePer100 = float64(ov.ChangesInWindow) / float64(ov.WindowQueues) * 100 / float64(n)
	}
	return changes
}

// overview assembles the Overview.
func (a *server) overview() (Overview, error) {
	now := a.o.Clock()
	problems, ages := a.o.Source.Health()
	ov := Overview{Mode: a.o.Mode, Policy: a.o.Policy, IntervalS: a.o.Interval.Seconds(),
		NowNs: now.UnixNano(), Intervals: a.o.History.intervals(), Healthy: len(problems) == 0, Problems: problems}
	if ov.Problems == nil {
		ov.Problems = []string{}
	}
	ov.Notes = []string{}
	if n := a.yieldNote(); n != "" {
		ov.Notes = append(ov.Notes, n)
	}
	page, err := a.o.Journal.ChangesPage(journal.ChangesQuery{Limit: 25})
	if err != nil {
		return ov, err
	}
	ov.Changes, ov.ChangesBefore = page.Changes, page.NextBefore
	if ov.Pause, err = a.o.Source.PauseState(); err != nil {
		return ov, err
	}
	ov.Approve, ov.Pending = a.o.Approve, []core.Pending{}
	if a.o.Approve {
		ov.Pending = a.o.Source.Pending()
		if ov.PendingN = len(ov.Pending); ov.PendingN > 50 {
			ov.Pending = ov.Pending[:50]
		}
	}
	slices.Reverse(ov.Changes)
	if ov.Changes == nil {
		ov.Changes = []core.AuditEntry{}
	}
	// The recommendations of the newest telemetry, not those a switch gone
	// silent left ("48 queues decided, 12 would change" stood after every
	// switch had stopped sending).
	recs := a.o.Source.Recommendations("")
	fresh := now.Add(-config.HealthStaleIntervals * a.o.Interval).UnixNano()
	recs = slices.DeleteFunc(recs, func(r core.Recommendation) bool { return r.TimeNs < fresh })
	perTarget := map[string]int{}
	for _, r := range recs {
		perTarget[r.Key.Target]++
		if r.Changes { // the guard plans it this interval (perhaps clamped)
			ov.WouldChange++
		}
		if !metrics.RecommendsCurrent(r.Recommended, r.Current) {
			ov.Differing++
		}
	}
	if a.o.Mode != string(config.ModeShadow) {
		// The closed loop's verdicts are its changes: what the guard let
		// through in the last interval.
		ov.WouldChange = len(a.o.Source.LastChanges())
	}
	ov.Queues = len(recs)
	// Counted in the audit log itself, not in the page shown: one read of
	// the window for the counts and the flaps.
	// The window is the kept intervals: none yet (just started, or the
	// history off), an empty window, not the whole log (Recent(0)).
	var recent []core.AuditEntry
	if len(ov.Intervals) > 0 {
		if recent, err = a.o.Journal.Recent(ov.Intervals[0]); err != nil {
			return ov, err
		}
	}
	changes := a.countWindow(&ov, recent)
	limit := config.HealthStaleIntervals * a.o.Interval
	heard := a.o.Source.Heard()
	for _, ti := range a.o.Source.Targets() {
		age := ages[ti.Target]
		ov.Targets = append(ov.Targets, TargetHealth{TargetInfo: ti, AgeS: age.Seconds(), Heard: heard[ti.Target],
			Stale: !ti.Unserved && (!heard[ti.Target] || age > limit), Queues: perTarget[ti.Target], Changes: changes[ti.Target]})
	}
	recs = rankRecommendations(recs, 50)
	ov.Recommendations = recs
	ov.Hot = a.hot(8)
	return ov, nil
}

// rankRecommendations orders recs for the table and keeps the first n:
// those the guard lets change this interval first (what "would change"
// counts and the page highlights), then those that differ from the
// switch's setting but that the guard holds, then the rest, each by
// confidence. A change let through is not cut behind rejected ones.
func rankRecommendations(recs []core.Recommendation, n int) []core.Recommendation {
	rank := func(r *core.Recommendation) int {
		switch {
		case r.Changes:
			return 0
		case !metrics.RecommendsCurrent(r.Recommended, r.Current):
			return 1
		}
		return 2
	}
	slices.SortStableFunc(recs, func(x, y core.Recommendation) int {
		return cmp.Or(cmp.Compare(rank(&x), rank(&y)), cmp.Compare(y.Confidence, x.Confidence))
	})
	if len(recs) > n {
		recs = recs[:n]
	}
	return recs
}

// hot returns the n queues with the deepest peak queue in the newest
// interval, among those that held bytes, marked or were paused (none on
// an idle fabric).
func (a *server) hot(n int) []HotQueue {
	h := a.o.History
	if h == nil {
		return []HotQueue{}
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := []HotQueue{}
	if h.count == 0 {
		return out
	}
	slot := (h.next - 1 + h.n) % h.n
	for k, q := range h.queues {
		s := &q.pts[slot]
		if math.IsNaN(float64(s.util)) {
			continue
		}
		if !(s.scaled(MetricDepth) > 0 || s.scaled(MetricMarks) > 0 || s.scaled(MetricPFC) > 0) {
			continue // idle: not congested at all
		}
		hq := HotQueue{Key: k, DepthKB: opt(s.scaled(MetricDepth)), MarksPct: opt(s.scaled(MetricMarks)),
			PFCPct: opt(s.scaled(MetricPFC)), UtilPct: opt(s.scaled(MetricUtil))}
		if len(q.cur) > 0 {
			hq.Setting = q.cur[len(q.cur)-1].Setting
			hq.SettingIs = hq.Setting.Describe()
		}
		out = append(out, hq)
	}
	val := func(p *float64) float64 {
		if p == nil {
			return -1
		}
		return *p
	}
	slices.SortFunc(out, func(x, y HotQueue) int {
		return cmp.Or(cmp.Compare(val(y.DepthKB), val(x.DepthKB)), cmp.Compare(val(y.MarksPct), val(x.MarksPct)),
			env.CompareQueueKeys(x.Key, y.Key))
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

func opt(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// dashboard adds the dashboard's routes to mux: / (the page),
// /api/overview, /api/queue, /dashboard/heatmap.png and
// /dashboard/queue.png.
func (a *server) dashboard(mux *http.ServeMux) {
	static, err := fs.Sub(webFS, "static")
	if err != nil {
		panic(err) // the embedded folder is there at build time
	}
	files := http.FileServerFS(static)
	cache := &pngCache{}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		a.servePage(w, cache) // with its pictures inline
	})
	mux.Handle("/static/", http.StripPrefix("/static/", files))
	mux.HandleFunc("/api/overview", func(w http.ResponseWriter, r *http.Request) {
		ov, err := a.overview()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, ov)
	})
	mux.HandleFunc("/api/queue", func(w http.ResponseWriter, r *http.Request) {
		k, err := queueParam(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		qs, ok := a.o.History.series(k)
		if !ok {
			http.Error(w, fmt.Sprintf("no history of %s %s queue %d (the dashboard keeps queues heard from in the last %d intervals)",
				k.Target, k.Port, k.Queue, a.histLen()), http.StatusNotFound)
			return
		}
		writeJSON(w, qs)
	})
	mux.HandleFunc("/dashboard/heatmap.png", func(w http.ResponseWriter, r *http.Request) {
		a.servePNG(w, r, cache, a.heatmapPNG)
	})
	mux.HandleFunc("/dashboard/queue.png", func(w http.ResponseWriter, r *http.Request) {
		a.servePNG(w, r, cache, a.queuePNG)
	})
}

func (a *server) histLen() int {
	if a.o.History == nil {
		return 0
	}
	return a.o.History.n
}

// queueParam reads target, port and queue of a request.
func queueParam(r *http.Request) (env.QueueKey, error) {
	v := r.URL.Query()
	k := env.QueueKey{Target: v.Get("target"), Port: v.Get("port")}
	if k.Target == "" || k.Port == "" || v.Get("queue") == "" {
		return k, fmt.Errorf("want target, port and queue, e.g. ?target=leaf0&port=eth1&queue=3")
	}
	q, err := strconv.Atoi(v.Get("queue"))
	if err != nil || q < 0 || q > 7 {
		return k, fmt.Errorf("queue %q: want 0..7", v.Get("queue"))
	}
	k.Queue = q
	return k, nil
}

// pngCache keeps the pictures of the newest interval: every browser
// refreshing gets the same bytes without another rendering.
type pngCache struct {
	mu    sync.Mutex
	newer int64
	m     map[string][]byte
}

func (c *pngCache) get(newest int64, key string, render func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	if c.newer != newest || c.m == nil {
		c.newer, c.m = newest, map[string][]byte{}
	}
	if b, ok := c.m[key]; ok {
		c.mu.Unlock()
		return b, nil
	}
	c.mu.Unlock()
	b, err := render()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.newer == newest && len(c.m) < 256 {
		c.m[key] = b
	}
	c.mu.Unlock()
	return b, nil
}

type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func (a *server) servePNG(w http.ResponseWriter, r *http.Request, c *pngCache, render func(r *http.Request) ([]byte, error)) {
	var newest int64
	if iv := a.o.History.intervals(); len(iv) > 0 {
		newest = iv[len(iv)-1]
	}
	b, err := c.get(newest, r.URL.Path+"?"+r.URL.RawQuery, func() ([]byte, error) { return render(r) })
	if err != nil {
		code := http.StatusInternalServerError
		if he, ok := err.(*httpError); ok {
			code = he.code
		}
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

func metricParam(r *http.Request) (Metric, error) {
	m := Metric(r.URL.Query().Get("metric"))
	if m == "" {
		return MetricDepth, nil
	}
	if !slices.Contains(Metrics, m) {
		return m, &httpError{http.StatusBadRequest, fmt.Sprintf("metric %q: want one of %v", m, Metrics)}
	}
	return m, nil
}

// heatmapPNG draws ?view=fabric (switch × port at the interval ?ago=N
// intervals before the newest, or at the kept interval of time ?at=NS) or ?view=time (the ?top=N busiest queues
// × the kept intervals).
func (a *server) heatmapPNG(r *http.Request) ([]byte, error) {
	if a.o.History == nil {
		return nil, &httpError{http.StatusNotFound, "the dashboard's history is off (history: 0)"}
	}
	m, err := metricParam(r)
	if err != nil {
		return nil, err
	}
	v := r.URL.Query()
	var g Grid
	var ok bool
	title := m.Title()
	switch view := v.Get("view"); view {
	case "", "fabric":
		ago := 0
		if s := v.Get("ago"); s != "" {
			if ago, err = strconv.Atoi(s); err != nil || ago < 0 {
				return nil, &httpError{http.StatusBadRequest, "ago: want intervals back from the newest (0, 1, ...)"}
			}
		}
		if s := v.Get("at"); s != "" {
			at, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, &httpError{http.StatusBadRequest, "at: want the interval's time, Unix ns, as intervals_ns lists them"}
			}
			if g, ok = a.o.History.fabricAt(m, at); !ok {
				return nil, &httpError{http.StatusNotFound, fmt.Sprintf("no kept interval at %s (it has left the kept history of %d intervals, or never was one)",
					time.Unix(0, at).UTC().Format("2006-01-02 15:04:05.000 UTC"), a.histLen())}
			}
		} else {
			g, ok = a.o.History.fabric(m, ago)
		}
		if ok {
			title += " at " + time.Unix(0, g.TimeNs).UTC().Format("2006-01-02 15:04:05.000") + " UTC"
		}
	case "time":
		top := 30
		if s := v.Get("top"); s != "" {
			if top, err = strconv.Atoi(s); err != nil || top < 1 || top > 500 {
				return nil, &httpError{http.StatusBadRequest, "top: want 1..500"}
			}
		}
		g, ok = a.o.History.timeline(m, top)
		title = busiestTitle(m, len(g.Rows))
	default:
		return nil, &httpError{http.StatusBadRequest, fmt.Sprintf("view %q: want fabric or time", view)}
	}
	if !ok {
		return nil, &httpError{http.StatusNotFound, "no interval recorded yet (or ago beyond the kept history)"}
	}
	h := a.o.History.heatmapOf(title, g)
	height := 1.2*vg.Inch + vg.Length(len(g.Rows))*0.22*vg.Inch
	if v.Get("view") == "time" {
		iv := a.o.History.intervals()
		h.XLabel, h.YLabel = chart.ClockAxisLabel(iv[0], iv[len(iv)-1]), ""
	} else {
		h.XLabel, h.YLabel = "port (largest of its lossless queues)", "switch"
	}
	height = max(2.5*vg.Inch, min(height, 14*vg.Inch))
	var b bytes.Buffer
	if err := h.Write(&b, chart.PNG, 9*vg.Inch, height); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

var markerColors = map[string]color.Color{
	string(core.KindTune):     color.RGBA{R: 31, G: 119, B: 180, A: 255},
	string(core.KindRollback): color.RGBA{R: 214, G: 39, B: 40, A: 255},
	string(core.KindRepair):   color.RGBA{R: 255, G: 127, B: 14, A: 255},
	string(core.KindRevert):   color.RGBA{R: 148, G: 103, B: 189, A: 255},
	string(core.KindManual):   color.RGBA{R: 140, G: 86, B: 75, A: 255},
	string(core.KindFallback): color.RGBA{R: 127, G: 127, B: 127, A: 255},
}

// queuePNG draws one queue's kept intervals: utilisation, depth, marks,
// PFC, and Kmin/Kmax with the recommendation, every audited change a
// vertical line.
func (a *server) queuePNG(r *http.Request) ([]byte, error) {
	k, err := queueParam(r)
	if err != nil {
		return nil, &httpError{http.StatusBadRequest, err.Error()}
	}
	qs, ok := a.o.History.series(k)
	if !ok {
		return nil, &httpError{http.StatusNotFound, fmt.Sprintf("no history of %s %s queue %d", k.Target, k.Port, k.Queue)}
	}
	page, err := allChanges(a.o.Journal, journal.ChangesQuery{Target: k.Target, SinceNs: qs.TimesNs[0]})
	if err != nil {
		return nil, err
	}
	var marks []chart.Marker
	for _, c := range page.Changes {
		if c.Key == k && c.State != core.StateFailed {
			marks = append(marks, chart.Marker{X: float64(c.TimeNs) / 1e9, Kind: string(c.Kind)})
		}
	}
	st := QueueStack(qs, marks)
	var b bytes.Buffer
	if err := st.Write(&b, chart.PNG, 9*vg.Inch, 7.5*vg.Inch); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// QueueStack lays out one queue's series as chart panels over wall-clock
// time (x in Unix seconds, labelled as a UTC clock, as the audit log's
// times are; marks at their entries' times): the same picture live and
// in `agent report`.
func QueueStack(qs QueueSeries, marks []chart.Marker) chart.Stack {
	xs := make([]float64, len(qs.TimesNs))
	for i, t := range qs.TimesNs {
		xs[i] = float64(t) / 1e9
	}
	vals := func(m Metric) []float64 {
		out := make([]float64, len(qs.TimesNs))
		for i, p := range qs.Values[m] {
			out[i] = math.NaN()
			if p != nil {
				out[i] = *p
			}
		}
		return out
	}
	steps := func(l []settingAt, get func(env.Setting) float64) []float64 {
		out := make([]float64, len(qs.TimesNs))
		for i, t := range qs.TimesNs {
			out[i] = math.NaN()
			for _, s := range l {
				if s.TimeNs <= t {
					out[i] = get(s.Setting)
				}
			}
		}
		return out
	}
	kmin := func(s env.Setting) float64 { return float64(s.KminBytes) / 1e3 }
	kmax := func(s env.Setting) float64 { return float64(s.KmaxBytes) / 1e3 }
	pmax := func(s env.Setting) float64 { return s.Pmax * 100 }
	ecn := chart.Panel{YLabel: "Kmin / Kmax (KB)", Lines: []chart.Line{
		{Name: "Kmin", X: xs, Y: steps(qs.Settings, kmin), Step: true},
		{Name: "Kmax", X: xs, Y: steps(qs.Settings, kmax), Step: true},
	}}
	pm := chart.Panel{YLabel: "Pmax (%)", Lines: []chart.Line{{Name: "Pmax", X: xs, Y: steps(qs.Settings, pmax), Step: true}}}
	if len(qs.Recommended) > 0 {
		ecn.Lines = append(ecn.Lines,
			chart.Line{Name: "Kmin recommended", X: xs, Y: steps(qs.Recommended, kmin), Step: true, Dashed: true},
			chart.Line{Name: "Kmax recommended", X: xs, Y: steps(qs.Recommended, kmax), Step: true, Dashed: true})
		pm.Lines = append(pm.Lines, chart.Line{Name: "Pmax recommended", X: xs, Y: steps(qs.Recommended, pmax), Step: true, Dashed: true})
	}
	title := fmt.Sprintf("%s %s queue %d", qs.Key.Target, qs.Key.Port, qs.Key.Queue)
	xl := chart.ClockAxisLabel(qs.TimesNs[0], qs.TimesNs[len(qs.TimesNs)-1])
	return chart.Stack{Title: title, XLabel: xl, Clock: true, MarkerColors: markerColors, Markers: marks,
		Panels: []chart.Panel{
			{YLabel: "util (%)", YMin: 0, YMax: 100, Lines: []chart.Line{{Name: "utilisation", X: xs, Y: vals(MetricUtil)}}},
			{YLabel: "queue (KB)", Lines: []chart.Line{{Name: "peak", X: xs, Y: vals(MetricDepth)}, {Name: "average", X: xs, Y: vals(MetricAvg)}}},
			{YLabel: "marks / PFC (%)", YMin: 0, YMax: 100, Lines: []chart.Line{{Name: "ECN-marked", X: xs, Y: vals(MetricMarks)}, {Name: "PFC paused or pausing", X: xs, Y: vals(MetricPFC)}}},
			ecn, pm,
		}}
}
