package journal

import (
	"errors"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/ecntune/ecntune/env"
)

// The fabric records: what the agent knows of each switch's ports,
// neighbours, buffer and PFC state (env.FabricRecord), one per target,
// replaced whenever the agent writes a newer one. They are what
// `ecntune twin` builds its topology from; bounded by the targets and
// their ports.

// ErrNoFabric means the database holds no fabric record: it was written by
// an agent older than them, or before any switch sent telemetry.
var ErrNoFabric = errors.New("no fabric record")

// PutFabric stores r, sealed, in place of the target's previous record.
func (j *Journal) PutFabric(r env.FabricRecord) error {
	if err := r.Check(); err != nil {
		return fmt.Errorf("agent db %s: %w", j.path, err)
	}
	err := j.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketFabric)
		if err != nil {
			return err
		}
		k := []byte(r.Target)
		v, err := sealed(k, r)
		if err != nil {
			return err
		}
		return b.Put(k, v)
	})
	if err != nil {
		return fmt.Errorf("agent db %s: fabric record of %s: %w", j.path, r.Target, err)
	}
	return nil
}

// Fabric returns every target's fabric record, by target name. A record
// that fails its seal, does not decode or does not check is an error
// naming its target; a database without any is ErrNoFabric.
func (j *Journal) Fabric() ([]env.FabricRecord, error) {
	if err := j.readable(bucketFabric); err != nil {
		return nil, err
	}
	var out []env.FabricRecord
	var damaged []error
	err := j.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketFabric)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var r env.FabricRecord
			err := unsealed(k, v, &r)
			if err == nil && r.Target != string(k) {
				err = fmt.Errorf("the record says target %q", r.Target)
			}
			if err == nil {
				err = r.Check()
			}
			if err != nil {
				damaged = append(damaged, fmt.Errorf("fabric record of %q: %w", k, err))
				return nil
			}
			out = append(out, r)
			return nil
		})
	})
	if err == nil {
		err = errors.Join(damaged...)
	}
	if err != nil {
		return nil, fmt.Errorf("agent db %s: %w", j.path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("agent db %s: %w", j.path, ErrNoFabric)
	}
	sort.Slice(out, func(a, b int) bool { return env.NaturalCompare(out[a].Target, out[b].Target) < 0 })
	return out, nil
}
