package web

import (
	"fmt"
	"testing"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// The recommendations table puts the changes the guard lets through first:
// 60 recommendations differing from the switch, 59 of them held by the
// guard at confidence 0.9 and the one let through at 0.5, keep the one
// let through within the 50 shown, at the top (it was sorted by
// recommended != current alone and cut behind the rejected ones).
func TestRankRecommendationsChangesFirst(t *testing.T) {
	cur := env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2}
	rec := env.Setting{KminBytes: 200_000, KmaxBytes: 800_000, Pmax: 0.2}
	var recs []core.Recommendation
	for i := range 60 {
		r := core.Recommendation{Key: env.QueueKey{Target: "leaf0", Port: fmt.Sprintf("Ethernet%d", i), Queue: 3},
			Current: cur, Recommended: rec, Confidence: 0.9, Guard: "min-hold"}
		if i == 59 {
			r.Confidence, r.Guard, r.Changes = 0.5, "", true
		}
		recs = append(recs, r)
	}
	recs = append(recs, core.Recommendation{Key: env.QueueKey{Target: "leaf0", Port: "Ethernet99", Queue: 3},
		Current: cur, Recommended: cur, Confidence: 1})
	got := rankRecommendations(recs, 50)
	if len(got) != 50 || !got[0].Changes || got[0].Key.Port != "Ethernet59" {
		t.Fatalf("first of %d: %+v; want the change the guard lets through (Ethernet59)", len(got), got[0])
	}
	for _, r := range got[1:] {
		if r.Changes || r.Recommended == r.Current {
			t.Errorf("%v after the change let through: changes %v, recommended %+v; want the held differing ones next", r.Key, r.Changes, r.Recommended)
		}
	}
}
