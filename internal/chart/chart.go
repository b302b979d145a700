// Package chart draws the two pictures every ecntune view shares, with
// gonum/plot: a heatmap (rows × columns, a colour bar with units, cells
// without data greyed out) and a stack of time-series panels sharing one
// x axis with vertical event markers (changes, rollbacks). The agent's
// dashboard, `agent report` and the simulator's report draw with it, so a
// queue looks the same live and offline. It knows nothing of switches or
// simulators: callers hand it labelled numbers.
package chart

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Formats Write accepts.
const (
	PNG = "png"
	SVG = "svg"
)

// MaxCells bounds a heatmap (rows × columns), so that no request can make
// a picture of unbounded size.
const MaxCells = 200_000

// Heatmap is a grid of values: Values[r][c] is row r (drawn top to
// bottom in the order of Rows) and column c. NaN is "no data" and drawn
// grey.
type Heatmap struct {
	Title, XLabel, YLabel string
	// Unit names the colour bar (e.g. "peak queue depth (KB)").
	Unit       string
	Rows, Cols []string
	Values     [][]float64
	// Min and Max fix the colour scale; both zero: 0 to the largest value
	// (1 when every value is 0 or NaN).
	Min, Max float64
	// Tick formats the colour bar's labels (default: %g).
	Tick func(float64) string
	// Sqrt colours by the square root of the value (for percentages on a
	// fixed 0-100 scale: 1% is a tenth of the colour range, 10% a third,
	// 50% seven tenths), labelling the bar in the values themselves.
	Sqrt bool
	// Empty, when set, is drawn in words (e.g. "no PFC pauses") instead
	// of the grid when no cell holds a value above 0, or there is no row.
	Empty string
}

type grid struct {
	v    [][]float64
	rows int
	f    func(float64) float64
}

func (g grid) Dims() (c, r int) {
	if len(g.v) == 0 {
		return 0, 0
	}
	return len(g.v[0]), len(g.v)
}
func (g grid) Z(c, r int) float64 { return g.f(g.v[g.rows-1-r][c]) }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }

// check validates h's shape.
func (h *Heatmap) check() error {
	if len(h.Rows) == 0 || len(h.Cols) == 0 {
		return errors.New("chart: a heatmap needs at least one row and one column")
	}
	if len(h.Values) != len(h.Rows) {
		return fmt.Errorf("chart: %d rows of values for %d row labels", len(h.Values), len(h.Rows))
	}
	for i, r := range h.Values {
		if len(r) != len(h.Cols) {
			return fmt.Errorf("chart: row %q has %d values for %d columns", h.Rows[i], len(r), len(h.Cols))
		}
	}
	if len(h.Rows)*len(h.Cols) > MaxCells {
		return fmt.Errorf("chart: %d×%d cells is more than %d", len(h.Rows), len(h.Cols), MaxCells)
	}
	return nil
}

// scale returns the colour scale's bounds.
func (h *Heatmap) scale() (lo, hi float64) {
	lo, hi = h.Min, h.Max
	if lo == 0 && hi == 0 {
		for _, r := range h.Values {
			for _, v := range r {
				if !math.IsNaN(v) && v > hi {
					hi = v
				}
			}
		}
	}
	if !(hi > lo) {
		hi = lo + 1
	}
	return lo, hi
}

// labelTicks labels every step-th of n positions with names[i] (position
// i at value pos(i)), so that at most about max labels are written.
func labelTicks(names []string, max int, pos func(int) float64) plot.Ticker {
	step := 1
	if len(names) > max {
		step = (len(names) + max - 1) / max
	}
	ts := make([]plot.Tick, 0, len(names))
	for i, n := range names {
		t := plot.Tick{Value: pos(i)}
		if i%step == 0 {
			t.Label = n
		}
		ts = append(ts, t)
	}
	return plot.ConstantTicks(ts)
}

// IsEmpty reports whether h is drawn as its Empty words: Empty set and
// no row or no cell above 0.
func (h *Heatmap) IsEmpty() bool {
	if h.Empty == "" {
		return false
	}
	for _, r := range h.Values {
		for _, v := range r {
			if v > 0 {
				return false
			}
		}
	}
	return true
}

// writeEmpty draws h's title and its Empty words.
func (h *Heatmap) writeEmpty(w io.Writer, format string, width, height vg.Length) error {
	height = min(height, 2*vg.Inch)
	return render(w, format, width, height, func(dc draw.Canvas) {
		p := plot.New()
		sty := p.Title.TextStyle
		dc.FillText(sty, vg.Point{X: dc.Center().X, Y: dc.Max.Y - sty.Rectangle(h.Title).Size().Y - vg.Points(4)}, h.Title)
		words := p.X.Label.TextStyle
		words.Font.Size = 16
		words.Color = color.Gray{Y: 90}
		words.XAlign, words.YAlign = draw.XCenter, draw.YCenter
		dc.FillText(words, dc.Center(), h.Empty)
	})
}

// Write draws h as format (PNG or SVG) of the given size.
func (h *Heatmap) Write(w io.Writer, format string, width, height vg.Length) error {
	if h.IsEmpty() {
		return h.writeEmpty(w, format, width, height)
	}
	if err := h.check(); err != nil {
		return err
	}
	lo, hi := h.scale()
	lo, hi = h.transform(lo), h.transform(hi)
	cm := heat()
	cm.SetMin(lo)
	cm.SetMax(hi)
	pal := cm.Palette(paletteSize)
	hm := plotter.NewHeatMap(grid{v: h.Values, rows: len(h.Rows), f: h.transform}, pal)
	hm.Min, hm.Max = lo, hi
	hm.NaN = NoData
	hm.Underflow, hm.Overflow = pal.Colors()[0], pal.Colors()[paletteSize-1]

	p := plot.New()
	p.BackgroundColor = color.White
	p.Title.Text = h.Title
	p.X.Label.Text, p.Y.Label.Text = h.XLabel, h.YLabel
	p.Add(hm)
	n := len(h.Rows)
	p.X.Tick.Marker = labelTicks(h.Cols, 24, func(i int) float64 { return float64(i) })
	p.Y.Tick.Marker = labelTicks(h.Rows, 30, func(i int) float64 { return float64(n - 1 - i) })
	if len(h.Cols) > 8 {
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	}
	p.X.Min, p.X.Max = -0.5, float64(len(h.Cols))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5

	bar := plot.New()
	bar.BackgroundColor = color.White
	bar.HideX()
	bar.Y.Label.Text = h.Unit
	bar.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})
	tick := h.Tick
	if tick == nil {
		tick = Number
	}
	bar.Y.Tick.Marker = barTicks{sqrt: h.Sqrt, fmt: tick}
	bar.Y.Padding, bar.X.Padding = 0, 0
	bar.Title.Text = " " // aligns the bar with the heatmap below the title
	if h.Title == "" {
		bar.Title.Text = ""
	}

	return render(w, format, width, height, func(dc draw.Canvas) {
		barW := 1.1 * vg.Inch
		if barW > width/3 {
			barW = width / 3
		}
		p.Draw(draw.Crop(dc, 0, -barW, 0, 0))
		bar.Draw(draw.Crop(dc, width-barW+vg.Points(6), 0, p.X.Label.TextStyle.Height(p.X.Label.Text)+vg.Points(40), 0))
	})
}

// Number renders an axis label without exponents: 1200, 45, 0.25.
func Number(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100 || v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}

// formatTicks is plot.DefaultTicks with its labels formatted by fmt.
type formatTicks struct{ fmt func(float64) string }

func (f formatTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = f.fmt(ts[i].Value)
		}
	}
	return ts
}

// render draws into a new canvas of format and writes it to w.
func render(w io.Writer, format string, width, height vg.Length, paint func(draw.Canvas)) error {
	if format != PNG && format != SVG {
		return fmt.Errorf("chart: format %q (want png or svg)", format)
	}
	if width <= 0 || height <= 0 || width > 40*vg.Inch || height > 40*vg.Inch {
		return fmt.Errorf("chart: size %v×%v out of range (up to 40 in)", width, height)
	}
	c, err := draw.NewFormattedCanvas(width, height, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	paint(dc)
	_, err = c.WriteTo(w)
	return err
}

// Line is one series of a panel.
type Line struct {
	Name string
	X, Y []float64 // NaN in Y breaks the line
	// Step draws a staircase (a setting that holds until it changes).
	Step   bool
	Dashed bool
	// Color is the line's colour (default: the panel's next colour).
	Color color.Color
}

// Panel is one chart of a Stack.
type Panel struct {
	YLabel string
	Lines  []Line
	// YMin and YMax fix the y range; both zero: from 0 to the data.
	YMin, YMax float64
	// Tick formats the y labels (default: %g).
	Tick func(float64) string
}

// Marker is a vertical line across every panel at X, coloured by Kind.
type Marker struct {
	X    float64
	Kind string
}

// Stack is panels one above the other over a shared x axis.
type Stack struct {
	Title, XLabel string
	Panels        []Panel
	Markers       []Marker
	// MarkerColors colours markers by Kind (default: grey); every kind
	// used gets a legend entry in the top panel.
	MarkerColors map[string]color.Color
	// Clock: x is Unix time in seconds, labelled as a UTC clock
	// (ClockTicks); an empty XLabel then says the date and zone.
	Clock bool
}

var lineColors = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 214, G: 39, B: 40, A: 255},
	color.RGBA{R: 44, G: 160, B: 44, A: 255}, color.RGBA{R: 148, G: 103, B: 189, A: 255},
	color.RGBA{R: 255, G: 127, B: 14, A: 255},
}

// Write draws s as format (PNG or SVG) of the given size.
func (s *Stack) Write(w io.Writer, format string, width, height vg.Length) error {
	plots, err := s.plots()
	if err != nil {
		return err
	}
	return render(w, format, width, height, func(dc draw.Canvas) { s.draw(dc, plots) })
}

// plots makes s's panels' plots over their shared x range.
func (s *Stack) plots() ([][]*plot.Plot, error) {
	if len(s.Panels) == 0 {
		return nil, errors.New("chart: a stack needs at least one panel")
	}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, p := range s.Panels {
		for _, l := range p.Lines {
			if len(l.X) != len(l.Y) {
				return nil, fmt.Errorf("chart: line %q has %d x and %d y values", l.Name, len(l.X), len(l.Y))
			}
			for _, x := range l.X {
				xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
			}
		}
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax = 0, 1
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	plots := make([][]*plot.Plot, len(s.Panels))
	for i, pn := range s.Panels {
		p, err := s.panel(i, pn, xmin, xmax)
		if err != nil {
			return nil, err
		}
		plots[i] = []*plot.Plot{p}
	}
	return plots, nil
}

// draw lays plots (one per panel) out in dc, one above the other with
// their legends in one column at the right, and says where each panel's
// data and legend went.
func (s *Stack) draw(dc draw.Canvas, plots [][]*plot.Plot) []Placed {
	var lw vg.Length
	for _, p := range plots {
		lw = max(lw, legendWidth(p[0], dc))
	}
	t := draw.Tiles{Rows: len(plots), Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4),
		PadX: vg.Points(4), PadY: vg.Points(6)}
	cs := plot.Align(plots, t, draw.Crop(dc, 0, -lw, 0, 0))
	out := make([]Placed, len(plots))
	for i := range plots {
		out[i] = drawBeside(cs[i][0], plots[i][0], lw)
	}
	return out
}

// panel draws panel i of s over x range xmin..xmax, with the markers.
func (s *Stack) panel(i int, pn Panel, xmin, xmax float64) (*plot.Plot, error) {
	p := s.newPlot(i, pn)
	lo, hi := pn.YMin, pn.YMax
	fixed := lo != 0 || hi != 0
	if !fixed {
		hi = math.Inf(-1)
	}
	for j, l := range pn.Lines {
		segs := segments(l)
		if !fixed {
			for _, seg := range segs {
				for _, pt := range seg {
					hi = math.Max(hi, pt.Y)
					lo = math.Min(lo, pt.Y)
				}
			}
		}
		c := l.Color
		if c == nil {
			c = lineColors[j%len(lineColors)]
		}
		if err := addLine(p, l, c, segs); err != nil {
			return nil, err
		}
	}
	if math.IsInf(hi, -1) || !(hi > lo) {
		hi = lo + 1
	}
	if !fixed {
		hi += (hi - lo) * 0.08
	}
	p.Y.Min, p.Y.Max = lo, hi
	p.X.Min, p.X.Max = xmin, xmax
	tick := pn.Tick
	if tick == nil {
		tick = Number
	}
	p.Y.Tick.Marker = formatTicks{fmt: tick}
	if err := s.addMarkers(p, i, xmin, xmax, lo, hi); err != nil {
		return nil, err
	}
	return p, nil
}

// newPlot is panel i's empty plot: the title on the top panel, the x
// labels on the bottom one only, the y label, legend and grid.
func (s *Stack) newPlot(i int, pn Panel) *plot.Plot {
	p := plot.New()
	p.BackgroundColor = color.White
	if i == 0 {
		p.Title.Text = s.Title
	}
	if s.Clock {
		p.X.Tick.Marker = ClockTicks{}
	}
	if i == len(s.Panels)-1 {
		p.X.Label.Text = s.XLabel
	} else {
		p.X.Tick.Label.Font.Size = 0
		p.X.Tick.Label.Color = color.Transparent
	}
	p.Y.Label.Text = pn.YLabel
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = font.Length(8)
	p.Add(plotter.NewGrid())
	return p
}

// segments splits line l's points into the runs between values of Y that
// are NaN or infinite.
func segments(l Line) []plotter.XYs {
	pts := make(plotter.XYs, 0, len(l.X))
	var segs []plotter.XYs
	for k := range l.X {
		if math.IsNaN(l.Y[k]) || math.IsInf(l.Y[k], 0) {
			if len(pts) > 0 {
				segs, pts = append(segs, pts), nil
			}
			continue
		}
		pts = append(pts, plotter.XY{X: l.X[k], Y: l.Y[k]})
	}
	if len(pts) > 0 {
		segs = append(segs, pts)
	}
	return segs
}

// addLine draws the segments of line l in colour c, with one legend entry.
func addLine(p *plot.Plot, l Line, c color.Color, segs []plotter.XYs) error {
	for k, seg := range segs {
		ln, err := plotter.NewLine(seg)
		if err != nil {
			return fmt.Errorf("chart: line %q: %w", l.Name, err)
		}
		ln.Color = c
		ln.Width = vg.Points(1.2)
		if l.Step {
			ln.StepStyle = plotter.PostStep
		}
		if l.Dashed {
			ln.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(ln)
		if k == 0 && l.Name != "" {
			p.Legend.Add(l.Name, ln)
		}
	}
	return nil
}

// addMarkers draws the markers within xmin..xmax on panel i's plot p, from
// lo to hi, with a legend entry per kind on the top panel.
func (s *Stack) addMarkers(p *plot.Plot, i int, xmin, xmax, lo, hi float64) error {
	seen := map[string]bool{}
	for _, m := range s.Markers {
		if m.X < xmin || m.X > xmax {
			continue
		}
		ln, err := plotter.NewLine(plotter.XYs{{X: m.X, Y: lo}, {X: m.X, Y: hi}})
		if err != nil {
			return err
		}
		ln.Color = color.Gray{Y: 120}
		if c, ok := s.MarkerColors[m.Kind]; ok {
			ln.Color = c
		}
		ln.Width = vg.Points(1)
		ln.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(ln)
		if i == 0 && !seen[m.Kind] {
			seen[m.Kind] = true
			p.Legend.Add(m.Kind, ln)
		}
	}
	return nil
}

// NoData is the colour of a heatmap cell without a value.
var NoData = color.RGBA{R: 196, G: 206, B: 222, A: 255}

// heat is the heatmaps' colour map: pale yellow (cold) to dark red (hot),
// with luminance falling linearly, so that it reads in grey too.
func heat() palette.ColorMap {
	cm, err := moreland.NewLuminance([]color.Color{
		color.RGBA{R: 90, G: 0, B: 30, A: 255}, color.RGBA{R: 200, G: 30, B: 30, A: 255},
		color.RGBA{R: 245, G: 140, B: 40, A: 255}, color.RGBA{R: 255, G: 250, B: 205, A: 255},
	})
	if err != nil {
		panic(err) // the controls are constants
	}
	return reversed{cm}
}

// reversed runs a colour map from Max to Min.
type reversed struct{ palette.ColorMap }

func (r reversed) At(v float64) (color.Color, error) {
	return r.ColorMap.At(r.ColorMap.Max() + r.ColorMap.Min() - v)
}

func (r reversed) Palette(n int) palette.Palette {
	cs := r.ColorMap.Palette(n).Colors()
	out := make([]color.Color, len(cs))
	for i, c := range cs {
		out[len(cs)-1-i] = c
	}
	return colors(out)
}

type colors []color.Color

func (c colors) Colors() []color.Color { return c }
