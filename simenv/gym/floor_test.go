package gym

import (
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
)

// The agent's lossless floor from a stated cable length and frame size
// (env.LosslessFloor, for switches that do not export one) is the
// simulator's own, wherever the cable and not the link delay sets the
// propagation time.
func TestLosslessFloorMatchesSimulator(t *testing.T) {
	for _, rate := range []float64{25e9, 100e9, 200e9, 400e9} {
		for _, cable := range []float64{20, 100, 300} {
			cfg := simenv.DefaultConfig()
			cfg.Topology = simenv.StarTopology(2, rate, 50*simenv.Nanosecond)
			cfg.PFC.CableMeters = cable
			s, err := simenv.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := s.MinHeadroom(rate, 50*simenv.Nanosecond)
			if got := env.LosslessFloor(rate, cable, cfg.MTU+cfg.HeaderBytes); got != want {
				t.Fatalf("%g Gb/s, %g m: env.LosslessFloor %d, simulator %d", rate/1e9, cable, got, want)
			}
		}
	}
	for _, bad := range [][3]float64{{0, 10, 1000}, {100e9, -1, 1000}, {100e9, 10, 0}} {
		if f := env.LosslessFloor(bad[0], bad[1], int(bad[2])); f != 0 {
			t.Fatalf("LosslessFloor%v = %d, want 0 (unusable input)", bad, f)
		}
	}
}
