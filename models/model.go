package models

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Status is where a model version stands in its life cycle.
type Status string

const (
	// StatusCandidate is a freshly stored or imported version, not in use.
	StatusCandidate Status = "candidate"
	// StatusPromoted is the one version of a name that policies load.
	StatusPromoted Status = "promoted"
	// StatusRetired is a version that was promoted once and has been
	// replaced by a later promotion or rolled back.
	StatusRetired Status = "retired"
)

func (s Status) valid() bool {
	return s == StatusCandidate || s == StatusPromoted || s == StatusRetired
}

// ScenarioRef names one scenario file a model was trained on and the sha256
// of that file's bytes, so a later reader can tell whether the scenario
// still says what it said at training time.
type ScenarioRef struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// Model is one stored version of a trained policy together with its
// provenance. Weights are opaque bytes to the registry; the policy package
// owns their encoding.
type Model struct {
	// ID is assigned by the registry on Put or Import: monotonic per
	// database, never reused.
	ID uint64 `json:"id"`
	// Name groups the versions of one model, e.g. "ddqn-default". It starts
	// with a letter and holds letters, digits, '.', '_' and '-' (at most 64).
	Name string `json:"name"`
	// Version counts from 1 per name; 0 on Put means "next free version".
	Version int `json:"version"`
	// Algorithm is the learning algorithm, e.g. "ddqn" or "ppo".
	Algorithm string `json:"algorithm"`
	// ObsSpec and ActSpec are the observation and action spec versions the
	// model was trained with (see CheckSpec).
	ObsSpec string `json:"obs_spec"`
	ActSpec string `json:"act_spec"`
	// Hyper holds the hyper-parameters as text, e.g. {"lr": "0.0005"}.
	// Most only record how the model was made; HyperPreferenceScale also
	// says how it is run.
	Hyper map[string]string `json:"hyper,omitempty"`
	// Scenarios are the training scenarios with the sha256 of their files.
	Scenarios []ScenarioRef `json:"scenarios,omitempty"`
	Seed      int64         `json:"seed"`
	Workers   int           `json:"workers"`
	// Eval holds evaluation results as a JSON object (or is empty).
	Eval json.RawMessage `json:"eval,omitempty"`
	// Created is given by the caller; the registry never reads a clock.
	Created time.Time `json:"created"`
	// WeightsSHA256 is the hex sha256 of Weights, computed on Put and
	// verified on every read of the weights.
	WeightsSHA256 string `json:"weights_sha256"`
	// WeightsSize is len(Weights), recorded so listings need not load them.
	WeightsSize int64 `json:"weights_size"`
	// Status is candidate, promoted or retired; Put stores candidates only.
	Status Status `json:"status"`
	// Parent is the "name@version" this model was resumed from, if any.
	Parent string `json:"parent,omitempty"`
	// Weights are the opaque model weights. They are not part of the JSON
	// metadata; List and Info leave them nil.
	Weights []byte `json:"-"`
	// Damaged is set by List when the stored weights fail their sha256
	// (never stored; such a model is neither loaded nor promoted).
	Damaged bool `json:"-"`
}

// Ref is the model's "name@version" reference.
func (m Model) Ref() string { return m.Name + "@" + strconv.Itoa(m.Version) }

// Limits on metadata fields, to keep records and export headers bounded.
const (
	maxNameLen     = 64
	maxVersion     = 1 << 30
	maxFieldLen    = 256
	maxHyper       = 256
	maxScenarios   = 1024
	maxEvalBytes   = 1 << 20
	maxWeightBytes = 1<<31 - 2 // bbolt's largest value
)

// KnownAlgorithms are the learning algorithms whose models this build can
// load; Import refuses others (Put, the training run's own path, does not
// judge).
var KnownAlgorithms = []string{"ddqn", "ppo"}

var (
	specRE = regexp.MustCompile(`^[a-z][a-z0-9]*-v[0-9]+$`)
	nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._-]{0,63}$`)
	hexRE  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ValidName reports whether name can name a model: it starts with a letter
// and holds up to 64 letters, digits, '.', '_' or '-'. Names never look
// like numeric IDs, so Resolve can tell the two apart.
func ValidName(name string) bool { return nameRE.MatchString(name) }

func checkName(name string) error {
	if !ValidName(name) {
		return errorf(ErrInvalid, "model name %q: want a letter followed by up to %d letters, digits, '.', '_' or '-'",
			name, maxNameLen-1)
	}
	return nil
}

func checkText(field, v string, required bool) error {
	if required && strings.TrimSpace(v) == "" {
		return errorf(ErrInvalid, "field %s is required", field)
	}
	if len(v) > maxFieldLen {
		return errorf(ErrInvalid, "field %s is %d bytes long, at most %d allowed", field, len(v), maxFieldLen)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return errorf(ErrInvalid, "field %s holds control character %q", field, r)
		}
	}
	return nil
}

// validateMeta checks every metadata field except ID, Status and the
// weights digest, which the registry fills in itself.
func validateMeta(m *Model) error {
	if err := checkName(m.Name); err != nil {
		return err
	}
	if m.Version < 0 || m.Version > maxVersion {
		return errorf(ErrInvalid, "model %s: field version is %d, want 0 (next free) or 1..%d", m.Name, m.Version, maxVersion)
	}
	wrap := func(err error) error {
		if err == nil {
			return nil
		}
		return fmt.Errorf("model %s: %w", m.Name, err)
	}
	if err := wrap(checkText("algorithm", m.Algorithm, true)); err != nil {
		return err
	}
	if err := wrap(checkText("obs_spec", m.ObsSpec, true)); err != nil {
		return err
	}
	if err := wrap(checkText("act_spec", m.ActSpec, true)); err != nil {
		return err
	}
	if len(m.Hyper) > maxHyper {
		return errorf(ErrInvalid, "model %s: %d hyper-parameters, at most %d allowed", m.Name, len(m.Hyper), maxHyper)
	}
	for k, v := range m.Hyper {
		if err := wrap(checkText("hyper key", k, true)); err != nil {
			return err
		}
		if len(v) > maxFieldLen*16 {
			return errorf(ErrInvalid, "model %s: hyper-parameter %q is %d bytes long, at most %d allowed", m.Name, k, len(v), maxFieldLen*16)
		}
	}
	if len(m.Scenarios) > maxScenarios {
		return errorf(ErrInvalid, "model %s: %d scenarios, at most %d allowed", m.Name, len(m.Scenarios), maxScenarios)
	}
	for i, s := range m.Scenarios {
		if err := wrap(checkText(fmt.Sprintf("scenarios[%d].name", i), s.Name, true)); err != nil {
			return err
		}
		if !hexRE.MatchString(s.SHA256) {
			return errorf(ErrInvalid, "model %s: field scenarios[%d].sha256 is %q, want 64 lower-case hex digits", m.Name, i, s.SHA256)
		}
	}
	if m.Workers < 0 {
		return errorf(ErrInvalid, "model %s: field workers is %d, want 0 or more", m.Name, m.Workers)
	}
	if len(m.Eval) > 0 {
		if len(m.Eval) > maxEvalBytes {
			return errorf(ErrInvalid, "model %s: field eval is %d bytes, at most %d allowed", m.Name, len(m.Eval), maxEvalBytes)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(m.Eval, &obj); err != nil || obj == nil {
			return errorf(ErrInvalid, "model %s: field eval must be a JSON object", m.Name)
		}
	}
	if m.Created.IsZero() {
		return errorf(ErrInvalid, "model %s: field created is required (the caller passes the creation time)", m.Name)
	}
	if m.Parent != "" {
		if _, ver, err := splitRef(m.Parent); err != nil || ver <= 0 {
			return errorf(ErrInvalid, "model %s: field parent is %q, want name@version", m.Name, m.Parent)
		}
	}
	if len(m.Weights) == 0 {
		return errorf(ErrInvalid, "model %s: no weights", m.Name)
	}
	if len(m.Weights) > maxWeightBytes {
		return errorf(ErrInvalid, "model %s: weights are %d bytes, at most %d allowed", m.Name, len(m.Weights), maxWeightBytes)
	}
	return nil
}

// digest is the lower-case hex sha256 of b.
func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// splitRef parses "name" (version 0) or "name@N" (version N). Special
// selectors after '@' ("promoted", "latest") come back as version -1 and
// -2. A reference that is all digits (or "#" and digits) is an ID and comes
// back with an empty name and the ID in id.
func splitRef(ref string) (name string, version int, err error) {
	name, sel, hasAt := strings.Cut(ref, "@")
	if err := checkName(name); err != nil {
		return "", 0, errorf(ErrInvalid, "reference %q: want name, name@N, name@promoted, name@latest or a numeric id", ref)
	}
	if !hasAt {
		return name, 0, nil
	}
	switch sel {
	case "promoted":
		return name, selPromoted, nil
	case "latest":
		return name, selLatest, nil
	}
	n, perr := strconv.Atoi(sel)
	if perr != nil || n <= 0 || strings.HasPrefix(sel, "+") {
		return "", 0, errorf(ErrInvalid, "reference %q: version %q is not a positive number, \"promoted\" or \"latest\"", ref, sel)
	}
	return name, n, nil
}

const (
	selPromoted = -1
	selLatest   = -2
)

// parseID recognises an ID reference: digits, optionally after '#'.
func parseID(ref string) (uint64, bool) {
	s := strings.TrimPrefix(ref, "#")
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, false
	}
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, false
	}
	return id, true
}

// SpecError says that a model was trained for other observation or action
// spec versions than the running code speaks.
type SpecError struct {
	Model                    string // name@version
	ModelObs, ModelAct       string
	RunningObs, RunningAct   string
	ObsMismatch, ActMismatch bool
}

func (e *SpecError) Error() string {
	var parts []string
	if e.ObsMismatch {
		parts = append(parts, fmt.Sprintf("observation spec %s, this ecntune speaks %s", e.ModelObs, e.RunningObs))
	}
	if e.ActMismatch {
		parts = append(parts, fmt.Sprintf("action spec %s, this ecntune speaks %s", e.ModelAct, e.RunningAct))
	}
	return fmt.Sprintf("model %s was trained with %s: retrain or use a matching release", e.Model, strings.Join(parts, "; and "))
}

// Is lets errors.Is(err, ErrSpecMismatch) match a *SpecError.
func (e *SpecError) Is(target error) bool { return target == ErrSpecMismatch }

// CheckSpec returns a *SpecError when m was trained with observation or
// action spec versions other than obsSpec and actSpec, the versions the
// running code speaks; nil when both match.
func CheckSpec(m Model, obsSpec, actSpec string) error {
	e := &SpecError{
		Model:    m.Ref(),
		ModelObs: m.ObsSpec, ModelAct: m.ActSpec,
		RunningObs: obsSpec, RunningAct: actSpec,
		ObsMismatch: m.ObsSpec != obsSpec,
		ActMismatch: m.ActSpec != actSpec,
	}
	if !e.ObsMismatch && !e.ActMismatch {
		return nil
	}
	return e
}

// CheckSpecIn is CheckSpec for code that reads several specs: obsSpecs
// and actSpecs list those it accepts, its own first (named in the error).
func CheckSpecIn(m Model, obsSpecs, actSpecs []string) error {
	if len(obsSpecs) == 0 || len(actSpecs) == 0 {
		return fmt.Errorf("model %s: no spec to check against: %w", m.Ref(), ErrInvalid)
	}
	e := &SpecError{
		Model:    m.Ref(),
		ModelObs: m.ObsSpec, ModelAct: m.ActSpec,
		RunningObs: obsSpecs[0], RunningAct: actSpecs[0],
		ObsMismatch: !slices.Contains(obsSpecs, m.ObsSpec),
		ActMismatch: !slices.Contains(actSpecs, m.ActSpec),
	}
	if !e.ObsMismatch && !e.ActMismatch {
		return nil
	}
	return e
}

// Errors the registry wraps; test for them with errors.Is.
var (
	// ErrNotFound: no such model, version, name or checkpoint.
	ErrNotFound = errors.New("not found")
	// ErrExists: the name@version is already taken.
	ErrExists = errors.New("already exists")
	// ErrInvalid: a field or argument is out of range.
	ErrInvalid = errors.New("invalid")
	// ErrCorrupt: a database or export file failed a consistency or
	// checksum test.
	ErrCorrupt = errors.New("corrupt")
	// ErrLocked: another process holds the database.
	ErrLocked = errors.New("database locked by another process")
	// ErrNoRegistry: the database file does not exist.
	ErrNoRegistry = errors.New("no registry")
	// ErrPromoted: the operation would remove the promoted version.
	ErrPromoted = errors.New("version is promoted")
	// ErrReadOnly: a write on a registry opened read-only.
	ErrReadOnly = errors.New("registry opened read-only")
	// ErrSpecMismatch: see SpecError.
	ErrSpecMismatch = errors.New("spec version mismatch")
	// ErrConflict: a conditional write found the stored value changed by
	// another process (see SwapCheckpoint).
	ErrConflict = errors.New("changed by another process")
	// ErrClosed: the registry was closed.
	ErrClosed = errors.New("registry closed")
)

// regError is an error of one of the kinds above whose message stands on
// its own (no "not found: " prefix); errors.Is matches its kind.
type regError struct {
	kind error
	msg  string
}

func (e *regError) Error() string        { return e.msg }
func (e *regError) Is(target error) bool { return target == e.kind }

func errorf(kind error, format string, a ...any) error {
	return &regError{kind: kind, msg: fmt.Sprintf(format, a...)}
}

// HyperPreferenceScale is the hyper-parameter of a model trained
// conditioned on the operator's preference (train.Config.PreferenceScale,
// a number > 0): its network reads the preference, in [-1, 1], as one
// more input after the observation's features.
const HyperPreferenceScale = "preference_scale"
