package simenv

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// tinyCDF is a CDF workload of 1 MB flows at load.
func tinyCDF(load float64) Workload {
	return Workload{Kind: WorkloadCDF, Priority: 3, Load: load,
		CDF: []CDFPoint{{Bytes: 0, Percent: 0}, {Bytes: 1e6, Percent: 100}}}
}

// TestLoadRange: a cdf workload's load below MinLoad (1e-20 used to hang
// the simulator at 5.5 GB) is refused with the allowed range.
func TestLoadRange(t *testing.T) {
	for _, load := range []float64{1e-20, 5e-324, 1e-7, 0, -1, 1.5, math.NaN()} {
		c := DefaultConfig()
		c.Topology = StarTopology(4, 100e9, Microsecond)
		c.Workloads = []Workload{tinyCDF(load)}
		_, err := newWithin(t, c)
		if err == nil || !strings.Contains(err.Error(), "workloads[0]: load") || !strings.Contains(err.Error(), "outside the allowed range 1e-06..1") {
			t.Errorf("load %g: %v", load, err)
		}
	}
}

// TestExpGapSaturates: the exponential inter-arrival gap of an arrival
// rate however small is never negative and never above MaxGap, so that
// no event time overflows (a float above MaxInt64 converted to Time used
// to give a negative time, an event in the past, flows without end).
func TestExpGapSaturates(t *testing.T) {
	s := &Sim{rngWork: rand.New(rand.NewPCG(1, 2))}
	for _, rate := range []float64{1e-300, 5e-324, 1e-12, 1e-9, 0} {
		for range 1000 {
			if g := s.expGap(rate); g < 0 || g > MaxGap {
				t.Fatalf("rate %g: gap %d outside 0..%d", rate, g, MaxGap)
			}
		}
	}
	if s := addGap(Time(math.MaxInt64-5), MaxGap); s != Time(math.MaxInt64) {
		t.Errorf("addGap near the end of time: %d", s)
	}
}

// TestTinyLoadOnSlowLinksEnds: the smallest load on 1 b/s links (an
// arrival gap of about 1e25 ns, far beyond int64) runs to its end at once
// with no flow, rather than starting flows without end.
func TestTinyLoadOnSlowLinksEnds(t *testing.T) {
	c := DefaultConfig()
	c.Topology = StarTopology(2, 1, Microsecond)
	c.Duration = Millisecond
	w := tinyCDF(MinLoad)
	w.CDF[1].Bytes = 1000
	c.Workloads = []Workload{w}
	s, err := newWithin(t, c)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { s.Run(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		panic("the run did not end within 10 s")
	}
	if s.Now() > c.Duration || len(s.flows) != 0 {
		t.Fatalf("ended at %v with %d flows", s.Now(), len(s.flows))
	}
}
