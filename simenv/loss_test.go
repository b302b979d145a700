package simenv

import "testing"

// TestLostFinalAckFlowFinishes drops the ACK that acknowledges a flow's
// last byte, once, at the switch. The sender's tail timer resends the
// unacknowledged tail; the receiver already has it and must answer the
// duplicate with an ACK of what it holds, or the flow retransmits forever.
func TestLostFinalAckFlowFinishes(t *testing.T) {
	for _, ackHigh := range []bool{true, false} {
		c := hpccStar(3)
		c.AckHighPriority = ackHigh
		c.Duration = 20 * Millisecond
		const size = 100_000
		c.Workloads = []Workload{trace(TraceFlow{Src: 1, Dst: 2, Priority: 3, SizeBytes: size})}
		s, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		dropped := 0
		s.dropHook = func(p *packet) bool {
			if p.kind == pktAck && int64(p.seq) == size && dropped == 0 {
				dropped++
				return true
			}
			return false
		}
		s.Run()
		f := s.Flows()[0]
		st := s.Stats()
		t.Logf("ack_high_priority %v: final ACKs dropped %d, finish %v, retransmitted %d B, run ended at %v",
			ackHigh, dropped, f.Finish, st.RetxBytes, st.Now)
		if dropped != 1 {
			t.Fatalf("the final ACK was not dropped (%d)", dropped)
		}
		if f.Finish == 0 {
			t.Fatalf("ack_high_priority %v: the flow never finished after its final ACK was lost (%d B retransmitted by %v)",
				ackHigh, st.RetxBytes, st.Now)
		}
		// The tail timer checks for progress every 1 ms, so the resend
		// goes out at the second check at the latest; then one round trip.
		if f.FCT() > 2*Millisecond+100*Microsecond {
			t.Errorf("FCT %v: recovery took more than two tail-timer periods", f.FCT())
		}
		if st.RetxBytes > size {
			t.Errorf("%d B retransmitted for a %d B flow", st.RetxBytes, size)
		}
	}
}

// TestPausedHostHoldsItsAcks: with ACKs on the data's lossless priority
// (AckHighPriority off, as in the ns-3 HPCC configs), a host that its switch
// has paused must hold its ACKs too, as it holds its data, or the lossless
// class drops. (ns-3 holds them with ACK_HIGH_PRIO 0; with ACK_HIGH_PRIO 1
// its hosts send ACKs through a PAUSE while its switches still queue them in
// PG 3: see NOTES-pfc-fat-tree.md.) R
// sends to a slow host B behind a second switch, so the PFC cascade holds R
// paused; meanwhile D, behind the same switch, sends R a long flow, whose
// ACKs queue behind the paused data towards that switch. ACKs leaking out
// of a paused host overflow its ingress headroom: a lossless class drops.
func TestPausedHostHoldsItsAcks(t *testing.T) {
	c := DefaultConfig()
	c.AckHighPriority = false
	c.PFC.HeadroomFormula = HeadroomHPCC
	c.BufferBytes = 2_000_000
	c.Duration = 3 * Millisecond
	d := Microsecond
	// nodes: 0 sw0, 1 sw1, 2 A and 3 R on sw0, 4 B (1 Gb/s) and 5 D on sw1
	c.Topology = Topology{Kind: "custom",
		Nodes: []Node{{Name: "sw0", Switch: true}, {Name: "sw1", Switch: true}, {Name: "A"}, {Name: "R"}, {Name: "B"}, {Name: "D"}},
		Links: []Link{{A: 0, B: 1, RateBps: 100e9, Delay: d}, {A: 0, B: 2, RateBps: 100e9, Delay: d}, {A: 0, B: 3, RateBps: 100e9, Delay: d},
			{A: 1, B: 4, RateBps: 1e9, Delay: d}, {A: 1, B: 5, RateBps: 100e9, Delay: d}}}
	c.Workloads = []Workload{trace(
		TraceFlow{Src: 2, Dst: 4, Priority: 3, SizeBytes: 50_000_000},
		TraceFlow{Src: 3, Dst: 4, Priority: 3, SizeBytes: 50_000_000},
		TraceFlow{Src: 5, Dst: 3, Priority: 3, SizeBytes: 200_000_000},
	)}
	s := run(t, c)
	st := s.Stats()
	rPort := s.Telemetry(0).Ports[2] // sw0's port to R
	t.Logf("drops %d (data %d), PAUSE %d, R held paused for %v", st.Drops, st.DataDropPkts, st.PFCPauses,
		Time(rPort.PFC[3].PausingNs)*Nanosecond)
	if rPort.PFC[3].PausingNs == 0 {
		t.Fatalf("R was never paused: the scenario does not test anything")
	}
	if st.Drops != 0 {
		t.Errorf("%d frames dropped (%d data) on a lossless priority: a paused host sent ACKs", st.Drops, st.DataDropPkts)
	}
}
