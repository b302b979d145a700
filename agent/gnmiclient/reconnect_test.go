package gnmiclient

import (
	"context"
	"testing"
	"time"

	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/internal/simtest"
	"github.com/ecntune/ecntune/simswitch"
)

// A switch back after an outage is subscribed to again within about the
// retry timer, as the log says ("resubscribing in 200ms"), not when
// gRPC's own connect backoff (1 s, x1.6 up to 2 min) next lets the
// connection try: its attempts come about 1, 2.6, 5.2, 9.3 and 16 s after
// the first failure, so a switch back 6.5 s into an outage waited
// seconds more (20-45 s after a 40-90 s outage).
func TestReconnectAfterOutageWithinRetryTimer(t *testing.T) {
	const retry = 200 * time.Millisecond
	s, addr := simtest.Start(t, simtest.Star(poorECN), gnmipath.OpenConfig, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := target0(addr, string(gnmipath.OpenConfig))
	tc.RetryTimer = retry
	_, out, errs := subscribed(t, ctx, tc)
	// snapshot waits for one until deadline, reading what the client says
	snapshot := func(deadline time.Time) bool {
		for {
			select {
			case <-out:
				return true
			case <-errs:
			case <-time.After(time.Until(deadline)):
				return false
			}
		}
	}
	if !snapshot(time.Now().Add(10 * time.Second)) {
		t.Fatal("no snapshot in 10 s")
	}
	s.Close()
	down := time.Now()
	for snapshot(down.Add(6500 * time.Millisecond)) {
		// the last samples sent before the close
	}
	simtest.Start(t, simtest.Star(poorECN), gnmipath.OpenConfig, func(c *simswitch.Config) { c.Listen = addr })
	up := time.Now()
	// generous: a reconnect after the retry timer (and a backoff capped
	// at it), the initial dump and a sample's settling, on a loaded host
	if !snapshot(up.Add(5 * retry)) {
		snapshot(up.Add(30 * time.Second))
		t.Fatalf("switch back after a %v outage: telemetry again after %v, want within %v (5 x retry-timer %v)",
			up.Sub(down).Round(time.Millisecond), time.Since(up).Round(time.Millisecond), 5*retry, retry)
	}
	t.Logf("telemetry again %v after the switch came back", time.Since(up).Round(time.Millisecond))
}
