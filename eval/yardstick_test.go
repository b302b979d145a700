package eval

import (
	"math"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
)

// TestYardstickJudgesAsRunAll: a (stateless) policy judged against a yardstick gets
// the comparison RunAll with Frontier gives it (the same fixed settings,
// seeds and runs), a policy that is one of the fixed settings under
// another name scores at most 1, and a fixed setting's name is refused.
func TestYardstickJudgesAsRunAll(t *testing.T) {
	scs := []Scenario{tiny()}
	opt := Options{Seeds: 2, Workers: 2, Interval: 100 * simenv.Microsecond, OracleCatalogue: [][3]int{{0, 0, 1}, {8, 0, 1}, {12, 0, 1}}}
	want, err := RunAll(scs, []string{"builtin"}, Options{Seeds: opt.Seeds, Workers: 2, Interval: opt.Interval,
		OracleCatalogue: opt.OracleCatalogue, Frontier: true})
	if err != nil {
		t.Fatal(err)
	}
	y, err := NewYardstick(scs, opt)
	if err != nil {
		t.Fatal(err)
	}
	// a policy that keeps state between decisions would share it across
	// the runs: refused
	ad, err := policy.Lookup("adaptive")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := y.Judge(ad, "adaptive"); err == nil || !strings.Contains(err.Error(), "keeps state") {
		t.Fatalf("adaptive judged: %v", err)
	}
	bi, err := policy.Lookup("builtin")
	if err != nil {
		t.Fatal(err)
	}
	j, err := y.Judge(bi, "builtin")
	if err != nil {
		t.Fatal(err)
	}
	wc := want.Compare("builtin")
	if len(j.Comparisons) != 1 || len(wc) != 1 {
		t.Fatalf("comparisons: %d judged, %d by RunAll", len(j.Comparisons), len(wc))
	}
	got, exp := j.Comparisons[0], wc[0]
	if got.Frontier != exp.Frontier || got.FrontierRatio != exp.FrontierRatio || got.PairedVsFrontier != exp.PairedVsFrontier {
		t.Fatalf("judged %s %.4f %+v, RunAll %s %.4f %+v", got.Frontier, got.FrontierRatio, got.PairedVsFrontier,
			exp.Frontier, exp.FrontierRatio, exp.PairedVsFrontier)
	}
	if fr := exp.FrontierRatio; fr > 0 && math.Abs(j.Score-fr) > 1e-12 || j.Worst != j.Score || j.WorstScenario != "tiny" {
		t.Fatalf("score %.4f worst %.4f (%s), frontier ratio %.4f", j.Score, j.Worst, j.WorstScenario, exp.FrontierRatio)
	}

	// The hpcc preset under another name: its own runs are on the
	// frontier, so nothing fixed beats it at its goodput.
	hp, err := policy.Lookup("static:hpcc")
	if err != nil {
		t.Fatal(err)
	}
	same, err := y.Judge(policy.FixedSetting("same-as-hpcc", settingOf(t, hp)), "same-as-hpcc")
	if err != nil {
		t.Fatal(err)
	}
	if same.Score > 1+1e-12 {
		t.Fatalf("a fixed setting judged against itself scores %.4f", same.Score)
	}
	if _, err := y.Judge(hp, "static:hpcc"); err == nil {
		t.Fatal("a fixed setting's name was accepted")
	}

	// a yardstick built for the step judges as a step
	opt.FrontierShape = FrontierStep
	ys, err := NewYardstick(scs, opt)
	if err != nil {
		t.Fatal(err)
	}
	js, err := ys.Judge(bi, "builtin")
	if err != nil {
		t.Fatal(err)
	}
	want.FrontierShape = FrontierStep
	if got, exp := js.Comparisons[0], want.Compare("builtin")[0]; got.FrontierShape != FrontierStep || got.Frontier != exp.Frontier || got.FrontierRatio != exp.FrontierRatio {
		t.Fatalf("a step yardstick judged %s %s %.4f, RunAll's step %s %.4f", got.FrontierShape, got.Frontier, got.FrontierRatio, exp.Frontier, exp.FrontierRatio)
	}
}

// settingOf is the setting a fixed policy decides.
func settingOf(t *testing.T, p policy.Policy) env.Setting {
	t.Helper()
	d := p.Decide([]env.Observation{{RateBps: 100e9, Current: env.Setting{KminBytes: 1, KmaxBytes: 2, Pmax: 0.5}}})
	if len(d) != 1 {
		t.Fatal("no decision")
	}
	return d[0].Setting
}
