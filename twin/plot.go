package twin

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ecntune/ecntune/internal/chart"
)

// Plot colours: one for what the agent observed, one for the twin.
var (
	observedColor  = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	simulatedColor = color.RGBA{R: 214, G: 39, B: 40, A: 255}
)

// WriteTimePlot draws the observed and simulated per-interval figures
// over the twin's time line (one panel each for host and fabric
// utilisation, queue watermark, marked fraction and incast score), with
// the windows' boundaries marked, as format (chart.PNG or chart.SVG).
func (r *Report) WriteTimePlot(w io.Writer, format string) error {
	o, s := r.Observed, r.Simulated
	panel := func(label string, ov, sv []float64) chart.Panel {
		return chart.Panel{YLabel: label, Lines: []chart.Line{
			{Name: "observed", X: o.Time, Y: ov, Color: observedColor},
			{Name: "twin", X: s.Time, Y: sv, Color: simulatedColor, Dashed: true},
		}}
	}
	panels := []chart.Panel{panel("host util", o.HostUtil, s.HostUtil)}
	if r.Fabric.Kind != "star" {
		panels = append(panels, panel("fabric util", o.FabricUtil, s.FabricUtil))
	}
	panels = append(panels, panel("watermark (BDP)", o.MaxQueue, s.MaxQueue), panel("marked", o.Mark, s.Mark),
		panel("incast", o.Inc, s.Inc))
	st := chart.Stack{Title: "observed fabric and its twin, per interval", XLabel: "twin time (s)", Panels: panels}
	for _, p := range r.Phases[min(1, len(r.Phases)):] {
		st.Markers = append(st.Markers, chart.Marker{X: p.Start.Seconds(), Kind: "window"})
	}
	return st.Write(w, format, 8*vg.Inch, vg.Length(1.6*float64(len(panels)))*vg.Inch)
}

// WriteFitPlot draws every statistic's simulated value against its
// observed one, each over its scale (so that statistics of different
// units share the axes; log axes), with the diagonal where they agree.
func (r *Report) WriteFitPlot(w io.Writer, format string) error {
	scale := map[string]float64{}
	for _, d := range statDefs {
		scale[d.Name] = d.Scale
	}
	p := plot.New()
	p.Title.Text = "twin fit: each statistic, simulated against observed (over its scale)"
	p.X.Label.Text = "observed / scale"
	p.Y.Label.Text = "simulated / scale"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{}, plot.LogTicks{}
	lo, hi := 0.1, 10.0
	byRole := map[string]plotter.XYs{}
	for _, row := range r.Rows {
		x := math.Max(row.Observed/scale[row.Name], 0.1)
		y := math.Max(row.Simulated/scale[row.Name], 0.1)
		byRole[row.Role] = append(byRole[row.Role], plotter.XY{X: x, Y: y})
		hi = math.Max(hi, math.Max(x, y))
	}
	diag, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
	if err != nil {
		return err
	}
	diag.Color = color.Gray{Y: 150}
	p.Add(diag)
	p.Legend.Add("agree", diag)
	for i, role := range []string{RoleHost, RoleFabric} {
		pts := byRole[role]
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.Color = []color.Color{observedColor, simulatedColor}[i]
		sc.Radius = vg.Points(3)
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("%s ports", role), sc)
	}
	p.X.Min, p.Y.Min, p.X.Max, p.Y.Max = lo, lo, hi, hi
	p.BackgroundColor = color.White
	return chart.WritePlot(w, format, p, 7*vg.Inch, 6*vg.Inch)
}
