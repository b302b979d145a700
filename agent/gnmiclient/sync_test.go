package gnmiclient

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/internal/simtest"
	"github.com/ecntune/ecntune/simswitch"
)

// A subscription that sends its sync_response twice counts once toward
// every subscription having synced: the first snapshot waits for the
// configuration's subscription (a duplicate counted twice let a snapshot
// out before the thresholds had come, "queues incomplete").
func TestDuplicateSyncResponseCountsOnce(t *testing.T) {
	s, addr := simtest.Start(t, simtest.Star(poorECN), gnmipath.OpenConfig, nil)
	s.SetFaults(simswitch.Faults{DuplicateSync: true, SlowOnChange: 500 * time.Millisecond})
	out, errs := subscribeSim(t, addr)
	for {
		select {
		case snap := <-out:
			if len(snap.Queues) != 4 {
				t.Fatalf("first snapshot has %d queues", len(snap.Queues))
			}
			return
		case err := <-errs:
			var dn *DeviceNote
			if errors.As(err, &dn) {
				continue
			}
			t.Fatalf("before the first snapshot: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("no snapshot")
		}
	}
}

// subscribeSim dials the simulated switch sw0 at addr (openconfig, 50 ms
// samples) and subscribes, until the test ends.
func subscribeSim(t *testing.T, addr string) (<-chan env.Snapshot, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	sw, err := Dial(ctx, target0(addr, string(gnmipath.OpenConfig)), 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	out, errs := make(chan env.Snapshot, 64), make(chan error, 64)
	go sw.Subscribe(ctx, out, errs)
	return out, errs
}

// A configured queue the switch has on none of its ports is said (an
// AbsentQueuesNote naming it and the queues the switch has): with queues
// [3, 4] on a switch of queue 3 only, queue 4 was never tuned without a
// word; with [4] alone, the stream ran and the agent said "no telemetry".
func TestAbsentConfiguredQueuesSaid(t *testing.T) {
	for _, qs := range [][]int{{3, 4}, {4}} {
		_, addr := simtest.Start(t, simtest.Star(poorECN), gnmipath.OpenConfig, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		tc := target0(addr, string(gnmipath.OpenConfig))
		tc.Queues = qs
		sw, err := Dial(ctx, tc, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		out, errs := make(chan env.Snapshot, 64), make(chan error, 64)
		go sw.Subscribe(ctx, out, errs)
		var note *AbsentQueuesNote
		for note == nil {
			select {
			case <-out:
			case err := <-errs:
				errors.As(err, &note)
			case <-time.After(20 * time.Second):
				t.Fatalf("queues %v: no note", qs)
			}
		}
		if len(note.Absent) != 1 || note.Absent[0] != 4 || len(note.Have) == 0 || note.Have[0] != 3 {
			t.Fatalf("queues %v: note %+v", qs, note)
		}
		cancel()
		sw.Close()
	}
}
