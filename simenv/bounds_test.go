package simenv

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

// newWithin builds cfg, failing the test binary if New does not return
// within a few seconds (a build that loops forever).
func newWithin(t *testing.T, cfg Config) (*Sim, error) {
	t.Helper()
	type result struct {
		s   *Sim
		err error
	}
	done := make(chan result, 1)
	go func() { s, err := New(cfg); done <- result{s, err} }()
	select {
	case r := <-done:
		return r.s, r.err
	case <-time.After(5 * time.Second):
		panic(fmt.Sprintf("%s: New did not return within 5 s", t.Name()))
	}
}

// TestRateBounds: link rates must be finite and within 1 b/s..10 Tb/s. An
// infinite fabric rate (1e300 Tbps overflows float64) used to hang New in
// the loop that doubles alpha per 2x of port rate.
func TestRateBounds(t *testing.T) {
	for _, rate := range []float64{math.Inf(1), 1e300, 20e12, 0.5, math.NaN()} {
		c := DefaultConfig()
		c.Topology = LeafSpineTopology(2, 1, 2, 100e9, rate, Microsecond)
		c.Workloads = []Workload{{Kind: WorkloadIncast, Priority: 3, Fanin: 1, SizeBytes: 1000, Every: Millisecond}}
		_, err := newWithin(t, c)
		if err == nil || !strings.Contains(err.Error(), "1bps..10Tbps") {
			t.Errorf("fabric rate %g: %v", rate, err)
		}
	}
}

// TestMMUBounds: MMU sizes that cannot exist are refused, naming the field:
// a buffer smaller than the reserves, headroom and one frame of shared
// space per port it must hold; a reserve or a headroom beyond the buffer.
func TestMMUBounds(t *testing.T) {
	base := func() Config {
		c := hpccStar(8)
		c.Workloads = []Workload{{Kind: WorkloadIncast, Priority: 3, Fanin: 4, SizeBytes: 100_000, Every: Millisecond}}
		return c
	}
	// What the star's switch needs: 8 ports × (4 KiB reserve + 37,500 B
	// HPCC headroom at 100 Gb/s and 1 us + one 1048 B frame).
	need := int64(8 * (4096 + 37_500 + 1048))
	cases := []struct {
		name  string
		edit  func(*Config)
		field string
		want  string
	}{
		{"buffer 1 B", func(c *Config) { c.BufferBytes = 1 }, "BufferBytes", "buffer 1 B is below the minimum of 8384 B for switch sw0: one 1048 B frame for each of its 8 ports"},
		{"buffer one byte short", func(c *Config) { c.BufferBytes = need - 1 }, "BufferBytes",
			fmt.Sprintf("buffer %d B is below what the MMU needs: switch sw0 has 8 ports: reserve 4096 B × 8 = 32768 B, headroom 300000 B", need-1)},
		{"reserve 1 GB", func(c *Config) { c.PFC.ReserveBytes = 1_000_000_000 }, "PFC.ReserveBytes", "pfc reserve 1000000000 B per port is above the 33554432 B buffer"},
		{"headroom 9e18", func(c *Config) { c.PFC.HeadroomBytes = 9e18 }, "PFC.HeadroomBytes", "pfc headroom 9000000000000000000 B outside 0..1000000000000 B"},
		{"headroom summed over ports", func(c *Config) { c.PFC.HeadroomBytes = 5_000_000 }, "BufferBytes", "headroom 40000000 B"},
		{"xon offset", func(c *Config) { c.PFC.XonOffsetBytes = 1 << 30 }, "PFC.XonOffsetBytes", "pfc xon offset 1073741824 B is above the 33554432 B buffer"},
	}
	for _, tc := range cases {
		c := base()
		tc.edit(&c)
		_, err := newWithin(t, c)
		fe, ok := err.(*FieldError)
		if !ok || fe.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (want a FieldError on %s saying %q)", tc.name, err, tc.field, tc.want)
		}
	}
	// Headroom at 100 Gb/s that fits, but not at a 400 Gb/s port's rate.
	c := DefaultConfig()
	c.Topology = LeafSpineTopology(2, 1, 2, 100e9, 400e9, Microsecond)
	c.Workloads = base().Workloads
	c.Workloads[0].Fanin = 2
	c.PFC.HeadroomBytes = 10_000_000
	c.BufferBytes = 32_000_000
	if _, err := newWithin(t, c); err == nil || !strings.Contains(err.Error(), "is 40000000 B on leaf0's 400G port, above its 32000000 B buffer") {
		t.Errorf("headroom 10 MB at 100G on a 400G port: %v", err)
	}
	// Exactly enough passes; without PFC no headroom is needed.
	c = base()
	c.BufferBytes = need
	if _, err := newWithin(t, c); err != nil {
		t.Errorf("buffer of exactly %d B: %v", need, err)
	}
	c.BufferBytes = 8 * (4096 + 1048)
	c.PFC.Enabled = false
	if _, err := newWithin(t, c); err != nil {
		t.Errorf("PFC off, buffer %d B (reserves and a frame per port): %v", c.BufferBytes, err)
	}
}

// TestWorkloadBounds: workloads that no fabric could carry are refused, not
// run until memory runs out: a CDF of flows under one byte, flow arrivals
// faster than the hosts' links can start flows, incast bursts faster than
// the links can carry.
func TestWorkloadBounds(t *testing.T) {
	base := func(w Workload) Config {
		c := DefaultConfig()
		c.Topology = LeafSpineTopology(4, 2, 8, 100e9, 400e9, Microsecond)
		c.Workloads = []Workload{w}
		return c
	}
	ws := websearchLeafSpine(0.5).Workloads[0].CDF
	cases := []struct {
		name  string
		w     Workload
		field string
		want  string
	}{
		{"cdf under a byte", Workload{Kind: WorkloadCDF, Priority: 3, CDF: []CDFPoint{{0, 0}, {0.25, 50}, {0.5, 100}}, Load: 0.5},
			"Workloads[0].CDF", "workloads[0]: cdf point 2 has flow size 0.25 B; a flow carries at least 1 byte"},
		{"cdf of tiny flows at full load", Workload{Kind: WorkloadCDF, Priority: 3, CDF: []CDFPoint{{0, 0}, {1, 50}, {20, 100}}, Load: 1},
			"Workloads[0].CDF", "more than the 8.163e+09/s its 32 hosts' links can start (one 49 B frame, header and 1 byte, per flow)"},
		{"incast every ns", Workload{Kind: WorkloadIncast, Priority: 3, Fanin: 16, SizeBytes: 1_000_000, Every: Nanosecond},
			"Workloads[0].Every", "workloads[0]: 16 × 1000000 B every 1ns is 1.28e+17 b/s, more than the 3.2e+12 b/s of its 32 hosts' links"},
		{"incast of tiny flows every ns", Workload{Kind: WorkloadIncast, Priority: 3, Fanin: 16, SizeBytes: 1, Every: Nanosecond},
			"Workloads[0].Every", "16 flows every 1ns is 1.6e+10 flows/s, more than the 8.163e+09/s"},
	}
	for _, tc := range cases {
		_, err := newWithin(t, base(tc.w))
		fe, ok := err.(*FieldError)
		if !ok || fe.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (want a FieldError on %s saying %q)", tc.name, err, tc.field, tc.want)
		}
	}
	for _, w := range []Workload{
		{Kind: WorkloadCDF, Priority: 3, CDF: ws, Load: 1},
		{Kind: WorkloadCDF, Priority: 3, CDF: []CDFPoint{{0, 0}, {100, 50}, {1000, 100}}, Load: 1},
		{Kind: WorkloadIncast, Priority: 3, Fanin: 16, SizeBytes: 1_000_000, Every: 100 * Microsecond},
	} {
		if _, err := newWithin(t, base(w)); err != nil {
			t.Errorf("%+v refused: %v", w, err)
		}
	}
}

// TestSetupLinearInHosts: building a fabric costs about linearly in its
// hosts. Routing used to search the whole fabric once per host (a 16k-host
// star allocated 4 GB, 14 times what 4k hosts did, and took seconds); it
// now searches once per edge switch. Allocated bytes are deterministic, so
// their ratio is the measure.
func TestSetupLinearInHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 16k-host star")
	}
	alloc := func(n int) uint64 {
		c := DefaultConfig()
		c.Topology = StarTopology(n, 100e9, Microsecond)
		c.BufferBytes = int64(n) * 64_000
		c.Workloads = []Workload{{Kind: WorkloadIncast, Priority: 3, Fanin: 8, SizeBytes: 100_000, Every: Millisecond}}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := newWithin(t, c); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	a4, a16 := alloc(4000), alloc(16000)
	ratio := float64(a16) / float64(a4)
	t.Logf("New allocates %.1f MB for 4k hosts, %.1f MB for 16k hosts: ratio %.2f (4 is linear)", float64(a4)/1e6, float64(a16)/1e6, ratio)
	if ratio > 5 {
		t.Errorf("4x the hosts allocate %.1fx the bytes: setup is not linear in hosts", ratio)
	}
}
