package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/ecntune/ecntune/agent/core"
)

// Telling an agent database from other bbolt files, and reading one.

// registryMarker is the bucket every ecntune model registry has (see
// models: "registry" holds its schema).
var registryMarker = []byte("registry")

// checkAgentDB tells whether the open bbolt file is an agent database
// (it has the audit bucket) or a new, empty one; anything else is
// refused, before any bucket is written: the model registry (the agent
// would write its buckets into it and hold its lock), or a bbolt database
// of something else.
func checkAgentDB(tx *bolt.Tx) error {
	var names []string
	isAgent, isRegistry := false, false
	_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		names = append(names, string(name))
		isAgent = isAgent || bytes.Equal(name, bucketAudit)
		isRegistry = isRegistry || bytes.Equal(name, registryMarker)
		return nil
	})
	switch {
	case isRegistry:
		return fmt.Errorf("this is an ecntune model registry, not an agent database: give the agent a db of its own (the model registry is the config's registry)")
	case isAgent || len(names) == 0:
		return nil
	}
	sort.Strings(names)
	if len(names) > 6 {
		names = append(names[:6], "...")
	}
	return fmt.Errorf("a bbolt database but not an ecntune agent database (buckets: %s): give the agent a db of its own", strings.Join(names, ", "))
}

// notBolt explains bbolt's errors for a file that is not a bbolt database.
func notBolt(err error) error {
	if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrVersionMismatch) || errors.Is(err, berrors.ErrChecksum) {
		return fmt.Errorf("not a bbolt database (%w): is db the right file?", err)
	}
	return err
}

// OpenJournalReadOnly opens an existing agent database for reading, with
// a shared lock: several readers at once, but not while an agent (or
// `agent rollback`) holds it, which bbolt's exclusive file lock allows no
// reader to bypass; then it fails with ErrJournalLocked after
// lockTimeout. Nothing is written, not even the buckets of a new file.
// Damaged audit entries are read as StateDamaged; damaged pages are an
// error, as at OpenJournal.
func OpenJournalReadOnly(path string, lockTimeout time.Duration) (*Journal, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("agent db %s does not exist", path)
	case err != nil:
		return nil, fmt.Errorf("agent db: %w", err)
	case st.IsDir():
		return nil, fmt.Errorf("agent db %s is a directory, not an agent database: give the db file the agent's configuration names (db:)", path)
	case st.Size() == 0:
		// bbolt would try to write a new database into it (and fail:
		// the file is open read-only).
		return nil, fmt.Errorf("agent db %s is an empty file (0 bytes), not an agent database: no agent wrote it, or it was truncated; give the db file the agent's configuration names (db:)", path)
	}
	return openBolt(path, lockTimeout, true)
}

// MaxChangesPage bounds the entries of one ChangesPage (the limit of
// /changes); DefaultChangesPage is the size of a page when none is asked.
const (
	MaxChangesPage     = 1000
	DefaultChangesPage = 100
)

// ChangesQuery selects a page of the audit log.
type ChangesQuery struct {
	Target  string // "" = every target
	SinceNs int64  // only entries whose intent was written at or after (0 = all)
	// Before, when not 0, keeps entries with a lower sequence number: the
	// NextBefore of the previous page.
	Before uint64
	Limit  int // 1..MaxChangesPage; 0 = DefaultChangesPage
}

// ChangesPage is the newest Limit entries that match a ChangesQuery,
// oldest first.
type ChangesPage struct {
	Changes []core.AuditEntry `json:"changes"`
	// NextBefore is the Before of the next (older) page; 0 when this page
	// holds the oldest match.
	NextBefore uint64 `json:"next_before,omitempty"`
}

// atWindowStart says of the damaged entries at the end of newestFirst (a
// --since read, walking back) that they may be older than the window:
// they lie between older, the first entry before it, and the window's
// oldest intact entry, and their own time is not known.
// run is how many damaged entries were read last, just before older.
func atWindowStart(newestFirst []core.AuditEntry, older core.AuditEntry, run int) {
	for i := len(newestFirst) - 1; i >= 0 && i >= len(newestFirst)-run && newestFirst[i].State == StateDamaged; i-- {
		newestFirst[i].Error += fmt.Sprintf("; its time is unknown: written after entry %d (%s), before the window, so it may be older than the window",
			older.Seq, time.Unix(0, older.TimeNs).UTC().Format(time.RFC3339))
	}
}

// backWindow walks the audit log back from k, v (c's position) to the
// first intact entry older than sinceNs (entries are written in time
// order: the rest are older), giving each entry to take, which says
// whether to go on. The damaged entries read last before that older one
// are said in *got to be at the window's start (atWindowStart).
func backWindow(c *bolt.Cursor, k, v []byte, sinceNs int64, got *[]core.AuditEntry, take func(core.AuditEntry) bool) {
	run := 0 // damaged entries read last
	for ; k != nil; k, v = c.Prev() {
		e := readEntry(k, v)
		if e.State != StateDamaged && e.TimeNs < sinceNs {
			atWindowStart(*got, e, run)
			return
		}
		if e.State == StateDamaged {
			run++
		} else {
			run = 0
		}
		if !take(e) {
			return
		}
	}
}

// EntryJSON is what e is written as in JSON: e, or for a damaged entry
// what is known of it, its sequence number, state and damage, with its
// time, queue and settings null (it was written as a change at 1970 from
// and to 0B/0B/0%).
func EntryJSON(e core.AuditEntry) any {
	if e.State != StateDamaged {
		return e
	}
	return struct {
		Seq    uint64          `json:"seq"`
		State  core.AuditState `json:"state"`
		Error  string          `json:"error"`
		TimeNs *int64          `json:"time_ns"`
		Target *string         `json:"target"`
		Key    *string         `json:"key"`
		Old    *struct{}       `json:"old"`
		New    *struct{}       `json:"new"`
	}{Seq: e.Seq, State: e.State, Error: e.Error}
}

// MarshalJSON writes the page's damaged entries as EntryJSON does.
func (p ChangesPage) MarshalJSON() ([]byte, error) {
	cs := make([]any, len(p.Changes))
	for i, e := range p.Changes {
		cs[i] = EntryJSON(e)
	}
	return json.Marshal(struct {
		Changes    []any  `json:"changes"`
		NextBefore uint64 `json:"next_before,omitempty"`
	}{cs, p.NextBefore})
}

// ChangesPage reads one page of the audit log, walking back from
// q.Before (or the newest entry) to the first entry older than q.SinceNs
// (entries are written in time order): its cost is the page's and the
// window's, not the log's. A page of one target without SinceNs is read
// by the index (index.go): its cost is the target's, not the log's.
func (j *Journal) ChangesPage(q ChangesQuery) (ChangesPage, error) {
	if q.Limit == 0 {
		q.Limit = DefaultChangesPage
	}
	if q.Limit < 0 || q.Limit > MaxChangesPage {
		return ChangesPage{}, fmt.Errorf("limit %d: want 1..%d", q.Limit, MaxChangesPage)
	}
	p := ChangesPage{Changes: []core.AuditEntry{}}
	err := j.view(func(tx *bolt.Tx) error {
		if q.Target != "" && q.SinceNs == 0 {
			if ip, ok := j.pageByTarget(tx, q); ok {
				p = ip
				return nil
			}
		}
		c := tx.Bucket(bucketAudit).Cursor()
		var k, v []byte
		if q.Before > 0 {
			if k, _ = c.Seek(seqKey(q.Before)); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		} else {
			k, v = c.Last()
		}
		backWindow(c, k, v, q.SinceNs, &p.Changes, func(e core.AuditEntry) bool {
			if e.State != StateDamaged && q.Target != "" && e.Target != q.Target {
				return true
			}
			if len(p.Changes) == q.Limit {
				p.NextBefore = p.Changes[len(p.Changes)-1].Seq // there is an older match
				return false
			}
			p.Changes = append(p.Changes, e)
			return true
		})
		return nil
	})
	if err != nil {
		return ChangesPage{}, fmt.Errorf("agent db %s: %w", j.path, err)
	}
	slices.Reverse(p.Changes)
	j.overlay(p.Changes)
	return p, nil
}

// RecommendationTimes lists the distinct interval times of the stored
// recommendations at or after sinceNs, oldest first, from the keys alone.
func (j *Journal) RecommendationTimes(sinceNs int64) ([]int64, error) {
	if err := j.readable(bucketRecs); err != nil {
		return nil, err
	}
	var out []int64
	err := j.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecs)
		if b == nil { // every agent makes it: another tool's db, or one edited by hand, has none stored
			return nil
		}
		c := b.Cursor()
		var start [8]byte
		binary.BigEndian.PutUint64(start[:], uint64(max(sinceNs, 0)))
		for k, _ := c.Seek(start[:]); k != nil; k, _ = c.Next() {
			if len(k) < 8 {
				return fmt.Errorf("recommendation key %x: shorter than its time", k)
			}
			t := int64(binary.BigEndian.Uint64(k[:8]))
			if n := len(out); n == 0 || out[n-1] != t {
				out = append(out, t)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("agent db %s: %w", j.path, err)
	}
	return out, nil
}

// EachRecommendation calls fn for every stored recommendation at or after
// sinceNs, oldest first.
func (j *Journal) EachRecommendation(sinceNs int64, fn func(*core.Recommendation) error) error {
	_, err := j.eachRecommendation(sinceNs, false, fn)
	return err
}

// EachIntactRecommendation is EachRecommendation, except that a stored
// recommendation that fails its seal or does not decode (a bit changed on
// disk) is left out, not an error: damaged counts those, and an operator
// is to be told. Rows are sealed one by one; the others are intact.
func (j *Journal) EachIntactRecommendation(sinceNs int64, fn func(*core.Recommendation) error) (damaged int, err error) {
	return j.eachRecommendation(sinceNs, true, fn)
}

func (j *Journal) eachRecommendation(sinceNs int64, skip bool, fn func(*core.Recommendation) error) (damaged int, err error) {
	if err := j.readable(bucketRecs); err != nil {
		return 0, err
	}
	err = j.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecs)
		if b == nil { // none stored (RecommendationTimes)
			return nil
		}
		c := b.Cursor()
		var start [8]byte
		binary.BigEndian.PutUint64(start[:], uint64(max(sinceNs, 0)))
		for k, v := c.Seek(start[:]); k != nil; k, v = c.Next() {
			var r core.Recommendation
			if err := unsealed(k, v, &r); err != nil {
				if skip {
					damaged++
					continue
				}
				return fmt.Errorf("recommendation %x: %w", k, err)
			}
			if err := fn(&r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return damaged, fmt.Errorf("agent db %s: %w", j.path, err)
	}
	return damaged, nil
}

// Recent returns the audit entries written at or after sinceNs, oldest
// first, reading back from the newest until the first older one (entries
// are written in time order): its cost is the window's, not the log's.
func (j *Journal) Recent(sinceNs int64) ([]core.AuditEntry, error) {
	var out []core.AuditEntry
	err := j.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketAudit).Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			e := readEntry(k, v)
			if e.State != StateDamaged && e.TimeNs < sinceNs {
				break
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("agent db %s: %w", j.path, err)
	}
	slices.Reverse(out)
	j.overlay(out)
	return out, nil
}
