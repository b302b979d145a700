package journal

import (
	"bytes"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/models"
)

// The audit log by target: bucketIndex holds, for every audit entry, the
// key target + 0x00 + the entry's 8-byte sequence key (value empty), and
// for every target the key target + 0x00 with its number of entries,
// sealed. Intent writes them with the entries, in one transaction (a
// result does not change an entry's target; nothing deletes audit
// entries). One switch's history (Entries of a target, /changes?target=)
// reads that switch's entries from it instead of decoding the whole log.
//
// A damaged entry is shown in every history, whatever its target, as the
// whole log's read shows it: the journal checks each entry once for damage
// (a writable open's strict check, else its seal alone at the first read
// by target) and keeps the damaged ones' keys. So a read by target costs
// the target's entries and the damaged ones; an entry damaged while the
// journal is open is shown in its own target's history and in the whole
// log's, and in the others' from the next open.
//
// The index is used only when it says it is whole: the meta key metaIndex
// names its format, its bucket sequence equals the audit log's (an older
// version, which ignores the bucket, appends entries without it), the
// target's count agrees with its keys, and every entry it names is there
// and of that target. Otherwise the read scans the log, as without an
// index. A writable open checks the index against the log its strict check
// decoded and builds it again when they differ (the migration of a db
// written before it, or after an older version wrote entries).
var bucketIndex = []byte("audit-by-target")

// metaIndex is the meta key of the index's format, indexVersion.
const (
	metaIndex    = "audit-index"
	indexVersion = "1"
)

// countKey is the index key of target's count of entries; its entries'
// keys follow it (countKey + the sequence key).
func countKey(target string) []byte { return append([]byte(target), 0) }

// indexKey is the index key of target's audit entry seq.
func indexKey(target string, seq uint64) []byte { return append(countKey(target), seqKey(seq)...) }

// logEntry is what the index holds of an audit entry.
type logEntry struct {
	seq    uint64
	target string
}

// putIndex indexes es, just written by Intent, in tx; prevSeq is the audit
// log's sequence before them. The index is kept whole only when it was
// (its sequence prevSeq); a damaged count is left so (reads of its target
// scan until a writable open builds the index again).
func putIndex(tx *bolt.Tx, es []core.AuditEntry, prevSeq uint64) error {
	b := tx.Bucket(bucketIndex)
	if b == nil {
		return nil
	}
	added := map[string]uint64{}
	for _, e := range es {
		if err := b.Put(indexKey(e.Target, e.Seq), []byte{}); err != nil {
			return err
		}
		added[e.Target]++
	}
	for target, n := range added {
		k := countKey(target)
		var have uint64
		if v := b.Get(k); v != nil {
			if err := unsealed(k, v, &have); err != nil {
				continue
			}
		}
		v, err := sealed(k, have+n)
		if err != nil {
			return err
		}
		if err := b.Put(k, v); err != nil {
			return err
		}
	}
	if b.Sequence() != prevSeq {
		return nil
	}
	return b.SetSequence(tx.Bucket(bucketAudit).Sequence())
}

// syncIndex makes the index say what log (every audit entry, as the
// writable open's strict check decoded them) says, building it again when
// it does not; it says whether it did.
func syncIndex(tx *bolt.Tx, log []logEntry, damaged bool) (bool, error) {
	type want struct {
		key   []byte
		count uint64 // of a count key
	}
	counts := map[string]uint64{}
	wants := make([]want, 0, len(log)+16)
	for _, e := range log {
		wants = append(wants, want{key: indexKey(e.target, e.seq)})
		counts[e.target]++
	}
	for target, n := range counts {
		wants = append(wants, want{key: countKey(target), count: n})
	}
	slices.SortFunc(wants, func(a, b want) int { return bytes.Compare(a.key, b.key) })
	audit := tx.Bucket(bucketAudit)
	if b := tx.Bucket(bucketIndex); b != nil && !damaged && string(tx.Bucket(bucketMeta).Get([]byte(metaIndex))) == indexVersion &&
		b.Sequence() == audit.Sequence() {
		i, same := 0, true
		c := b.Cursor()
		for k, v := c.First(); k != nil && same; k, v = c.Next() {
			var n uint64
			switch {
			case i == len(wants) || !bytes.Equal(k, wants[i].key):
				same = false
			case wants[i].count > 0:
				same = unsealed(k, v, &n) == nil && n == wants[i].count
			default:
				same = len(v) == 0
			}
			i++
		}
		if same && i == len(wants) {
			return false, nil
		}
	}
	if tx.Bucket(bucketIndex) != nil {
		if err := tx.DeleteBucket(bucketIndex); err != nil {
			return false, err
		}
	}
	b, err := tx.CreateBucket(bucketIndex)
	if err != nil {
		return false, err
	}
	b.FillPercent = 0.95 // written in key order, never again split
	for _, w := range wants {
		v := []byte{}
		if w.count > 0 {
			if v, err = sealed(w.key, w.count); err != nil {
				return false, err
			}
		}
		if err := b.Put(w.key, v); err != nil {
			return false, err
		}
	}
	if err := b.SetSequence(audit.Sequence()); err != nil {
		return false, err
	}
	return true, tx.Bucket(bucketMeta).Put([]byte(metaIndex), []byte(indexVersion))
}

// entryDamaged says whether readEntry shows the entry k, v as damaged. A
// record with a seal is checked by its seal alone: one whose seal holds is
// what putEntry wrote, an entry's JSON under its sequence number, which
// decodes. A record without one (written before seals) is decoded.
func entryDamaged(k, v []byte) bool {
	if len(k) != 8 {
		return true
	}
	if bytes.IndexByte(v, '\n') < 0 {
		_, err := decodeEntry(k, v)
		return err != nil
	}
	_, err := models.Unseal(k, v)
	return err != nil
}

// damagedKeys returns the keys of the audit entries found damaged, in key
// order, checking those not checked yet (the writable open's strict check
// found none damaged and checked every entry then).
func (j *Journal) damagedKeys(tx *bolt.Tx) [][]byte {
	j.dmu.Lock()
	defer j.dmu.Unlock()
	c := tx.Bucket(bucketAudit).Cursor()
	k, v := c.First()
	if j.swept != nil {
		if k, v = c.Seek(j.swept); bytes.Equal(k, j.swept) {
			k, v = c.Next()
		}
	}
	for ; k != nil; k, v = c.Next() {
		if entryDamaged(k, v) {
			j.damagedAt = append(j.damagedAt, bytes.Clone(k))
		}
		j.swept = bytes.Clone(k)
	}
	return j.damagedAt[:len(j.damagedAt):len(j.damagedAt)]
}

// candidate is an audit key a read by target looks at: one the index
// names, or a damaged entry's.
type candidate struct {
	key     []byte
	indexed bool
}

// candidates returns, in key order, the keys of target's entries (from the
// index) and of the damaged entries; ok false when the index is not whole
// or does not agree with itself (the read scans the log instead).
func (j *Journal) candidates(tx *bolt.Tx, target string) (_ []candidate, ok bool) {
	if _, bad := j.damage[string(bucketIndex)]; bad {
		return nil, false
	}
	if _, bad := j.damage[string(bucketMeta)]; bad {
		return nil, false
	}
	b, audit := tx.Bucket(bucketIndex), tx.Bucket(bucketAudit)
	if b == nil || b.Sequence() != audit.Sequence() || string(tx.Bucket(bucketMeta).Get([]byte(metaIndex))) != indexVersion {
		return nil, false
	}
	ck := countKey(target)
	var keys [][]byte
	var count uint64
	c := b.Cursor()
	for k, v := c.Seek(ck); bytes.HasPrefix(k, ck); k, v = c.Next() {
		switch len(k) {
		case len(ck):
			if unsealed(k, v, &count) != nil {
				return nil, false
			}
		case len(ck) + 8:
			keys = append(keys, k[len(ck):])
		} // else a key of a target whose name starts with target + 0x00
	}
	if uint64(len(keys)) != count {
		return nil, false
	}
	dmg := j.damagedKeys(tx)
	out := make([]candidate, 0, len(keys)+len(dmg))
	for len(keys) > 0 || len(dmg) > 0 {
		switch {
		case len(dmg) == 0 || len(keys) > 0 && bytes.Compare(keys[0], dmg[0]) < 0:
			out, keys = append(out, candidate{keys[0], true}), keys[1:]
		case len(keys) == 0 || bytes.Compare(dmg[0], keys[0]) < 0:
			out, dmg = append(out, candidate{dmg[0], false}), dmg[1:]
		default: // a damaged entry of target
			out, keys, dmg = append(out, candidate{keys[0], true}), keys[1:], dmg[1:]
		}
	}
	return out, true
}

// readCandidate reads c from the audit log in tx: the entry, whether a
// read of target's history shows it (damaged, or of target), and ok false
// when the index named an entry that is not there or not of target.
func readCandidate(audit *bolt.Bucket, c candidate, target string) (e core.AuditEntry, keep, ok bool) {
	v := audit.Get(c.key)
	if v == nil {
		return e, false, !c.indexed
	}
	e = readEntry(c.key, v)
	keep = e.State == StateDamaged || e.Target == target
	return e, keep, keep || !c.indexed
}

// byTarget is Entries(target, 0) read by the index; ok false when the
// index cannot be used.
func (j *Journal) byTarget(tx *bolt.Tx, target string) (out []core.AuditEntry, ok bool) {
	cs, ok := j.candidates(tx, target)
	if !ok {
		return nil, false
	}
	audit := tx.Bucket(bucketAudit)
	for _, c := range cs {
		e, keep, ok := readCandidate(audit, c, target)
		if !ok {
			return nil, false
		}
		if keep {
			out = append(out, e)
		}
	}
	return out, true
}

// pageByTarget is ChangesPage of q (a target, no since) read by the index,
// newest first; ok false when the index cannot be used.
func (j *Journal) pageByTarget(tx *bolt.Tx, q ChangesQuery) (p ChangesPage, ok bool) {
	cs, ok := j.candidates(tx, q.Target)
	if !ok {
		return p, false
	}
	i := len(cs)
	if q.Before > 0 {
		i, _ = slices.BinarySearchFunc(cs, seqKey(q.Before), func(c candidate, k []byte) int { return bytes.Compare(c.key, k) })
	}
	audit := tx.Bucket(bucketAudit)
	p.Changes = []core.AuditEntry{}
	for i--; i >= 0; i-- {
		e, keep, ok := readCandidate(audit, cs[i], q.Target)
		if !ok {
			return p, false
		}
		if !keep {
			continue
		}
		if len(p.Changes) == q.Limit {
			p.NextBefore = p.Changes[len(p.Changes)-1].Seq // there is an older match
			break
		}
		p.Changes = append(p.Changes, e)
	}
	return p, true
}
