package journal

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// Stored recommendations fill their pages: their keys run in time order,
// and at bbolt's default fill a page split left pages a third full (2 KB
// of pages for each 0.65 KB record, 3.4 KB of file for a 0.95 KB one on a
// shadow agent). Pages now hold at most 1.5 times what they store.
func TestRecommendationPagesFilled(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.db")
	j, err := OpenJournal(p, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UnixNano()
	n := 0
	for i := 0; i < 300; i++ {
		var recs []core.Recommendation
		for q := 0; q < 48; q++ {
			k := env.QueueKey{Target: "leaf0", Port: "Ethernet" + string(rune('0'+q%10)) + string(rune('0'+q/10)), Queue: 3}
			recs = append(recs, core.Recommendation{Key: k, TimeNs: t0 + int64(i)*1e9, Reason: "the policy asks for a tighter setting on a busy queue: confidence 0.45, lead 0.12",
				Current: env.Setting{KminBytes: 400000, KmaxBytes: 1600000, Pmax: 0.2}, Recommended: env.Setting{KminBytes: 300000, KmaxBytes: 1200000, Pmax: 0.1},
				Metrics: env.Metrics{Util: 0.5, MarkFrac: 0.01}})
			n++
		}
		if err := j.PutRecommendations(recs); err != nil {
			t.Fatal(err)
		}
	}
	var st bolt.BucketStats
	var vb int
	j.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecs)
		st = b.Stats()
		b.ForEach(func(k, v []byte) error { vb += len(v); return nil })
		return nil
	})
	j.Close()
	fi, _ := os.Stat(p)
	if ratio := float64(st.LeafAlloc) / float64(vb); ratio > 1.5 {
		t.Errorf("leaf pages %.2f times the records they hold", ratio)
	}
	t.Logf("recs %d, value bytes/rec %.0f, leaf alloc/rec %.0f, leaf inuse/rec %.0f, file/rec %.0f", n, float64(vb)/float64(n),
		float64(st.LeafAlloc)/float64(n), float64(st.LeafInuse)/float64(n), float64(fi.Size())/float64(n))
}
