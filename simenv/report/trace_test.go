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
