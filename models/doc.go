// Package models is ecntune's model registry: trained weights and their provenance in one bbolt file.
// Open it, Put a trained Model, Promote it and Resolve "NAME" to load it; Load does one read alone.
//
// Each stored version records its name and version, algorithm, the
// observation and action spec versions it was trained with, hyper-parameters,
// training scenarios (with the sha256 of each file), seed, workers,
// evaluation results, creation time (given by the caller: the package never
// reads a clock), the weights and their sha256, a status (candidate,
// promoted, retired) and the version it was resumed from.
//
// Per name at most one version is promoted. Promote and Rollback keep a
// history; Rollback returns to the version promoted before. Versions are
// addressed as "name", "name@3", "name@promoted", "name@latest" or by their
// numeric id, which is unique and never reused within a database.
//
// Integrity: every read of weights checks their sha256; Open checks the
// bbolt meta pages and file length itself before bbolt maps the file, walks
// every page once, and turns any panic or memory fault inside bbolt into an
// ErrCorrupt naming the file. Writes are bbolt transactions, so a failed
// write leaves the previous state. Export files are self-describing and
// carry a sha256 over all their bytes; Import verifies a whole file before
// it writes anything.
//
// One process at a time may open a registry writable; others get ErrLocked
// after Options.Timeout instead of waiting forever. Read-only opens share
// the file with other readers.
//
// The registry also keeps the latest training checkpoint per run, replaced
// atomically, for resuming a training run.
//
// Errors name the file, model or field they are about and wrap one of the
// Err values (ErrNotFound, ErrExists, ErrInvalid, ErrCorrupt, ErrLocked,
// ...): test for them with errors.Is.
package models
