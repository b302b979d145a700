package report

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/simenv"
)

// An incast into one host fills its edge queue: the trace finds that
// queue busiest, its marks and paused time stay percentages, and the
// report's files are written.
func TestTraceFindsTheIncastQueue(t *testing.T) {
	c := simenv.DefaultConfig()
	c.Name = "incast"
	c.Topology = simenv.LeafSpineTopology(1, 1, 5, 100e9, 100e9, simenv.Microsecond)
	c.Duration = 400 * simenv.Microsecond
	c.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Priority: 3, Fanin: 4, SizeBytes: 300_000,
		Every: 100 * simenv.Microsecond, End: 400 * simenv.Microsecond}}
	sim, err := simenv.New(c)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTrace(sim)
	for at := simenv.Time(0); at < c.Duration; {
		at += 20 * simenv.Microsecond
		sim.RunUntil(at)
		tr.Sample(sim)
	}
	if tr.Samples() != 20 {
		t.Fatalf("%d samples", tr.Samples())
	}
	h, err := tr.TimeHeatmap("depth", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Rows) == 0 || !strings.HasPrefix(h.Rows[0], "leaf0 ") || len(h.Cols) != 20 {
		t.Fatalf("rows %v, %d columns", h.Rows, len(h.Cols))
	}
	peak := 0.0
	for _, v := range h.Values[0] {
		peak = math.Max(peak, v)
	}
	if peak < 100 {
		t.Errorf("the busiest queue peaks at %.0f KB under a 4 × 300 KB incast", peak)
	}
	for _, m := range []string{"marks", "pfc"} {
		h, err := tr.TimeHeatmap(m, 50)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range h.Values {
			for _, v := range r {
				if v < 0 || v > 100 {
					t.Fatalf("%s value %g outside 0..100", m, v)
				}
			}
		}
	}
	if _, err := tr.TimeHeatmap("rtt", 3); err == nil {
		t.Error("unknown metric: no error")
	}
	dir := t.TempDir()
	files, err := tr.WriteHTML(dir, Summarize(sim.Flows(), sim.Stats(), 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 5 {
		t.Errorf("files %v", files)
	}
	html, _ := os.ReadFile(files[len(files)-1])
	if !strings.Contains(string(html), `src="time-pfc.png"`) || !strings.Contains(string(html), "sampled 20 times") {
		t.Errorf("index.html: %s", html)
	}
}

// The summary says what ECN setting ran, per port rate, and that
// unfinished flows are not in the slowdowns.
func TestSummaryECNInEffect(t *testing.T) {
	c := simenv.DefaultConfig()
	c.Topology = simenv.LeafSpineTopology(2, 1, 2, 100e9, 400e9, simenv.Microsecond)
	c.Duration = 50 * simenv.Microsecond
	c.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Priority: 3, Fanin: 2, SizeBytes: 1_000_000,
		Every: 100 * simenv.Microsecond, End: 50 * simenv.Microsecond}}
	sim, err := simenv.New(c)
	if err != nil {
		t.Fatal(err)
	}
	ecn := ECNInEffect(sim)
	sim.Run()
	if len(ecn) != 2 || ecn[0].RateBps != 100e9 || ecn[1].RateBps != 400e9 || ecn[1].KminBytes != 4*ecn[0].KminBytes {
		t.Fatalf("ecn %+v (the 400G ports scale the 100G setting)", ecn)
	}
	s := Summarize(sim.Flows(), sim.Stats(), 0)
	s.ECN = ecn
	var b strings.Builder
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "unfinished (left out of the FCT slowdowns above)") || !strings.Contains(b.String(), "ECN in effect          at 100Gbps: kmin ") {
		t.Errorf("text:\n%s", b.String())
	}
}

// handTrace is a trace of two queues over four samples 25 µs apart, the
// first queue building up to 1180 KB, without any PFC pause.
func handTrace() *Trace {
	t := &Trace{keys: []traceKey{{sw: 0, port: 0, q: 3, name: "leaf0 eth0 q3", swName: "leaf0", portName: "eth0"},
		{sw: 0, port: 1, q: 3, name: "leaf0 eth1 q3", swName: "leaf0", portName: "eth1"}}}
	for i := range 4 {
		t.times = append(t.times, simenv.Time(25*(i+1))*simenv.Microsecond)
	}
	t.depth = [][]float64{{10, 400, 1180, 20}, {0, 0, 5, 0}}
	t.marks = [][]float64{{0, 10, 40, 0}, {0, 0, 0, math.NaN()}}
	t.paused = [][]float64{{0, 0, 0, 0}, {0, 0, 0, 0}}
	return t
}

// TestTraceHeatmapsCompareAndSayEmpty: the report's two depth heatmaps
// share a scale rounded up to a stable step; percentages are on the
// square-root scale; a run without PFC pauses draws no rows but the
// words "no PFC pauses"; simulated time is labelled in one unit.
func TestTraceHeatmapsCompareAndSayEmpty(t *testing.T) {
	tr := handTrace()
	hs, err := tr.reportHeatmaps()
	if err != nil {
		t.Fatal(err)
	}
	if hs[0].Max != 1200 || hs[1].Max != 1200 {
		t.Errorf("depth scales %g and %g, want both 1200", hs[0].Max, hs[1].Max)
	}
	if !hs[2].Sqrt || hs[2].Max != 100 {
		t.Errorf("marks: sqrt %v max %g", hs[2].Sqrt, hs[2].Max)
	}
	pfc := hs[3]
	if len(pfc.Rows) != 0 || !pfc.IsEmpty() {
		t.Errorf("pfc rows %v", pfc.Rows)
	}
	var b strings.Builder
	if err := pfc.Write(&b, "svg", 6*72, 4*72); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "no PFC pauses") {
		t.Error("the PFC heatmap of a run without pauses does not say so")
	}
	if strings.Join(hs[1].Cols, " ") != "25 50 75 100" || hs[1].XLabel != "simulated time (µs)" {
		t.Errorf("time columns %v, %q", hs[1].Cols, hs[1].XLabel)
	}
	if _, err := tr.WriteHTML(t.TempDir(), Summary{Scenario: "hand"}); err != nil {
		t.Fatal(err)
	}
}
