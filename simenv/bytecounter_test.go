package simenv

import "testing"

// TestByteCounterStages: with DCQCN's byte counter on, the increase step
// depends on both stages, the timer's T and the byte counter's BC (as QCN
// and DCQCN define it): fast recovery while both are below F, hyper increase
// only when both are past F, additive increase otherwise. Either event (a
// timer tick or a completed byte count) applies the step. Before, the larger
// stage alone chose: T 0, BC 2 (F 1) gave a hyper increase of 200 Mb/s.
func TestByteCounterStages(t *testing.T) {
	c := hpccStar(3)
	c.DCQCN.ByteCounter = 10_000
	c.DCQCN.IncreaseTimer = 100 * Millisecond // no timer tick of its own in the test
	c.Workloads = []Workload{trace(TraceFlow{Src: 1, Dst: 2, Priority: 3, SizeBytes: 10_000_000})}
	d := c.DCQCN
	if d.FastRecoverySteps != 1 {
		t.Fatalf("test written for F = 1, have %d", d.FastRecoverySteps)
	}
	cases := []struct {
		timer, bc int32
		want      float64 // target increase
		what      string
	}{
		{0, 0, 0, "fast recovery"},
		{0, 1, d.AIBps, "additive"},
		{0, 2, d.AIBps, "additive"},
		{2, 0, d.AIBps, "additive"},
		{1, 1, d.AIBps, "additive"},
		{1, 2, d.AIBps, "additive"},
		{2, 2, d.HAIBps, "hyper"},
		{3, 2, d.HAIBps, "hyper"},
	}
	for _, byBytes := range []bool{true, false} {
		for _, tc := range cases {
			s, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			s.RunUntil(10 * Microsecond)
			f := &s.flows[0]
			f.cnpSeen = true
			f.rate, f.target = 50e9, 60e9
			f.rpStage, f.bcStage = tc.timer, tc.bc
			if byBytes {
				f.bcBytes = d.ByteCounter - 1
				f.nextAvail = s.now
				h := &s.hosts[f.srcHost]
				s.sendPacket(h.port, h, 0)
			} else {
				f.bcBytes = 0
				s.timedIncrease(f)
			}
			if got := f.target - 60e9; got != tc.want {
				event := "timer tick"
				if byBytes {
					event = "byte count"
				}
				t.Errorf("%s at timer stage %d, byte-counter stage %d (F 1): target +%.0f Mb/s, want %s +%.0f Mb/s",
					event, tc.timer, tc.bc, got/1e6, tc.what, tc.want/1e6)
			}
		}
	}
}
