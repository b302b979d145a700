package simenv

import (
	"fmt"
	"testing"
)

func websearchLeafSpine(load float64) Config {
	c := DefaultConfig()
	c.Topology = LeafSpineTopology(4, 2, 8, 100e9, 400e9, Microsecond)
	c.Duration = 10 * Millisecond
	ws := []CDFPoint{{0, 0}, {10000, 15}, {20000, 20}, {30000, 30}, {50000, 40}, {80000, 53},
		{200000, 60}, {1000000, 70}, {2000000, 80}, {5000000, 90}, {10000000, 97}, {30000000, 100}}
	c.Workloads = []Workload{{Kind: WorkloadCDF, Priority: 3, CDF: ws, Load: load}}
	return c
}

// BenchmarkWebSearch50 runs 1 ms of a 32-host leaf-spine at 50% WebSearch
// load per iteration and reports packet-hops per second.
func BenchmarkWebSearch50(b *testing.B) {
	s, err := New(websearchLeafSpine(0.5))
	if err != nil {
		b.Fatal(err)
	}
	s.RunUntil(2 * Millisecond) // warm up: queues and flows in steady state
	h0 := s.Stats().PacketHops
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.RunUntil(s.Now() + Millisecond)
	}
	b.StopTimer()
	hops := s.Stats().PacketHops - h0
	b.ReportMetric(float64(hops)/b.Elapsed().Seconds(), "hops/s")
	b.ReportMetric(float64(hops)/float64(b.N), "hops/op")
}

// BenchmarkSteadyStateAllocs: bytes allocated per simulated 100 us once
// warm; packets and events are pooled, so this is only the per-flow records
// of flows that arrive (memory flat in simulated time otherwise).
func BenchmarkSteadyStateAllocs(b *testing.B) {
	s, err := New(websearchLeafSpine(0.3))
	if err != nil {
		b.Fatal(err)
	}
	s.RunUntil(3 * Millisecond)
	f0 := len(s.flows)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.RunUntil(s.Now() + 100*Microsecond)
	}
	b.ReportMetric(float64(len(s.flows)-f0)/float64(b.N), "flows/op")
}

// BenchmarkTelemetry reads every switch's counters once per iteration.
func BenchmarkTelemetry(b *testing.B) {
	s, err := New(websearchLeafSpine(0.3))
	if err != nil {
		b.Fatal(err)
	}
	s.RunUntil(Millisecond)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for sw := range s.Switches() {
			_ = s.Telemetry(sw)
		}
	}
}

// BenchmarkNewStar builds a star of 1k, 4k and 16k hosts (setup only: the
// fabric, its routes and the workloads' first events). Setup is near-linear
// in the host count: each size should take about four times the one before.
func BenchmarkNewStar(b *testing.B) {
	for _, n := range []int{1000, 4000, 16000} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			c := DefaultConfig()
			c.Topology = StarTopology(n, 100e9, Microsecond)
			c.BufferBytes = int64(n) * 64_000
			c.Workloads = []Workload{{Kind: WorkloadCDF, Priority: 3, CDF: websearchLeafSpine(0.3).Workloads[0].CDF, Load: 0.3}}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := New(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
