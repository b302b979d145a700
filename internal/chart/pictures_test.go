package chart

import (
	"bytes"
	"image/color"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

// TestStackLegendsBesideTheData: the legends of a queue chart's panels
// (lines reaching the top left, where gonum puts a legend, and 100% lines)
// sit in a column beside the panels, overlapping no panel's data area.
func TestStackLegendsBesideTheData(t *testing.T) {
	xs := []float64{0, 1, 2, 3}
	s := Stack{Title: "q", Panels: []Panel{
		{YLabel: "util (%)", YMin: 0, YMax: 100, Lines: []Line{{Name: "utilisation", X: xs, Y: []float64{100, 100, 100, 100}}}},
		{YLabel: "KB", Lines: []Line{{Name: "Kmin", X: xs, Y: []float64{1600, 1600, 1600, 1600}},
			{Name: "Kmin recommended", X: xs, Y: []float64{1600, 1500, 1600, 1600}, Dashed: true}}},
	}, Markers: []Marker{{X: 0.1, Kind: "tune"}, {X: 2, Kind: "rollback"}}}
	plots, err := s.plots()
	if err != nil {
		t.Fatal(err)
	}
	placed := s.draw(draw.New(vgimg.New(9*vg.Inch, 7.5*vg.Inch)), plots)
	for i, p := range placed {
		if p.Legend.Max.X <= p.Legend.Min.X || p.Legend.Max.Y <= p.Legend.Min.Y {
			t.Fatalf("panel %d: no legend drawn (%v)", i, p.Legend)
		}
		for j, q := range placed {
			if overlaps(p.Legend, q.Data) {
				t.Errorf("panel %d's legend %v overlaps panel %d's data %v", i, p.Legend, j, q.Data)
			}
		}
	}
	if placed[0].Data.Max.X != placed[1].Data.Max.X || placed[0].Data.Min.X != placed[1].Data.Min.X {
		t.Errorf("panels not aligned: %v, %v", placed[0].Data, placed[1].Data)
	}
}

// TestPlotLegendBesideTheData: a plot's legend (a frontier plot's, whose
// points reach the top right corner) is drawn beside its data.
func TestPlotLegendBesideTheData(t *testing.T) {
	p := plot.New()
	sc, err := plotter.NewScatter(plotter.XYs{{X: 0, Y: 0}, {X: 10, Y: 10}, {X: 0, Y: 10}, {X: 10, Y: 0}})
	if err != nil {
		t.Fatal(err)
	}
	p.Add(sc)
	p.Legend.Add("builtin", sc)
	p.Legend.Add("static:best with a long name", sc)
	pl := DrawLegendOutside(draw.New(vgimg.New(8*vg.Inch, 5*vg.Inch)), p)
	if pl.Legend.Max.X <= pl.Legend.Min.X || overlaps(pl.Legend, pl.Data) {
		t.Fatalf("legend %v, data %v", pl.Legend, pl.Data)
	}
}

// TestSeriesColorsStable: a policy keeps its colour across pictures with
// other policies, in any order; the names of one picture differ.
func TestSeriesColorsStable(t *testing.T) {
	a := SeriesColors([]string{"builtin", "static:hpcc", "builtin:prefer=0.5"})
	b := SeriesColors([]string{"static:best", "model:mine", "builtin:prefer=0.5", "builtin", "fixed:400KB/1600KB/20%"})
	c := SeriesColors([]string{"builtin:prefer=0.5", "builtin"})
	for _, n := range []string{"builtin", "builtin:prefer=0.5"} {
		if a[n] != b[n] || a[n] != c[n] {
			t.Errorf("%s: %v, %v, %v", n, a[n], b[n], c[n])
		}
	}
	if a["builtin"] != SeriesColor("builtin") {
		t.Errorf("builtin is not its own colour")
	}
	names := []string{"builtin", "static:best", "static:hpcc", "static:sonic-default", "a", "b", "c", "d", "e", "f", "g", "h"}
	seen := map[color.Color]string{}
	for n, c := range SeriesColors(names) {
		if o, ok := seen[c]; ok {
			t.Errorf("%s and %s share %v", n, o, c)
		}
		seen[c] = n
	}
}

// TestShareScaleStableStep: two depth heatmaps of one report get one
// scale, rounded up to a stable step.
func TestShareScaleStableStep(t *testing.T) {
	a := &Heatmap{Values: [][]float64{{0, 1180, math.NaN()}}}
	b := &Heatmap{Values: [][]float64{{1490}}}
	ShareScale(a, b)
	if a.Max != 1500 || b.Max != 1500 || a.Min != 0 {
		t.Fatalf("scales %g-%g, %g-%g", a.Min, a.Max, b.Min, b.Max)
	}
	for v, want := range map[float64]float64{0: 0, 0.7: 0.8, 1000: 1000, 1001: 1200, 1601: 2000, 2100: 2500, 9000: 10000} {
		if got := NiceCeil(v); got != want {
			t.Errorf("NiceCeil(%g) = %g, want %g", v, got, want)
		}
	}
}

// TestPercentHeatmapShowsTenPercent: on the square-root scale a 10% cell
// is far from the colour of 0% (on the linear 0-100 scale it is not).
func TestPercentHeatmapShowsTenPercent(t *testing.T) {
	dist := func(h *Heatmap) float64 {
		r1, g1, b1, _ := h.ColorOf(0).RGBA()
		r2, g2, b2, _ := h.ColorOf(10).RGBA()
		d := func(a, b uint32) float64 { return math.Abs(float64(a)-float64(b)) / 257 }
		return d(r1, r2) + d(g1, g2) + d(b1, b2)
	}
	lin := &Heatmap{Max: 100}
	sq := &Heatmap{Max: 100, Sqrt: true}
	if dl, ds := dist(lin), dist(sq); ds < 120 || ds < 2*dl {
		t.Fatalf("10%% against 0%%: %.0f apart on the square-root scale, %.0f on the linear one", ds, dl)
	}
}

// TestColourBarTicks: a colour bar has at least five labelled values,
// whatever its range.
func TestColourBarTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		sqrt   bool
	}{{0, 1, false}, {0, 1600, false}, {0, 1200, false}, {0, 2000, false}, {0, 10, true}, {0, 100, false}} {
		b := barTicks{sqrt: c.sqrt, fmt: Number}
		n := 0
		for _, tk := range b.Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				n++
			}
		}
		if n < 5 {
			t.Errorf("%g-%g (sqrt %v): %d labels", c.lo, c.hi, c.sqrt, n)
		}
	}
}

// TestEmptyHeatmapInWords: a heatmap with nothing above 0 and Empty set
// says so in words instead of drawing a grid of zeros.
func TestEmptyHeatmapInWords(t *testing.T) {
	for _, h := range []Heatmap{
		{Title: "PFC paused time (%)", Empty: "no PFC pauses", Rows: []string{"a"}, Cols: []string{"x", "y"},
			Values: [][]float64{{0, math.NaN()}}},
		{Title: "PFC paused time (%)", Empty: "no PFC pauses"},
	} {
		var b bytes.Buffer
		if err := h.Write(&b, SVG, 6*vg.Inch, 4*vg.Inch); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "no PFC pauses") {
			t.Errorf("the picture does not say no PFC pauses")
		}
	}
	h := Heatmap{Empty: "no PFC pauses", Rows: []string{"a"}, Cols: []string{"x"}, Values: [][]float64{{3}}}
	var b bytes.Buffer
	if err := h.Write(&b, SVG, 6*vg.Inch, 4*vg.Inch); err != nil || strings.Contains(b.String(), "no PFC pauses") {
		t.Errorf("a heatmap with a pause: err %v, says no PFC pauses: %v", err, strings.Contains(b.String(), "no PFC pauses"))
	}
}

var clockRe = regexp.MustCompile(`^\d\d:\d\d:\d\d(\.\d{1,3})?$`)

// TestClockAxes: wall-clock axes and columns are labelled as a 24-hour UTC
// clock, in one style.
func TestClockAxes(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 14, 3, 7, 0, time.UTC)
	lo := float64(t0.Unix())
	for _, span := range []float64{3, 60, 600, 7200} {
		ts := ClockTicks{}.Ticks(lo, lo+span)
		if len(ts) < 3 || len(ts) > 8 {
			t.Errorf("span %g s: %d ticks", span, len(ts))
		}
		for _, tk := range ts {
			if !clockRe.MatchString(tk.Label) || strings.Contains(tk.Label, ".") {
				t.Errorf("span %g s: label %q", span, tk.Label)
			}
		}
	}
	var ns []int64
	for i := range 5 {
		ns = append(ns, t0.UnixNano()+int64(i)*int64(200*time.Millisecond))
	}
	ls := ClockLabels(ns)
	if ls[0] != "14:03:07.0" || ls[1] != "14:03:07.2" {
		t.Errorf("labels %v", ls)
	}
	if got := ClockAxisLabel(t0.UnixNano(), t0.UnixNano()); got != "time (UTC, 2026-11-29)" {
		t.Errorf("axis label %q", got)
	}
	jitter := []int64{t0.UnixNano(), t0.UnixNano() + 1_003e6, t0.UnixNano() + 1_050e6, t0.UnixNano() + 2_040e6, t0.UnixNano() + 3_001e6}
	if ls := ClockLabels(jitter); strings.Join(ls, " ") != "14:03:07 14:03:08 14:03:08 14:03:09 14:03:10" {
		t.Errorf("intervals of a second with one late: %v", ls)
	}
	sl, unit := SimTimeLabels([]int64{25_000, 50_000, 975_000, 1_000_000, 1_025_000})
	if unit != "ms" || sl[0] != "0.025" || sl[4] != "1.025" {
		t.Errorf("simulated time %v %s", sl, unit)
	}
}
