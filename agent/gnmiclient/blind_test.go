package gnmiclient

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/internal/simtest"
)

// A queue whose binding the telemetry stream has not given (its session
// ended, and the decoder was reset) but which the read before the write
// finds bound to a profile is not written: which other queues share that
// profile is unknown, and the Set would bind the queue to a new profile
// of its own (a stale-revert without telemetry moved every queue off the
// switch's profiles). Once the stream gives the binding it is written in
// place.
func TestNoRebindWithoutTheStreamsBindings(t *testing.T) {
	_, addr := simtest.Start(t, simtest.Star(poorECN), gnmipath.OpenConfig, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sw, err := Dial(ctx, target0(addr, string(gnmipath.OpenConfig)), 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	sw.mu.Lock()
	sw.subscribed = true // a stream whose session ended: it owns the (empty) decoder
	sw.mu.Unlock()
	key := env.QueueKey{Target: "sw0", Port: "Ethernet1", Queue: 3}
	was, err := sw.Read(ctx, []env.QueueKey{key})
	if err != nil {
		t.Fatal(err)
	}
	safe := was[key]
	safe.KminBytes, safe.KmaxBytes = 1_000_000, 3_000_000
	err = sw.Apply(ctx, map[env.QueueKey]env.Setting{key: safe})
	if err == nil || !strings.Contains(err.Error(), "not written") || !strings.Contains(err.Error(), "bound to "+gnmipath.ECNProfileName("Ethernet1", 3)) {
		t.Fatalf("a write without the stream's bindings: %v", err)
	}
	if got, err := sw.Read(ctx, []env.QueueKey{key}); err != nil || got[key] != was[key] {
		t.Fatalf("the switch after the refused write: %+v %v", got[key], err)
	}
	// the stream back: the binding is known, the profile written in place
	sw.mu.Lock()
	sw.subscribed = false
	sw.mu.Unlock()
	if _, err := sw.Read(ctx, []env.QueueKey{key}); err != nil {
		t.Fatal(err)
	}
	if err := sw.Apply(ctx, map[env.QueueKey]env.Setting{key: safe}); err != nil {
		t.Fatalf("a write with the binding known: %v", err)
	}
	if paths := strings.Join(sw.SetPaths([]env.QueueKey{key}), " "); strings.Contains(paths, gnmipath.OwnProfileName("Ethernet1", 3)) {
		t.Fatalf("written to a profile of its own: %s", paths)
	}
}

// A Set refused at the dial (the switch down) never left: a failure, not
// an outcome nobody knows (a rollback to a switch that was down was judged
// by value once it came back at its startup setting, and audited as
// applied). A connection lost on the way is still unknown.
func TestSetErrorNeverSent(t *testing.T) {
	dial := status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:57401: connect: connection refused"`)
	if errors.Is(setError(dial), core.ErrSetOutcomeUnknown) {
		t.Errorf("a Set refused at the dial taken as of unknown outcome")
	}
	lost := status.Error(codes.Unavailable, "error reading from server: EOF")
	if !errors.Is(setError(lost), core.ErrSetOutcomeUnknown) {
		t.Errorf("a connection lost on the way not taken as of unknown outcome")
	}
}
