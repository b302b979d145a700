package simenv

import (
	"testing"
)

// With PFC off no headroom is kept out of the shared buffer: the cable
// length, which only sizes headroom, moves neither XOFF nor anything else
// (2 km of cable took 17 ports' headroom from a 2 MB buffer, and the
// drops went from 1,100 to 24,936).
func TestPFCOffKeepsNoHeadroom(t *testing.T) {
	xoff := func(pfc bool, cable float64) int64 {
		c := DefaultConfig()
		c.Topology = StarTopology(9, 100e9, Microsecond)
		c.BufferBytes = 4_000_000
		c.PFC.Enabled, c.PFC.CableMeters = pfc, cable
		c.Duration = Microsecond
		s, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		return s.Telemetry(0).Ports[0].PG[3].XoffBytes
	}
	if a, b := xoff(false, 5), xoff(false, 1000); a != b {
		t.Fatalf("PFC off: XOFF %d B with 5 m of cable, %d B with 1 km", a, b)
	}
	if a, b := xoff(true, 5), xoff(true, 1000); a <= b {
		t.Fatalf("PFC on: XOFF %d B with 5 m of cable, %d B with 1 km: want less with the longer cable's headroom", a, b)
	}
}

// Alpha scales with port rate at most 3 doublings, as ns-3 HPCC's
// third.cc: 1G hosts on an 800G fabric gave alpha 128 (past MaxAlpha) and
// an XOFF above the buffer.
func TestAlphaScalingCapped(t *testing.T) {
	c := DefaultConfig()
	c.Topology = LeafSpineTopology(2, 1, 2, 1e9, 800e9, Microsecond)
	c.Duration = Microsecond
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	for sw := range 3 {
		for _, p := range s.Telemetry(sw).Ports {
			pg := p.PG[3]
			if pg.Alpha > 8*c.PFC.Alpha+1e-12 || pg.XoffBytes > c.BufferBytes {
				t.Fatalf("switch %d: alpha %g, XOFF %d B on a %d B buffer", sw, pg.Alpha, pg.XoffBytes, c.BufferBytes)
			}
		}
	}
}

// A run covers [0, Duration): a flow due at its end does not start (15
// of star-incast's 90 flows were "unfinished", started at 10 ms), and a
// run that ends idle ends when its last flow finished, not at the end of
// the 100 µs step (a 1 MB flow of 88 µs read as 80 Gb/s over 0.1 ms).
func TestRunEndsAtItsDurationOrLastFlow(t *testing.T) {
	c := DefaultConfig()
	c.Topology = StarTopology(4, 100e9, Microsecond)
	c.Duration = Millisecond
	c.Workloads = []Workload{{Kind: WorkloadTrace, Priority: 3, Flows: []TraceFlow{
		{Src: 2, Dst: 1, Priority: 3, SizeBytes: 1_000_000},
		{Src: 3, Dst: 1, Priority: 3, SizeBytes: 1_000, Start: Millisecond},
	}}}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	s.Run()
	st := s.Stats()
	if st.FlowsStarted != 1 || st.FlowsFinished != 1 {
		t.Fatalf("%d flows started, %d finished: want the one before the end", st.FlowsStarted, st.FlowsFinished)
	}
	c.Workloads[0].Flows = c.Workloads[0].Flows[:1]
	if s, err = New(c); err != nil {
		t.Fatal(err)
	}
	s.Run()
	if st, fin := s.Stats(), s.Flows()[0].Finish; st.Now != fin {
		t.Fatalf("run ended at %v, its last flow at %v", st.Now, fin)
	}
	// a run where no flow starts, nor can, ran its whole duration (a cdf
	// workload whose first arrival fell past its end ended it at 0)
	c.Workloads = []Workload{{Kind: WorkloadCDF, Priority: 3, Load: MinLoad, End: Millisecond / 2,
		CDF: []CDFPoint{{Bytes: 0, Percent: 0}, {Bytes: 1_000_000, Percent: 100}}}}
	if s, err = New(c); err != nil {
		t.Fatal(err)
	}
	s.Run()
	if st := s.Stats(); st.FlowsStarted != 0 || st.Now != c.Duration || s.FlowArrivalRate(0) != 4*100e9*MinLoad/(8*500_000) {
		t.Fatalf("no flow: %d started, run ended at %v, arrivals %g/s; want none over the %v run at %g/s",
			st.FlowsStarted, st.Now, s.FlowArrivalRate(0), c.Duration, 4*100e9*MinLoad/(8*500_000))
	}
}
