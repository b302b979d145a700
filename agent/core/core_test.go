package core

import (
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// In shadow mode the guard's alarms say that nothing is written: a stale
// target's "reverting to the safe preset" is what closed loop would do.
func TestShadowAlarmsSayNothingIsWritten(t *testing.T) {
	for _, shadow := range []bool{true, false} {
		c, err := New(Options{Guard: testGuardConfig(), Shadow: shadow, Policy: "test"})
		if err != nil {
			t.Fatal(err)
		}
		c.AddTarget("leaf0", 0)
		if _, err := c.Tick(Interval{NowNs: sec, Observations: []env.Observation{ob(kA, cur)}, Decisions: []policy.Decision{dc(kA, cur, 0.9)}}); err != nil {
			t.Fatal(err)
		}
		rd, err := c.Tick(Interval{NowNs: sec + int64(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		if len(rd.Alarms) == 0 {
			t.Fatalf("shadow %v: no alarm for a minute without telemetry", shadow)
		}
		for _, a := range rd.Alarms {
			if says := strings.HasSuffix(a.Msg, "(shadow mode: nothing is written)"); says != shadow {
				t.Errorf("shadow %v: alarm %q", shadow, a.Msg)
			}
		}
	}
}
