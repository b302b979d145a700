package simenv

import (
	"fmt"
	"math"
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
