package journal

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

var (
	bucketAudit = []byte("audit")
	bucketRecs  = []byte("recommendations")
	bucketMeta  = []byte("meta")
	bucketGuard = []byte("guard") // QueueMemory by queue key
)

// Journal is the agent's bbolt store: the write-ahead audit log of changes
// and the shadow-mode recommendations. bbolt holds an exclusive file lock
// while the journal is open, so one agent owns a database at a time.
type Journal struct {
	db   *bolt.DB
	path string
}

// ErrJournalLocked means another process has the database open.
var ErrJournalLocked = errors.New("database is locked by another process")

// OpenJournal opens (creating) the agent database at path, waiting at most
// lockTimeout for another process to release it.
func OpenJournal(path string, lockTimeout time.Duration) (*Journal, error) {
	if lockTimeout <= 0 {
		lockTimeout = time.Second
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("agent db %s: %w (another ecntune agent is running on it; stop it or use another db)", path, ErrJournalLocked)
		}
		return nil, fmt.Errorf("agent db %s: %w", path, notBolt(err))
	}
	if err := db.View(checkAgentDB); err != nil {
		db.Close()
		return nil, fmt.Errorf("agent db %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketAudit, bucketRecs, bucketMeta, bucketGuard} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("agent db %s: %w", path, err)
	}
	return &Journal{db: db, path: path}, nil
}

// Path is the database file.
func (j *Journal) Path() string { return j.path }

// Close releases the database.
func (j *Journal) Close() error { return j.db.Close() }

func seqKey(seq uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return b[:]
}

// Intent writes the entries (state intent) durably before the Set and
// returns them with their sequence numbers.
func (j *Journal) Intent(entries []core.AuditEntry) ([]core.AuditEntry, error) {
	out := make([]core.AuditEntry, len(entries))
	err := j.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAudit)
		for i, e := range entries {
			seq, err := b.NextSequence()
			if err != nil {
				return err
			}
			e.Seq = seq
			if e.State == "" {
				e.State = core.StateIntent
			}
			v, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if err := b.Put(seqKey(seq), v); err != nil {
				return err
			}
			out[i] = e
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("agent db %s: writing intent: %w", j.path, err)
	}
	return out, nil
}

// Resolve records the result of a change written by Intent, and with it,
// in the same transaction, the guard's memory of queues (mem).
func (j *Journal) Resolve(seq uint64, state core.AuditState, got *env.Setting, errMsg string, nowNs int64, mem ...core.QueueMemory) error {
	err := j.db.Update(func(tx *bolt.Tx) error {
		if err := putMemories(tx, mem); err != nil {
			return err
		}
		b := tx.Bucket(bucketAudit)
		v := b.Get(seqKey(seq))
		if v == nil {
			return fmt.Errorf("no audit entry %d", seq)
		}
		var e core.AuditEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("audit entry %d: %w", seq, err)
		}
		e.State, e.Got, e.Error, e.ResultNs = state, got, errMsg, nowNs
		nv, err := json.Marshal(e)
		if err != nil {
			return err
		}
		return b.Put(seqKey(seq), nv)
	})
	if err != nil {
		return fmt.Errorf("agent db %s: recording result: %w", j.path, err)
	}
	return nil
}

// putMemories stores the guard's memory of queues.
func putMemories(tx *bolt.Tx, mem []core.QueueMemory) error {
	b := tx.Bucket(bucketGuard)
	for _, m := range mem {
		v, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := b.Put([]byte(m.Key.String()), v); err != nil {
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
	if err := j.db.Update(func(tx *bolt.Tx) error { return putMemories(tx, mem) }); err != nil {
		return fmt.Errorf("agent db %s: guard memory: %w", j.path, err)
	}
	return nil
}

// GuardMemory returns the guard's memory of every queue it stored.
func (j *Journal) GuardMemory() ([]core.QueueMemory, error) {
	var out []core.QueueMemory
	err := j.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketGuard)
		if b == nil { // a database written before guard memory
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var m core.QueueMemory
			if err := json.Unmarshal(v, &m); err != nil {
				return fmt.Errorf("guard memory of %s: %w", k, err)
			}
			out = append(out, m)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("agent db %s: %w", j.path, err)
	}
	return out, nil
}

// Entries returns audit entries in order, filtered by target ("" = all)
// and intent time (>= sinceNs).
func (j *Journal) Entries(target string, sinceNs int64) ([]core.AuditEntry, error) {
	var out []core.AuditEntry
	err := j.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketAudit).ForEach(func(k, v []byte) error {
			var e core.AuditEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("audit entry %d: %w", binary.BigEndian.Uint64(k), err)
			}
			if (target == "" || e.Target == target) && e.TimeNs >= sinceNs {
				out = append(out, e)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("agent db %s: %w", j.path, err)
	}
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
		if e.State == core.StateIntent || e.State == core.StateUnreachable {
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
	err := j.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecs)
		for i := range recs {
			seq, err := b.NextSequence()
			if err != nil {
				return err
			}
			var k [16]byte
			binary.BigEndian.PutUint64(k[:8], uint64(recs[i].TimeNs))
			binary.BigEndian.PutUint64(k[8:], seq)
			v, err := json.Marshal(&recs[i])
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
	out := []core.Recommendation{} // [] in JSON, never null
	err := j.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRecs).Cursor()
		var start [8]byte
		if sinceNs > 0 {
			binary.BigEndian.PutUint64(start[:], uint64(sinceNs))
		}
		for k, v := c.Seek(start[:]); k != nil; k, v = c.Next() {
			var r core.Recommendation
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("recommendation %x: %w", k, err)
			}
			if target == "" || r.Key.Target == target {
				out = append(out, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("agent db %s: %w", j.path, err)
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// PruneRecommendations deletes recommendations older than beforeNs and
// returns how many it deleted.
func (j *Journal) PruneRecommendations(beforeNs int64) (int, error) {
	n := 0
	err := j.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecs)
		c := b.Cursor()
		var old [][]byte
		for k, _ := c.First(); k != nil && int64(binary.BigEndian.Uint64(k[:8])) < beforeNs; k, _ = c.Next() {
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
	return j.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put([]byte(key), []byte(value))
	})
}

// Meta reads a value stored by SetMeta.
func (j *Journal) Meta(key string) string {
	var v string
	_ = j.db.View(func(tx *bolt.Tx) error {
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
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return j.SetMeta(metaPause, string(b))
}

// Pause reads the pause state (not paused when none was stored); a stored
// state that does not decode counts as paused, so that a damaged record
// never lets the loop write.
func (j *Journal) Pause() (Pause, error) {
	v := j.Meta(metaPause)
	if v == "" {
		return Pause{}, nil
	}
	var p Pause
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return Pause{Paused: true, Reason: "the stored pause record is unreadable"}, fmt.Errorf("agent db %s: pause record: %w", j.path, err)
	}
	return p, nil
}
