package gym

import (
	"math"
	"testing"

	"github.com/ecntune/ecntune/env"
)

// TestChangeCost: RewardWeights.Change is charged to exactly the queues
// whose ECN setting the step changed, once, and nothing else moves: the
// same seed and settings with and without it differ by the charge alone.
func TestChangeCost(t *testing.T) {
	cfg := tinyIncast()
	w0 := env.DefaultRewardWeights()
	wc := w0
	wc.Change = 0.25
	run := func(w env.RewardWeights) [][]float64 {
		e, err := New(cfg, Options{Reward: &w})
		if err != nil {
			t.Fatal(err)
		}
		obs, err := e.Reset(3)
		if err != nil {
			t.Fatal(err)
		}
		var out [][]float64
		for step := 0; step < 3; step++ {
			set := make([]env.Setting, len(obs))
			for i := range set {
				set[i] = obs[i].Current // hold
			}
			if step == 1 { // queue 2 changes Kmax, queue 5 Pmax
				set[2].KmaxBytes = obs[2].Current.KmaxBytes / 2
				set[5].Pmax = obs[5].Current.Pmax / 2
			}
			var r []float64
			obs, r, _, _, err = e.StepSettings(set)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	a, b := run(w0), run(wc)
	for step := range a {
		for i := range a[step] {
			want := 0.0
			if step == 1 && (i == 2 || i == 5) {
				want = 0.25
			}
			if d := a[step][i] - b[step][i]; math.Abs(d-want) > 1e-12 {
				t.Errorf("step %d queue %d: reward without the change cost %g, with it %g: charged %g, want %g", step, i, a[step][i], b[step][i], d, want)
			}
		}
	}
	bad := w0
	bad.Change = -1
	if err := bad.Validate(); err == nil {
		t.Fatal("a negative change weight is accepted")
	}
}
