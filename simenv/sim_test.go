package simenv

import (
	"math"
	"testing"
)

// hpccStar is the ns-3 HPCC reference star: 100 Gb/s, 1 us links, 32 MiB
// buffer, HPCC headroom, DCQCN at the run.py defaults.
func hpccStar(hosts int) Config {
	c := DefaultConfig()
	c.Topology = StarTopology(hosts, 100e9, Microsecond)
	c.BufferBytes = 32 << 20
	c.PFC.HeadroomFormula = HeadroomHPCC
	c.Duration = 100 * Millisecond
	return c
}

func trace(flows ...TraceFlow) Workload {
	return Workload{Kind: WorkloadTrace, Priority: 3, Flows: flows}
}

func run(t testing.TB, c Config) *Sim {
	t.Helper()
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	s.Run()
	return s
}

func TestSingleFlowMatchesStandalone(t *testing.T) {
	c := hpccStar(4)
	c.Workloads = []Workload{trace(TraceFlow{Src: 1, Dst: 2, Priority: 3, SizeBytes: 1_000_000})}
	s := run(t, c)
	fl := s.Flows()
	if len(fl) != 1 || fl[0].Finish == 0 {
		t.Fatalf("flow did not finish: %+v", fl)
	}
	f := fl[0]
	if f.Standalone != 88*Microsecond {
		t.Errorf("standalone = %v, want 88us (HPCC formula)", f.Standalone)
	}
	if d := math.Abs(float64(f.FCT())/float64(f.Standalone) - 1); d > 0.01 {
		t.Errorf("FCT %v vs standalone %v: off by %.2f%%", f.FCT(), f.Standalone, d*100)
	}
	t.Logf("FCT %v standalone %v", f.FCT(), f.Standalone)
}

func TestIncast16(t *testing.T) {
	c := hpccStar(17)
	var fs []TraceFlow
	for i := 0; i < 16; i++ {
		fs = append(fs, TraceFlow{Src: 2 + i, Dst: 1, Priority: 3, SizeBytes: 1_000_000})
	}
	c.Workloads = []Workload{trace(fs...)}
	s := run(t, c)
	var first, last Time
	for _, f := range s.Flows() {
		if f.Finish == 0 {
			t.Fatalf("unfinished %+v", f)
		}
		if first == 0 || f.FCT() < first {
			first = f.FCT()
		}
		if f.FCT() > last {
			last = f.FCT()
		}
	}
	st := s.Stats()
	t.Logf("first %v last %v stats %+v", first, last, st)
}
