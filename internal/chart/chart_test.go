package chart

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

func TestHeatmapPNG(t *testing.T) {
	h := Heatmap{Title: "peak queue depth", XLabel: "port", YLabel: "switch", Unit: "KB",
		Rows: []string{"leaf0", "leaf1", "spine0"}, Cols: []string{"eth1", "eth2", "eth3", "eth4"},
		Values: [][]float64{{0, 100, 400, math.NaN()}, {10, 20, 30, 40}, {0, 0, 0, 900}}}
	var b bytes.Buffer
	if err := h.Write(&b, PNG, 6*vg.Inch, 3*vg.Inch); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if w := img.Bounds().Dx(); w < 400 {
		t.Fatalf("width %d", w)
	}
	if p := os.Getenv("CHART_OUT"); p != "" {
		_ = h.Write(mustCreate(t, p+"/heat.png"), PNG, 6*vg.Inch, 3*vg.Inch)
	}
}

func mustCreate(t *testing.T, p string) *os.File {
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestHeatmapRejectsBadShapes(t *testing.T) {
	for name, h := range map[string]Heatmap{
		"empty":    {},
		"rows":     {Rows: []string{"a"}, Cols: []string{"x"}},
		"ragged":   {Rows: []string{"a"}, Cols: []string{"x", "y"}, Values: [][]float64{{1}}},
		"too many": {Rows: make([]string, 1000), Cols: make([]string, 1000), Values: make([][]float64, 1000)},
	} {
		if err := h.Write(&bytes.Buffer{}, PNG, vg.Inch, vg.Inch); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	ok := Heatmap{Rows: []string{"a"}, Cols: []string{"x"}, Values: [][]float64{{1}}}
	if err := ok.Write(&bytes.Buffer{}, "gif", vg.Inch, vg.Inch); err == nil || !strings.Contains(err.Error(), "gif") {
		t.Errorf("format: %v", err)
	}
}

func TestStackSVG(t *testing.T) {
	s := Stack{Title: "leaf0 eth1 q3", XLabel: "seconds ago", Panels: []Panel{
		{YLabel: "util", Lines: []Line{{Name: "util", X: []float64{-3, -2, -1, 0}, Y: []float64{0.1, math.NaN(), 0.5, 0.9}}}, YMax: 1},
		{YLabel: "kmin (KB)", Lines: []Line{{Name: "current", X: []float64{-3, -2, -1, 0}, Y: []float64{100, 100, 200, 200}, Step: true},
			{Name: "recommended", X: []float64{-3, -2, -1, 0}, Y: []float64{200, 200, 200, 200}, Step: true, Dashed: true}}},
	}, Markers: []Marker{{X: -1.5, Kind: "tune"}}}
	var b bytes.Buffer
	if err := s.Write(&b, SVG, 6*vg.Inch, 4*vg.Inch); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "kmin (KB)", "recommended", "tune", "seconds ago"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("svg lacks %q", want)
		}
	}
	if p := os.Getenv("CHART_OUT"); p != "" {
		_ = s.Write(mustCreate(t, p+"/stack.png"), PNG, 6*vg.Inch, 4*vg.Inch)
	}
	if err := (&Stack{}).Write(&b, SVG, vg.Inch, vg.Inch); err == nil {
		t.Error("empty stack: no error")
	}
}
