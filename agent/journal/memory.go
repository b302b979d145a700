package journal

import (
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// The guard's memory checked against the audit log. The agent writes a
// queue's memory in the transaction that records the result of its change
// (Resolve), and after a reconcile with the next interval's memories: the
// time of its last change (min-hold counts from it) is never earlier than
// the result of the last change the agent applied to the queue. A memory
// record that fails its seal, is missing, or says an earlier time is
// rebuilt from the audit log rather than refused: its last change becomes
// that result's time (the hold it had, never a shorter one), and what
// the log cannot tell (a probation, another writer's hold) is lost, which
// leaves the queue held and unwatched. Refusing would stop the agent's
// safety repairs too, and moving the db aside would lose every queue's
// memory. A manual change (agent rollback) writes its queue's memory with
// its result (agent.ApplyManual): the setting it left is what the guard
// expects, and its hold counts from it; the repair from the audit log does
// not count manual changes.

// manualModel is the Model of changes ApplyManual records.
const manualModel = "manual"

// GuardMemory returns the guard's memory of every queue it stored, checked
// and if need be repaired against the audit log (GuardMemoryRepairs says
// what was repaired; a writable journal also stores the repair).
func (j *Journal) GuardMemory() ([]core.QueueMemory, error) {
	if err := j.readable(bucketGuard); err != nil {
		return nil, err
	}
	byKey := map[string]core.QueueMemory{}
	var damaged []string
	last := map[env.QueueKey]int64{}
	err := j.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketGuard); b != nil { // nil: a database written before guard memory
			_ = b.ForEach(func(k, v []byte) error {
				var m core.QueueMemory
				if err := unsealed(k, v, &m); err != nil || m.Key.String() != string(k) {
					damaged = append(damaged, fmt.Sprintf("%q", k))
					return nil
				}
				byKey[string(k)] = m
				return nil
			})
		}
		return lastApplied(tx, last)
	})
	if err != nil {
		return nil, fmt.Errorf("agent db %s: guard memory: %w", j.path, err)
	}
	for _, m := range j.keptMemories() {
		byKey[m.Key.String()] = m
	}
	out, repaired := repairMemory(byKey, last)
	j.repairs = nil
	if len(damaged) > 0 {
		j.repairs = append(j.repairs, fmt.Sprintf("guard memory of %d queues failed its seal (%v)", len(damaged), damaged))
	}
	for _, m := range repaired {
		j.repairs = append(j.repairs, fmt.Sprintf("guard memory of %s rebuilt from the audit log: last change at %d ns", m.Key, m.LastChangeNs))
	}
	if len(repaired) > 0 && !j.ro {
		if err := j.PutGuardMemory(repaired); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// GuardMemoryRepairs says what the last GuardMemory found damaged or
// behind the audit log and repaired; nil when nothing.
func (j *Journal) GuardMemoryRepairs() []string { return j.repairs }

// lastApplied fills last with the result time of the last change the
// agent applied (or found applied at a reconcile) to each queue.
func lastApplied(tx *bolt.Tx, last map[env.QueueKey]int64) error {
	return tx.Bucket(bucketAudit).ForEach(func(k, v []byte) error {
		e, err := decodeEntry(k, v)
		if err != nil || e.Model == manualModel {
			return nil // a damaged entry is refused at a writable open
		}
		if e.Took() {
			last[e.Key] = max(last[e.Key], e.ResultNs)
		}
		return nil
	})
}

// repairMemory checks each memory against the last applied change of its
// queue; it returns every memory (sorted) and those it repaired.
func repairMemory(byKey map[string]core.QueueMemory, last map[env.QueueKey]int64) (out, repaired []core.QueueMemory) {
	for k, ns := range last {
		m, ok := byKey[k.String()]
		if ok && m.Changed && m.LastChangeNs >= ns {
			continue
		}
		if !ok {
			m = core.QueueMemory{Key: k}
		}
		m.Changed, m.LastChangeNs = true, max(m.LastChangeNs, ns)
		byKey[k.String()] = m
		repaired = append(repaired, m)
	}
	for _, m := range byKey {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return env.QueueKeyLess(out[i].Key, out[j].Key) })
	sort.Slice(repaired, func(i, j int) bool { return env.QueueKeyLess(repaired[i].Key, repaired[j].Key) })
	return out, repaired
}
