package gym

import (
	"math"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
)

// truthRun plays an episode holding every queue and keeps Truth after
// Reset and every Step.
func truthRun(t *testing.T, cfg simenv.Config, opts Options) (episode, [][][]float32, *Env) {
	t.Helper()
	e, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	var truth [][][]float32
	keep := func() {
		rows := e.Truth()
		if rows == nil {
			truth = append(truth, nil)
			return
		}
		cp := make([][]float32, len(rows))
		for i, r := range rows {
			cp[i] = append([]float32(nil), r...)
		}
		truth = append(truth, cp)
	}
	ep := runEpisode(t, e, 5, func(int, []env.Observation) []int {
		keep()
		return make([]int, len(e.Keys()))
	})
	keep()
	return ep, truth, e
}

// TestTruthCountsFlowsInFlight: on a star every flow crosses exactly one
// switch queue (the destination's host port), so the active-flow counts
// over all queues add up to the flows in flight, in their size class; a
// queue with flows in flight has a backlog; the share of time left falls
// from below 1 to 0; and asking for the truth does not change the run.
func TestTruthCountsFlowsInFlight(t *testing.T) {
	cfg := tinyIncast() // 250 KB flows: the medium class only
	plain, none, _ := truthRun(t, cfg, Options{})
	for _, rows := range none {
		if rows != nil {
			t.Fatal("Truth without Options.Truth")
		}
	}
	ep, truth, e := truthRun(t, cfg, Options{Truth: true})
	if len(truth) != len(ep.obs) {
		t.Fatalf("%d truth samples for %d observations", len(truth), len(ep.obs))
	}
	for s := range plain.rewards {
		for q := range plain.rewards[s] {
			if plain.rewards[s][q] != ep.rewards[s][q] {
				t.Fatalf("step %d queue %d: reward %g with truth, %g without", s, q, ep.rewards[s][q], plain.rewards[s][q])
			}
		}
	}
	prev := 2.0
	busy := 0
	for s, rows := range truth {
		if len(rows) != len(e.Keys()) {
			t.Fatalf("sample %d: %d rows for %d queues", s, len(rows), len(e.Keys()))
		}
		left := float64(rows[0][TruthTimeLeft])
		if !(left < prev) || left < 0 || left >= 1 {
			t.Fatalf("sample %d: time left %g after %g", s, left, prev)
		}
		prev = left
		total := 0.0
		for q, r := range rows {
			if len(r) != NumTruthFeatures {
				t.Fatalf("row of %d features", len(r))
			}
			if r[TruthActiveSmall] != 0 || r[TruthActiveLarge] != 0 || r[TruthSmallSlowdown] != 0 || r[TruthLargeSlowdown] != 0 {
				t.Fatalf("sample %d queue %s: small or large flows %v in a run of 250 KB flows", s, e.Keys()[q], r)
			}
			n := math.Expm1(float64(r[TruthActiveMedium]))
			total += n
			if (n > 0.5) != (r[TruthBacklog] > 0) {
				t.Fatalf("sample %d queue %s: %.1f flows in flight, backlog %g", s, e.Keys()[q], n, r[TruthBacklog])
			}
		}
		if s == len(truth)-1 {
			if left != 0 {
				t.Fatalf("last sample: time left %g", left)
			}
			if want := len(e.Sim().ActiveFlows(nil)); math.Abs(total-float64(want)) > 0.01 {
				t.Fatalf("last sample: %.2f flows counted over the queues, %d in flight", total, want)
			}
		}
		if total > 0.5 {
			busy++
		}
	}
	if busy < len(truth)/2 {
		t.Fatalf("flows in flight at only %d of %d samples", busy, len(truth))
	}
}

// TestTruthSlowdownIsTheRewardTerm: the finished-flow slowdown features
// are exactly what the reward's ground-truth term charges, unweighted.
func TestTruthSlowdownIsTheRewardTerm(t *testing.T) {
	cfg := leafSpineSmallIncast()
	base := env.DefaultRewardWeights()
	w := base
	w.FlowSmall = 0.5
	plain, _, _ := truthRun(t, cfg, Options{Reward: &base, Truth: true})
	ep, truth, e := truthRun(t, cfg, Options{Reward: &w, Truth: true})
	charged := 0
	for s := range ep.rewards {
		rows := truth[s+1] // the truth after step s
		for q := range ep.rewards[s] {
			if !ep.obs[s+1][q].Valid {
				continue
			}
			d := plain.rewards[s][q] - ep.rewards[s][q]
			want := w.FlowSmall * float64(rows[q][TruthSmallSlowdown])
			if math.Abs(d-want) > 1e-5 {
				t.Fatalf("step %d queue %s: reward charged %g, truth says %g", s, e.Keys()[q], d, want)
			}
			if d > 0 {
				charged++
			}
		}
	}
	if charged == 0 {
		t.Fatal("no queue was charged")
	}
}
