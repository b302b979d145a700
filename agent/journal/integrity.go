package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
)

// Integrity of the agent database. Every record the journal writes (audit
// entries, guard memory, recommendations, the pause) is its JSON followed
// by a seal, as the model registry seals its records (models.Seal): a
// newline, "sha256:" and the sha256 of the record's key and JSON, so that
// a bit changed in a value or in its key is detected. A record without a
// seal was written before seals (the database has no format version: the
// seal itself tells) and is read as it is when it is valid JSON; it is
// sealed when next written. bbolt trusts its pages and panics (or faults)
// on a damaged one: the file is checked before bbolt opens it, the pages
// are checked at open (bolt.Tx.Check), and every transaction runs with
// panics turned into an error that names the file and what to do.

// StateDamaged marks an audit entry whose stored record fails its seal or
// does not decode: reads show it in place of the entry (with the damage in
// Error), never another entry's data.
const StateDamaged = core.StateDamaged

// errDamaged is the error of a database bbolt could not read.
var errDamaged = errors.New("the database is damaged")

// moveAside is what the operator can do with a damaged db at path that
// the agent (or rollback) opens to write.
func moveAside(path string) string {
	return fmt.Sprintf("move it aside (mv %s %s.damaged) and start the agent with a new db (its guard memory then starts empty); "+
		"`ecntune agent history --db %s.damaged` still shows the audit log when the damage is outside it", path, path, path)
}

// cannotRead is what the operator can do with a damaged db at path that a
// read-only command opened: nothing it reads is past the damage (advice
// that sent it to a read-only command again would loop).
func cannotRead(path string) string {
	s := fmt.Sprintf("no ecntune command reads past a damaged page (none repairs the file): restore %s from a backup", path)
	if !strings.HasSuffix(path, ".damaged") {
		s += fmt.Sprintf("; an agent is started with a new db (mv %s %s.damaged)", path, path)
	}
	return s
}

// advice is what to do with the journal's damaged file.
func (j *Journal) advice() string {
	if j.ro {
		return cannotRead(j.path)
	}
	return moveAside(j.path)
}

// guarded runs fn with memory faults turned into panics and turns a panic
// into an error naming the file and what to do (advice).
func guarded(path, advice string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if p := recover(); p != nil {
			err = fmt.Errorf("agent db %s: %w (bbolt: %v): %s", path, errDamaged, p, advice)
		}
	}()
	return fn()
}

// view is db.View, guarded.
func (j *Journal) view(fn func(tx *bolt.Tx) error) error {
	return guarded(j.path, j.advice(), func() error { return j.db.View(fn) })
}

// Damage says what a read-only open found damaged outside the audit log
// ("" when nothing): those buckets are not read (readable refuses them),
// the audit log is.
func (j *Journal) Damage() string {
	if len(j.damage) == 0 {
		return ""
	}
	var what []string
	for _, name := range slices.Sorted(maps.Keys(j.damage)) {
		what = append(what, j.damage[name])
	}
	return "damaged: " + strings.Join(what, "; ")
}

// ErrBucketDamaged is the error of a read of a bucket that the read-only
// open found damaged (Damage): the audit log is still read.
var ErrBucketDamaged = fmt.Errorf("%w", errDamaged)

// readable refuses to read a bucket the read-only open found damaged.
func (j *Journal) readable(bucket []byte) error {
	what, ok := j.damage[string(bucket)]
	if !ok {
		return nil
	}
	return fmt.Errorf("agent db %s: %w: %s, so it is not read (the audit log is intact: `ecntune agent history --db %s` shows it); %s",
		j.path, ErrBucketDamaged, what, j.path, cannotRead(j.path))
}

// update is db.Update, guarded; it first writes the results that earlier
// writes could not (keep), and forgets them once written.
func (j *Journal) update(fn func(tx *bolt.Tx) error) error {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	j.mu.Lock()
	waiting := j.unwritten
	j.mu.Unlock()
	err := guarded(j.path, j.advice(), func() error {
		return j.db.Update(func(tx *bolt.Tx) error {
			if j.failWrite != nil {
				if err := j.failWrite(); err != nil {
					return err
				}
			}
			for _, r := range waiting {
				if err := r.put(tx); err != nil && !errors.Is(err, errNoEntry) {
					return err
				}
			}
			return fn(tx)
		})
	})
	j.noteWrite(err)
	if err == nil && len(waiting) > 0 {
		j.mu.Lock()
		j.unwritten = j.unwritten[len(waiting):]
		j.mu.Unlock()
	}
	return err
}

// result is the outcome of a change Resolve records.
type result struct {
	seq    uint64
	state  core.AuditState
	got    *env.Setting
	errMsg string
	nowNs  int64
	mem    []core.QueueMemory
}

// errNoEntry: Resolve of an entry that is not in the log, or damaged; a
// result for it is not kept for another try.
var errNoEntry = errors.New("no such audit entry")

// put records r in tx.
func (r result) put(tx *bolt.Tx) error {
	if err := putMemories(tx, r.mem); err != nil {
		return err
	}
	b := tx.Bucket(bucketAudit)
	k := seqKey(r.seq)
	v := b.Get(k)
	if v == nil {
		return fmt.Errorf("audit entry %d: %w", r.seq, errNoEntry)
	}
	e, err := decodeEntry(k, v)
	if err != nil {
		return fmt.Errorf("%w: %v", errNoEntry, err)
	}
	r.apply(&e)
	return putEntry(b, e)
}

// apply sets r's result on e.
func (r result) apply(e *core.AuditEntry) {
	e.State, e.Got, e.Error, e.ResultNs = r.state, r.got, r.errMsg, r.nowNs
}

// keep holds r until a write succeeds.
func (j *Journal) keep(r result) {
	j.mu.Lock()
	j.unwritten = append(j.unwritten, r)
	j.mu.Unlock()
}

// overlay applies the kept results to entries read from the db, so that
// reads (Pending among them) see what the agent did, not the intent a full
// disk left.
func (j *Journal) overlay(es []core.AuditEntry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.unwritten) == 0 {
		return
	}
	last := map[uint64]result{}
	for _, r := range j.unwritten {
		last[r.seq] = r
	}
	for i := range es {
		if r, ok := last[es[i].Seq]; ok {
			r.apply(&es[i])
		}
	}
}

// keptMemories is the guard memory of the kept results, oldest first.
func (j *Journal) keptMemories() []core.QueueMemory {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []core.QueueMemory
	for _, r := range j.unwritten {
		out = append(out, r.mem...)
	}
	return out
}

// sealed marshals v and seals it for key.
func sealed(key []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return models.Seal(key, b), nil
}

// unsealed checks raw's seal for key and decodes it into v.
func unsealed(key, raw []byte, v any) error {
	body, err := models.Unseal(key, raw)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// putEntry stores e, sealed, under its sequence number.
func putEntry(b *bolt.Bucket, e core.AuditEntry) error {
	k := seqKey(e.Seq)
	v, err := sealed(k, e)
	if err != nil {
		return err
	}
	return b.Put(k, v)
}

// decodeEntry reads the audit entry stored under k.
func decodeEntry(k, v []byte) (core.AuditEntry, error) {
	var e core.AuditEntry
	if len(k) != 8 {
		return e, fmt.Errorf("audit key %x: not a sequence number", k)
	}
	seq := binary.BigEndian.Uint64(k)
	if err := unsealed(k, v, &e); err != nil {
		return e, fmt.Errorf("audit entry %d: %w", seq, err)
	}
	if e.Seq != seq {
		return e, fmt.Errorf("audit entry %d: the record says seq %d", seq, e.Seq)
	}
	return e, nil
}

// readEntry is decodeEntry for reads: a damaged entry is shown as such.
func readEntry(k, v []byte) core.AuditEntry {
	e, err := decodeEntry(k, v)
	if err != nil {
		var seq uint64
		if len(k) == 8 {
			seq = binary.BigEndian.Uint64(k)
		}
		return core.AuditEntry{Seq: seq, State: StateDamaged, Error: err.Error() + ": this entry cannot be trusted"}
	}
	return e
}

// checkFile runs at open: it reads every key of every bucket (touching
// every branch and leaf page, where bbolt panics on a damaged one) and,
// when strict (a writable open: the agent and rollback rely on the whole
// log), checks the seal of every audit entry. It returns what is damaged.
// Not strict (a read-only open), a damaged bucket other than the audit log
// is left in damage (by name) instead: the audit log is still read.
// A damaged index (index.go) is left in damage too, even when strict: a
// writable open builds it again. Strict, each decoded entry is given to
// each.
// (bolt.Tx.Check would check the free list too, but it panics on a damaged
// page in a goroutine of its own, where no recover reaches.)
func checkFile(tx *bolt.Tx, strict bool, damage map[string]string, each func(core.AuditEntry)) error {
	err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		err := checkBucket(name, b)
		if err != nil && (!strict || bytes.Equal(name, bucketIndex)) && !bytes.Equal(name, bucketAudit) {
			damage[string(name)] = strings.TrimPrefix(err.Error(), errDamaged.Error()+": ")
			return nil
		}
		return err
	})
	if err != nil || !strict {
		return err
	}
	b := tx.Bucket(bucketAudit)
	if b == nil {
		return nil
	}
	var seqs []string
	n := 0
	_ = b.ForEach(func(k, v []byte) error {
		e, err := decodeEntry(k, v)
		if err != nil {
			if n++; len(seqs) < 10 {
				seqs = append(seqs, err.Error())
			}
			return nil
		}
		each(e)
		return nil
	})
	if n > 0 {
		return fmt.Errorf("%w: %d audit entries fail their seal or do not decode (%s); the agent does not run on a damaged audit log",
			errDamaged, n, strings.Join(seqs, "; "))
	}
	return nil
}

// checkBucket reads every key of b, with a panic on a damaged page turned
// into errDamaged naming the bucket.
func checkBucket(name []byte, b *bolt.Bucket) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: bucket %s: a damaged page (bbolt: %v)", errDamaged, name, p)
		}
	}()
	var prev []byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return fmt.Errorf("%w: bucket %s: keys out of order at %x", errDamaged, name, k)
		}
		if v == nil {
			return fmt.Errorf("%w: bucket %s: key %x holds a bucket, which an agent database never writes", errDamaged, name, k)
		}
		prev = k
	}
	return nil
}
