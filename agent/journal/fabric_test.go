package journal

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

func fabricRecord(target string, ports int) env.FabricRecord {
	r := env.FabricRecord{Target: target, TimeNs: t0, BufferBytes: 32_000_000, CableMeters: 5, FrameBytes: 1048}
	for i := range ports {
		r.Ports = append(r.Ports, env.FabricPort{Name: "Ethernet" + string(rune('0'+i)), RateBps: 100e9, Peer: env.PeerHost, Queue: 3,
			Setting: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}})
	}
	return r
}

// Fabric records are kept one per target, the newest in place of the
// last; an old db has none; a damaged one is an error naming its target.
func TestFabricRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	j, err := OpenJournal(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Fabric(); !errors.Is(err, ErrNoFabric) {
		t.Fatalf("empty db: %v, want ErrNoFabric", err)
	}
	for _, r := range []env.FabricRecord{fabricRecord("spine0", 2), fabricRecord("leaf1", 3), fabricRecord("leaf1", 4)} {
		if err := j.PutFabric(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.PutFabric(env.FabricRecord{}); err == nil || !strings.Contains(err.Error(), "no target") {
		t.Fatalf("a record without a target: %v", err)
	}
	got, err := j.Fabric()
	if err != nil || len(got) != 2 || got[0].Target != "leaf1" || len(got[0].Ports) != 4 || got[1].Target != "spine0" {
		t.Fatalf("Fabric() = %+v, %v; want leaf1's newest and spine0", got, err)
	}
	j.Close()

	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketFabric)
		v := append([]byte(nil), b.Get([]byte("spine0"))...)
		v[20] ^= 1
		return b.Put([]byte("spine0"), v)
	})
	db.Close()
	r, err := OpenJournalReadOnly(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Fabric(); err == nil || !strings.Contains(err.Error(), `fabric record of "spine0"`) {
		t.Fatalf("damaged record: %v, want an error naming spine0", err)
	}
}

// A db without the recommendations bucket (another tool's, or one edited
// by hand: every agent makes it) has no stored recommendations, read
// read-only: not a damaged db ("nil pointer dereference", with the advice
// to move an intact audit log aside).
func TestNoRecommendationsBucketIsNone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	j, err := OpenJournal(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketRecs) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	r, err := OpenJournalReadOnly(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	times, err := r.RecommendationTimes(0)
	if err != nil || len(times) != 0 {
		t.Fatalf("times %v, %v", times, err)
	}
	n := 0
	if err := r.EachRecommendation(0, func(*core.Recommendation) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("each: %d, %v", n, err)
	}
	for _, limit := range []int{0, 10} { // agent recommendations
		if err := r.StreamRecommendationsWhere("", 0, limit, nil, func(core.Recommendation) error { n++; return nil }); err != nil || n != 0 {
			t.Fatalf("stream (limit %d): %d, %v", limit, n, err)
		}
	}
}
