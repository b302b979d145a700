package chart

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
)

// niceSteps are the mantissas NiceCeil rounds up to: fine enough that a
// scale is not twice its data, coarse enough that it changes rarely.
var niceSteps = []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10}

// NiceCeil rounds v up to a stable step (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6
// or 8 times a power of ten): pictures whose data peak near each other
// get the same scale. 0 and below (or NaN) give 0.
func NiceCeil(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 1) {
		return 0
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, s := range niceSteps {
		if c := s * e; c >= v*(1-1e-12) {
			return roundNice(c)
		}
	}
	return roundNice(10 * e)
}

func roundNice(v float64) float64 {
	if v = math.Round(v*1e9) / 1e9; v == 0 {
		return 0 // not -0
	}
	return v
}

// tickStep rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func tickStep(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 1) {
		return 0
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, s := range []float64{1, 2, 2.5, 5, 10} {
		if s*e >= v*(1-1e-12) {
			return s * e
		}
	}
	return 10 * e
}

// MaxOf is the largest value of hs' grids (NaN skipped; 0 without any).
func MaxOf(hs ...*Heatmap) float64 {
	m := 0.0
	for _, h := range hs {
		for _, r := range h.Values {
			for _, v := range r {
				if v > m {
					m = v
				}
			}
		}
	}
	return m
}

// ShareScale gives hs one colour scale, 0 to NiceCeil of their largest
// value (1 when all are 0): the pictures of one report compare.
func ShareScale(hs ...*Heatmap) {
	hi := NiceCeil(MaxOf(hs...))
	if hi == 0 {
		hi = 1
	}
	for _, h := range hs {
		h.Min, h.Max = 0, hi
	}
}

// transform maps a value to its position on the colour map: its square
// root when h.Sqrt.
func (h *Heatmap) transform(v float64) float64 {
	if h.Sqrt && !math.IsNaN(v) {
		return math.Sqrt(math.Max(v, 0))
	}
	return v
}

// ColorOf is the colour a cell of value v is drawn in.
func (h *Heatmap) ColorOf(v float64) color.Color {
	if math.IsNaN(v) {
		return NoData
	}
	lo, hi := h.scale()
	tl, th := h.transform(lo), h.transform(hi)
	cm := heat()
	cm.SetMin(tl)
	cm.SetMax(th)
	pal := cm.Palette(paletteSize).Colors()
	t := math.Min(math.Max(h.transform(v), tl), th)
	return pal[int((t-tl)*float64(len(pal)-1)/(th-tl)+0.5)]
}

// paletteSize is the number of colours of a heatmap.
const paletteSize = 64

// sqrtTickValues are the labels of a square-root colour bar.
var sqrtTickValues = []float64{0, 1, 2, 5, 10, 20, 30, 50, 75, 100, 200, 500, 1000}

// barTicks labels a colour bar from lo to hi (in the colour map's
// coordinates: square roots when sqrt) with at least five values.
type barTicks struct {
	sqrt bool
	fmt  func(float64) string
}

func (b barTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	if b.sqrt {
		for _, v := range sqrtTickValues {
			if p := math.Sqrt(v); p >= lo-1e-9 && p <= hi+1e-9 {
				out = append(out, plot.Tick{Value: p, Label: b.fmt(v)})
			}
		}
		return out
	}
	step := tickStep((hi - lo) / 8)
	if !(step > 0) {
		return []plot.Tick{{Value: lo, Label: b.fmt(lo)}}
	}
	for v := math.Ceil(lo/step-1e-9) * step; v <= hi+step*1e-9; v += step {
		out = append(out, plot.Tick{Value: v, Label: b.fmt(roundNice(v))})
	}
	return out
}
