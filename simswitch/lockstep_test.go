package simswitch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
)

// In lockstep simulated time moves only by Advance, by exactly what it
// is asked; a wall-clock server refuses Advance, and the sonic imitation
// refuses lockstep.
func TestLockstepTimeMovesOnlyByAdvance(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := simenv.DefaultConfig()
	cfg.Topology = simenv.StarTopology(4, 100e9, simenv.Microsecond)
	s, _, err := Start(ctx, Config{Sim: cfg, Listen: "127.0.0.1:0", Lockstep: true, Step: time.Millisecond, Timescale: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	time.Sleep(50 * time.Millisecond) // 50 simulated ms at this timescale, were it paced
	if now, _ := s.Status(); now != 0 {
		t.Fatalf("lockstep time moved by itself to %v", now)
	}
	for i := 1; i <= 3; i++ {
		now, err := s.Advance(ctx, 250*simenv.Microsecond)
		if err != nil || now != simenv.Time(i)*250*simenv.Microsecond {
			t.Fatalf("advance %d: %v, %v", i, now, err)
		}
	}
	w, _, err := Start(ctx, Config{Sim: cfg, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Advance(ctx, simenv.Microsecond); !errors.Is(err, ErrNotLockstep) {
		t.Fatalf("Advance on a wall-clock server: %v", err)
	}
	if _, _, err := Start(ctx, Config{Sim: cfg, Listen: "127.0.0.1:0", Lockstep: true, Dialect: gnmipath.Sonic}); err == nil || !strings.Contains(err.Error(), "lockstep") {
		t.Fatalf("lockstep with sonic: %v", err)
	}
}
