package simenv

import "testing"

// Flows says how far each flow got: an unfinished one's bytes received in
// order, a finished one's size.
func TestFlowsDelivered(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Topology = StarTopology(4, 100e9, Microsecond)
	cfg.Duration = 300 * Microsecond
	cfg.Workloads = []Workload{{Kind: WorkloadIncast, Fanin: 3, SizeBytes: 2_000_000, Every: 1000 * Microsecond, Priority: 3},
		{Kind: WorkloadIncast, Fanin: 2, SizeBytes: 20_000, Every: 1000 * Microsecond, Priority: 3}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.RunUntil(cfg.Duration)
	var done, partial int
	for _, f := range s.Flows() {
		switch {
		case f.Finish > 0 && f.Delivered != f.SizeBytes:
			t.Errorf("finished flow %d: delivered %d of %d", f.ID, f.Delivered, f.SizeBytes)
		case f.Finish > 0:
			done++
		case f.Delivered <= 0 || f.Delivered >= f.SizeBytes:
			t.Errorf("unfinished flow %d: delivered %d of %d", f.ID, f.Delivered, f.SizeBytes)
		default:
			partial++
		}
	}
	if done == 0 || partial == 0 {
		t.Fatalf("%d finished, %d part-way: want both (20 KB flows finish, 2 MB ones cannot in 300 µs)", done, partial)
	}
}
