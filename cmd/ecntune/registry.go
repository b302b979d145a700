package main

import (
	"crypto/sha256"
	"os"
	"time"

	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
)

// The model registry file as the commands use it: which file, policies
// and model metadata read from it, one session on it, and a training
// run's checkpoints in it.

// modelsDefaultDB is the registry file used when neither --db nor
// $ECNTUNE_DB names one: the same default the policies read.
const modelsDefaultDB = "ecntune.db"

// modelsDBPath picks the registry file: the flag, then $ECNTUNE_DB, then
// ecntune.db in the current directory.
func modelsDBPath(flag string) string {
	if flag != "" {
		return flag
	}
	if env := os.Getenv("ECNTUNE_DB"); env != "" {
		return env
	}
	return modelsDefaultDB
}

// policyResolver resolves policy specs, loading "model:NAME" from the
// registry file db (or, when db is "", from modelsDBPath's default).
// registryWait is how long loading a registry model waits for another
// process (a compaction, a trainer's checkpoint) to release the file.
const registryWait = 2 * time.Minute

func policyResolver(db string) policy.Resolver {
	path := modelsDBPath(db)
	// a compaction of a large registry holds it for many seconds (23 s for
	// 1 GB): an agent or eval starting then waits for it
	return policy.Resolver{Models: func(ref string) (models.Model, error) { return models.LoadWithin(path, ref, registryWait) }}
}

// registryModelInfo reads the metadata (not the weights) of a model from
// the registry file db (or modelsDBPath's default).
func registryModelInfo(db string) func(ref string) (models.Model, error) {
	return func(ref string) (m models.Model, err error) {
		err = withRegistry(modelsDBPath(db), models.Options{ReadOnly: true}, func(r *models.Registry) error {
			m, err = r.Info(ref) // metadata only: the algorithm is all that is needed
			return err
		})
		return m, err
	}
}

// withRegistry opens the registry at path, runs fn on it and closes it,
// keeping the first error.
func withRegistry(path string, opts models.Options, fn func(r *models.Registry) error) (err error) {
	r, err := models.Open(path, opts)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := r.Close(); err == nil {
			err = cerr
		}
	}()
	return fn(r)
}

// trainLockTimeout is how long a training run waits for another process
// holding the registry (a models command, an eval reading a model) before
// a checkpoint or the final store fails.
const trainLockTimeout = 30 * time.Second

// runRegistry is a training run's access to the registry file. It opens the
// file for each checkpoint and closes it again, so the registry stays free
// for models and eval between checkpoints of a long run. It only replaces
// the checkpoint this run last loaded or wrote (models.SwapCheckpoint): a
// second process training under the same run name is stopped with
// models.ErrConflict instead of interleaving its checkpoints with this one.
type runRegistry struct {
	path string
	last *[sha256.Size]byte // sha256 of the checkpoint this run holds; nil: none
}

// with opens the registry, runs fn and closes it, keeping the first error.
func (s *runRegistry) with(ro bool, fn func(*models.Registry) error) error {
	return withRegistry(s.path, models.Options{ReadOnly: ro, Timeout: trainLockTimeout}, fn)
}

// LoadCheckpoint implements train.Checkpointer.
func (s *runRegistry) LoadCheckpoint(run string) (cp models.Checkpoint, err error) {
	err = s.with(true, func(r *models.Registry) error {
		cp, err = r.LoadCheckpoint(run)
		return err
	})
	if err == nil {
		sum := sha256.Sum256(cp.State)
		s.last = &sum
	}
	return cp, err
}

// SaveCheckpoint implements train.Checkpointer.
func (s *runRegistry) SaveCheckpoint(run string, step int, state []byte) error {
	err := s.with(false, func(r *models.Registry) error { return r.SwapCheckpoint(run, s.last, step, state) })
	if err == nil {
		sum := sha256.Sum256(state)
		s.last = &sum
	}
	return err
}

// finish stores the trained model and removes the run's checkpoint in one
// session on the file. A checkpoint another process wrote meanwhile is
// left in place: dropped reports whether this run's own one was removed.
func (s *runRegistry) finish(m models.Model, run string) (stored models.Model, dropped bool, err error) {
	err = s.with(false, func(r *models.Registry) error {
		if stored, err = r.Put(m); err != nil {
			return err
		}
		if s.last == nil {
			return nil
		}
		if err := r.SwapCheckpoint(run, s.last, 0, nil); err != nil {
			return nil // not ours any more: keep it, the model is stored
		}
		dropped = true
		return nil
	})
	return stored, dropped, err
}
