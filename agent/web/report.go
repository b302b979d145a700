package web

import (
	"errors"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/chart"
	"github.com/ecntune/ecntune/internal/units"
)

// ReportOptions say what `agent report` draws of a stored run.
type ReportOptions struct {
	Target  string // "" = every target
	SinceNs int64  // only intervals at or after (0 = all)
	// Intervals is how many of the newest stored intervals are drawn
	// (default 600).
	Intervals int
	// Queues is how many of the busiest queues get a chart of their own
	// (default 6).
	Queues int
}

// ReportFiles is what WriteReport wrote and read.
type ReportFiles struct {
	Index     string   `json:"index"`
	Pictures  []string `json:"pictures"`
	Intervals int      `json:"intervals"`
	Skipped   int      `json:"intervals_left_out"` // older stored intervals beyond Intervals
	Queues    int      `json:"queues"`
	Changes   int      `json:"changes"`
	// Damaged is how many of the Changes are damaged audit entries (their
	// record fails its seal or does not decode): listed by sequence
	// number, their time, queue and settings unknown.
	Damaged int `json:"damaged,omitempty"`
	// Flaps are the changes that set a queue back to a setting it left
	// within core.FlapIntervals intervals (the report's interval: the
	// median spacing of its intervals).
	Flaps  int   `json:"flaps"`
	FromNs int64 `json:"from_ns"`
	ToNs   int64 `json:"to_ns"`
	// Missing says what the source lacks to draw the run: set when it
	// holds audited changes but no recommendations (a closed loop without
	// store-recommendations), which leaves the report the audit log alone.
	Missing string `json:"missing,omitempty"`
}

// ErrNothingStored is WriteReport's error for a database with neither
// recommendations nor audited changes in the window asked for.
var ErrNothingStored = errors.New("no recommendations stored")

// ReportSource is what a report is drawn from: the agent's journal
// (*journal.Journal), or what a running agent's HTTP API serves of it.
type ReportSource interface {
	Path() string
	RecommendationTimes(sinceNs int64) ([]int64, error)
	EachRecommendation(sinceNs int64, fn func(*core.Recommendation) error) error
	ChangesPage(q journal.ChangesQuery) (journal.ChangesPage, error)
}

// MaxReportChanges bounds the audit entries a report or a queue chart
// reads (the newest; ChangesPage.NextBefore says there are more).
const MaxReportChanges = 200_000

// allChanges reads every audit entry q matches, page after page (one page
// is at most journal.MaxChangesPage: a report counted at most 1,000 of
// 1,500), oldest first, up to the newest MaxReportChanges; NextBefore is
// not 0 when older ones were left.
func allChanges(j interface {
	ChangesPage(journal.ChangesQuery) (journal.ChangesPage, error)
}, q journal.ChangesQuery) (journal.ChangesPage, error) {
	var pages [][]core.AuditEntry
	n := 0
	q.Limit = journal.MaxChangesPage
	for {
		p, err := j.ChangesPage(q)
		if err != nil {
			return journal.ChangesPage{}, err
		}
		pages = append(pages, p.Changes)
		n += len(p.Changes)
		if p.NextBefore == 0 || n >= MaxReportChanges {
			out := journal.ChangesPage{Changes: make([]core.AuditEntry, 0, n), NextBefore: p.NextBefore}
			for i := len(pages) - 1; i >= 0; i-- {
				out.Changes = append(out.Changes, pages[i]...)
			}
			return out, nil
		}
		q.Before = p.NextBefore
	}
}

// WriteReport draws a stored shadow or closed-loop run into dir: the
// heatmaps (where congestion was: switch × port at its worst, the busiest
// queues × time for peak depth, ECN marks and PFC paused or pausing time), a chart
// per busiest queue with every audited change marked, and index.html that
// shows them with the audit log. The pictures are the dashboard's.
//
// A source with audited changes but no recommendations in the window (a
// closed loop without store-recommendations) gives index.html with the
// audit log alone, and ReportFiles.Missing says what is missing.
func WriteReport(j ReportSource, dir string, o ReportOptions) (ReportFiles, error) {
	if o.Intervals <= 0 {
		o.Intervals = 600
	}
	if o.Queues <= 0 {
		o.Queues = 6
	}
	h, rf, err := loadHistory(j, o)
	if errors.Is(err, ErrNothingStored) || errors.Is(err, journal.ErrBucketDamaged) {
		return writeAuditReport(j, dir, o, err)
	}
	if err != nil {
		return rf, err
	}
	page, err := allChanges(j, journal.ChangesQuery{Target: o.Target, SinceNs: rf.FromNs})
	if err != nil {
		return rf, err
	}
	rf.Changes, rf.Damaged = len(page.Changes), damagedIn(page.Changes)
	rf.Flaps = flapsOf(page.Changes, h.intervals())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rf, err
	}
	fw := &figureWriter{dir: dir, rf: &rf}
	if err := fw.heatmaps(h); err != nil {
		return rf, err
	}
	if err := fw.busiest(h, o.Queues, page.Changes); err != nil {
		return rf, err
	}
	return rf, writeIndex(dir, &rf, fw.figs, page.Changes, o.Target)
}

// damagedIn counts the damaged entries of changes.
func damagedIn(changes []core.AuditEntry) int {
	n := 0
	for _, c := range changes {
		if c.State == journal.StateDamaged {
			n++
		}
	}
	return n
}

// writeIndex writes the report's index.html: what it covers, its
// figures and the audit log, newest first.
func writeIndex(dir string, rf *ReportFiles, figs []figure, changes []core.AuditEntry, target string) error {
	rf.Index = filepath.Join(dir, "index.html")
	f, err := os.Create(rf.Index)
	if err != nil {
		return err
	}
	slices.Reverse(changes)
	from, to := "an unknown time", "an unknown time" // every entry damaged
	if rf.FromNs != 0 || rf.ToNs != 0 {
		from, to = utcTime(rf.FromNs), utcTime(rf.ToNs)
	}
	err = reportTmpl.Execute(f, map[string]any{"R": rf, "Figures": figs, "Changes": changes, "Target": target,
		"From": from, "To": to, "Damaged": journal.StateDamaged})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeAuditReport is the report of a source without recommendations in
// the window: its audit log alone, when it has one, and what is missing;
// else nothing (the error of loadHistory, none). none is also the error of
// recommendations a damaged database cannot read: Missing says so.
func writeAuditReport(j ReportSource, dir string, o ReportOptions, none error) (ReportFiles, error) {
	var rf ReportFiles
	page, err := allChanges(j, journal.ChangesQuery{Target: o.Target, SinceNs: o.SinceNs})
	if err != nil {
		return rf, err
	}
	if len(page.Changes) == 0 {
		return rf, none
	}
	queues := map[env.QueueKey]bool{}
	for _, c := range page.Changes {
		if c.State != journal.StateDamaged { // its queue cannot be read: no queue of its own
			queues[c.Key] = true
		}
	}
	rf.Changes, rf.Damaged, rf.Queues = len(page.Changes), damagedIn(page.Changes), len(queues)
	// the window is the intact entries' (a damaged entry's time is not
	// known: it read as 1970-01-01); none intact leaves it 0, unknown
	for _, c := range page.Changes {
		if c.State != journal.StateDamaged {
			if rf.FromNs == 0 {
				rf.FromNs = c.TimeNs
			}
			rf.ToNs = c.TimeNs
		}
	}
	rf.Missing = "No interval of telemetry or recommendations is stored (a closed loop stores them only with store-recommendations: true), " +
		"so there are no heatmaps and no queue charts: this report is the audit log alone. " +
		"Set store-recommendations: true in the agent's configuration to have them in the next run's report."
	if errors.Is(none, journal.ErrBucketDamaged) {
		rf.Missing = "The stored recommendations cannot be read (" + none.Error() + "), " +
			"so there are no heatmaps and no queue charts: this report is the audit log alone, which is intact."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rf, err
	}
	return rf, writeIndex(dir, &rf, nil, page.Changes, o.Target)
}

// loadHistory replays the newest o.Intervals stored intervals (of
// o.Target, or all) into a History, and says what it covers.
// utcTime writes Unix ns as RFC 3339 in UTC, as the audit log's times
// are written everywhere else.
func utcTime(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339) }

func loadHistory(j ReportSource, o ReportOptions) (*History, ReportFiles, error) {
	var rf ReportFiles
	times, err := j.RecommendationTimes(o.SinceNs)
	if err != nil {
		return nil, rf, err
	}
	if len(times) > o.Intervals {
		rf.Skipped = len(times) - o.Intervals
		times = times[rf.Skipped:]
	}
	if len(times) == 0 && o.SinceNs > 0 {
		// stored, but all before --since: say when, not that nothing is
		if all, err := j.RecommendationTimes(0); err == nil && len(all) > 0 {
			return nil, rf, fmt.Errorf("agent db %s: %w since %s: its %d stored intervals run from %s to %s (an earlier --since shows them)", j.Path(), ErrNothingStored,
				utcTime(o.SinceNs), len(all), utcTime(all[0]), utcTime(all[len(all)-1]))
		}
	}
	if len(times) == 0 {
		return nil, rf, fmt.Errorf("agent db %s: %w (shadow mode stores every interval's; a closed loop only with store-recommendations: true)", j.Path(), ErrNothingStored)
	}
	h := NewHistory(len(times))
	var obs []env.Observation
	var recs []core.Recommendation
	cur := times[0]
	flush := func() {
		if len(obs) > 0 {
			h.Record(cur, obs, recs)
		}
		obs, recs = obs[:0], recs[:0]
	}
	err = j.EachRecommendation(times[0], func(r *core.Recommendation) error {
		if o.Target != "" && r.Key.Target != o.Target {
			return nil
		}
		if r.TimeNs != cur {
			flush()
			cur = r.TimeNs
		}
		obs = append(obs, r.Observation())
		recs = append(recs, *r)
		return nil
	})
	if err != nil {
		return nil, rf, err
	}
	flush()
	if len(h.queues) == 0 {
		return nil, rf, fmt.Errorf("agent db %s: %w for target %q", j.Path(), ErrNothingStored, o.Target)
	}
	rf.Intervals, rf.Queues, rf.FromNs, rf.ToNs = h.count, len(h.queues), times[0], times[len(times)-1]
	return h, rf, nil
}

// flapsOf counts the flaps among changes (core.Flaps), the interval
// taken as the median spacing of the stored interval times.
func flapsOf(changes []core.AuditEntry, times []int64) int {
	var gaps []int64
	for i := 1; i < len(times); i++ {
		if d := times[i] - times[i-1]; d > 0 {
			gaps = append(gaps, d)
		}
	}
	if len(gaps) == 0 {
		return 0
	}
	slices.Sort(gaps)
	n := 0
	for _, f := range core.Flaps(changes, core.FlapIntervals*gaps[len(gaps)/2]) {
		n += f
	}
	return n
}

// figureWriter writes a report's pictures into dir, listing each in rf
// and figs.
type figureWriter struct {
	dir  string
	rf   *ReportFiles
	figs []figure
}

// write creates name in the report's folder and draws it.
func (fw *figureWriter) write(name, caption string, draw func(f *os.File) error) error {
	p := filepath.Join(fw.dir, name)
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	if err := draw(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	fw.rf.Pictures = append(fw.rf.Pictures, p)
	fw.figs = append(fw.figs, figure{File: name, Caption: caption})
	return nil
}

// heatmaps draws where congestion was (the fabric at its worst) and when
// (depth, marks and PFC of the busiest queues over time).
func (fw *figureWriter) heatmaps(h *History) error {
	g, _ := h.fabric(MetricDepth, -1)
	hm := h.heatmapOf("peak queue depth (KB), the worst interval of each port", g)
	hm.XLabel, hm.YLabel = "port (largest of its lossless queues)", "switch"
	if err := fw.write("fabric-depth.png", "Where congestion was: every switch and port at its worst interval.", func(f *os.File) error {
		return hm.Write(f, chart.PNG, 9*vg.Inch, heatHeight(len(g.Rows)))
	}); err != nil {
		return err
	}
	for _, m := range []Metric{MetricDepth, MetricMarks, MetricPFC} {
		g, _ := h.timeline(m, 30)
		hm := h.heatmapOf(busiestTitle(m, len(g.Rows)), g)
		iv := h.intervals()
		hm.XLabel = chart.ClockAxisLabel(iv[0], iv[len(iv)-1])
		if err := fw.write("time-"+string(m)+".png", "When: "+m.Title()+" of the busiest queues over the run.", func(f *os.File) error {
			return hm.Write(f, chart.PNG, 10*vg.Inch, heatHeight(len(g.Rows)))
		}); err != nil {
			return err
		}
	}
	return nil
}

// busiest draws the n busiest queues, each with every change applied to
// it marked.
func (fw *figureWriter) busiest(h *History, n int, changes []core.AuditEntry) error {
	busiest, _ := h.timeline(MetricDepth, n)
	for i, k := range busiest.Keys {
		qs, _ := h.series(k)
		var marks []chart.Marker
		for _, c := range changes {
			if c.Key == k && c.State != core.StateFailed {
				marks = append(marks, chart.Marker{X: float64(c.TimeNs) / 1e9, Kind: string(c.Kind)})
			}
		}
		st := QueueStack(qs, marks)
		if err := fw.write(fmt.Sprintf("queue-%d.png", i+1), "Queue "+busiest.Rows[i]+": its intervals and every change.", func(f *os.File) error {
			return st.Write(f, chart.PNG, 9*vg.Inch, 7.5*vg.Inch)
		}); err != nil {
			return err
		}
	}
	return nil
}

type figure struct{ File, Caption string }

func heatHeight(rows int) vg.Length {
	return max(2.5*vg.Inch, min(1.2*vg.Inch+vg.Length(rows)*0.22*vg.Inch, 14*vg.Inch))
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"time": func(ns int64) string { return time.Unix(0, ns).UTC().Format("15:04:05.000") },
	"setting": func(s env.Setting) string {
		t := s.Describe()
		if s.HeadroomBytes > 0 {
			t += " headroom " + units.FormatBytes(s.HeadroomBytes)
		}
		if s.Alpha > 0 {
			t += " alpha " + env.FormatAlpha(s.Alpha)
		}
		return t
	},
	"sub":  func(a, b int64) int64 { return a - b },
	"secs": func(ns int64) string { return fmt.Sprintf("%.0f s", math.Round(float64(ns)/1e9)) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ecntune agent report</title>
<style>body{font-family:system-ui,sans-serif;margin:1.5em 2em;color:#222}img{max-width:100%;border:1px solid #ddd}
table{border-collapse:collapse;font-size:88%}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0}tr.damaged td{background:#fdecea}figure{margin:1.5em 0}figcaption{color:#555}</style></head><body>
<h1>ecntune agent report</h1>
{{if .R.Missing}}<p>{{.R.Changes}} audited changes{{if .R.Damaged}} ({{.R.Damaged}} of them damaged: their time and queue are unknown){{end}} from {{.From}} to {{.To}} on {{.R.Queues}} queues{{if .Target}} of {{.Target}}{{end}}.</p>
<p class="missing"><strong>Missing:</strong> {{.R.Missing}}</p>{{else}}<p>{{.R.Intervals}} control intervals from {{.From}} to {{.To}} ({{secs (sub .R.ToNs .R.FromNs)}}),
{{.R.Queues}} lossless queues{{if .Target}} of {{.Target}}{{end}}, {{.R.Changes}} audited changes{{if .R.Damaged}} ({{.R.Damaged}} of them damaged: their time and queue are unknown){{end}}, {{.R.Flaps}} flaps (a queue set back to a setting it left within 10 intervals).
{{if .R.Skipped}}{{.R.Skipped}} older stored intervals are left out (--intervals).{{end}}</p>{{end}}
{{range .Figures}}<figure><img src="{{.File}}" alt="{{.Caption}}"><figcaption>{{.Caption}}</figcaption></figure>
{{end}}
<h2>Audit log</h2>
{{if .Changes}}<table><tr><th>seq</th><th>time (UTC)</th><th>queue</th><th>kind</th><th>state</th><th>old</th><th>new</th><th>reason</th></tr>
{{range .Changes}}{{if eq .State $.Damaged}}<tr class="damaged"><td>{{.Seq}}</td><td>unknown</td><td>damaged</td><td>-</td><td>damaged</td><td>damaged</td><td>damaged</td><td>{{.Error}}</td></tr>
{{else}}<tr><td>{{.Seq}}</td><td>{{time .TimeNs}}</td><td>{{.Key.Target}} {{.Key.Port}} q{{.Key.Queue}}</td><td>{{.Kind}}</td><td>{{.State}}</td>
<td>{{setting .Old}}</td><td>{{setting .New}}</td><td>{{.Reason}}</td></tr>
{{end}}{{end}}</table>{{else}}<p>No change in this window (shadow mode never writes).</p>{{end}}
</body></html>
`))
