package journal

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ecntune/ecntune/env"
)

// The counters kept replace each queue's previous record and come back
// after a reopen; a record whose seal fails is left out and named.
func TestCountersKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	j, err := OpenJournal(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if cs, damaged, err := j.Counters(); err != nil || len(cs) != 0 || len(damaged) != 0 {
		t.Fatalf("a new db: %v %v %v, want none", cs, damaged, err)
	}
	a := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	b := env.QueueKey{Target: "leaf0", Port: "Ethernet1", Queue: 3}
	if err := j.PutCounters(map[env.QueueKey]env.QueueCounters{a: {TxPkts: 1, TxBytes: 1000}, b: {TxPkts: 2}}); err != nil {
		t.Fatal(err)
	}
	if err := j.PutCounters(map[env.QueueKey]env.QueueCounters{a: {TxPkts: 9, TxBytes: 9000, PausedNs: 5}}); err != nil {
		t.Fatal(err)
	}
	if err := j.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketCounters).Put([]byte(b.String()), []byte("garbage"))
	}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if j, err = OpenJournal(path, time.Second); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	cs, damaged, err := j.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if want := (env.QueueCounters{TxPkts: 9, TxBytes: 9000, PausedNs: 5}); len(cs) != 1 || cs[a] != want {
		t.Errorf("counters %v, want %s: %+v alone", cs, a, want)
	}
	if len(damaged) != 1 || damaged[0] != `"`+b.String()+`"` {
		t.Errorf("damaged %v, want %s", damaged, b)
	}
}
