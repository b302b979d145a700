package models

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// Checkpoint is the latest saved training state of one run, for resume.
// State is opaque to the registry (the trainer owns its encoding).
type Checkpoint struct {
	Run   string
	Step  int
	State []byte
}

// A stored checkpoint is step (uint64, big-endian), the sha256 of the
// state (32 bytes), then the state.
const checkpointHeader = 8 + sha256.Size

// SaveCheckpoint stores state as the checkpoint of run at step, replacing
// the previous one in the same transaction: a reader sees the old or the
// new checkpoint, never a mix, and a failed save keeps the old one. The
// run name follows the rules of model names.
func (r *Registry) SaveCheckpoint(run string, step int, state []byte) error {
	if !ValidName(run) {
		return errorf(ErrInvalid, "checkpoint run name %q: want a letter followed by up to %d letters, digits, '.', '_' or '-'", run, maxNameLen-1)
	}
	if step < 0 {
		return errorf(ErrInvalid, "checkpoint of run %s: step %d, want 0 or more", run, step)
	}
	if len(state) > maxWeightBytes-checkpointHeader {
		return errorf(ErrInvalid, "checkpoint of run %s: state is %d bytes, at most %d allowed", run, len(state), maxWeightBytes-checkpointHeader)
	}
	v := make([]byte, checkpointHeader+len(state))
	binary.BigEndian.PutUint64(v, uint64(step))
	sum := sha256.Sum256(state)
	copy(v[8:], sum[:])
	copy(v[checkpointHeader:], state)
	return r.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bktCheckpoints).Put([]byte(run), v)
	})
}

// LoadCheckpoint returns the latest checkpoint of run, its state verified
// against its sha256. A run without one gives ErrNotFound.
func (r *Registry) LoadCheckpoint(run string) (Checkpoint, error) {
	if !ValidName(run) {
		return Checkpoint{}, errorf(ErrInvalid, "checkpoint run name %q", run)
	}
	var cp Checkpoint
	err := r.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bktCheckpoints).Get([]byte(run))
		if v == nil {
			return errorf(ErrNotFound, "no checkpoint for run %s in %s", run, r.path)
		}
		if len(v) < checkpointHeader {
			return errorf(ErrCorrupt, "%s: checkpoint of run %s is %d bytes, shorter than its header", r.path, run, len(v))
		}
		step := binary.BigEndian.Uint64(v)
		state := v[checkpointHeader:]
		sum := sha256.Sum256(state)
		if !bytes.Equal(sum[:], v[8:checkpointHeader]) || step > uint64(maxInt) {
			return errorf(ErrCorrupt, "%s: checkpoint of run %s fails its sha256 check", r.path, run)
		}
		cp = Checkpoint{Run: run, Step: int(step), State: bytes.Clone(state)}
		return nil
	})
	return cp, err
}

// DeleteCheckpoint removes the checkpoint of run (when training finished);
// deleting a missing one is not an error.
func (r *Registry) DeleteCheckpoint(run string) error {
	if !ValidName(run) {
		return errorf(ErrInvalid, "checkpoint run name %q", run)
	}
	return r.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bktCheckpoints).Delete([]byte(run))
	})
}

const maxInt = int(^uint(0) >> 1)
