package simenv

import (
	"testing"
)

// jain is Jain's fairness index of xs.
func jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// longFlows runs n flows of size bytes from n senders into one 100G receiver
// and returns Jain's index of their throughput over [from, from+1ms], the
// last completion and the ideal completion (every byte on the wire at line
// rate, plus the base RTT).
func longFlows(t *testing.T, n int, size int64, dcqcn bool, from Time) (j float64, last, ideal Time) {
	c := hpccStar(n + 1)
	c.DCQCN.Enabled = dcqcn
	var fs []TraceFlow
	for i := 0; i < n; i++ {
		fs = append(fs, TraceFlow{Src: 2 + i, Dst: 1, Priority: 3, SizeBytes: size})
	}
	c.Workloads = []Workload{trace(fs...)}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	s.RunUntil(from)
	before := make([]float64, n)
	for i := range before {
		before[i] = float64(s.flows[i].rcvNxt)
	}
	s.RunUntil(from + Millisecond)
	tput := make([]float64, n)
	for i := range tput {
		tput[i] = float64(s.flows[i].rcvNxt) - before[i]
	}
	s.Run()
	for _, f := range s.Flows() {
		if f.Finish == 0 {
			t.Fatalf("n=%d: flow %d unfinished", n, f.ID)
		}
		last = max(last, f.Finish)
	}
	wire := float64(int64(n)*size) * float64(c.MTU+c.HeaderBytes) / float64(c.MTU)
	ideal = Time(wire*8/100e9*float64(Second)) + 4160*Nanosecond
	return jain(tput), last, ideal
}

// TestLongFlowsFairShare: N long flows on one bottleneck converge to fair
// share (Jain >= 0.99 over 1 ms) and the last finishes close to ideal:
// within 3% when PFC alone holds the senders; with DCQCN at the HPCC
// defaults, whose 300 us increase timer leaves the link idle for a while after
// each burst of cuts, within 12% (measured 6-10% for 4 and 8 x 40 MB; the
// figure moves by a few points with the order of same-instant events, since
// synchronised DCQCN senders are chaotic. ns-3 HPCC's own 2 x 200 MB incast
// finishes 2.8% after ideal, ours 3.1% from the same config:
// TestStarMicroScenarios).
func TestLongFlowsFairShare(t *testing.T) {
	for _, tc := range []struct {
		n     int
		dcqcn bool
		tol   float64
	}{{4, false, 0.03}, {8, false, 0.03}, {4, true, 0.12}, {8, true, 0.12}} {
		j, last, ideal := longFlows(t, tc.n, 40_000_000, tc.dcqcn, 6*Millisecond)
		over := float64(last)/float64(ideal) - 1
		t.Logf("n=%d dcqcn=%v: Jain %.4f over 1 ms, last done %v, ideal %v (+%.2f%%)", tc.n, tc.dcqcn, j, last, ideal, over*100)
		if j < 0.99 {
			t.Errorf("n=%d dcqcn=%v: Jain index %.4f < 0.99", tc.n, tc.dcqcn, j)
		}
		if over > tc.tol {
			t.Errorf("n=%d dcqcn=%v: finished %.2f%% after ideal (> %.0f%%)", tc.n, tc.dcqcn, over*100, tc.tol*100)
		}
	}
}

// TestStepMarkingKeepsLinkBusy checks that marking and rate control interact
// as the DCTCP theory says: with step marking (Kmin = Kmax = K) the standing
// queue grows with K, and at K = C*RTT/7 and K = C*RTT the bottleneck stays
// >= 95% busy. (At 8 x C*RTT DCQCN's deep multiplicative cuts with a 300 us
// recovery timer dip to about 90%: logged, not asserted; DCQCN is not DCTCP.)
func TestStepMarkingKeepsLinkBusy(t *testing.T) {
	rtt := 4160 * Nanosecond
	bdp := int64(100e9 * rtt.Seconds() / 8)
	var lastAvg float64
	for _, k := range []int64{bdp / 7, bdp, 8 * bdp, 64 * bdp} {
		c := hpccStar(5)
		c.ECN = ECN{KminBytes: k, KmaxBytes: k, Pmax: 1}
		var fs []TraceFlow
		for i := 0; i < 4; i++ {
			fs = append(fs, TraceFlow{Src: 2 + i, Dst: 1, Priority: 3, SizeBytes: 1 << 30})
		}
		c.Workloads = []Workload{trace(fs...)}
		s, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		s.RunUntil(2 * Millisecond)
		tel0 := s.Telemetry(0)
		s.RunUntil(8 * Millisecond)
		tel1 := s.Telemetry(0)
		q0, q1 := tel0.Ports[0].Queues[3], tel1.Ports[0].Queues[3]
		busy := float64(q1.TxBytes-q0.TxBytes) * 8 / 100e9 / (6 * Millisecond).Seconds()
		t.Logf("K = %7d B (%.2f x C*RTT): bottleneck busy %.1f%%, avg queue %.0f B", k, float64(k)/float64(bdp), busy*100, q1.AvgBytes)
		if k <= bdp && busy < 0.95 {
			t.Errorf("K=%d B >= C*RTT/7: bottleneck only %.1f%% busy", k, busy*100)
		}
		if q1.AvgBytes < lastAvg {
			t.Errorf("K=%d B: average queue %.0f B fell below the smaller K's %.0f B", k, q1.AvgBytes, lastAvg)
		}
		lastAvg = q1.AvgBytes
	}
}
