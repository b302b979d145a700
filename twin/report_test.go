package twin

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/chart"
	"github.com/ecntune/ecntune/simenv"
)

// The report reads as a table, and both plots draw.
func TestReportWritesAndPlots(t *testing.T) {
	r := &Report{Fabric: Fabric{Kind: "leafspine", Leaves: 2, Spines: 1, HostsPerLeaf: 4, HostRateBps: 100e9, FabricRateBps: 200e9,
		BufferBytes: 32e6, LinkDelay: simenv.Microsecond, CableMeters: 5, MTU: 1000, Alpha: 0.125, Queue: 3,
		ECN: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}},
		IntervalNs: 200_000, TwinInterval: 200 * simenv.Microsecond, Intervals: 4,
		Phases: []PhaseReport{{From: 0, To: 2, End: 400 * simenv.Microsecond, Workload: "websearch 40%"},
			{From: 2, To: 4, Start: 400 * simenv.Microsecond, End: 800 * simenv.Microsecond, Workload: "fbhadoop 20%"}},
		Notes: []string{"a default"}}
	obs := Stats{RoleHost: {"util_mean": 0.4, "mark": 0.02}, RoleFabric: {"util_mean": 0.5}}
	sim := Stats{RoleHost: {"util_mean": 0.44, "mark": 0.01}, RoleFabric: {"util_mean": 0.5}}
	r.addRows(0, obs, sim)
	r.addRows(1, obs, obs)
	series := Series{Time: []float64{2e-4, 4e-4, 6e-4, 8e-4}, HostUtil: []float64{0.3, 0.4, 0.2, 0.2},
		FabricUtil: []float64{0.5, 0.5, 0.4, 0.4}, MaxQueue: []float64{1, 2, 1, 0}, Mark: []float64{0, 0.1, 0, 0}, Inc: []float64{0, 0.5, 0, 0}}
	r.Observed, r.Simulated = series, series
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"leaf-spine, 2 leaves x 1 spines", "window 1 (400us-800us", "note: a default",
		"0    host    util_mean       0.4       0.44   +10%", "mean |error|"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, text.String())
		}
	}
	for name, draw := range map[string]func(*bytes.Buffer) error{
		"time": func(b *bytes.Buffer) error { return r.WriteTimePlot(b, chart.PNG) },
		"fit":  func(b *bytes.Buffer) error { return r.WriteFitPlot(b, chart.PNG) },
	} {
		var b bytes.Buffer
		if err := draw(&b); err != nil || !bytes.HasPrefix(b.Bytes(), []byte("\x89PNG")) {
			t.Errorf("%s plot: %v (%d bytes)", name, err, b.Len())
		}
	}
}
