package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
)

var (
	bucketAudit = []byte("audit")
	bucketRecs  = []byte("recommendations")
	bucketMeta  = []byte("meta")
	bucketGuard = []byte("guard") // QueueMemory by queue key
	// bucketFabric holds one env.FabricRecord per target, by target name
	// (fabric.go).
	bucketFabric = []byte("fabric")
)

// Journal is the agent's bbolt store: the write-ahead audit log of changes
// and the shadow-mode recommendations. bbolt holds an exclusive file lock
// while the journal is open, so one agent owns a database at a time.
type Journal struct {
	db   *bolt.DB
	path string
	ro   bool

	wmu       sync.Mutex // one write transaction at a time (and its unwritten)
	mu        sync.Mutex // unwritten
	unwritten []result   // results no write could record yet (a full disk)
	repairs   []string   // what GuardMemory repaired
	// damage: the buckets a read-only open found damaged (by name: what
	// is damaged), which are not read; the audit log never is among them
	damage map[string]string

	// log: every audit entry's target, as a writable open's strict check
	// read them (index.go: the index is checked against it), until the
	// open is done
	log []logEntry
	// indexBuilt: the writable open built the index (index.go)
	indexBuilt bool

	dmu       sync.Mutex // the fields below
	swept     []byte     // the last audit key checked for damage
	damagedAt [][]byte   // the keys of the entries found damaged, in order

	// failWrite, when set, fails every write transaction before it
	// changes anything (tests: a full disk; SetWriteFault).
	failWrite func() error

	fmu    sync.Mutex // the fields below
	fails  int        // writes that failed, in all
	failN  int        // writes that failed since the last that did not
	failAt time.Time  // the first of those
	failed error      // the last of those's error
}

// SetWriteFault makes every write transaction fail with f's error (nil f:
// none) before it changes anything, as a full disk does (fault tests).
func (j *Journal) SetWriteFault(f func() error) {
	j.wmu.Lock()
	j.failWrite = f
	j.wmu.Unlock()
}

// WriteFailure is the agent db's state of writing: failing since when,
// how many writes in a row, and the last error (n 0: the last write
// succeeded), and the failures in all since the journal was opened.
func (j *Journal) WriteFailure() (since time.Time, n int, last error, total int) {
	j.fmu.Lock()
	defer j.fmu.Unlock()
	return j.failAt, j.failN, j.failed, j.fails
}

// noteWrite keeps a write's outcome for WriteFailure.
func (j *Journal) noteWrite(err error) {
	j.fmu.Lock()
	defer j.fmu.Unlock()
	if err == nil {
		j.failN, j.failed = 0, nil
		return
	}
	if j.failN == 0 {
		j.failAt = time.Now()
	}
	j.failN++
	j.fails++
	j.failed = err
}

// ErrJournalLocked means another process has the database open.
var ErrJournalLocked = errors.New("database is locked by another process")

// OpenJournal opens (creating) the agent database at path, waiting at most
// lockTimeout for another process to release it. A damaged file gives an
// error naming it, what is damaged and what to do; never a panic.
func OpenJournal(path string, lockTimeout time.Duration) (*Journal, error) {
	j, err := openBolt(path, lockTimeout, false)
	if err != nil {
		return nil, err
	}
	err = j.update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketAudit, bucketRecs, bucketMeta, bucketGuard, bucketFabric} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		_, damaged := j.damage[string(bucketIndex)]
		j.indexBuilt, err = syncIndex(tx, j.log, damaged)
		return err
	})
	j.log = nil
	if err == nil {
		delete(j.damage, string(bucketIndex))
	}
	if err != nil {
		j.db.Close()
		return nil, fmt.Errorf("agent db %s: %w", path, err)
	}
	return j, nil
}

// openBolt checks the file, opens it with bbolt and checks that it is an
// agent database (or a new one) and undamaged.
func openBolt(path string, lockTimeout time.Duration, ro bool) (*Journal, error) {
	if lockTimeout <= 0 {
		lockTimeout = time.Second
	}
	advice := moveAside(path)
	if ro {
		advice = cannotRead(path)
	}
	if FileExists(path) {
		if _, err := models.CheckBoltFile(path, "ecntune agent database"); err != nil {
			if strings.Contains(err.Error(), "not a bbolt database") {
				return nil, fmt.Errorf("agent db %s: not a bbolt database (no bbolt magic number at the start): is db the right file?", path)
			}
			return nil, fmt.Errorf("agent db: %w: %s", err, advice)
		}
	}
	var db *bolt.DB
	err := guarded(path, advice, func() (err error) {
		mode := os.FileMode(0o600)
		if ro {
			mode = 0o400
		}
		db, err = bolt.Open(path, mode, &bolt.Options{Timeout: lockTimeout, ReadOnly: ro})
		return err
	})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("agent db %s: %w (another ecntune agent is running on it; stop it or use another db)", path, ErrJournalLocked)
		}
		if errors.Is(err, errDamaged) {
			return nil, err
		}
		return nil, fmt.Errorf("agent db %s: %w", path, notBolt(err))
	}
	j := &Journal{db: db, path: path, ro: ro, damage: map[string]string{}}
	err = j.view(func(tx *bolt.Tx) error {
		if err := checkAgentDB(tx); err != nil {
			return err
		}
		if ro && tx.Bucket(bucketAudit) == nil {
			return errors.New("an empty database, no audit log yet")
		}
		if err := checkFile(tx, !ro, j.damage, func(e core.AuditEntry) { j.log = append(j.log, logEntry{e.Seq, e.Target}) }); err != nil || ro {
			return err
		}
		if b := tx.Bucket(bucketAudit); b != nil { // every entry checked, none damaged
			k, _ := b.Cursor().Last()
			j.swept = bytes.Clone(k)
		}
		return nil
	})
	if err != nil {
		db.Close()
		if errors.Is(err, errDamaged) && !strings.Contains(err.Error(), "mv ") {
			return nil, fmt.Errorf("agent db %s: %w: %s", path, err, advice)
		}
		return nil, fmt.Errorf("agent db %s: %w", path, err)
	}
	return j, nil
}

// Path is the database file.
func (j *Journal) Path() string { return j.path }

// Close writes the results that could not be written yet (a full disk)
// and releases the database.
func (j *Journal) Close() error {
	var err error
	if j.unwrittenN() > 0 {
		if err = j.update(func(*bolt.Tx) error { return nil }); err != nil {
			err = fmt.Errorf("agent db %s: %d results of changes could not be written (their entries stay intent; the next start reconciles them with the switches): %w", j.path, j.unwrittenN(), err)
		}
	}
	return errors.Join(err, j.db.Close())
}

// unwrittenN is how many results wait to be written.
func (j *Journal) unwrittenN() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.unwritten)
}

func seqKey(seq uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return b[:]
}

// Intent writes the entries (state intent) durably before the Set and
// returns them with their sequence numbers.
func (j *Journal) Intent(entries []core.AuditEntry) ([]core.AuditEntry, error) {
	out := make([]core.AuditEntry, len(entries))
	err := j.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAudit)
		prev := b.Sequence()
		for i, e := range entries {
			seq, err := b.NextSequence()
			if err != nil {
				return err
			}
			e.Seq = seq
			if e.State == "" {
				e.State = core.StateIntent
			}
			if err := putEntry(b, e); err != nil {
				return err
			}
			out[i] = e
		}
		return putIndex(tx, out, prev)
	})
	if err != nil {
		return nil, fmt.Errorf("agent db %s: writing intent: %w", j.path, err)
	}
	return out, nil
}

// Resolve records the result of a change written by Intent, and with it,
// in the same transaction, the guard's memory of queues (mem). A result
// that cannot be written (a full disk) is kept and written with the next
// write that succeeds, or at Close; reads show it meanwhile.
func (j *Journal) Resolve(seq uint64, state core.AuditState, got *env.Setting, errMsg string, nowNs int64, mem ...core.QueueMemory) error {
	r := result{seq: seq, state: state, got: got, errMsg: errMsg, nowNs: nowNs, mem: mem}
	err := j.update(r.put)
	if err == nil {
		return nil
	}
	if errors.Is(err, errNoEntry) || errors.Is(err, errDamaged) {
		return fmt.Errorf("agent db %s: recording result: %w", j.path, err)
	}
	j.keep(r)
	return fmt.Errorf("agent db %s: recording result of audit entry %d: %w (kept: it is written with the next write that succeeds)", j.path, seq, err)
}

// putMemories stores the guard's memory of queues, sealed.
func putMemories(tx *bolt.Tx, mem []core.QueueMemory) error {
	b := tx.Bucket(bucketGuard)
	for _, m := range mem {
		k := []byte(m.Key.String())
		v, err := sealed(k, m)
		if err != nil {
			return err
		}
		if err := b.Put(k, v); err != nil {
			return err
		}
	}
	return nil
}

// PutGuardMemory stores the guard's memory of queues (Guard.Memories).
func (j *Journal) PutGuardMemory(mem []core.QueueMemory) error {
	if len(mem) == 0 {
		return nil
	}
	if err := j.update(func(tx *bolt.Tx) error { return putMemories(tx, mem) }); err != nil {
		return fmt.Errorf("agent db %s: guard memory: %w", j.path, err)
	}
	return nil
}

// Entries returns audit entries in order, filtered by target ("" = all)
// and intent time (>= sinceNs); damaged entries are always among them.
// With sinceNs, the log is read back from the newest entry to the first
// older one (entries are written in time order), as Recent: the cost is
// the window's, not the log's. A target's whole history is read by the
// index (index.go): its cost is the target's entries', not the log's.
func (j *Journal) Entries(target string, sinceNs int64) ([]core.AuditEntry, error) {
	var out []core.AuditEntry
	keep := func(e core.AuditEntry) bool {
		return e.State == StateDamaged || target == "" || e.Target == target
	}
	err := j.view(func(tx *bolt.Tx) error {
		if sinceNs <= 0 && target != "" {
			var ok bool
			if out, ok = j.byTarget(tx, target); ok {
				return nil
			}
		}
		if sinceNs <= 0 {
			return tx.Bucket(bucketAudit).ForEach(func(k, v []byte) error {
				if e := readEntry(k, v); keep(e) {
					out = append(out, e)
				}
				return nil
			})
		}
		c := tx.Bucket(bucketAudit).Cursor()
		k, v := c.Last()
		backWindow(c, k, v, sinceNs, &out, func(e core.AuditEntry) bool {
			if keep(e) {
				out = append(out, e)
			}
			return true
		})
		slices.Reverse(out)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("agent db %s: %w", j.path, err)
	}
	j.overlay(out)
	return out, nil
}

// Pending returns the entries a crash left without a result (intent, or
// unreachable at the last reconcile).
func (j *Journal) Pending() ([]core.AuditEntry, error) {
	all, err := j.Entries("", 0)
	if err != nil {
		return nil, err
	}
	var out []core.AuditEntry
	for _, e := range all {
		if e.Open() {
			out = append(out, e)
		}
	}
	return out, nil
}

// PutRecommendations stores one interval's recommendations in one
// transaction.
func (j *Journal) PutRecommendations(recs []core.Recommendation) error {
	if len(recs) == 0 {
		return nil
	}
	err := j.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecs)
		// keys run in time order: appended, a page split at bbolt's
		// default half fill left pages a third full (2 KB of pages for
		// each 0.65 KB record)
		b.FillPercent = 0.95
		for i := range recs {
			seq, err := b.NextSequence()
			if err != nil {
				return err
			}
			var k [16]byte
			binary.BigEndian.PutUint64(k[:8], uint64(recs[i].TimeNs))
			binary.BigEndian.PutUint64(k[8:], seq)
			v, err := sealed(k[:], &recs[i])
			if err != nil {
				return err
			}
			if err := b.Put(k[:], v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("agent db %s: storing recommendations: %w", j.path, err)
	}
	return nil
}

// Recommendations returns stored recommendations with TimeNs >= sinceNs
// for target ("" = all), oldest first, at most limit (0 = no limit; the
// newest are kept).
func (j *Journal) Recommendations(target string, sinceNs int64, limit int) ([]core.Recommendation, error) {
	return j.RecommendationsWhere(target, sinceNs, limit, nil)
}

// RecommendationsWhere is Recommendations of the rows keep keeps (nil:
// all), the limit counting those (StreamRecommendationsWhere).
func (j *Journal) RecommendationsWhere(target string, sinceNs int64, limit int, keep func(*core.Recommendation) bool) ([]core.Recommendation, error) {
	out := []core.Recommendation{} // [] in JSON, never null
	err := j.StreamRecommendationsWhere(target, sinceNs, limit, keep, func(r core.Recommendation) error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RecommendationChunk is how many recommendations StreamRecommendations
// reads in one read transaction: the rows given to fn are never all in
// memory at once, and no transaction stays open while fn writes them
// out (a slow reader of GET /recommendations held 100,000 decoded rows
// and their JSON, 1 GB, in the agent).
const RecommendationChunk = 2000

// StreamRecommendations calls fn with the recommendations Recommendations
// would return, oldest first, reading them RecommendationChunk at a time.
// Every row is checked before fn is first called (a damaged one is an
// error then); one pruned meanwhile is skipped, and no more than the
// rows counted are given.
func (j *Journal) StreamRecommendations(target string, sinceNs int64, limit int, fn func(core.Recommendation) error) error {
	return j.StreamRecommendationsWhere(target, sinceNs, limit, nil, fn)
}

// Changing keeps the recommendations that differ from what the queue ran
// (agent recommendations --changing).
func Changing(r *core.Recommendation) bool { return r.Recommended != r.Current }

// StreamRecommendationsWhere is StreamRecommendations of the rows keep
// keeps (nil: all): the limit counts those, so the newest limit of them
// are given (a filter applied to the newest limit rows found none of the
// changing ones among the holds).
func (j *Journal) StreamRecommendationsWhere(target string, sinceNs int64, limit int, keep func(*core.Recommendation) bool, fn func(core.Recommendation) error) error {
	if err := j.readable(bucketRecs); err != nil {
		return err
	}
	var start [8]byte
	if sinceNs > 0 {
		binary.BigEndian.PutUint64(start[:], uint64(sinceNs))
	}
	match := func(k, v []byte) (bool, error) {
		var r core.Recommendation
		if err := unsealed(k, v, &r); err != nil {
			return false, fmt.Errorf("recommendation %x: %w (damaged: `agent recommendations` and `agent report` cannot read past it until retention prunes it)", k, err)
		}
		return (target == "" || r.Key.Target == target) && (keep == nil || keep(&r)), nil
	}
	// First pass: where the rows to give start, and how many there are
	// (the newest limit: read from the newest back, not the whole window
	// since sinceNs decoded to keep its end).
	from := slices.Clone(start[:])
	count := 0
	err := j.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecs)
		if b == nil { // none stored (RecommendationTimes)
			return nil
		}
		c := b.Cursor()
		if limit > 0 {
			for k, v := c.Last(); k != nil && bytes.Compare(k, start[:]) >= 0 && count < limit; k, v = c.Prev() {
				ok, err := match(k, v)
				if err != nil {
					return err
				}
				if ok {
					count++
					from = slices.Clone(k)
				}
			}
			return nil
		}
		for k, v := c.Seek(start[:]); k != nil; k, v = c.Next() {
			ok, err := match(k, v)
			if err != nil {
				return err
			}
			if ok {
				count++
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("agent db %s: %w", j.path, err)
	}
	// Then the rows, a chunk per transaction, fn outside of it.
	given := 0
	for given < count {
		var chunk []core.Recommendation
		var next []byte
		err := j.view(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketRecs).Cursor()
			k, v := c.Seek(from)
			for ; k != nil && given+len(chunk) < count && len(chunk) < RecommendationChunk; k, v = c.Next() {
				var r core.Recommendation
				if err := unsealed(k, v, &r); err != nil {
					return fmt.Errorf("recommendation %x: %w", k, err)
				}
				if (target == "" || r.Key.Target == target) && (keep == nil || keep(&r)) {
					chunk = append(chunk, r)
				}
			}
			if k != nil {
				next = slices.Clone(k)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("agent db %s: %w", j.path, err)
		}
		for _, r := range chunk {
			if err := fn(r); err != nil {
				return err
			}
		}
		given += len(chunk)
		if next == nil || len(chunk) == 0 {
			break
		}
		from = next
	}
	return nil
}

// PruneRecommendations deletes recommendations older than beforeNs and
// returns how many it deleted.
func (j *Journal) PruneRecommendations(beforeNs int64) (int, error) {
	n := 0
	err := j.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecs)
		c := b.Cursor()
		var old [][]byte
		for k, _ := c.First(); len(k) >= 8 && int64(binary.BigEndian.Uint64(k[:8])) < beforeNs; k, _ = c.Next() {
			old = append(old, append([]byte(nil), k...))
		}
		for _, k := range old {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(old)
		return nil
	})
	return n, err
}

// SetMeta stores a small value (e.g. the owner of the last run).
func (j *Journal) SetMeta(key, value string) error {
	return j.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put([]byte(key), []byte(value))
	})
}

// Meta reads a value stored by SetMeta.
func (j *Journal) Meta(key string) string {
	var v string
	_ = j.view(func(tx *bolt.Tx) error {
		v = string(tx.Bucket(bucketMeta).Get([]byte(key)))
		return nil
	})
	return v
}

// FileExists reports whether a path names an existing file (used by the
// CLI to refuse to create a database for read-only commands).
func FileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// Pause is an operator's fabric-wide pause of the closed loop: while
// Paused, the agent decides and records as in shadow mode and writes
// nothing. It is kept in the database, so that it survives restarts.
type Pause struct {
	Paused bool   `json:"paused"`
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
	// SinceNs is when it was paused or resumed.
	SinceNs int64 `json:"since_ns,omitempty"`
}

// metaPause is the meta key of the pause.
const metaPause = "pause"

// SetPause stores the pause state.
func (j *Journal) SetPause(p Pause) error {
	b, err := sealed([]byte(metaPause), p)
	if err != nil {
		return err
	}
	return j.SetMeta(metaPause, string(b))
}

// metaApprovals is the meta key of approve mode's approvals not yet
// applied.
const metaApprovals = "approvals"

// SetApprovals stores the approvals not yet applied (none: the key goes),
// so that an approval given before a restart is not lost with it.
func (j *Journal) SetApprovals(as []core.Approved) error {
	if len(as) == 0 {
		if j.Meta(metaApprovals) == "" {
			return nil
		}
		return j.SetMeta(metaApprovals, "")
	}
	b, err := sealed([]byte(metaApprovals), as)
	if err != nil {
		return err
	}
	return j.SetMeta(metaApprovals, string(b))
}

// Approvals reads the stored approvals (none when none was stored). A
// record that does not decode is an error naming it: no approval is then
// taken from it (a change waits for a new one).
func (j *Journal) Approvals() ([]core.Approved, error) {
	v := j.Meta(metaApprovals)
	if v == "" {
		return nil, nil
	}
	var as []core.Approved
	if err := unsealed([]byte(metaApprovals), []byte(v), &as); err != nil {
		return nil, fmt.Errorf("agent db %s: approvals record: %w", j.path, err)
	}
	return as, nil
}

// ErrPauseUnchanged answers a pause of a paused closed loop, or a resume
// of one that is not paused.
var ErrPauseUnchanged = errors.New("pause state unchanged")

// ChangePause writes p when it changes the state: a pause of a paused loop
// or a resume of a running one is refused (ErrPauseUnchanged, saying the
// state), so that the record of who paused, why and since when stands (a
// second pause replaced it). A record that does not decode is replaced.
func (j *Journal) ChangePause(p Pause) error {
	cur, err := j.Pause()
	switch {
	case err != nil || cur.Paused != p.Paused:
		return j.SetPause(p)
	case p.Paused:
		return fmt.Errorf("%w: already paused by %s since %s: %s", ErrPauseUnchanged, cur.By,
			time.Unix(0, cur.SinceNs).UTC().Format(time.RFC3339), cur.Reason)
	}
	return fmt.Errorf("%w: the closed loop is not paused", ErrPauseUnchanged)
}

// Pause reads the pause state (not paused when none was stored); a stored
// state that does not decode counts as paused, so that a damaged record
// never lets the loop write.
func (j *Journal) Pause() (Pause, error) {
	if err := j.readable(bucketMeta); err != nil {
		return Pause{Paused: true, Reason: "the stored pause record is unreadable"}, err
	}
	v := j.Meta(metaPause)
	if v == "" {
		return Pause{}, nil
	}
	var p Pause
	if err := unsealed([]byte(metaPause), []byte(v), &p); err != nil {
		return Pause{Paused: true, Reason: "the stored pause record is unreadable"}, fmt.Errorf("agent db %s: pause record: %w", j.path, err)
	}
	return p, nil
}
