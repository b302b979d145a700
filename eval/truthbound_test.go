package eval

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/gym"
)

// TestTruthBound: a truth: bound whose two policies agree plays exactly
// as that policy (reading the truth changes no run); with two different
// ones it plays as neither, and each queue's decision follows whether a
// small flow crosses it.
func TestTruthBound(t *testing.T) {
	tight, loose := "fixed:40KB/100KB/100%", "fixed:400KB/1600KB/20%"
	same := "truth:small=" + loose + ";else=" + loose
	mixed := "truth:small=" + tight + ";else=" + loose
	res, err := RunAll([]Scenario{tiny()}, []string{loose, tight, same, mixed}, Options{Seeds: 2, Interval: 100 * simenv.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 2; s++ {
		l, ti, sm, mx := res.Runs[s], res.Runs[2+s], res.Runs[4+s], res.Runs[6+s]
		if sm.Policy != same || sm.SmallP99 != l.SmallP99 || sm.LargeGoodputGbps != l.LargeGoodputGbps || sm.MarkRate != l.MarkRate {
			t.Fatalf("seed %d: %s played %+v, %s %+v", s, same, sm, loose, l)
		}
		if mx.MarkRate == l.MarkRate || mx.MarkRate == ti.MarkRate {
			t.Fatalf("seed %d: %s marked %g, as one of its policies (%g, %g)", s, mixed, mx.MarkRate, l.MarkRate, ti.MarkRate)
		}
	}

	b, err := parseTruthBound(mixed, policy.Lookup)
	if err != nil {
		t.Fatal(err)
	}
	obs := make([]env.Observation, 2)
	for i := range obs {
		obs[i] = env.Observation{Valid: true, RateBps: 100e9}
	}
	b.truth = [][]float32{make([]float32, gym.NumTruthFeatures), make([]float32, gym.NumTruthFeatures)}
	b.truth[1][gym.TruthActiveSmall] = 0.7 // log(1+1)
	ds := b.Decide(obs)
	if ds[0].Setting.KmaxBytes != 1_600_000 || ds[1].Setting.KmaxBytes != 100_000 || !strings.HasPrefix(ds[1].Reason, "small flows crossing") {
		t.Fatalf("decisions %+v", ds)
	}

	for spec, want := range map[string]string{
		"truth:small=static:hpcc":                      "both",
		"truth:small=static:hpcc;else=static:nope":     `else: `,
		"truth:small=static:hpcc;small=static:hpcc":    "each once",
		"truth:small=static:hpcc;else=":                "want small=SPEC;else=SPEC",
		"truth:busy=static:hpcc;else=static:hpcc":      "each once",
		"truth:small=static:hpcc;else=static:hpcc;x=1": "each once",
	} {
		if _, err := RunAll([]Scenario{tiny()}, []string{spec}, Options{Seeds: 1}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to mention %q", spec, err, want)
		}
	}
}
