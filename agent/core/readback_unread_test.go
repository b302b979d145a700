package core

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
)

// An answered Set whose read-back fails (the switch went down right after
// taking it) is judged by a later read: its entry stays open, no rollback
// is ordered and nothing reads back as zeros. A queue the read-back does
// not report is a mismatch that says so, with no setting of zeros.
func TestReadBackUnreadAndUnreported(t *testing.T) {
	c, err := New(Options{Guard: DefaultGuardConfig(time.Second), Policy: "t"})
	if err != nil {
		t.Fatal(err)
	}
	k := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	ch := Change{Key: k, Kind: KindTune, Old: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2},
		New: env.Setting{KminBytes: 696_600, KmaxBytes: 774_000, Pmax: 0.01}}
	r := c.ReadBack("leaf0", []Change{ch}, nil, nil, errors.New("connection refused"))[0]
	if !r.Unknown || r.Outcome == Mismatch {
		t.Fatalf("answered Set, read failed: %+v", r)
	}
	r.Seq = 1
	if s := c.Settle(r, false, 1e9); s.Resolve || s.Rollback != nil || s.Got != nil {
		t.Fatalf("settled %+v: want the entry left open, no rollback", s)
	}
	r = c.ReadBack("leaf0", []Change{ch}, nil, map[env.QueueKey]env.Setting{}, nil)[0]
	r.Seq = 2
	s := c.Settle(r, false, 2e9)
	if s.State != StateMismatch || s.Got != nil || !strings.Contains(s.Msg, "does not report the queue") {
		t.Fatalf("queue not reported: %+v", s)
	}
	if s.Alarm != nil && strings.Contains(s.Alarm.Msg, "0B") {
		t.Fatalf("alarm of zeros: %s", s.Alarm.Msg)
	}
}

// A Set the switch refused after taking part of it (the queue now runs
// neither the old setting nor the new) is a mismatch: an alarm and a
// rollback to the last good setting. It was audited as failed, the queue
// left on the mix.
func TestFailedSetTakenInPartIsAMismatch(t *testing.T) {
	c, err := New(Options{Guard: DefaultGuardConfig(time.Second), Policy: "t"})
	if err != nil {
		t.Fatal(err)
	}
	k := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	old := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	c.guard.Restore(QueueMemory{Key: k, LastGood: old})
	ch := Change{Key: k, Kind: KindTune, Old: old, New: env.Setting{KminBytes: 696_600, KmaxBytes: 774_000, Pmax: 0.01}}
	mix := env.Setting{KminBytes: 696_600, KmaxBytes: 1_600_000, Pmax: 0.2}
	r := c.ReadBack("leaf0", []Change{ch}, errors.New("rpc error: code = Internal desc = failed at update 2"), map[env.QueueKey]env.Setting{k: mix}, nil)[0]
	if r.Outcome != Mismatch {
		t.Fatalf("refused Set taken in part: %+v", r)
	}
	r.Seq = 1
	s := c.Settle(r, false, 1e9)
	if s.State != StateMismatch || s.Got == nil || *s.Got != mix || s.Rollback == nil || s.Rollback.New != old {
		t.Fatalf("settled %+v (rollback %+v)", s, s.Rollback)
	}
	// refused whole: failed, as before
	r = c.ReadBack("leaf0", []Change{ch}, errors.New("refused"), map[env.QueueKey]env.Setting{k: old}, nil)[0]
	if r.Outcome != NotApplied {
		t.Fatalf("refused Set, switch on the old setting: %+v", r)
	}
}
