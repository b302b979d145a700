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
