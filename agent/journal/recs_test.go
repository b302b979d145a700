package journal

import (
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
