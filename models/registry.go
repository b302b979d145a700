package models

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// DefaultTimeout is how long Open waits for another process to release
// the database before it gives up with ErrLocked.
const DefaultTimeout = time.Second

// schema identifies a registry database and its layout version.
const schema = "ecntune-models/1"

// Bucket names. The layout:
//
//	registry     "schema" -> schema
//	models       id (8 bytes, big-endian) -> JSON metadata (Model without weights)
//	weights      id -> weights
//	versions     name 0x00 version (8 bytes, big-endian) -> id
//	names        name -> JSON nameState (next version, promoted, history)
//	checkpoints  run -> step (8 bytes) sha256 (32 bytes) state
var (
	bktRegistry    = []byte("registry")
	bktModels      = []byte("models")
	bktWeights     = []byte("weights")
	bktVersions    = []byte("versions")
	bktNames       = []byte("names")
	bktCheckpoints = []byte("checkpoints")
	allBuckets     = [][]byte{bktRegistry, bktModels, bktWeights, bktVersions, bktNames, bktCheckpoints}
	keySchema      = []byte("schema")
)

// Options tune Open.
type Options struct {
	// ReadOnly opens the database with a shared lock for reading: several
	// readers may hold it at once, but not while a writer does.
	ReadOnly bool
	// MustExist refuses to create a missing database file (ErrNoRegistry).
	// Read-only opens always refuse.
	MustExist bool
	// Timeout bounds the wait for another process's lock; 0 means
	// DefaultTimeout, a negative value means try once.
	Timeout time.Duration
	// NoSync skips fsync on commit: for tests and benchmarks only, a crash
	// may then lose or damage the database.
	NoSync bool
	// Vet, when set, is asked about each version Promote or Rollback is
	// about to make the promoted one (metadata only, no weights), in the
	// same transaction, with its weights; an error from it stops the
	// change. The CLI refuses with it a model whose spec versions, or
	// network, the running code cannot load.
	Vet func(Model) error
}

// Registry is a model registry in one bbolt file. Its methods are safe for
// concurrent use. Only one process may hold it writable at a time.
type Registry struct {
	path string
	db   *bolt.DB
	ro   bool
	vet  func(Model) error

	mu     sync.Mutex
	broken error // set when a write panicked: the handle is not trusted any more
}

// Event is one entry in a name's promotion history.
type Event struct {
	Seq      int       `json:"seq"`
	Action   string    `json:"action"`             // "promote", "rollback" or "delete" (of the promoted version, forced: none promoted after)
	Version  int       `json:"version"`            // the version promoted by this event
	Previous int       `json:"previous,omitempty"` // the version promoted before (0: none)
	At       time.Time `json:"at"`
}

// maxStack bounds the remembered promotions per name (rollback depth).
const maxStack = 256

// nameState is the per-name record, stored sealed (see seal) with its
// name inside, so that a changed key is detected as well as a changed
// value. A record written before seals (no name, no seal) is read as it
// is and sealed when it is next written.
type nameState struct {
	Name        string  `json:"name,omitempty"`
	NextVersion int     `json:"next_version"`
	Promoted    int     `json:"promoted,omitempty"`
	Stack       []int   `json:"stack,omitempty"` // promoted versions, oldest first; top is the current one
	History     []Event `json:"history,omitempty"`
}

// Open opens (or, unless opts say otherwise, creates) the registry at path.
// A file held by another process gives ErrLocked after opts.Timeout; a file
// that is not a registry, is truncated or damaged gives ErrCorrupt naming
// the file. Open never panics on a bad file.
func Open(path string, opts Options) (*Registry, error) {
	if path == "" {
		return nil, errorf(ErrInvalid, "empty registry path")
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	} else if timeout < 0 {
		timeout = time.Nanosecond
	}
	noRegistry := fmt.Errorf("%w at %s: train a model first, or name the registry (--db, or registry: in an agent config)", ErrNoRegistry, path)
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if opts.ReadOnly || opts.MustExist {
			return nil, noRegistry
		}
	case err != nil:
		return nil, fmt.Errorf("registry %s: %w", path, err)
	case st.IsDir():
		return nil, errorf(ErrInvalid, "registry %s is a directory, want a file", path)
	default:
		empty, err := precheck(path)
		if err != nil {
			return nil, err
		}
		if empty && (opts.ReadOnly || opts.MustExist) {
			return nil, fmt.Errorf("%w at %s (the file is empty): train a model first, or name the registry (--db, or registry: in an agent config)", ErrNoRegistry, path)
		}
	}

	db, err := openBolt(path, opts, timeout)
	if err != nil {
		return nil, err
	}
	r := &Registry{path: path, db: db, ro: opts.ReadOnly, vet: opts.Vet}
	if err := r.init(); err != nil {
		db.Close()
		return nil, err
	}
	return r, nil
}

// openBolt opens the bbolt file at path, waiting up to timeout for its
// lock. A file replaced while this process waited for the lock (Compact
// puts a new file in place of the old one, whose lock it held) is opened
// again: changes written to the old one would be lost.
func openBolt(path string, opts Options, timeout time.Duration) (*bolt.DB, error) {
	for range 8 {
		db, file, err := openBoltOnce(path, opts, timeout)
		if err != nil {
			return nil, err
		}
		if replaced(path, file) {
			db.Close()
			continue
		}
		return db, nil
	}
	return nil, fmt.Errorf("open registry %s: the file was replaced 8 times while this process waited for it", path)
}

// replaced reports whether path no longer names the open file f.
func replaced(path string, f *os.File) bool {
	if f == nil {
		return false
	}
	st, err := os.Stat(path)
	fst, ferr := f.Stat()
	return err == nil && ferr == nil && !os.SameFile(st, fst)
}

// openBoltOnce opens the bbolt file at path once, and returns its open
// file too.
func openBoltOnce(path string, opts Options, timeout time.Duration) (*bolt.DB, *os.File, error) {
	var file *os.File
	bopts := &bolt.Options{
		Timeout:  timeout,
		ReadOnly: opts.ReadOnly,
		NoSync:   opts.NoSync,
		// Space counts the freelist's pages, read-only too
		PreLoadFreelist: true,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, perm)
			file = f
			return f, err
		},
	}
	var db *bolt.DB
	err := guard(path, func() error {
		var err error
		db, err = bolt.Open(path, 0o600, bopts)
		return err
	})
	if err != nil {
		if db == nil && file != nil && errors.Is(err, ErrCorrupt) {
			file.Close() // bbolt panicked before it could clean up
		}
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			waited := "waited " + timeout.String()
			if opts.Timeout < 0 {
				waited = "did not wait"
			}
			return nil, nil, fmt.Errorf("registry %s: %w (%s): stop the other ecntune process, or name another registry (--db, or registry: in an agent config)", path, ErrLocked, waited)
		case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
			return nil, nil, errorf(ErrCorrupt, "%s is not a usable ecntune registry: %v", path, err)
		case errors.Is(err, ErrCorrupt):
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("open registry %s: %w", path, err)
	}
	return db, file, nil
}

// guard runs fn with memory faults turned into panics and turns any panic
// into an ErrCorrupt naming the file. bbolt reads pages straight from a
// memory map and trusts them, so damage it did not detect surfaces here.
func guard(path string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if p := recover(); p != nil {
			err = errorf(ErrCorrupt, "%s: the database is damaged (%v): restore it from a backup or re-import exported models", path, p)
		}
	}()
	return fn()
}

// init checks the schema (creating the buckets on a writable open of a new
// file) and walks every page of every bucket once, so damage shows at Open.
func (r *Registry) init() error {
	check := func(tx *bolt.Tx) (fresh bool, err error) {
		reg := tx.Bucket(bktRegistry)
		if reg == nil {
			ours, other := 0, 0
			_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				other++
				for _, b := range allBuckets {
					if bytes.Equal(b, name) {
						ours++
					}
				}
				return nil
			})
			switch {
			case ours > 0:
				return false, errorf(ErrCorrupt, "%s: bucket %q is missing", r.path, bktRegistry)
			case other > 0:
				return false, errorf(ErrInvalid, "%s is a bbolt database but not an ecntune model registry", r.path)
			}
			return true, nil
		}
		if got := reg.Get(keySchema); string(got) != schema {
			return false, errorf(ErrInvalid, "%s holds registry schema %q, this ecntune reads %q", r.path, got, schema)
		}
		for _, b := range allBuckets {
			if tx.Bucket(b) == nil {
				return false, errorf(ErrCorrupt, "%s: bucket %q is missing", r.path, b)
			}
		}
		return false, walkAll(tx, r.path)
	}
	if r.ro {
		return r.view(func(tx *bolt.Tx) error {
			fresh, err := check(tx)
			if err == nil && fresh {
				return fmt.Errorf("%w at %s (an empty database): train a model first, or name the registry (--db, or registry: in an agent config)", ErrNoRegistry, r.path)
			}
			return err
		})
	}
	return r.update(func(tx *bolt.Tx) error {
		fresh, err := check(tx)
		if err != nil || !fresh {
			return err
		}
		for _, b := range allBuckets {
			if _, err := tx.CreateBucket(b); err != nil {
				return fmt.Errorf("registry %s: create bucket %s: %w", r.path, b, err)
			}
		}
		return tx.Bucket(bktRegistry).Put(keySchema, []byte(schema))
	})
}

// walkAll visits every key of every bucket (touching every branch and leaf
// page) and checks that models and weights hold the same ids.
func walkAll(tx *bolt.Tx, path string) error {
	var walk func(b *bolt.Bucket, depth int) (int, error)
	walk = func(b *bolt.Bucket, depth int) (int, error) {
		if depth > 8 {
			return 0, errorf(ErrCorrupt, "%s: buckets nested deeper than the registry ever writes", path)
		}
		n := 0
		c := b.Cursor()
		var prev []byte
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if prev != nil && bytes.Compare(prev, k) >= 0 {
				return 0, errorf(ErrCorrupt, "%s: keys out of order", path)
			}
			prev = k
			n++
			if v == nil {
				sub := b.Bucket(k)
				if sub == nil {
					return 0, errorf(ErrCorrupt, "%s: nested bucket %q unreadable", path, k)
				}
				if _, err := walk(sub, depth+1); err != nil {
					return 0, err
				}
			}
		}
		return n, nil
	}
	for _, name := range allBuckets {
		if _, err := walk(tx.Bucket(name), 0); err != nil {
			return err
		}
	}
	err := tx.Bucket(bktNames).ForEach(func(k, v []byte) error {
		if _, err := decodeName(k, v); err != nil {
			return errorf(ErrCorrupt, "%s: record of model name %q: %v: restore from a backup or an export", path, k, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	mc, wc := tx.Bucket(bktModels).Cursor(), tx.Bucket(bktWeights).Cursor()
	mk, _ := mc.First()
	wk, _ := wc.First()
	for mk != nil || wk != nil {
		if !bytes.Equal(mk, wk) {
			return errorf(ErrCorrupt, "%s: model records and weights disagree (model id %s, weights id %s)", path, idString(mk), idString(wk))
		}
		mk, _ = mc.Next()
		wk, _ = wc.Next()
	}
	return nil
}

func idString(k []byte) string {
	if len(k) != 8 {
		return fmt.Sprintf("%x", k)
	}
	return fmt.Sprint(binary.BigEndian.Uint64(k))
}

// Path is the database file.
func (r *Registry) Path() string { return r.path }

// ReadOnly reports whether the registry was opened read-only.
func (r *Registry) ReadOnly() bool { return r.ro }

// Close releases the database and its lock.
func (r *Registry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.db == nil {
		return nil
	}
	err := r.db.Close()
	r.db = nil
	if err != nil {
		return fmt.Errorf("close registry %s: %w", r.path, err)
	}
	return nil
}

func (r *Registry) handle() (*bolt.DB, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.db == nil {
		return nil, fmt.Errorf("registry %s: %w", r.path, ErrClosed)
	}
	if r.broken != nil {
		return nil, r.broken
	}
	return r.db, nil
}

func (r *Registry) view(fn func(tx *bolt.Tx) error) error {
	db, err := r.handle()
	if err != nil {
		return err
	}
	return guard(r.path, func() error { return db.View(fn) })
}

func (r *Registry) update(fn func(tx *bolt.Tx) error) error {
	if r.ro {
		return fmt.Errorf("registry %s: %w: open it writable to change it", r.path, ErrReadOnly)
	}
	db, err := r.handle()
	if err != nil {
		return err
	}
	// inFlight stays true only if db.Update panicked: the handle is then no
	// longer trusted (bbolt rolled back, but its memory may be damaged).
	inFlight := false
	err = guard(r.path, func() error {
		inFlight = true
		err := db.Update(fn)
		inFlight = false
		return err
	})
	if inFlight {
		r.mu.Lock()
		r.broken = err
		r.mu.Unlock()
	}
	return err
}

func idKey(id uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, id)
	return k
}

func versionKey(name string, version int) []byte {
	k := make([]byte, len(name)+1+8)
	copy(k, name)
	binary.BigEndian.PutUint64(k[len(name)+1:], uint64(version))
	return k
}

func versionPrefix(name string) []byte { return append([]byte(name), 0) }

// loadVersion resolves ref and loads the version's metadata and its name's
// state.
func (r *Registry) loadVersion(tx *bolt.Tx, ref string) (Model, nameState, error) {
	id, err := r.resolveID(tx, ref)
	if err != nil {
		return Model{}, nameState{}, err
	}
	m, err := r.loadMeta(tx, id, false)
	if err != nil {
		return Model{}, nameState{}, err
	}
	st, _, err := r.loadName(tx, m.Name)
	return m, st, err
}

func (r *Registry) loadName(tx *bolt.Tx, name string) (nameState, bool, error) {
	v := tx.Bucket(bktNames).Get([]byte(name))
	if v == nil {
		return nameState{NextVersion: 1}, false, nil
	}
	s, err := decodeName([]byte(name), v)
	if err != nil {
		return s, false, errorf(ErrCorrupt, "%s: record of model name %s: %v: restore from a backup or an export", r.path, name, err)
	}
	return s, true, nil
}

// decodeName checks the seal of the record of the name key and decodes it.
func decodeName(key, raw []byte) (nameState, error) {
	var s nameState
	body, err := unseal(raw)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return s, err
	}
	sealed := len(body) < len(raw)
	switch {
	case sealed && s.Name != string(key):
		return s, fmt.Errorf("stored under %q but sealed for %q (a bit changed on disk)", key, s.Name)
	case !sealed && s.Name != "":
		return s, errors.New("a record with a name must be sealed (a damaged seal)")
	case s.NextVersion < 1:
		return s, fmt.Errorf("next version %d", s.NextVersion)
	}
	return s, nil
}

func saveName(tx *bolt.Tx, name string, s nameState) error {
	s.Name = name
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return tx.Bucket(bktNames).Put([]byte(name), seal(b))
}

// loadMeta reads the metadata of id; weights too when withWeights, after
// checking their size and sha256 against the record.
func (r *Registry) loadMeta(tx *bolt.Tx, id uint64, withWeights bool) (Model, error) {
	raw := tx.Bucket(bktModels).Get(idKey(id))
	if raw == nil {
		return Model{}, errorf(ErrNotFound, "no model with id %d in %s", id, r.path)
	}
	body, err := unseal(raw)
	if err != nil {
		return Model{}, errorf(ErrCorrupt, "%s: metadata of model id %d: %v: restore from a backup or an export", r.path, id, err)
	}
	var m Model
	if err := json.Unmarshal(body, &m); err != nil {
		return Model{}, errorf(ErrCorrupt, "%s: metadata of model id %d: %v", r.path, id, err)
	}
	if m.ID != id || !ValidName(m.Name) || m.Version <= 0 || !m.Status.valid() {
		return Model{}, errorf(ErrCorrupt, "%s: metadata of model id %d is inconsistent (id %d, name %q, version %d, status %q)",
			r.path, id, m.ID, m.Name, m.Version, m.Status)
	}
	if !withWeights {
		return m, nil
	}
	w, err := r.weightsOf(tx, m)
	if err != nil {
		return Model{}, err
	}
	m.Weights = bytes.Clone(w)
	return m, nil
}

// weightsOf returns m's stored weights (valid only inside tx) after
// checking them against its record: a model whose weights are missing or
// fail their sha256 check cannot run, and is never promoted.
func (r *Registry) weightsOf(tx *bolt.Tx, m Model) ([]byte, error) {
	w := tx.Bucket(bktWeights).Get(idKey(m.ID))
	if w == nil {
		return nil, errorf(ErrCorrupt, "%s: weights of model %s (id %d) are missing", r.path, m.Ref(), m.ID)
	}
	if int64(len(w)) != m.WeightsSize {
		return nil, errorf(ErrCorrupt, "%s: weights of model %s are %d bytes, the record says %d", r.path, m.Ref(), len(w), m.WeightsSize)
	}
	if got := digest(w); got != m.WeightsSHA256 {
		return nil, errorf(ErrCorrupt, "%s: weights of model %s fail their sha256 check (stored %s, computed %s): restore from a backup or an export",
			r.path, m.Ref(), m.WeightsSHA256, got)
	}
	return w, nil
}

// resolveID finds the id a reference names inside tx.
func (r *Registry) resolveID(tx *bolt.Tx, ref string) (uint64, error) {
	if id, ok := parseID(ref); ok {
		if tx.Bucket(bktModels).Get(idKey(id)) == nil {
			return 0, errorf(ErrNotFound, "no model with id %d in %s", id, r.path)
		}
		return id, nil
	}
	name, ver, err := splitRef(ref)
	if err != nil {
		return 0, err
	}
	st, known, err := r.loadName(tx, name)
	if err != nil {
		return 0, err
	}
	if !known {
		return 0, errorf(ErrNotFound, "no model named %s in %s", name, r.path)
	}
	switch ver {
	case selPromoted:
		if st.Promoted == 0 {
			return 0, errorf(ErrNotFound, "model %s has no promoted version in %s", name, r.path)
		}
		ver = st.Promoted
	case 0:
		if st.Promoted != 0 {
			ver = st.Promoted
			break
		}
		fallthrough
	case selLatest:
		c := tx.Bucket(bktVersions).Cursor()
		prefix := versionPrefix(name)
		var last []byte
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			last = k
		}
		if last == nil {
			return 0, errorf(ErrNotFound, "model %s has no versions left in %s", name, r.path)
		}
		ver = int(binary.BigEndian.Uint64(last[len(prefix):]))
	}
	v := tx.Bucket(bktVersions).Get(versionKey(name, ver))
	if v == nil {
		return 0, errorf(ErrNotFound, "model %s has no version %d in %s (next new version would be %d)", name, ver, r.path, st.NextVersion)
	}
	if len(v) != 8 {
		return 0, errorf(ErrCorrupt, "%s: index entry of %s@%d", r.path, name, ver)
	}
	return binary.BigEndian.Uint64(v), nil
}

// Put stores m as a new candidate version and returns it as stored, with
// ID, Version (when 0 was passed: the next free version of the name; a
// version is never reused, even after Delete), WeightsSHA256, WeightsSize
// and Status filled in. Any ID passed in is replaced. If m.WeightsSHA256 is
// set it must match the weights. Status must be empty or candidate:
// promotion goes through Promote.
func (r *Registry) Put(m Model) (Model, error) {
	if m.Status != "" && m.Status != StatusCandidate {
		return Model{}, errorf(ErrInvalid, "model %s: Put stores candidates, got status %q: use Promote", m.Name, m.Status)
	}
	if err := validateMeta(&m); err != nil {
		return Model{}, err
	}
	sum := digest(m.Weights)
	if m.WeightsSHA256 != "" && m.WeightsSHA256 != sum {
		return Model{}, errorf(ErrInvalid, "model %s: weights_sha256 says %s but the weights hash to %s", m.Name, m.WeightsSHA256, sum)
	}
	m.WeightsSHA256 = sum
	m.WeightsSize = int64(len(m.Weights))
	m.Status = StatusCandidate
	err := r.update(func(tx *bolt.Tx) error { return r.insert(tx, &m) })
	if err != nil {
		return Model{}, err
	}
	return m, nil
}

// testHookInsert, when set, runs at the end of insert inside the write
// transaction; tests use it to make a write fail half-way.
var testHookInsert func() error

// insert writes a validated model (weights digest filled in) in tx.
func (r *Registry) insert(tx *bolt.Tx, m *Model) error {
	st, _, err := r.loadName(tx, m.Name)
	if err != nil {
		return err
	}
	if m.Version == 0 {
		m.Version = st.NextVersion
	}
	if m.Version > maxVersion {
		// the name's versions ran to the bound (an import of a version
		// at it): a version beyond could be stored but never moved
		return errorf(ErrInvalid, "model %s: no version left: %s has reached version %d, the most a registry keeps; store it under another name", m.Name, m.Name, maxVersion)
	}
	vk := versionKey(m.Name, m.Version)
	if old := tx.Bucket(bktVersions).Get(vk); old != nil {
		return errorf(ErrExists, "model %s already exists in %s (id %s)", m.Ref(), r.path, idString(old))
	}
	if m.Version >= st.NextVersion {
		st.NextVersion = m.Version + 1
	}
	id, err := tx.Bucket(bktModels).NextSequence()
	if err != nil {
		return err
	}
	m.ID = id
	meta, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("model %s: encode metadata: %w", m.Ref(), err)
	}
	if err := tx.Bucket(bktModels).Put(idKey(id), seal(meta)); err != nil {
		return fmt.Errorf("registry %s: store model %s: %w", r.path, m.Ref(), err)
	}
	if err := tx.Bucket(bktWeights).Put(idKey(id), m.Weights); err != nil {
		return fmt.Errorf("registry %s: store weights of %s: %w", r.path, m.Ref(), err)
	}
	if err := tx.Bucket(bktVersions).Put(vk, idKey(id)); err != nil {
		return err
	}
	if err := saveName(tx, m.Name, st); err != nil {
		return err
	}
	if testHookInsert != nil {
		return testHookInsert()
	}
	return nil
}

// Get returns version version of name with its weights, verified against
// their sha256.
func (r *Registry) Get(name string, version int) (Model, error) {
	if err := checkName(name); err != nil {
		return Model{}, err
	}
	if version <= 0 {
		return Model{}, errorf(ErrInvalid, "model %s: version %d, want a positive number", name, version)
	}
	return r.Resolve(fmt.Sprintf("%s@%d", name, version))
}

// Resolve returns the model a reference names, with verified weights.
// References: "name" (the promoted version, or the latest if none is
// promoted), "name@N", "name@promoted", "name@latest", or a numeric id
// ("17" or "#17").
func (r *Registry) Resolve(ref string) (Model, error) { return r.lookup(ref, true) }

// Info is Resolve without loading or checking the weights.
func (r *Registry) Info(ref string) (Model, error) { return r.lookup(ref, false) }

func (r *Registry) lookup(ref string, withWeights bool) (Model, error) {
	var m Model
	err := r.view(func(tx *bolt.Tx) error {
		id, err := r.resolveID(tx, ref)
		if err != nil {
			return err
		}
		m, err = r.loadMeta(tx, id, withWeights)
		return err
	})
	return m, err
}

// List returns the metadata (no weights) of every version of name, oldest
// first, or of every model ordered by name and version when name is "".
// An unknown name gives ErrNotFound.
func (r *Registry) List(name string) ([]Model, error) {
	var prefix []byte
	if name != "" {
		if err := checkName(name); err != nil {
			return nil, err
		}
		prefix = versionPrefix(name)
	}
	var out []Model
	err := r.view(func(tx *bolt.Tx) error {
		if name != "" {
			if _, known, err := r.loadName(tx, name); err != nil {
				return err
			} else if !known {
				return errorf(ErrNotFound, "no model named %s in %s", name, r.path)
			}
		}
		c := tx.Bucket(bktVersions).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(v) != 8 {
				return errorf(ErrCorrupt, "%s: index entry %q", r.path, k)
			}
			id := binary.BigEndian.Uint64(v)
			m, err := r.loadMeta(tx, id, false)
			if err != nil {
				return err
			}
			// The weights are not read, but they must be there, as long
			// as the record says: a listing never shows a model that
			// cannot be loaded as if it could.
			if w := tx.Bucket(bktWeights).Get(idKey(id)); w == nil {
				return errorf(ErrCorrupt, "%s: weights of model %s (id %d) are missing", r.path, m.Ref(), id)
			} else if int64(len(w)) != m.WeightsSize || m.WeightsSize <= 0 {
				return errorf(ErrCorrupt, "%s: weights of model %s are %d bytes, the record says %d", r.path, m.Ref(), len(w), m.WeightsSize)
			} else {
				// listed as damaged, as a damaged checkpoint is (it was
				// listed as any other, only show failing)
				m.Damaged = digest(w) != m.WeightsSHA256
			}
			out = append(out, m)
		}
		return nil
	})
	return out, err
}

// History returns the promotion history of name, oldest first.
func (r *Registry) History(name string) ([]Event, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	var out []Event
	err := r.view(func(tx *bolt.Tx) error {
		st, known, err := r.loadName(tx, name)
		if err != nil {
			return err
		}
		if !known {
			return errorf(ErrNotFound, "no model named %s in %s", name, r.path)
		}
		out = st.History
		return nil
	})
	return out, err
}

// setStatus rewrites the status in one stored record.
func (r *Registry) setStatus(tx *bolt.Tx, name string, version int, s Status) error {
	v := tx.Bucket(bktVersions).Get(versionKey(name, version))
	if len(v) != 8 {
		return errorf(ErrCorrupt, "%s: model %s@%d is in the promotion record but not in the index", r.path, name, version)
	}
	id := binary.BigEndian.Uint64(v)
	m, err := r.loadMeta(tx, id, false)
	if err != nil {
		return err
	}
	m.Status = s
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return tx.Bucket(bktModels).Put(idKey(id), seal(raw))
}

// Promote makes the version ref names the promoted one of its name, at
// time at (given by the caller). The previously promoted version becomes
// retired; Rollback brings it back. Promoting the promoted version is an
// error.
func (r *Registry) Promote(ref string, at time.Time) (Model, error) {
	var m Model
	err := r.update(func(tx *bolt.Tx) error {
		var st nameState
		var err error
		if m, st, err = r.loadVersion(tx, ref); err != nil {
			return err
		}
		if st.Promoted == m.Version {
			return errorf(ErrInvalid, "model %s is already the promoted version of %s", m.Ref(), m.Name)
		}
		w, err := r.weightsOf(tx, m)
		if err != nil {
			return fmt.Errorf("promote %s: %w", m.Ref(), err)
		}
		if r.vet != nil {
			mw := m
			mw.Weights = w // the network too, not only its spec's name
			if err := r.vet(mw); err != nil {
				return fmt.Errorf("promote %s: %w", m.Ref(), err)
			}
		}
		prev := st.Promoted
		if prev != 0 {
			if err := r.setStatus(tx, m.Name, prev, StatusRetired); err != nil {
				return err
			}
		}
		if err := r.setStatus(tx, m.Name, m.Version, StatusPromoted); err != nil {
			return err
		}
		st.Promoted = m.Version
		st.Stack = append(st.Stack, m.Version)
		if len(st.Stack) > maxStack {
			st.Stack = st.Stack[len(st.Stack)-maxStack:]
		}
		st.History = append(st.History, Event{Seq: len(st.History) + 1, Action: "promote", Version: m.Version, Previous: prev, At: at.UTC()})
		m.Status = StatusPromoted
		return saveName(tx, m.Name, st)
	})
	if err != nil {
		return Model{}, err
	}
	return m, nil
}

// Rollback re-promotes the version that was promoted before the current
// one of name (or, if the promoted version was deleted with force, the
// last promoted version still present), at time at. The version rolled
// back from becomes retired. Repeated rollbacks walk further back.
func (r *Registry) Rollback(name string, at time.Time) (Model, error) {
	if err := checkName(name); err != nil {
		return Model{}, err
	}
	var m Model
	err := r.update(func(tx *bolt.Tx) error {
		st, known, err := r.loadName(tx, name)
		if err != nil {
			return err
		}
		if !known {
			return errorf(ErrNotFound, "no model named %s in %s", name, r.path)
		}
		cur := st.Promoted
		stack := st.Stack
		if cur != 0 {
			if len(stack) == 0 || stack[len(stack)-1] != cur {
				return errorf(ErrCorrupt, "%s: promotion record of %s does not end with its promoted version %d", r.path, name, cur)
			}
			stack = stack[:len(stack)-1]
		}
		for len(stack) > 0 && stack[len(stack)-1] == cur {
			stack = stack[:len(stack)-1] // a record written before Delete kept it apart
		}
		if len(stack) == 0 {
			return errorf(ErrNotFound, "model %s has no earlier promoted version to roll back to", name)
		}
		target := stack[len(stack)-1]
		v := tx.Bucket(bktVersions).Get(versionKey(name, target))
		if len(v) != 8 {
			return errorf(ErrCorrupt, "%s: model %s@%d is in the promotion record but not in the index", r.path, name, target)
		}
		if m, err = r.loadMeta(tx, binary.BigEndian.Uint64(v), false); err != nil {
			return err
		}
		w, err := r.weightsOf(tx, m)
		if err != nil {
			return fmt.Errorf("roll back %s to %s: %w", name, m.Ref(), err)
		}
		if r.vet != nil {
			mw := m
			mw.Weights = w
			if err := r.vet(mw); err != nil {
				return fmt.Errorf("roll back %s to %s: %w", name, m.Ref(), err)
			}
		}
		if cur != 0 {
			if err := r.setStatus(tx, name, cur, StatusRetired); err != nil {
				return err
			}
		}
		if err := r.setStatus(tx, name, target, StatusPromoted); err != nil {
			return err
		}
		st.Stack = stack
		st.Promoted = target
		st.History = append(st.History, Event{Seq: len(st.History) + 1, Action: "rollback", Version: target, Previous: cur, At: at.UTC()})
		if err := saveName(tx, name, st); err != nil {
			return err
		}
		m.Status = StatusPromoted
		return nil
	})
	if err != nil {
		return Model{}, err
	}
	return m, nil
}

// Delete removes the version ref names and returns its metadata. Deleting
// the promoted version is refused with ErrPromoted unless force is set;
// then the name is left without a promoted version (Rollback restores the
// one promoted before). Version numbers are not reused.
func (r *Registry) Delete(ref string, force bool) (Model, error) {
	var m Model
	err := r.update(func(tx *bolt.Tx) error {
		var st nameState
		var err error
		if m, st, err = r.loadVersion(tx, ref); err != nil {
			return err
		}
		if st.Promoted == m.Version {
			if !force {
				return errorf(ErrPromoted, "model %s is the promoted version: promote another version or roll back first, or force the delete", m.Ref())
			}
			st.Promoted = 0
			// the history says the name has no promoted version now (its
			// last line still said the deleted one was)
			st.History = append(st.History, Event{Seq: len(st.History) + 1, Action: "delete", Version: 0, Previous: m.Version, At: time.Now().UTC()})
		}
		kept := st.Stack[:0]
		for _, v := range st.Stack {
			// the version out, and a version next to itself once it is
			// out (1,2,1 is 1): a rollback would return to what runs
			if v != m.Version && (len(kept) == 0 || kept[len(kept)-1] != v) {
				kept = append(kept, v)
			}
		}
		st.Stack = kept
		for _, b := range [][]byte{bktModels, bktWeights} {
			if err := tx.Bucket(b).Delete(idKey(m.ID)); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bktVersions).Delete(versionKey(m.Name, m.Version)); err != nil {
			return err
		}
		return saveName(tx, m.Name, st)
	})
	if err != nil {
		return Model{}, err
	}
	return m, nil
}

// Load opens the registry at path read-only, resolves ref as Resolve
// does, and closes it again: one model, for callers that hold no registry
// open (a policy.ModelSource).
func Load(path, ref string) (Model, error) { return LoadWithin(path, ref, 0) }

// LoadWithin is Load waiting up to timeout for another process to release
// the file (0: DefaultTimeout): an agent starting while a compaction of a
// large registry holds it waits that out rather than failing.
func LoadWithin(path, ref string, timeout time.Duration) (Model, error) {
	reg, err := Open(path, Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		return Model{}, err // Open's errors name the file
	}
	defer reg.Close()
	return reg.Resolve(ref)
}
