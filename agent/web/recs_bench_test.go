package web

import (
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
)

// BenchmarkStoredRecommendations answers GET /recommendations for 20,000
// stored rows as `agent report` asks (limit 100,000): B/op is what one
// report costs the agent in allocations (streamed in chunks since
// 2026-12-03; before, every row decoded and indented in one buffer).
func BenchmarkStoredRecommendations(b *testing.B) {
	j, err := journal.OpenJournal(filepath.Join(b.TempDir(), "agent.db"), time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	reason := strings.Repeat("tighten: queue 1.2MB at util 93%, marks 4%; ", 3)
	for ts := int64(1); ts <= 100; ts++ {
		recs := make([]core.Recommendation, 0, 200)
		for p := 0; p < 200; p++ {
			recs = append(recs, core.Recommendation{TimeNs: ts * int64(time.Second), Key: env.QueueKey{Target: "leaf0", Port: fmt.Sprintf("Ethernet%d", p), Queue: 3},
				Policy: "builtin", Current: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 52_000},
				Recommended: env.Setting{KminBytes: 200_000, KmaxBytes: 800_000, Pmax: 0.05, HeadroomBytes: 52_000}, Confidence: 0.4, Reason: reason, Valid: true,
				Metrics: env.Metrics{IntervalNs: int64(time.Second), Util: 0.93, AvgQueueFrac: 0.9, MarkFrac: 0.04}})
		}
		if err := j.PutRecommendations(recs); err != nil {
			b.Fatal(err)
		}
	}
	clock := func() time.Time { return time.Unix(200, 0) }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := httptest.NewRecorder()
		w.Body = nil // discarded as a client reads it
		r := httptest.NewRequest("GET", "/recommendations?since=1h&limit=100000", nil)
		StoredRecommendations(discard{w}, r, j, clock)
	}
}

type discard struct{ *httptest.ResponseRecorder }

func (d discard) Write(p []byte) (int, error) { return io.Discard.Write(p) }
