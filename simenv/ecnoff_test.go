package simenv

import "testing"

// TestECNOffMarksNothing: with Config.ECNOff (ns-3's EcnEnabled false)
// switches mark nothing whatever the thresholds; the same incast with
// marking on marks.
func TestECNOffMarksNothing(t *testing.T) {
	c := hpccStar(5)
	c.Duration = 2 * Millisecond
	c.ECN = ECN{KminBytes: 5_000, KmaxBytes: 20_000, Pmax: 1}
	var fl []TraceFlow
	for i := 2; i <= 5; i++ {
		fl = append(fl, TraceFlow{Src: i, Dst: 1, Priority: 3, SizeBytes: 500_000})
	}
	c.Workloads = []Workload{trace(fl...)}
	on := run(t, c).Stats().ECNMarked
	c.ECNOff = true
	s := run(t, c)
	off := s.Stats().ECNMarked
	var q uint64
	for _, p := range s.Telemetry(0).Ports {
		q += p.Queues[3].MarkedPkts
	}
	t.Logf("marked: %d with marking on, %d (queues %d) with ECNOff", on, off, q)
	if on == 0 {
		t.Fatal("the incast marked nothing with marking on")
	}
	if off != 0 || q != 0 {
		t.Errorf("ECNOff: %d packets marked (%d on the queues)", off, q)
	}
}
