package gnmiclient

import (
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/internal/simtest"
	"github.com/ecntune/ecntune/simswitch"
)

// One counters notification stamped an hour ahead is not the sample's
// time (it held every later snapshot at that time, dropped as repeats,
// until the clock caught up: the agent froze and reverted the switch), and
// a switch's clock stepping back an hour is taken as its new time (it
// held the snapshots the same way); both are said.
func TestSwitchClockOutlierAndStep(t *testing.T) {
	s, addr := simtest.Start(t, simtest.Star(poorECN), gnmipath.OpenConfig, nil)
	out, errs := subscribeSim(t, addr)
	var said []string
	next := func() env.Snapshot {
		t.Helper()
		for {
			select {
			case snap := <-out:
				return snap
			case err := <-errs:
				said = append(said, err.Error())
			case <-time.After(10 * time.Second):
				t.Fatalf("no snapshot in 10 s; said %q", said)
			}
		}
	}
	first := next()
	last := first
	// the wrong stamp lands on the first notification of the next
	// sampled group, queue counters or not (PFC, buffers): until it lands
	// on the counters, which pace the snapshots
	for try := 0; !strings.Contains(strings.Join(said, "\n"), "off the stream's time"); try++ {
		if try == 50 {
			t.Fatalf("the wrong stamp not said: %q", said)
		}
		s.SetFaults(simswitch.Faults{ShiftOnce: time.Hour})
		for range 4 {
			snap := next()
			if snap.TimeNs > first.TimeNs+int64(time.Minute) {
				t.Fatalf("a snapshot stamped %v after the first: one notification's wrong stamp taken", time.Duration(snap.TimeNs-first.TimeNs))
			}
			last = snap
		}
	}
	s.SetFaults(simswitch.Faults{ClockShift: -time.Hour})
	var stepped env.Snapshot
	for range 20 {
		if stepped = next(); stepped.TimeNs < last.TimeNs-int64(50*time.Minute) {
			break
		}
	}
	if stepped.TimeNs >= last.TimeNs-int64(50*time.Minute) {
		t.Fatalf("the clock stepped back an hour: snapshots at %v after the last before", time.Duration(stepped.TimeNs-last.TimeNs))
	}
	if after := next(); after.TimeNs <= stepped.TimeNs {
		t.Fatalf("snapshots after the step do not advance: %d then %d", stepped.TimeNs, after.TimeNs)
	}
	if !strings.Contains(strings.Join(said, "\n"), "the switch's clock moved by -1h") {
		t.Errorf("the step not said: %q", said)
	}
}

// Samples further apart than the jump (a stall, a switch's own minimum
// interval, an idle stream's heartbeat) are in line when their stamps
// moved as much as the time since the last sample: every one was taken
// for a wrong stamp, and the stream's time never moved.
func TestClockCheckSparseSamples(t *testing.T) {
	var said []error
	ss := &session{sw: &Switch{sample: 50 * time.Millisecond, codec: gnmipath.Target{Name: "sw0", Dialect: gnmipath.OpenConfig}},
		report: func(err error) { said = append(said, err) }}
	ss.lastTs, ss.firstAt = int64(1000*time.Second), time.Now().Add(-3*time.Second)
	if off, stepped := ss.clockCheck(int64(1003 * time.Second)); off || stepped || len(said) != 0 {
		t.Fatalf("a sample 3 s after the last, 3 s later: off line %v, stepped %v, said %v", off, stepped, said)
	}
	if off, _ := ss.clockCheck(int64(4600 * time.Second)); !off {
		t.Fatal("a stamp an hour ahead, 3 s later: in line")
	}
}
