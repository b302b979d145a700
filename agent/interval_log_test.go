package agent

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// The interval line says which knobs the recommendations move, most
// frequent first, and how many queues the policy could not decide.
func TestIntervalLogTopMoves(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	var logs strings.Builder
	r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.interval(t)
	if !strings.Contains(logs.String(), `recommend_change=2 would_apply="tune 2" rejected=none top_moves="kmin↑ kmax↑ 2" undecided=0`) {
		t.Errorf("interval line: %s", logs.String())
	}

}

// The interval line names alpha moves.
func TestIntervalLogTopMovesAlpha(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA, kB)
	sw.set[kA], sw.set[kB] = curA, curA
	r := newRig(t, config.ModeShadow, false, "", sw)
	r.pol.s = target
	r.pol.s.Alpha = 0.5
	var logs strings.Builder
	r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.interval(t)
	if !strings.Contains(logs.String(), `recommend_change=2 would_apply="tune 2" rejected=none top_moves="kmin↑ kmax↑ alpha↑ 2" undecided=0`) {
		t.Errorf("interval line: %s", logs.String())
	}
}

// undecidedPolicy holds every queue for want of telemetry (or with the
// reason and hold given).
type undecidedPolicy struct {
	reason string
	held   policy.Hold
}

func (undecidedPolicy) Name() string { return "undecided" }
func (u undecidedPolicy) Decide(obs []env.Observation) []policy.Decision {
	d := make([]policy.Decision, len(obs))
	for i, o := range obs {
		d[i] = policy.Decision{Key: o.Key, Setting: o.Current, Reason: "hold: no telemetry", Held: policy.HoldUndecided}
		if u.reason != "" {
			d[i].Reason, d[i].Held = u.reason, u.held
		}
	}
	return d
}

func TestIntervalLogUndecided(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	r.a.o.Policy = undecidedPolicy{}
	var logs strings.Builder
	r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.interval(t)
	if !strings.Contains(logs.String(), `recommend_change=0 would_apply=none rejected=none top_moves=none undecided=2`) {
		t.Errorf("interval line: %s", logs.String())
	}
}

// A hold from a policy inside a wrapper (a schedule's step, a role) counts
// as undecided, and one outside the validated intervals is warned about.
func TestIntervalLogUndecidedWrapped(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	r.a.o.Policy = undecidedPolicy{reason: "schedule step 2 (from 3h): hold: counters over 10s, outside the decision intervals the model was validated for (200µs to 1s)",
		held: policy.HoldInterval}
	var logs strings.Builder
	r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.interval(t)
	if !strings.Contains(logs.String(), `undecided=2`) || !strings.Contains(logs.String(), `msg="the policy holds queues: counters over 10s, outside`) {
		t.Errorf("interval lines: %s", logs.String())
	}
}

// The interval line says "would_apply" while paused and "proposed" in
// approve mode: it said "changes" of changes never written.
func TestIntervalLogVerbPausedAndApprove(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	var logs strings.Builder
	r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	if err := r.a.Pause("ops", "incident"); err != nil {
		t.Fatal(err)
	}
	r.interval(t)
	if !strings.Contains(logs.String(), `would_apply="tune 2"`) || strings.Contains(logs.String(), "changes=") {
		t.Errorf("paused interval line: %s", logs.String())
	}
	if err := r.a.Resume("ops"); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	r.a.cfg.Approve = true
	r.interval(t)
	if !strings.Contains(logs.String(), `proposed="tune 2"`) || r.sw.setCount() != 0 {
		t.Errorf("approve-mode interval line: %s (%d Sets)", logs.String(), r.sw.setCount())
	}
}

// The interval line is written after apply: a change not written (its
// switch restarted under it: stale-setting; its target's commit pending)
// is counted in rejected= by its rule, not in changes=, as the audit log
// (nothing written) and the rejections metric say (it said changes="tune 1"
// and rejected=none).
func TestIntervalLogCountsChangesNotWritten(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA)
	r := newRig(t, config.ModeClosedLoop, false, "", sw)
	var logs strings.Builder
	r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.clk.Add(time.Second)
	r.tns += sec
	r.a.Ingest(sw.snapshot(r.tns))
	sw.mu.Lock()
	sw.set[kA] = env.Setting{KminBytes: 1_600_000, KmaxBytes: 6_400_000, Pmax: 0.2, HeadroomBytes: 100_000} // restarted
	sw.mu.Unlock()
	if err := r.a.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if es, _ := r.j.Entries("", 0); len(es) != 0 || sw.setCount() != 0 {
		t.Fatalf("audit %+v, %d Sets: want none", es, sw.setCount())
	}
	if line := logs.String(); !strings.Contains(line, `changes=none rejected="stale-setting 1"`) {
		t.Errorf("interval line of a change skipped at apply (stale-setting): %s", line)
	}

	sw2 := newFakeSwitch("leaf0", kA, kB)
	r2 := newRig(t, config.ModeClosedLoop, false, "", sw2)
	logs.Reset()
	r2.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	r2.a.commitWait = map[string]int64{"leaf0": r2.clk.Now().Add(time.Hour).UnixNano()}
	r2.interval(t)
	if line := logs.String(); !strings.Contains(line, `changes=none rejected="commit-pending 2"`) || sw2.setCount() != 0 {
		t.Errorf("interval line of changes held at apply (commit-pending), %d Sets: %s", sw2.setCount(), line)
	}
}
