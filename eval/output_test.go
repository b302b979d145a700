package eval

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ecntune/ecntune/internal/chart"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/report"
)

// plotResult is a hand-made Result of one scenario, two policies and two
// seeds, with no simulation: policy "a" has low slowdowns, "b" high ones.
func plotResult() *Result {
	r := &Result{Scenarios: []string{"s"}, Policies: []string{"a", "b"}}
	for pi, pol := range r.Policies {
		var rs []Run
		for seed := uint64(1); seed <= 2; seed++ {
			k := float64(1 + 4*pi)
			run := Run{Policy: pol, SmallP99: 3 * k}
			run.Scenario, run.Seed = "s", seed
			run.FCTSlowdown = report.FCTSlowdown{
				Under10KB: report.Stat{P50: 1.2 * k, P99: 2 * k}, From10KB: report.Stat{P50: 1.5 * k, P99: 3 * k},
				From100KB: report.Stat{P50: 2 * k, P99: 5 * k}, From1MB: report.Stat{P50: 3 * k, P99: 8 * k},
			}
			for i := 0; i < 500; i++ {
				run.slowdowns = append(run.slowdowns, k*(1+float64(i)/50)+float64(seed)/10)
			}
			rs = append(rs, run)
		}
		r.Runs = append(r.Runs, rs...)
		r.Aggregates = append(r.Aggregates, aggregate("s", pol, rs))
	}
	return r
}

// decodePNG decodes b as a PNG of at least minW×minH pixels.
func decodePNG(t *testing.T, what string, b []byte, minW, minH int) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: not a PNG (%d bytes): %v", what, len(b), err)
	}
	if s := img.Bounds().Size(); s.X < minW || s.Y < minH || len(b) < 5000 {
		t.Fatalf("%s: %dx%d pixels, %d bytes; want at least %dx%d and 5000 bytes", what, s.X, s.Y, len(b), minW, minH)
	}
	return img
}

// pixelsOf counts the pixels of img within 8 per channel of c.
func pixelsOf(img image.Image, c color.Color) int {
	near := func(a, b uint32) bool { return a>>8 <= b>>8+8 && b>>8 <= a>>8+8 }
	cr, cg, cb, _ := c.RGBA()
	n := 0
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if near(r, cr) && near(g, cg) && near(b, cb) {
				n++
			}
		}
	}
	return n
}

// TestPlotsPNG: both plots of a scenario are PNGs of the documented size
// (7×4.5 and 8×5 inches at 96 dpi) that draw every policy in its colour:
// the CDF a line per policy, the p99 chart a bar per bucket and policy.
func TestPlotsPNG(t *testing.T) {
	r := plotResult()
	for _, c := range []struct {
		name       string
		plot       func(*bytes.Buffer, string) error
		w, h, minN int
	}{
		{"cdf", func(b *bytes.Buffer, sc string) error { return r.PlotCDF(b, sc) }, 672, 432, 300},
		{"p99", func(b *bytes.Buffer, sc string) error { return r.PlotBuckets(b, sc) }, 768, 480, 2000},
	} {
		var b bytes.Buffer
		if err := c.plot(&b, "s"); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		img := decodePNG(t, c.name, b.Bytes(), c.w, c.h)
		cols := chart.SeriesColors(r.Policies)
		for _, pol := range r.Policies {
			if n := pixelsOf(img, cols[pol]); n < c.minN {
				t.Errorf("%s: policy %s has %d pixels of its colour, want at least %d", c.name, pol, n, c.minN)
			}
		}
		// A scenario the result does not hold is an error, not an empty plot.
		b.Reset()
		if err := c.plot(&b, "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("%s of an unknown scenario: err = %v, %d bytes", c.name, err, b.Len())
		}
	}
}

// TestPlotsNoFinishedFlow: a scenario where no flow finished (a very
// short --duration) still plots, rather than panicking on the log axis.
func TestPlotsNoFinishedFlow(t *testing.T) {
	r := &Result{Scenarios: []string{"s"}, Policies: []string{"a"}}
	run := Run{Policy: "a"}
	run.Scenario = "s"
	r.Runs = []Run{run}
	r.Aggregates = []Aggregate{aggregate("s", "a", r.Runs)}
	var cdf, bars, html bytes.Buffer
	if err := r.PlotCDF(&cdf, "s"); err != nil {
		t.Fatal(err)
	}
	decodePNG(t, "cdf", cdf.Bytes(), 672, 432)
	if err := r.PlotBuckets(&bars, "s"); err != nil {
		t.Fatal(err)
	}
	decodePNG(t, "p99", bars.Bytes(), 768, 480)
	if err := r.WriteHTML(&html); err != nil || strings.Count(html.String(), "data:image/png;base64,iVBOR") != 2 {
		t.Fatalf("html: err %v, %d bytes", err, html.Len())
	}
}

// TestWriteJSONBaseName: a scenario with a BaseName (eval --duration's
// NAME@DURATION) is labelled by its Name in the result, but its JSON
// objects carry the scenario's own name, as sim --json does, and the run's
// simulated time.
func TestWriteJSONBaseName(t *testing.T) {
	sc := tiny()
	sc.Config.Duration = simenv.Millisecond
	sc.Name, sc.BaseName = "tiny@1ms", "tiny"
	res, err := RunAll([]Scenario{sc, tiny()}, []string{"static:hpcc"}, Options{Seeds: 1, Interval: 40 * simenv.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RunsOf("tiny@1ms", "static:hpcc")) != 1 || res.AggregateOf("tiny@1ms", "static:hpcc") == nil {
		t.Fatalf("result not labelled tiny@1ms: scenarios %v", res.Scenarios)
	}
	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var objs []map[string]any
	if err := json.Unmarshal(js.Bytes(), &objs); err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0]["scenario"] != "tiny" || objs[1]["scenario"] != "tiny" ||
		objs[0]["sim_time_s"] != 0.001 || objs[1]["sim_time_s"] != 0.002 {
		t.Fatalf("json scenario/sim_time_s: %v/%v, %v/%v; want tiny/0.001, tiny/0.002", objs[0]["scenario"], objs[0]["sim_time_s"],
			objs[1]["scenario"], objs[1]["sim_time_s"])
	}
	if res.Runs[0].Scenario != "tiny@1ms" {
		t.Fatalf("WriteJSON changed the result's run: %s", res.Runs[0].Scenario)
	}
	var txt bytes.Buffer
	if err := res.WriteText(&txt); err != nil || !strings.Contains(txt.String(), "scenario tiny@1ms (1 seed:") {
		t.Fatalf("text (%v):\n%s", err, txt.String())
	}
}

// The comparisons keep to textWidth columns, broken between clauses (not
// inside a bracket), and name catalogue settings briefly.
func TestComparisonTextWidth(t *testing.T) {
	cat := "catalogue:kmin 139KB kmax 278KB pmax 1% @100G"
	c := Comparison{Scenario: "websearch-50@3ms", Policy: "builtin", BestPreset: "static:sonic-default", SmallP99Cut: -0.064, GoodputRatio: 1.022,
		PairedVsPreset: Ratio{N: 3, Mean: 1.07, Lo: 0.94, Hi: 1.21}, Oracle: cat, VsOracle: 1.06, PairedVsOracle: Ratio{N: 3, Mean: 1.07, Lo: 0.94, Hi: 1.21},
		AtGoodput: cat, VsAtGoodput: 0.65, Frontier: cat, FrontierRatio: 0.98, PairedVsFrontier: Ratio{N: 3, Mean: 0.98, Lo: 0.76, Hi: 1.27}}
	var b bytes.Buffer
	c.writeText(&b)
	// on the line between two long catalogue names
	c.Frontier, c.FrontierBelow, c.FrontierBelowShare = "catalogue:kmin 299.5KB kmax 599KB pmax 1% @100G", "catalogue:kmin 232KB kmax 464KB pmax 0.3% @100G", 0.37
	c.writeText(&b)
	out := b.String()
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(l); n > textWidth {
			t.Errorf("line of %d columns: %q", n, l)
		}
		if strings.Count(l, "[") != strings.Count(l, "]") || strings.Count(l, "(") != strings.Count(l, ")") {
			t.Errorf("line broken inside a bracket: %q", l)
		}
	}
	for _, want := range []string{"small-flow p99 6.4% HIGHER (worse) (ratio 1.07 [0.94, 1.21]),", "(cat 139KB/278KB/1%)", "frontier ratio 0.98",
		"the line 0.37·cat 232KB/464KB/0.3% + 0.63·cat 299.5KB/599KB/1% (below 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "catalogue:kmin") {
		t.Errorf("long catalogue name in\n%s", out)
	}
}

func TestShortSetting(t *testing.T) {
	for in, want := range map[string]string{
		"catalogue:kmin 900KB kmax 1MB pmax 1% @100G": "cat 900KB/1MB/1%",
		"static:hpcc": "static:hpcc",
		"catalogue:x": "catalogue:x",
	} {
		if got := shortSetting(in); got != want {
			t.Errorf("shortSetting(%q) = %q, want %q", in, got, want)
		}
	}
}

// The linear axes are labelled at least every few ticks, without
// trailing zeros, in order and inside the range.
func TestPlainTicks(t *testing.T) {
	for _, r := range [][2]float64{{0, 160}, {20, 76}, {1, 62}, {0, 0.013}} {
		ts := plainTicks{}.Ticks(r[0], r[1])
		labelled := 0
		for i, tk := range ts {
			if tk.Value < r[0]-1e-9 || tk.Value > r[1]+1e-9 || i > 0 && tk.Value <= ts[i-1].Value {
				t.Errorf("%v: tick %v out of range or order", r, tk.Value)
			}
			if tk.Label != "" {
				labelled++
				if strings.HasSuffix(tk.Label, "0") && strings.Contains(tk.Label, ".") {
					t.Errorf("%v: label %q has trailing zeros", r, tk.Label)
				}
			}
		}
		if labelled < 5 {
			t.Errorf("%v: %d labelled ticks: %+v", r, labelled, ts)
		}
	}
}

func TestPreferenceSweeps(t *testing.T) {
	got := preferenceSweeps([]string{"static:sonic-default", "builtin:prefer=0.5", "model:m,prefer=-1", "builtin",
		"builtin:prefer=-0.5", "model:m", "model:other,prefer=1", "builtin:prefer=x", "model:m:prefer=0.5"})
	if len(got) != 2 {
		t.Fatalf("%d sweeps, want builtin and model:m: %+v", len(got), got)
	}
	b, m := got[0], got[1]
	if b.base != "builtin" || b.color != 1 || len(b.members) != 3 || b.members[0].policy != "builtin:prefer=-0.5" ||
		b.members[1].policy != "builtin" || b.members[2].pref != 0.5 {
		t.Fatalf("builtin sweep %+v", b)
	}
	if m.base != "model:m" || m.color != 2 || len(m.members) != 3 || m.members[0].pref != -1 || m.members[1].policy != "model:m" ||
		m.members[2].pref != 0.5 {
		t.Fatalf("model:m sweep %+v", m)
	}
}

// TestPlotFrontierSweep: a policy run at two preferences is joined by a
// line in its colour; the same two points under unrelated names are not.
func TestPlotFrontierSweep(t *testing.T) {
	draw := func(a, b string) int {
		r := plotResult()
		r.Policies = []string{a, b}
		for i := range r.Aggregates {
			r.Aggregates[i].Policy = r.Policies[i]
			r.Aggregates[i].Metrics["large_goodput_gbps"] = Metric{Mean: float64(10 + 20*i), N: 1}
		}
		var buf bytes.Buffer
		if err := r.PlotFrontier(&buf, "s"); err != nil {
			t.Fatal(err)
		}
		return pixelsOf(decodePNG(t, "frontier", buf.Bytes(), 700, 450), chart.SeriesColors(r.Policies)[a])
	}
	plain, sweep := draw("a", "b"), draw("model:m", "model:m,prefer=0.5")
	if sweep < plain+120 {
		t.Fatalf("%d pixels of the first policy's colour with a sweep, %d without: no line joins the preferences", sweep, plain)
	}
	t.Logf("%d pixels of the first policy's colour with a sweep, %d without", sweep, plain)
}

// TestPolicyKeepsItsColour: builtin is drawn in the same colour in the
// plots of two evaluations with other policies, in another order.
func TestPolicyKeepsItsColour(t *testing.T) {
	want := chart.SeriesColor("builtin")
	for _, pols := range [][]string{{"builtin", "b"}, {"static:best", "builtin"}, {"x", "builtin"}} {
		r := plotResult()
		r.Policies = pols
		for i := range r.Aggregates {
			r.Aggregates[i].Policy = pols[i]
			r.Runs[2*i].Policy, r.Runs[2*i+1].Policy = pols[i], pols[i]
		}
		for name, plot := range map[string]func(*bytes.Buffer, string) error{
			"cdf": func(b *bytes.Buffer, sc string) error { return r.PlotCDF(b, sc) },
			"p99": func(b *bytes.Buffer, sc string) error { return r.PlotBuckets(b, sc) },
		} {
			var b bytes.Buffer
			if err := plot(&b, "s"); err != nil {
				t.Fatal(err)
			}
			if n := pixelsOf(decodePNG(t, name, b.Bytes(), 600, 400), want); n < 300 {
				t.Errorf("%v, %s: %d pixels of builtin's colour", pols, name, n)
			}
		}
	}
}

// TestFrontierNamesPresetsAndKeepsLegendOff: the frontier plot labels the
// presets by name (a catalogue setting stays anonymous) and draws a
// preset asked for as a policy in its own colour, with a legend entry.
func TestFrontierNamesPresetsAndKeepsLegendOff(t *testing.T) {
	r := &Result{Scenarios: []string{"s"}, Policies: []string{"builtin", "static:hpcc"}}
	add := func(pol string, p99, good float64, oracle bool) {
		x := Run{Policy: pol, SmallP99: p99, LargeGoodputGbps: good}
		x.Scenario, x.Seed = "s", 1
		if oracle {
			r.OracleRuns = append(r.OracleRuns, x)
			return
		}
		r.Runs = append(r.Runs, x)
		r.Aggregates = append(r.Aggregates, aggregate("s", pol, []Run{x}))
	}
	add("builtin", 2, 90, false)
	add("static:hpcc", 3, 95, false)
	add("static:sonic-default", 5, 97, true)
	add("catalogue:kmin 50KB kmax 100KB pmax 1% @100G", 1.5, 60, true)
	p, err := r.frontierPlot("s")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := chart.WritePlot(&b, chart.SVG, p, 8*72, 5*72); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{">hpcc<", ">sonic-default<", ">static:hpcc<", ">builtin<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the frontier plot lacks %s", want)
		}
	}
	if strings.Contains(svg, "kmin 50KB") {
		t.Error("a catalogue setting is labelled")
	}
	var png bytes.Buffer
	if err := r.PlotFrontier(&png, "s"); err != nil {
		t.Fatal(err)
	}
	if n := pixelsOf(decodePNG(t, "frontier", png.Bytes(), 700, 450), chart.SeriesColor("static:hpcc")); n < 30 {
		t.Errorf("static:hpcc asked for by name: %d pixels of its colour", n)
	}
}

// Without the frontier's fixed settings, the comparisons say their ratios
// read only the fixed settings given as policies (it said "beyond the
// frontier" of one preset); with them, they do not.
func TestComparisonsSayWhatTheirFrontierIs(t *testing.T) {
	r := plotResult()
	r.Policies = append(r.Policies, "static:hpcc")
	for seed := uint64(1); seed <= 2; seed++ {
		run := Run{Policy: "static:hpcc", SmallP99: 4, LargeGoodputGbps: 10}
		run.Scenario, run.Seed = "s", seed
		r.Runs = append(r.Runs, run)
	}
	r.Aggregates = append(r.Aggregates, aggregate("s", "static:hpcc", r.RunsOf("s", "static:hpcc")))
	var b strings.Builder
	if err := r.writeComparisons(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "without --frontier (or static:best) a frontier ratio reads only the fixed settings given as policies") {
		t.Fatalf("comparisons without the frontier:\n%s", b.String())
	}
	r.OracleRuns = []Run{r.RunsOf("s", "static:hpcc")[0]}
	b.Reset()
	r.writeComparisons(&b)
	if strings.Contains(b.String(), "without --frontier") {
		t.Fatalf("comparisons with the frontier:\n%s", b.String())
	}
}

// A p99 some seed took from fewer than 100 flows is marked, and the table
// says what the mark means; one from enough flows on every seed is not.
func TestFewFlowsP99Marked(t *testing.T) {
	run := func(pol string, seed uint64, large int) Run {
		r := Run{Policy: pol, SmallP99: 4, LargeGoodputGbps: 10}
		r.Scenario, r.Seed = "s", seed
		r.FCTSlowdown.Under10KB = report.Stat{N: 500, P50: 1.5, P99: 4}
		r.FCTSlowdown.From1MB = report.Stat{N: large, P50: 2, P99: 6}
		return r
	}
	res := &Result{Scenarios: []string{"s"}, Policies: []string{"few", "many"},
		Runs: []Run{run("few", 1, 400), run("few", 2, 7), run("many", 1, 400), run("many", 2, 300)}}
	res.Aggregates = []Aggregate{aggregate("s", "few", res.RunsOf("s", "few")), aggregate("s", "many", res.RunsOf("s", "many"))}
	if m := res.AggregateOf("s", "few").Metrics; !m[">=1MB_p99"].FewFlows || m[">=1MB_p50"].FewFlows || m["small_p99"].FewFlows {
		t.Fatalf("few-flow marks of the policy with 7 large flows on a seed: %+v", m)
	}
	if m := res.AggregateOf("s", "many").Metrics; m[">=1MB_p99"].FewFlows {
		t.Fatalf("a p99 of 300 flows or more marked: %+v", m[">=1MB_p99"])
	}
	var text, html bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := res.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	if s := text.String(); !strings.Contains(s, "6.00±0*") || strings.Count(s, "6.00±0*") != 1 || !strings.Contains(s, "* a p99 that some seed took from fewer than 100 finished flows") {
		t.Fatalf("text without the mark or its note:\n%s", s)
	}
	if !strings.Contains(html.String(), "<td>6.00±0*</td>") || !strings.Contains(html.String(), "fewer than 100 finished flows") {
		t.Fatal("HTML report without the mark or its note")
	}
}
