package journal

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// With a limit, the newest recommendations since a time come back oldest
// first, as without one, read from the newest back: only they are decoded
// (a request for one row decoded the whole window), so a damaged older
// record does not stop them either.
func TestRecommendationsNewestWithinLimit(t *testing.T) {
	j, err := OpenJournal(filepath.Join(t.TempDir(), "agent.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for ts := int64(1); ts <= 5; ts++ {
		var recs []core.Recommendation
		for _, tg := range []string{"a", "b"} {
			recs = append(recs, core.Recommendation{TimeNs: ts * 1000, Key: env.QueueKey{Target: tg, Port: "Ethernet0", Queue: 3}})
		}
		if err := j.PutRecommendations(recs); err != nil {
			t.Fatal(err)
		}
	}
	all, err := j.Recommendations("a", 2000, 0)
	if err != nil || len(all) != 4 {
		t.Fatalf("without a limit: %d, %v", len(all), err)
	}
	got, err := j.Recommendations("a", 2000, 3)
	if err != nil || len(got) != 3 || got[0].TimeNs != 3000 || got[2].TimeNs != 5000 || got[0].Key.Target != "a" {
		t.Fatalf("limit 3: %+v, %v", got, err)
	}
	if got, err = j.Recommendations("", 4000, 10); err != nil || len(got) != 4 || got[0].TimeNs != 4000 {
		t.Fatalf("limit past the window: %+v, %v", got, err)
	}
}

// StreamRecommendations gives the rows Recommendations gives, in order,
// across its chunks (a chunk per read transaction), with a target, a
// since and a limit that cut inside a chunk.
func TestStreamRecommendationsAcrossChunks(t *testing.T) {
	j, err := OpenJournal(filepath.Join(t.TempDir(), "agent.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	const intervals, perTarget = 30, 150 // 9,000 rows: several chunks
	for ts := int64(1); ts <= intervals; ts++ {
		var recs []core.Recommendation
		for _, tg := range []string{"a", "b"} {
			for p := 0; p < perTarget; p++ {
				recs = append(recs, core.Recommendation{TimeNs: ts * 1000, Key: env.QueueKey{Target: tg, Port: fmt.Sprintf("Ethernet%d", p), Queue: 3}})
			}
		}
		if err := j.PutRecommendations(recs); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		target       string
		since        int64
		limit, count int
	}{
		{"", 0, 0, 2 * intervals * perTarget},
		{"a", 0, 0, intervals * perTarget},
		{"b", 3000, 2500, 2500},
		{"", 7000, 0, 2 * (intervals - 6) * perTarget},
		{"", 0, RecommendationChunk + 1, RecommendationChunk + 1},
		{"a", 31000, 0, 0},
	} {
		var got []core.Recommendation
		err := j.StreamRecommendations(tc.target, tc.since, tc.limit, func(r core.Recommendation) error {
			got = append(got, r)
			return nil
		})
		if err != nil || len(got) != tc.count {
			t.Fatalf("%+v: %d rows, %v", tc, len(got), err)
		}
		last := int64(0)
		for _, r := range got {
			if r.TimeNs < last || r.TimeNs < tc.since || (tc.target != "" && r.Key.Target != tc.target) {
				t.Fatalf("%+v: row %+v out of order or outside the query", tc, r)
			}
			last = r.TimeNs
		}
		if tc.limit > 0 && len(got) > 0 && got[len(got)-1].TimeNs != intervals*1000 {
			t.Fatalf("%+v: the newest row is not the last given: %d", tc, got[len(got)-1].TimeNs)
		}
	}
}
