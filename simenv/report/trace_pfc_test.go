package report

import (
	"testing"

	"github.com/ecntune/ecntune/simenv"
)

// In a star the switch pauses its senders (hosts send no PFC, so no
// switch port is ever held paused): the PFC heatmap shows the time the
// switch held each sender paused, not "no PFC pauses" (the 60-host incast
// on a 4 MB buffer sent 465 PAUSE frames and drew an empty heatmap).
func TestTraceShowsPausesTheSwitchSends(t *testing.T) {
	for _, passive := range []bool{false, true} {
		c := simenv.DefaultConfig()
		c.Name = "star-incast"
		c.Topology = simenv.StarTopology(5, 100e9, simenv.Microsecond)
		c.BufferBytes = 1 << 20
		c.DCQCN.Enabled = false
		c.Duration = 400 * simenv.Microsecond
		var fl []simenv.TraceFlow
		for i := 2; i <= 5; i++ {
			fl = append(fl, simenv.TraceFlow{Src: i, Dst: 1, Priority: 3, SizeBytes: 1_000_000})
		}
		c.Workloads = []simenv.Workload{{Kind: simenv.WorkloadTrace, Priority: 3, Flows: fl}}
		sim, err := simenv.New(c)
		if err != nil {
			t.Fatal(err)
		}
		tr := NewTrace(sim)
		if passive {
			tr = NewPassiveTrace(sim)
		}
		for at := simenv.Time(0); at < c.Duration; {
			at += 20 * simenv.Microsecond
			sim.RunUntil(at)
			tr.Sample(sim)
		}
		if sim.Stats().PFCPauses == 0 {
			t.Fatal("the incast sent no PAUSE: the test exercises nothing")
		}
		h, err := tr.TimeHeatmap("pfc", 30)
		if err != nil {
			t.Fatal(err)
		}
		peak := 0.0
		for _, r := range h.Values {
			for _, v := range r {
				peak = max(peak, v)
			}
		}
		t.Logf("passive %v: %d PAUSE frames sent; pfc heatmap rows %v, peak %.1f%%", passive, sim.Stats().PFCPauses, h.Rows, peak)
		if len(h.Rows) == 0 || peak == 0 {
			t.Errorf("passive %v: %d PAUSE frames sent to the senders, the PFC heatmap shows none (%d rows, peak %g%%)",
				passive, sim.Stats().PFCPauses, len(h.Rows), peak)
		}
		for _, r := range h.Rows {
			if r == "sw0 Ethernet0 q3" {
				t.Errorf("passive %v: the receiver's port, never paused nor pausing, is among the PFC rows %v", passive, h.Rows)
			}
		}
	}
}
