// Package await is how tests wait: on a condition, never for a fixed time
// (these machines are shared and noisy, so a sleep is either too short on a
// busy day or wasted on a quiet one).
package await

import (
	"testing"
	"time"
)

// poll is how often a condition is looked at.
const poll = 10 * time.Millisecond

// Until waits until cond holds, failing t after d with what it waited for.
func Until(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(poll)
	}
}

// Stall and Ceiling bound Reached: it fails when the position makes no
// progress for Stall, or after Ceiling in all.
const (
	Stall   = time.Minute
	Ceiling = 15 * time.Minute
)

// Reached waits until pos() reaches want, judging by progress rather than
// wall time: a busy machine slows a simulation down, it does not stop it,
// so it fails only when pos stands still for Stall (or after Ceiling). what
// names the position in the failure ("simulated time (ns)").
func Reached(t testing.TB, what string, pos func() int64, want int64) {
	t.Helper()
	start := time.Now()
	last, lastAt := int64(-1)<<62, time.Now()
	for {
		now := pos()
		if now >= want {
			return
		}
		if now > last {
			last, lastAt = now, time.Now()
		}
		if time.Since(lastAt) > Stall {
			t.Fatalf("%s stalled at %d for %s (waiting for %d)", what, now, Stall, want)
		}
		if time.Since(start) > Ceiling {
			t.Fatalf("%s at %d after %s (waiting for %d)", what, now, Ceiling, want)
		}
		time.Sleep(poll)
	}
}
