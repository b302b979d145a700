package journal

import (
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// The counters: per queue, the cumulative counters of the last sample the
// agent saw (env.Observer.Counters), replaced as the agent runs. A
// restarted agent seeds its observer with them (env.Observer.Seed), so
// that a switch that restarted while the agent was down, whose counters
// went back, is told from one whose setting another writer changed.
var bucketCounters = []byte("counters")

// queueCounters is one queue's record in bucketCounters.
type queueCounters struct {
	Key      env.QueueKey      `json:"key"`
	Counters env.QueueCounters `json:"counters"`
}

// PutCounters stores the last counters of the queues in cs, each in place
// of the queue's previous record.
func (j *Journal) PutCounters(cs map[env.QueueKey]env.QueueCounters) error {
	if len(cs) == 0 {
		return nil
	}
	if err := j.update(func(tx *bolt.Tx) error { return putCounters(tx, cs) }); err != nil {
		return fmt.Errorf("agent db %s: counters: %w", j.path, err)
	}
	return nil
}

// PutMemoryAndCounters stores the guard's memory of queues and the queues'
// last counters in one transaction: an interval's state with one write to
// disk, not two.
func (j *Journal) PutMemoryAndCounters(mem []core.QueueMemory, cs map[env.QueueKey]env.QueueCounters) error {
	if len(mem) == 0 && len(cs) == 0 {
		return nil
	}
	err := j.update(func(tx *bolt.Tx) error {
		if err := putMemories(tx, mem); err != nil {
			return err
		}
		return putCounters(tx, cs)
	})
	if err != nil {
		return fmt.Errorf("agent db %s: guard memory and counters: %w", j.path, err)
	}
	return nil
}

// putCounters stores cs in bucketCounters within tx.
func putCounters(tx *bolt.Tx, cs map[env.QueueKey]env.QueueCounters) error {
	if len(cs) == 0 {
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(bucketCounters)
	if err != nil {
		return err
	}
	for k, c := range cs {
		key := []byte(k.String())
		v, err := sealed(key, queueCounters{Key: k, Counters: c})
		if err != nil {
			return err
		}
		if err := b.Put(key, v); err != nil {
			return err
		}
	}
	return nil
}

// Counters returns the last counters stored of every queue (PutCounters),
// and the keys of the records that fail their seal or do not decode,
// which are left out (a record left out only costs telling a restart of
// that queue's switch from its first sample).
func (j *Journal) Counters() (map[env.QueueKey]env.QueueCounters, []string, error) {
	if err := j.readable(bucketCounters); err != nil {
		return nil, nil, err
	}
	out := map[env.QueueKey]env.QueueCounters{}
	var damaged []string
	err := j.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCounters)
		if b == nil {
			return nil // a database written before the counters were kept
		}
		return b.ForEach(func(k, v []byte) error {
			var r queueCounters
			if err := unsealed(k, v, &r); err != nil || r.Key.String() != string(k) {
				damaged = append(damaged, fmt.Sprintf("%q", k))
				return nil
			}
			out[r.Key] = r.Counters
			return nil
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("agent db %s: counters: %w", j.path, err)
	}
	sort.Strings(damaged)
	return out, damaged, nil
}
