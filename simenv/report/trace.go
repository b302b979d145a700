package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot/vg"

	"github.com/ecntune/ecntune/internal/chart"
	"github.com/ecntune/ecntune/simenv"
)

// MaxTraceSamples bounds a Trace's samples per queue.
const MaxTraceSamples = 2000

// Trace records, at the instants it is sampled, every lossless egress
// queue of a run: its peak depth since the previous sample, the share of
// bytes ECN-marked and the share of the time PFC paused that port and
// priority: the larger of the time its egress was held paused by the peer
// and the time this switch held the peer paused (a switch's host ports are
// only ever the latter, as hosts send no PFC). It draws them as heatmaps
// (where and when congestion happened).
//
// Sampling reads each switch's telemetry and so starts a new watermark
// window: a Trace should be the only reader of the simulation it samples.
type Trace struct {
	keys  []traceKey
	times []simenv.Time
	// per queue, per sample: peak KB, marked %, paused or pausing %; NaN:
	// nothing sent
	depth, marks, paused [][]float64
	prev                 []traceCounters
	last                 simenv.Time
	// passive traces read with PeekQueue, leaving the watermark windows
	// to the simulation's own telemetry reader (a policy's environment).
	passive bool
}

type traceKey struct {
	sw, port, q int
	name        string // "leaf0 Ethernet3 q3"
	swName      string
	portName    string
}

type traceCounters struct {
	tx, marked          uint64
	pausedNs, pausingNs uint64
}

// NewPassiveTrace prepares a trace that leaves sim's telemetry windows
// alone (simenv.Sim.PeekQueue), for a run whose policy reads them: its
// depth is the peak since that reader's last read (the depth at the
// instant when sampled right after it).
func NewPassiveTrace(sim *simenv.Sim) *Trace {
	t := NewTrace(sim)
	t.passive = true
	return t
}

// NewTrace prepares a trace of sim's lossless queues.
func NewTrace(sim *simenv.Sim) *Trace {
	t := &Trace{}
	for _, sw := range sim.Switches() {
		for _, p := range sw.Ports {
			for _, q := range sim.LosslessPriorities() {
				t.keys = append(t.keys, traceKey{sw: sw.Index, port: p.Index, q: q,
					name: sw.Name + " " + p.Name + " q" + strconv.Itoa(q), swName: sw.Name, portName: p.Name})
			}
		}
	}
	n := len(t.keys)
	t.depth, t.marks, t.paused = make([][]float64, n), make([][]float64, n), make([][]float64, n)
	t.prev = make([]traceCounters, n)
	return t
}

// Samples is how many samples the trace holds.
func (t *Trace) Samples() int { return len(t.times) }

// Sample records every queue at sim's current time. Beyond
// MaxTraceSamples it does nothing.
func (t *Trace) Sample(sim *simenv.Sim) {
	if len(t.times) >= MaxTraceSamples {
		return
	}
	now := sim.Now()
	win := now - t.last
	t.last = now
	t.times = append(t.times, now)
	var tel simenv.SwitchTelemetry
	cur := -1
	for i, k := range t.keys {
		var qc simenv.QueueCounters
		var pf simenv.PFCCounters
		if t.passive {
			qc, pf = sim.PeekQueue(simenv.QueueRef{Switch: k.sw, Port: k.port, Queue: k.q})
		} else {
			if k.sw != cur {
				tel, cur = sim.Telemetry(k.sw), k.sw
			}
			qc, pf = tel.Ports[k.port].Queues[k.q], tel.Ports[k.port].PFC[k.q]
		}
		c := traceCounters{tx: qc.TxBytes, marked: qc.MarkedBytes, pausedNs: pf.PausedNs, pausingNs: pf.PausingNs}
		p := t.prev[i]
		t.prev[i] = c
		marks, paused := math.NaN(), 0.0
		if tx := c.tx - p.tx; tx > 0 {
			marks = 100 * float64(c.marked-p.marked) / float64(tx)
		}
		if win > 0 {
			ns := max(c.pausedNs-p.pausedNs, c.pausingNs-p.pausingNs)
			paused = 100 * float64(ns) / float64(win/simenv.Nanosecond)
		}
		t.depth[i] = append(t.depth[i], float64(qc.MaxBytes)/1e3)
		t.marks[i] = append(t.marks[i], marks)
		t.paused[i] = append(t.paused[i], math.Min(paused, 100))
	}
}

// traceMetric is one quantity of a Trace.
type traceMetric struct {
	name, title string
	v           func(t *Trace) [][]float64
	max         float64 // 0: from the data
	// empty is what a heatmap of a run without any says.
	empty string
}

var traceMetrics = []traceMetric{
	{"depth", "peak queue depth (KB)", func(t *Trace) [][]float64 { return t.depth }, 0, "idle: no queue built up"},
	{"marks", "ECN-marked bytes (%)", func(t *Trace) [][]float64 { return t.marks }, 100, "no ECN marks"},
	{"pfc", "PFC paused or pausing time (%)", func(t *Trace) [][]float64 { return t.paused }, 100, "no PFC pauses"},
}

// heatmap is an empty heatmap of m: its title, unit, scale and words
// for a run without any (percentages on a square-root scale, so that
// 10% shows).
func (m traceMetric) heatmap(title string) chart.Heatmap {
	return chart.Heatmap{Title: title, Unit: m.title, Max: m.max, Sqrt: m.max == 100, Empty: m.empty}
}

// busiest returns the indices of the top queues by the sum of v.
func (t *Trace) busiest(v [][]float64, top int) []int {
	idx := make([]int, len(t.keys))
	sum := make([]float64, len(t.keys))
	for i := range idx {
		idx[i] = i
		for _, x := range v[i] {
			if !math.IsNaN(x) {
				sum[i] += x
			}
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case sum[a] > sum[b]:
			return -1
		case sum[a] < sum[b]:
			return 1
		}
		return 0
	})
	for len(idx) > 0 && sum[idx[len(idx)-1]] == 0 {
		idx = idx[:len(idx)-1] // queues that never held anything say nothing
	}
	if len(idx) > top {
		idx = idx[:top]
	}
	return idx
}

// TimeHeatmap is the busiest top queues of metric ("depth", "marks" or
// "pfc") × the samples.
func (t *Trace) TimeHeatmap(metric string, top int) (chart.Heatmap, error) {
	m, err := findMetric(metric)
	if err != nil {
		return chart.Heatmap{}, err
	}
	if len(t.times) == 0 || len(t.keys) == 0 {
		return chart.Heatmap{}, fmt.Errorf("report: the trace holds no samples")
	}
	v := m.v(t)
	h := m.heatmap(fmt.Sprintf("%s over time", m.title))
	ns := make([]int64, len(t.times))
	for i, tm := range t.times {
		ns[i] = int64(tm / simenv.Nanosecond)
	}
	cols, unit := chart.SimTimeLabels(ns)
	h.Cols, h.XLabel = cols, "simulated time ("+unit+")"
	for _, i := range t.busiest(v, top) {
		h.Rows = append(h.Rows, t.keys[i].name)
		h.Values = append(h.Values, v[i])
	}
	return h, nil
}

// FabricHeatmap is switch × port of metric at its worst sample (the
// largest of the port's lossless queues).
func (t *Trace) FabricHeatmap(metric string) (chart.Heatmap, error) {
	m, err := findMetric(metric)
	if err != nil {
		return chart.Heatmap{}, err
	}
	if len(t.keys) == 0 {
		return chart.Heatmap{}, fmt.Errorf("report: the fabric has no lossless queue")
	}
	v := m.v(t)
	rows, cols := map[string]int{}, map[int]int{}
	var portNames []string
	h := m.heatmap(m.title + ", the worst sample of each port")
	h.XLabel, h.YLabel = "port (largest of its lossless queues)", "switch"
	maxPort := 0
	for _, k := range t.keys {
		if _, ok := rows[k.swName]; !ok {
			rows[k.swName] = len(h.Rows)
			h.Rows = append(h.Rows, k.swName)
		}
		maxPort = max(maxPort, k.port)
	}
	portNames = make([]string, maxPort+1)
	for p := range portNames {
		cols[p] = p
		portNames[p] = "port" + strconv.Itoa(p)
	}
	for _, k := range t.keys {
		portNames[k.port] = k.portName
	}
	h.Cols = portNames
	h.Values = make([][]float64, len(h.Rows))
	for r := range h.Values {
		h.Values[r] = make([]float64, len(h.Cols))
		for c := range h.Values[r] {
			h.Values[r][c] = math.NaN()
		}
	}
	for i, k := range t.keys {
		cell := &h.Values[rows[k.swName]][cols[k.port]]
		for _, x := range v[i] {
			if !math.IsNaN(x) && (math.IsNaN(*cell) || x > *cell) {
				*cell = x
			}
		}
	}
	return h, nil
}

func findMetric(name string) (traceMetric, error) {
	for _, m := range traceMetrics {
		if m.name == name {
			return m, nil
		}
	}
	return traceMetric{}, fmt.Errorf("report: metric %q (want depth, marks or pfc)", name)
}

// reportHeatmaps are the report's pictures: the fabric's depth, then each
// metric's busiest queues over time; both depth maps on one scale.
func (t *Trace) reportHeatmaps() ([]chart.Heatmap, error) {
	f, err := t.FabricHeatmap("depth")
	if err != nil {
		return nil, err
	}
	hs := []chart.Heatmap{f}
	for _, m := range traceMetrics {
		h, err := t.TimeHeatmap(m.name, 30)
		if err != nil {
			return nil, err
		}
		hs = append(hs, h)
	}
	chart.ShareScale(&hs[0], &hs[1])
	return hs, nil
}

// WriteHTML writes into dir the trace's heatmaps (PNG) and index.html
// with them under the run's text summary; it returns the files written.
func (t *Trace) WriteHTML(dir string, s Summary) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	type fig struct{ File, Caption string }
	var figs []fig
	save := func(name, caption string, h chart.Heatmap, w vg.Length) error {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		height := max(2.5*vg.Inch, min(1.2*vg.Inch+vg.Length(len(h.Rows))*0.22*vg.Inch, 14*vg.Inch))
		if err := h.Write(f, chart.PNG, w, height); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", p, err)
		}
		if err := f.Close(); err != nil {
			return err
		}
		files = append(files, p)
		figs = append(figs, fig{name, caption})
		return nil
	}
	hs, err := t.reportHeatmaps()
	if err != nil {
		return nil, err
	}
	if err := save("fabric-depth.png", "Where: every switch and port at its worst sample.", hs[0], 9*vg.Inch); err != nil {
		return nil, err
	}
	for i, m := range traceMetrics {
		if err := save("time-"+m.name+".png", "When: "+m.title+" of the 30 busiest lossless queues, per sample.", hs[i+1], 10*vg.Inch); err != nil {
			return nil, err
		}
	}
	p := filepath.Join(dir, "index.html")
	f, err := os.Create(p)
	if err != nil {
		return nil, err
	}
	var text textBuf
	_ = s.WriteText(&text)
	err = simTmpl.Execute(f, map[string]any{"Name": s.Scenario, "Text": string(text), "Figs": figs, "Samples": len(t.times),
		"Queues": len(t.keys)})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return append(files, p), err
}

type textBuf []byte

func (b *textBuf) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

var _ io.Writer = (*textBuf)(nil)

var simTmpl = template.Must(template.New("sim").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ecntune sim {{.Name}}</title>
<style>body{font-family:system-ui,sans-serif;margin:1.5em 2em}img{max-width:100%;border:1px solid #ddd}
pre{background:#f6f6f6;padding:1em;overflow-x:auto}figure{margin:1.5em 0}figcaption{color:#555}</style></head><body>
<h1>ecntune sim: {{.Name}}</h1>
<pre>{{.Text}}</pre>
<p>{{.Queues}} lossless queues sampled {{.Samples}} times.</p>
{{range .Figs}}<figure><img src="{{.File}}" alt="{{.Caption}}"><figcaption>{{.Caption}}</figcaption></figure>
{{end}}</body></html>
`))
