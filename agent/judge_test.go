package agent

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// `agent rollback` judges its Set and read-back by the loop's rule
// (core.JudgeSet): for every Set error, read error and read, a manual
// change's audit state is the one the loop's outcome stands for (setLanded
// taking a refused headroom out as judgeManual does).
func TestManualAndLoopJudgeASetAlike(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	want := target
	want.HeadroomBytes = 200_000
	other := env.Setting{KminBytes: 900_000, KmaxBytes: 3_000_000, Pmax: 0.1, HeadroomBytes: 100_000}
	unconfirmed := fmt.Errorf("%w: read back otherwise; cancelled, the switch reverted it", core.ErrUnconfirmed)
	refused := &gnmipath.HeadroomError{Target: "leaf0", Paths: []string{"/headroom"}, Err: errors.New("out of range")}
	for _, setErr := range []error{nil, errors.New("rpc error: code = Unavailable"), unconfirmed, refused} {
		for _, rerr := range []error{nil, errors.New("read: connection reset")} {
			for _, runs := range []*env.Setting{nil, &want, &other, {KminBytes: want.KminBytes, KmaxBytes: want.KmaxBytes, Pmax: want.Pmax, HeadroomBytes: 100_000}} {
				got := map[env.QueueKey]env.Setting{}
				if runs != nil {
					got[kA] = *runs
				}
				e := core.AuditEntry{Change: core.Change{Key: kA, Kind: core.KindManual, Old: cur, New: want}}
				st, _, _ := judgeManual(e, setErr, got, rerr)
				ch, loopErr := e.Change, setErr
				if errors.As(setErr, new(*gnmipath.HeadroomError)) {
					ch.New, loopErr = readBackWant(ch.New, true), nil
				}
				res := r.a.core.ReadBack("leaf0", []core.Change{ch}, loopErr, got, rerr)[0]
				var loop core.AuditState
				switch {
				case res.Unknown:
					loop = core.StateIntent
				case res.Outcome == core.Applied:
					loop = core.StateApplied
				case res.Outcome == core.Mismatch:
					loop = core.StateMismatch
				default:
					loop = core.StateFailed
				}
				if st != loop {
					t.Errorf("set %v, read %v, switch runs %+v: agent rollback says %s, the loop %s", setErr, rerr, runs, st, loop)
				}
			}
		}
	}
}
