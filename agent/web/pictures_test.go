package web

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/chart"
)

// depthObs is one valid observation of queue k with a peak of kb KB at
// 100G (and no marks nor pauses).
func depthObs(k env.QueueKey, kb float64) env.Observation {
	return env.Observation{Key: k, RateBps: 100e9, Valid: true,
		Metrics: env.Metrics{Util: 0.5, MaxDelayNs: kb * 1e3 * 8e9 / 100e9, AvgDelayNs: kb * 1e3 * 4e9 / 100e9}}
}

var (
	qA = env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	qB = env.QueueKey{Target: "leaf0", Port: "Ethernet4", Queue: 3}
)

// TestDepthScaleOnlyGrows: successive dashboard refreshes draw depth on
// one scale, the deepest queue so far rounded up to a stable step: it
// does not shrink when the queues do, and grows when they grow.
func TestDepthScaleOnlyGrows(t *testing.T) {
	h := NewHistory(3)
	t0 := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC).UnixNano()
	for i, c := range []struct{ kb, want float64 }{{870, 1000}, {700, 1000}, {20, 1000}, {20, 1000}, {1700, 2000}, {10, 2000}} {
		h.Record(t0+int64(i)*1e9, []env.Observation{depthObs(qA, c.kb), depthObs(qB, 0)}, nil)
		for _, view := range []string{"fabric", "time"} {
			g, _ := h.fabric(MetricDepth, 0)
			if view == "time" {
				g, _ = h.timeline(MetricDepth, 30)
			}
			if hm := h.heatmapOf("", g); hm.Max != c.want || hm.Min != 0 {
				t.Errorf("interval %d (peak %g KB), %s view: scale %g-%g, want 0-%g", i, c.kb, view, hm.Min, hm.Max, c.want)
			}
		}
	}
	g, _ := h.fabric(MetricMarks, 0)
	if hm := h.heatmapOf("", g); hm.Max != 100 || !hm.Sqrt {
		t.Errorf("marks: scale to %g, sqrt %v", hm.Max, hm.Sqrt)
	}
}

var clock = regexp.MustCompile(`^\d\d:\d\d:\d\d$`)

// TestTimeInWallClock: the time heatmap's columns and the queue chart's
// x axis are the UTC clock the audit log is written in, and a change is
// marked at its own time.
func TestTimeInWallClock(t *testing.T) {
	h := NewHistory(5)
	t0 := time.Date(2026, 11, 29, 14, 0, 58, 0, time.UTC).UnixNano()
	for i := range 5 {
		h.Record(t0+int64(i)*1e9, []env.Observation{depthObs(qA, 100)}, nil)
	}
	g, _ := h.timeline(MetricDepth, 5)
	if strings.Join(g.Cols, " ") != "14:00:58 14:00:59 14:01:00 14:01:01 14:01:02" {
		t.Errorf("columns %v", g.Cols)
	}
	qs, _ := h.series(qA)
	st := QueueStack(qs, []chart.Marker{{X: float64(t0+2e9) / 1e9, Kind: "tune"}})
	if !st.Clock || st.XLabel != "time (UTC, 2026-11-29)" {
		t.Errorf("queue chart: clock %v, x label %q", st.Clock, st.XLabel)
	}
	for _, tk := range (chart.ClockTicks{}).Ticks(st.Panels[0].Lines[0].X[0], st.Panels[0].Lines[0].X[4]) {
		if !clock.MatchString(tk.Label) {
			t.Errorf("tick %q", tk.Label)
		}
	}
	var b bytes.Buffer
	if err := st.Write(&b, chart.SVG, 9*vg.Inch, 7.5*vg.Inch); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">14:01:00<", ">14:01:02<", "time (UTC, 2026-11-29)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("queue chart lacks %s", want)
		}
	}
}

// TestIdleSaidInWords: on an idle fabric the most congested queues are
// none, and the PFC and depth heatmaps say "no PFC pauses" and "idle".
func TestIdleSaidInWords(t *testing.T) {
	h := NewHistory(3)
	for i := range 3 {
		h.Record(int64(i+1)*1e9, []env.Observation{depthObs(qA, 0), depthObs(qB, 0)}, nil)
	}
	a := &server{o: Options{History: h}}
	if got := busiestTitle(MetricPFC, 0); got != "PFC paused or pausing time (%)" {
		t.Errorf("title of a time heatmap without rows %q", got)
	}
	if hot := a.hot(8); len(hot) != 0 {
		t.Errorf("idle fabric: hot %v", hot)
	}
	for m, want := range map[Metric]string{MetricPFC: "no PFC pauses", MetricDepth: "idle", MetricMarks: "no ECN marks"} {
		for _, view := range []string{"fabric", "time"} {
			g, _ := h.fabric(m, 0)
			if view == "time" {
				g, _ = h.timeline(m, 30)
			}
			hm := h.heatmapOf("t", g)
			var b bytes.Buffer
			if err := hm.Write(&b, chart.SVG, 9*vg.Inch, 4*vg.Inch); err != nil {
				t.Fatalf("%s %s: %v", m, view, err)
			}
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s %s view of an idle fabric does not say %q", m, view, want)
			}
		}
	}
}
