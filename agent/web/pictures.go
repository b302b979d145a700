package web

import (
	"fmt"
	"math"

	"github.com/ecntune/ecntune/internal/chart"
)

// The dashboard's and agent report's pictures compare: the depth heatmaps
// share one scale, the deepest queue ever recorded rounded up to a stable
// step (it only grows, so successive refreshes keep it), the percentages
// are on a fixed 0-100 square-root scale (10% is a third of the colour
// range), and a picture without anything to show says so in words.

// DepthScale is the top of the colour scale of metric m's heatmaps: for
// queue depths the deepest ever recorded rounded up to a stable step
// (chart.NiceCeil; 1 KB before any), 100 for percentages.
func (h *History) DepthScale(m Metric) float64 {
	if m != MetricDepth && m != MetricAvg {
		return 100
	}
	if h == nil {
		return 1
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	v := h.peakKB
	if m == MetricAvg {
		v = h.peakAvgKB
	}
	return math.Max(1, chart.NiceCeil(v))
}

// emptyWords says what a heatmap of m shows when nothing is above 0.
func emptyWords(m Metric) string {
	switch m {
	case MetricDepth, MetricAvg:
		return "idle: no queue held any bytes"
	case MetricMarks:
		return "no ECN marks"
	case MetricPFC:
		return "no PFC pauses"
	case MetricUtil:
		return "idle: no traffic"
	case MetricDrops:
		return "no drops"
	}
	return "" // confidence 0 is a value
}

// heatmapOf is g drawn on m's scale, with m's words for nothing to show.
func (h *History) heatmapOf(title string, g Grid) chart.Heatmap {
	m := g.Metric
	return chart.Heatmap{Title: title, Unit: m.Title(), Rows: g.Rows, Cols: g.Cols, Values: g.Values,
		Max: h.DepthScale(m), Sqrt: m == MetricMarks || m == MetricPFC || m == MetricDrops, Empty: emptyWords(m)}
}

// busiestTitle titles a time heatmap of m's n busiest queues (m alone
// when none has anything to show).
func busiestTitle(m Metric, n int) string {
	if n == 0 {
		return m.Title()
	}
	return fmt.Sprintf("%s, the %d busiest queues", m.Title(), n)
}
