package simswitch

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ecntune/ecntune/simenv"
)

// slowEngine is a fabric that simulates at a tenth of real time: every
// 100 µs of simulated time costs a wall millisecond.
type slowEngine struct {
	*fakeEngine
	calls atomic.Int64
}

func (e *slowEngine) RunUntil(t simenv.Time) {
	e.calls.Add(1)
	if t > e.now {
		time.Sleep(time.Duration(float64(t-e.now) / float64(100*simenv.Microsecond) * float64(time.Millisecond)))
	}
	e.fakeEngine.RunUntil(t)
}

// A timescale far below what the fabric can keep up with (a wall step
// standing for half a simulated second, which this fabric takes 5 s to
// run) publishes as it goes, says how far behind it is, and stops at once.
func TestSmallTimescaleStaysResponsive(t *testing.T) {
	eng := &slowEngine{fakeEngine: newFake(1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, _, err := Start(ctx, Config{Engine: eng, Listen: "127.0.0.1:0", Timescale: 0.01, Step: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	now, lag := s.Status()
	// 300 ms of wall time is 30 s simulated; the fabric ran about 30 ms of it
	if now <= 0 || now > 40*simenv.Millisecond {
		t.Errorf("simulated time after 300 ms of wall time: %v, want about 30ms (published as it goes)", now)
	}
	if lag < 20*simenv.Second {
		t.Errorf("lag after 300 ms of wall time at timescale 0.01: %v, want about 30s (the truth)", lag)
	}
	closed := make(chan struct{})
	t0 := time.Now()
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
		if d := time.Since(t0); d > 200*time.Millisecond {
			t.Errorf("Close took %v", d)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close still waiting after 2 s")
	}
}

// A timescale whose hour of wall time does not fit the simulator's clock
// is refused with the workable range; the smallest one accepted does not
// overflow, and Simulated saturates rather than turning negative.
func TestTimescaleRange(t *testing.T) {
	for _, ts := range []float64{0, -1, math.Inf(1), math.NaN(), 1e-9, 1e-7, MinTimescale / 2} {
		err := CheckTimescale(ts)
		if err == nil {
			t.Errorf("CheckTimescale(%g) accepted", ts)
			continue
		}
		if ts > 0 && !math.IsInf(ts, 0) && !strings.Contains(err.Error(), "below the smallest") {
			t.Errorf("CheckTimescale(%g): %v; want it to name the smallest timescale", ts, err)
		}
		if ts == 0 {
			continue // Start's default
		}
		s, _, err := Start(context.Background(), Config{Engine: newFake(1), Listen: "127.0.0.1:0", Timescale: ts})
		if err == nil {
			s.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "timescale") {
			t.Errorf("Start with timescale %g: %v", ts, err)
		}
	}
	for _, ts := range []float64{MinTimescale, 0.01, 1, 1000, 1e9} {
		if err := CheckTimescale(ts); err != nil {
			t.Errorf("CheckTimescale(%g): %v", ts, err)
		}
		if got := Simulated(time.Hour, ts); got < 0 {
			t.Errorf("Simulated(1h, %g) = %v", ts, got)
		}
	}
	if got := Simulated(time.Second, 1e-9); got != simenv.Time(math.MaxInt64) {
		t.Errorf("Simulated(1s, 1e-9) = %v, want the largest simulated time", got)
	}
}

// Below 1 (faster than real time) the simulation is warned to fall behind.
func TestPaceNote(t *testing.T) {
	if n := PaceNote(0.01); !strings.Contains(n, "100 simulated seconds per wall second") || !strings.Contains(n, "give 1 or more") {
		t.Errorf("PaceNote(0.01) = %q", n)
	}
	for _, ts := range []float64{1, 1000} {
		if n := PaceNote(ts); n != "" {
			t.Errorf("PaceNote(%g) = %q, want none", ts, n)
		}
	}
}
