package gym

import (
	"testing"

	"github.com/ecntune/ecntune/env"
)

// A step whose headroom on every port would hold more than the buffer is
// clamped to what the buffer leaves room for (simenv.Sim.HeadroomLimit: what
// New checks a config for), as the quarter-of-the-buffer bound is: the
// episode goes on, and the headroom, reserves and one frame of shared space
// per port fit the buffer (eight PGs at a quarter of a 4 MiB buffer each
// reserved twice the buffer).
func TestStepClampsHeadroomToTheBuffer(t *testing.T) {
	cfg := tinyIncast()
	cfg.BufferBytes = 4 << 20
	e, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := e.Reset(1)
	if err != nil {
		t.Fatal(err)
	}
	set := make([]env.Setting, len(obs))
	for i := range set {
		set[i] = obs[i].Current
		set[i].HeadroomBytes = cfg.BufferBytes / 4
	}
	if _, _, _, _, err := e.StepSettings(set); err != nil {
		t.Fatalf("step with a quarter of the buffer as every PG's headroom: %v", err)
	}
	tel := e.sim.Telemetry(0)
	var sum int64
	for _, p := range tel.Ports {
		sum += p.PG[3].HeadroomBytes
	}
	n := int64(len(tel.Ports))
	need := sum + n*cfg.PFC.ReserveBytes + n*int64(cfg.MTU+cfg.HeaderBytes)
	t.Logf("headroom %d B in all, %d B with reserves and frames, on a %d B buffer", sum, need, tel.BufferBytes)
	if need > tel.BufferBytes {
		t.Errorf("headroom %d B in all, %d B with reserves and frames, on a %d B buffer", sum, need, tel.BufferBytes)
	}
}
