package chart

import (
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// legendGap separates a plot from its legend column.
const legendGap = 6

// legendWidth is the width p's legend takes (0 without entries), its gap
// included.
func legendWidth(p *plot.Plot, c draw.Canvas) vg.Length {
	r := p.Legend.Rectangle(c)
	if w := r.Max.X - r.Min.X; w > 0 {
		return w + vg.Points(legendGap)
	}
	return 0
}

// Placed is where a picture's data and its legend were drawn: the legend
// never overlaps the data.
type Placed struct{ Data, Legend vg.Rectangle }

// drawBeside draws p into c and its legend to the right of c, in a column
// of width w starting at c.Max.X (the caller leaves it free), its top at
// the top of p's data area.
func drawBeside(c draw.Canvas, p *plot.Plot, w vg.Length) Placed {
	leg := p.Legend
	p.Legend = plot.NewLegend()
	p.Draw(c)
	p.Legend = leg
	data := p.DataCanvas(c)
	pl := Placed{Data: data.Rectangle}
	if w <= 0 {
		return pl
	}
	r := leg.Rectangle(c)
	lc := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: c.Max.X + vg.Points(legendGap), Y: c.Min.Y},
		Max: vg.Point{X: c.Max.X + w, Y: data.Max.Y},
	}}
	leg.Left, leg.Top, leg.XOffs, leg.YOffs = true, true, 0, 0
	leg.Draw(lc)
	pl.Legend = vg.Rectangle{Min: vg.Point{X: lc.Min.X, Y: lc.Max.Y - (r.Max.Y - r.Min.Y)},
		Max: vg.Point{X: lc.Min.X + (r.Max.X - r.Min.X), Y: lc.Max.Y}}
	return pl
}

// DrawLegendOutside draws p into c with its legend in a column at the
// right, beside the data rather than on it.
func DrawLegendOutside(c draw.Canvas, p *plot.Plot) Placed {
	w := legendWidth(p, c)
	return drawBeside(draw.Crop(c, 0, -w, 0, 0), p, w)
}

// WritePlot draws p as format (PNG or SVG) of the given size, its legend
// beside the data (DrawLegendOutside), on white.
func WritePlot(w io.Writer, format string, p *plot.Plot, width, height vg.Length) error {
	return render(w, format, width, height, func(dc draw.Canvas) { DrawLegendOutside(dc, p) })
}
