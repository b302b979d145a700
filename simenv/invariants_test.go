package simenv

import (
	"fmt"
	"math"
	"testing"
)

// smallLeafSpine is a 2x2 leaf-spine with 8 hosts and mixed traffic.
func smallLeafSpine(seed uint64) Config {
	c := DefaultConfig()
	c.Seed = seed
	c.Topology = LeafSpineTopology(2, 2, 4, 100e9, 400e9, Microsecond)
	c.Duration = 2 * Millisecond
	cdf := []CDFPoint{{0, 0}, {1000, 30}, {10000, 60}, {100000, 85}, {1000000, 100}}
	c.Workloads = []Workload{
		{Kind: WorkloadCDF, Priority: 3, CDF: cdf, Load: 0.6},
		{Kind: WorkloadIncast, Priority: 3, Fanin: 6, SizeBytes: 200_000, Every: 500 * Microsecond},
	}
	return c
}

// TestConservation checks, at several instants of a busy run with drops
// (tiny buffer, PFC off), that every data packet sent is received, dropped
// or accounted for inside the fabric (queues and links), counted
// independently by walking the simulator's state.
func TestConservation(t *testing.T) {
	c := smallLeafSpine(3)
	c.PFC.Enabled = false
	c.BufferBytes = 300_000
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []Time{100 * Microsecond, 700 * Microsecond, 1500 * Microsecond, 2 * Millisecond} {
		s.RunUntil(at)
		st := s.Stats()
		inFabric := s.countDataInFabric()
		if st.DataSentPkts != st.DataRecvPkts+st.DataDropPkts+inFabric {
			t.Fatalf("at %v: sent %d != received %d + dropped %d + in fabric %d", at, st.DataSentPkts, st.DataRecvPkts, st.DataDropPkts, inFabric)
		}
		t.Logf("at %v: sent %d = received %d + dropped %d + in fabric %d", at, st.DataSentPkts, st.DataRecvPkts, st.DataDropPkts, inFabric)
	}
	if s.Stats().DataDropPkts == 0 {
		t.Fatalf("expected drops with a 300 KB buffer and PFC off")
	}
	// go-back-N recovers: once traffic stops, every flow completes
	for i := range s.gens {
		s.gens[i].w.End = s.now + 1
	}
	for s.activeFlows() > 0 && s.now < 200*Millisecond {
		s.RunUntil(s.now + Millisecond)
	}
	for _, f := range s.Flows() {
		if f.Finish == 0 {
			t.Errorf("flow %d (%d B) never completed after drops", f.ID, f.SizeBytes)
		}
	}
}

// countDataInFabric walks egress queues and in-flight arrival events.
func (s *Sim) countDataInFabric() uint64 {
	var n uint64
	for i := range s.ports {
		p := &s.ports[i]
		for q := range p.q {
			for id := p.q[q].head; id >= 0; id = s.pkts[id].next {
				if s.pkts[id].kind == pktData {
					n++
				}
			}
		}
	}
	for i := range s.ports {
		for id := s.ports[i].wire.head; id >= 0; id = s.pkts[id].next {
			if s.pkts[id].kind == pktData {
				n++
			}
		}
	}
	return n
}

// TestDeterminism: the same scenario and seed give byte-identical flows,
// stats and telemetry; another seed gives different ones.
func TestDeterminism(t *testing.T) {
	digest := func(seed uint64) string {
		s, err := New(smallLeafSpine(seed))
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for at := Time(0); at <= 2*Millisecond; at += 500 * Microsecond {
			s.RunUntil(at)
			for sw := range s.Switches() {
				out += fmt.Sprintf("%+v", s.Telemetry(sw))
			}
		}
		return out + fmt.Sprintf("%+v%+v", s.Flows(), s.Stats())
	}
	a, b, c := digest(7), digest(7), digest(8)
	if a != b {
		t.Fatal("two runs with the same seed differ")
	}
	if a == c {
		t.Fatal("different seeds gave identical runs")
	}
}

// TestREDMarkingCurve: at a held queue depth, the fraction of marked packets
// matches Pmax*(q-Kmin)/(Kmax-Kmin) (binomial z-test, |z| < 4), none below
// Kmin, all above Kmax.
func TestREDMarkingCurve(t *testing.T) {
	s, err := New(smallLeafSpine(1))
	if err != nil {
		t.Fatal(err)
	}
	e := ECN{KminBytes: 100_000, KmaxBytes: 500_000, Pmax: 0.3}
	const n = 40000
	for _, q := range []int64{50_000, 100_000, 150_000, 300_000, 450_000, 500_000, 500_001, 2_000_000} {
		marks := 0
		for i := 0; i < n; i++ {
			if s.mark(e, q) {
				marks++
			}
		}
		p := 0.0
		switch {
		case q > e.KmaxBytes:
			p = 1
		case q > e.KminBytes:
			p = e.Pmax * float64(q-e.KminBytes) / float64(e.KmaxBytes-e.KminBytes)
		}
		got := float64(marks) / n
		if p == 0 || p == 1 {
			if got != p {
				t.Errorf("q=%d: marked fraction %.4f, want exactly %.0f", q, got, p)
			}
			continue
		}
		z := (got - p) / math.Sqrt(p*(1-p)/n)
		t.Logf("q=%7d expected %.4f marked %.4f z=%+.2f", q, p, got, z)
		if math.Abs(z) > 4 {
			t.Errorf("q=%d: marked %.4f, RED curve says %.4f (z=%.1f)", q, got, p, z)
		}
	}
}

// The control queue's (ACKs and CNPs) depth, average and watermark come
// from the same fifo: telemetry read its depth from the ACK fifo while the
// average and watermark followed the empty data queue of that priority
// (386 reads with bytes queued, an average of 0 at every one), and its
// packets count as sent when they leave, as every other queue's do.
func TestControlQueueTelemetryConsistent(t *testing.T) {
	c := smallLeafSpine(2)
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var curSeen, avgSeen int
	for at := 10 * Microsecond; at <= c.Duration; at += 10 * Microsecond {
		s.RunUntil(at)
		for sw := range s.Switches() {
			for _, p := range s.Telemetry(sw).Ports {
				q := p.Queues[ControlQueue]
				if q.CurBytes > 0 {
					curSeen++
				}
				if q.AvgBytes > 0 {
					avgSeen++
				}
				if q.MaxBytes < q.CurBytes {
					t.Fatalf("at %v: control queue watermark %d below its depth %d", at, q.MaxBytes, q.CurBytes)
				}
			}
		}
	}
	if curSeen == 0 {
		t.Fatal("the control queue never held a byte at a read: the test sees nothing")
	}
	if avgSeen < curSeen {
		t.Errorf("control queue held bytes at %d reads but had an average depth above 0 at only %d", curSeen, avgSeen)
	}
}
