package agent

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// The interval line says which knobs the recommendations move, most
// frequent first, and how many queues the policy could not decide.
func TestIntervalLogTopMoves(t *testing.T) {
	r := newRig(t, ModeShadow, false, "", nil)
	var logs strings.Builder
	r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.interval(t)
	if !strings.Contains(logs.String(), `recommend_change=2 would_apply="tune 2" rejected=none top_moves="kmin↑ kmax↑ 2" undecided=0`) {
		t.Errorf("interval line: %s", logs.String())
	}

	base := env.Setting{KminBytes: 100_000, KmaxBytes: 1_000_000, Pmax: 0.1, HeadroomBytes: 50_000}
	var m [moveClasses]int
	add := func(to env.Setting, n int) {
		for range n {
			m[moveClass(base, to)]++
		}
	}
	up := base
	up.KminBytes, up.KmaxBytes = 200_000, 2_000_000
	add(up, 5)
	down := base
	down.Pmax, down.HeadroomBytes = 0.05, 60_000
	add(down, 7)
	kmin := base
	kmin.KminBytes = 90_000
	add(kmin, 1)
	add(base, 3) // no move: not counted as one
	m[0] = 0
	if got, want := topMoves(&m, 2), "pmax↓ headroom↑ 7, kmin↑ kmax↑ 5"; got != want {
		t.Errorf("topMoves: %q, want %q", got, want)
	}
	if got := topMoves(&m, 3); !strings.HasSuffix(got, ", kmin↓ 1") {
		t.Errorf("topMoves(3): %q", got)
	}

	// alpha moves when both sides know it; an unknown side is no move
	known := base
	known.Alpha = 0.125
	m = [moveClasses]int{}
	for _, c := range []struct {
		from, to env.Setting
		n        int
	}{
		{known, env.Setting{KminBytes: 100_000, KmaxBytes: 1_000_000, Pmax: 0.1, HeadroomBytes: 50_000, Alpha: 0.5}, 4},
		{known, env.Setting{KminBytes: 200_000, KmaxBytes: 1_000_000, Pmax: 0.1, HeadroomBytes: 50_000, Alpha: 1.0 / 16}, 2},
		{base, env.Setting{KminBytes: 100_000, KmaxBytes: 1_000_000, Pmax: 0.1, HeadroomBytes: 50_000, Alpha: 0.5}, 9}, // alpha unknown
	} {
		for range c.n {
			m[moveClass(c.from, c.to)]++
		}
	}
	m[0] = 0
	if got, want := topMoves(&m, 3), "alpha↑ 4, kmin↑ alpha↓ 2"; got != want {
		t.Errorf("topMoves with alpha: %q, want %q", got, want)
	}
	if got := topMoves(new([moveClasses]int), 3); got != "none" {
		t.Errorf("no moves: %q", got)
	}
}

// The interval line names alpha moves.
func TestIntervalLogTopMovesAlpha(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA, kB)
	sw.set[kA], sw.set[kB] = curA, curA
	r := newRig(t, ModeShadow, false, "", sw)
	r.pol.s = target
	r.pol.s.Alpha = 0.5
	var logs strings.Builder
	r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.interval(t)
	if !strings.Contains(logs.String(), `recommend_change=2 would_apply="tune 2" rejected=none top_moves="kmin↑ kmax↑ alpha↑ 2" undecided=0`) {
		t.Errorf("interval line: %s", logs.String())
	}
}

// Counting the moves of 10,000 queues allocates nothing per queue.
func BenchmarkIntervalMoves10k(b *testing.B) {
	recs := make([]Recommendation, 10_000)
	for i := range recs {
		recs[i].Current = env.Setting{KminBytes: 100_000, KmaxBytes: 1_000_000, Pmax: 0.1}
		recs[i].Recommended = recs[i].Current
		recs[i].Recommended.KminBytes += int64(i%3) * 10_000
	}
	b.ReportAllocs()
	for b.Loop() {
		var m [moveClasses]int
		for i := range recs {
			if recs[i].Recommended != recs[i].Current {
				m[moveClass(recs[i].Current, recs[i].Recommended)]++
			}
		}
		_ = topMoves(&m, 3)
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
	r := newRig(t, ModeShadow, false, "", nil)
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
	r := newRig(t, ModeShadow, false, "", nil)
	r.a.o.Policy = undecidedPolicy{reason: "schedule step 2 (from 3h): hold: counters over 10s, outside the decision intervals the model was validated for (200µs to 1s)",
		held: policy.HoldInterval}
	var logs strings.Builder
	r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.interval(t)
	if !strings.Contains(logs.String(), `undecided=2`) || !strings.Contains(logs.String(), `msg="the policy holds queues: counters over 10s, outside`) {
		t.Errorf("interval lines: %s", logs.String())
	}
}
