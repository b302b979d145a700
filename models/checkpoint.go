package models

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// Checkpoint is the latest saved training state of one run, for resume.
// State is opaque to the registry (the trainer owns its encoding).
type Checkpoint struct {
	Run   string
	Step  int
	State []byte
	// SHA256 is the stored sha256 of the state and Size its length in
	// bytes. Damaged is set by Checkpoints when the stored record is too
	// short or its state fails that sha256 (it can still be deleted).
	SHA256  [sha256.Size]byte
	Size    int
	Damaged bool
}

// A stored checkpoint is step (uint64, big-endian), the sha256 of the
// state (32 bytes), then the state.
const checkpointHeader = 8 + sha256.Size

// encodeCheckpoint vets run and step and lays out the stored record.
func encodeCheckpoint(run string, step int, state []byte) ([]byte, error) {
	if !ValidName(run) {
		return nil, errorf(ErrInvalid, "checkpoint run name %q: want a letter followed by up to %d letters, digits, '.', '_' or '-'", run, maxNameLen-1)
	}
	if step < 0 {
		return nil, errorf(ErrInvalid, "checkpoint of run %s: step %d, want 0 or more", run, step)
	}
	if len(state) > maxWeightBytes-checkpointHeader {
		return nil, errorf(ErrInvalid, "checkpoint of run %s: state is %d bytes, at most %d allowed", run, len(state), maxWeightBytes-checkpointHeader)
	}
	v := make([]byte, checkpointHeader+len(state))
	binary.BigEndian.PutUint64(v, uint64(step))
	sum := sha256.Sum256(state)
	copy(v[8:], sum[:])
	copy(v[checkpointHeader:], state)
	return v, nil
}

// decodeCheckpoint reads a stored record; ok is false when it is too short
// or its state fails its sha256.
func decodeCheckpoint(run string, v []byte) (cp Checkpoint, ok bool) {
	cp = Checkpoint{Run: run, Size: len(v)}
	if len(v) < checkpointHeader {
		cp.Damaged = true
		return cp, false
	}
	step := binary.BigEndian.Uint64(v)
	copy(cp.SHA256[:], v[8:checkpointHeader])
	state := v[checkpointHeader:]
	cp.Size = len(state)
	sum := sha256.Sum256(state)
	if sum != cp.SHA256 || step > uint64(maxInt) {
		cp.Damaged = true
		return cp, false
	}
	cp.Step = int(step)
	cp.State = state
	return cp, true
}

// SaveCheckpoint stores state as the checkpoint of run at step, replacing
// the previous one in the same transaction: a reader sees the old or the
// new checkpoint, never a mix, and a failed save keeps the old one. The
// run name follows the rules of model names.
func (r *Registry) SaveCheckpoint(run string, step int, state []byte) error {
	v, err := encodeCheckpoint(run, step, state)
	if err != nil {
		return err
	}
	return r.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bktCheckpoints).Put([]byte(run), v)
	})
}

// SwapCheckpoint is SaveCheckpoint (or, with a nil state, a delete) that
// only goes ahead while the stored checkpoint of run is still the one the
// caller last read or wrote: prev is that checkpoint's sha256, or nil when
// the caller expects none. Otherwise it changes nothing and returns
// ErrConflict: another process wrote the run's checkpoint in between (two
// trainings under one run name), and neither may silently overwrite the
// other. Check and write are one transaction.
func (r *Registry) SwapCheckpoint(run string, prev *[sha256.Size]byte, step int, state []byte) error {
	var v []byte
	if state != nil {
		var err error
		if v, err = encodeCheckpoint(run, step, state); err != nil {
			return err
		}
	} else if !ValidName(run) {
		return errorf(ErrInvalid, "checkpoint run name %q", run)
	}
	return r.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bktCheckpoints)
		cur := b.Get([]byte(run))
		switch {
		case cur == nil && prev != nil:
			return errorf(ErrConflict, "checkpoint of run %s in %s was removed by another process since this run wrote it", run, r.path)
		case cur != nil && (prev == nil || len(cur) < checkpointHeader || !bytes.Equal(cur[8:checkpointHeader], prev[:])):
			step := "?"
			if cp, ok := decodeCheckpoint(run, cur); ok {
				step = strconv.Itoa(cp.Step)
			}
			return errorf(ErrConflict, "checkpoint of run %s in %s (at step %s) was written by another process since this run last read or wrote it: is another training using the same run name?", run, r.path, step)
		}
		if state == nil {
			return b.Delete([]byte(run))
		}
		return b.Put([]byte(run), v)
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
		c, ok := decodeCheckpoint(run, v)
		if !ok {
			if len(v) < checkpointHeader {
				return errorf(ErrCorrupt, "%s: checkpoint of run %s is %d bytes, shorter than its header", r.path, run, len(v))
			}
			return errorf(ErrCorrupt, "%s: checkpoint of run %s fails its sha256 check", r.path, run)
		}
		c.State = bytes.Clone(c.State)
		cp = c
		return nil
	})
	return cp, err
}

// Checkpoints lists the stored checkpoints (runs that have not finished),
// in run-name order, without their states; damaged ones are listed too, marked.
func (r *Registry) Checkpoints() ([]Checkpoint, error) {
	var out []Checkpoint
	err := r.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bktCheckpoints).ForEach(func(k, v []byte) error {
			cp, _ := decodeCheckpoint(string(k), v)
			cp.State = nil
			out = append(out, cp)
			return nil
		})
	})
	return out, err
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
