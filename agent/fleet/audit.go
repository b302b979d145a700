package fleet

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// What moves with a switch from one owner to the next, under the fleet's
// prefix, every write fenced by the owner key (Fenced):
//
//	audit/SWITCH/TIME-WRITER-PORT-QUEUE  an audit entry (core.AuditEntry,
//	                                     JSON): written open before the
//	                                     Set (Fence), again when resolved
//	                                     (Record); the newest AuditKeep
//	                                     per switch are kept
//	memory/SWITCH/QUEUE                  the guard's memory of a queue
//	                                     (core.QueueMemory, JSON)
//
// A new owner restores the memory and takes the open entries over
// (reconciling each with the switch's read-back): holds, probations and
// changes in flight survive a failover.
//
// A switch's entries are in the order etcd first recorded them (their
// keys' create revisions, AuditEntry.Rev), not by TIME: each writer
// stamps TIME by its own clock, and a member whose clock is behind
// another's would have its later change sorted first (a rollback to the
// baseline restoring the wrong setting, a new owner missing a change left
// open, a trim deleting the queue's first change). TIME is for display
// and to name the entry.

// AuditKeep is how many audit entries per switch stay in etcd (the long
// term is each agent's own audit log).
const AuditKeep = 128

func (n *Node) auditPrefix(sw string) string { return n.prefix + "audit/" + sw + "/" }

// auditKey names an entry of the fleet under prefix by its intent's time,
// writer and queue, so the entry written open and the same entry resolved
// (by its writer or by the switch's next owner) are one key.
func auditKey(prefix string, e core.AuditEntry) string {
	return fmt.Sprintf("%saudit/%s/%019d-%s-%s-%d", prefix, e.Target, e.TimeNs, e.Writer, e.Key.Port, e.Key.Queue)
}

// Fence records the intents of a write to sw under token, in one
// transaction that holds only while this member owns sw with that token
// (the agent's Gate): a deposed owner records, and so sends, nothing.
func (n *Node) Fence(ctx context.Context, sw string, token int64, intents []core.AuditEntry) error {
	ops, err := n.auditOps(intents)
	if err != nil {
		return err
	}
	if _, err = n.Fenced(ctx, sw, token, ops...); err != nil {
		return err
	}
	n.countAudit(ctx, sw, len(intents))
	return nil
}

// MaxAuditModel bounds the policy spec an audit entry carries into etcd
// (a schedule can spell out thousands of entries; the agent's own audit
// log keeps it whole).
const MaxAuditModel = 256

func (n *Node) auditOps(es []core.AuditEntry) ([]clientv3.Op, error) { return auditOps(n.prefix, es) }

// auditOps are the puts of es into the audit of the fleet under prefix.
func auditOps(prefix string, es []core.AuditEntry) ([]clientv3.Op, error) {
	ops := make([]clientv3.Op, 0, len(es))
	for _, e := range es {
		if len(e.Model) > MaxAuditModel {
			e.Model = e.Model[:MaxAuditModel] + "…"
		}
		e.Rev = 0 // the key's create revision, read with it (decodeAudit)
		b, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		ops = append(ops, clientv3.OpPut(auditKey(prefix, e), string(b)))
	}
	return ops, nil
}

// Record keeps, for sw, the audit entries resolved since the last Record
// and the guard's memory of the queues that changed, in transactions
// fenced like Fence: the switch's next owner restores the memory
// (States) and finds the entries resolved.
func (n *Node) Record(ctx context.Context, sw string, token int64, resolved []core.AuditEntry, mems []core.QueueMemory) error {
	ops, err := n.auditOps(resolved)
	if err != nil {
		return err
	}
	mops, err := memoryOps(n.prefix, sw, mems)
	if err != nil {
		return err
	}
	ops = append(ops, mops...)
	for len(ops) > 0 {
		k := min(len(ops), 100)
		if _, err := n.Fenced(ctx, sw, token, ops[:k]...); err != nil {
			return err
		}
		ops = ops[k:]
	}
	return nil
}

// memoryOps are the puts of the guard's memory of sw's queues into the
// fleet under prefix.
func memoryOps(prefix, sw string, mems []core.QueueMemory) ([]clientv3.Op, error) {
	ops := make([]clientv3.Op, 0, len(mems))
	for _, m := range mems {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		ops = append(ops, clientv3.OpPut(memoryPrefix(prefix, sw)+m.Key.String(), string(b)))
	}
	return ops, nil
}

func memoryPrefix(prefix, sw string) string { return prefix + "memory/" + sw + "/" }

// ReadMemory reads the guard's memory of sw's queues that fleet name keeps
// in etcd (what its owners left; empty for a switch never owned).
func ReadMemory(ctx context.Context, cli *clientv3.Client, name, sw string) ([]core.QueueMemory, error) {
	r, err := cli.Get(ctx, memoryPrefix(prefixOf(name), sw), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("fleet %s: guard memory of %s: %w", name, sw, unanswered(cli, err))
	}
	return decodeMemory(name, r.Kvs)
}

// decodeMemory reads the guard's memory kept in etcd.
func decodeMemory(fleet string, kvs []*mvccpb.KeyValue) ([]core.QueueMemory, error) {
	return decodeJSON[core.QueueMemory](fleet, "guard memory", kvs)
}

// decodeJSON reads values kept in etcd as JSON, naming the key of one that
// does not decode (what: what they are).
func decodeJSON[T any](fleet, what string, kvs []*mvccpb.KeyValue) ([]T, error) {
	out := make([]T, 0, len(kvs))
	for _, kv := range kvs {
		var v T
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			return nil, fmt.Errorf("fleet %s: %s %s: %w", fleet, what, kv.Key, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// ManualFence is what lets a write made outside the members' loops
// (agent rollback) go to a fleet's switch, as the owner key's token lets
// a member's (Fenced): the fleet paused by the pause read (its key at
// revision PauseRev), or, when it was not paused (PauseRev 0), no member
// owning the switch.
type ManualFence struct{ PauseRev int64 }

// ErrManualFenced: a manual write's condition failed: the fleet was
// resumed (or paused anew), or a member took the switch, since it was
// checked.
var ErrManualFenced = errors.New("fleet: fenced: the fleet is no longer paused by the pause the rollback was checked against, or a member owns the switch now")

// ReadManualFence reads fleet name's pause with the fence of a write
// outside the members' loops under it: while paused, the pause key's
// revision.
func ReadManualFence(ctx context.Context, cli *clientv3.Client, name string) (Pause, ManualFence, error) {
	p, rev, err := readPause(ctx, cli, name)
	if err != nil || !p.Paused {
		return p, ManualFence{}, err
	}
	return p, ManualFence{PauseRev: rev}, nil
}

// RecordManual writes audit entries of a manual write to sw (agent
// rollback: written open before its Set, again when resolved, as a
// member's are by Fence and Record) into the audit fleet name keeps in
// etcd, under the keys a member's entries have, in one transaction that
// holds only under f: the switch's next owner takes an entry left open
// over, and a rollback planned from the fleet's audit (on any member), or
// agent history --fleet, sees the entries.
//
// mems is the guard's memory of the queues the write changed (what the
// switch now runs, expected and last known good), written in the same
// transactions: the switch's next owner restores it, and does not take
// the manual write for another writer's (an alarm and a yield a queue).
func RecordManual(ctx context.Context, cli *clientv3.Client, name string, f ManualFence, sw string, es []core.AuditEntry, mems []core.QueueMemory) error {
	ops, err := auditOps(prefixOf(name), es)
	if err != nil {
		return err
	}
	mops, err := memoryOps(prefixOf(name), sw, mems)
	if err != nil {
		return err
	}
	ops = append(ops, mops...)
	if len(ops) == 0 {
		return nil
	}
	cond := clientv3.Compare(clientv3.CreateRevision(prefixOf(name)+"owner/"+sw), "=", 0)
	if f.PauseRev > 0 {
		cond = clientv3.Compare(clientv3.ModRevision(pauseKey(name)), "=", f.PauseRev)
	}
	for len(ops) > 0 {
		k := min(len(ops), 100)
		r, err := cli.Txn(ctx).If(cond).Then(ops[:k]...).Commit()
		if err != nil {
			return fmt.Errorf("fleet %s: audit of %s: %w", name, sw, unanswered(cli, err))
		}
		if !r.Succeeded {
			return fmt.Errorf("%w (fleet %s, switch %s)", ErrManualFenced, name, sw)
		}
		ops = ops[k:]
	}
	return nil
}

// Audit reads sw's audit entries kept in etcd, oldest first.
func (n *Node) Audit(ctx context.Context, sw string) ([]core.AuditEntry, error) {
	return ReadAudit(ctx, n.cli, n.cfg.Name, sw)
}

// ReadAudit reads the audit entries a fleet keeps in etcd for sw (every
// switch when sw is ""), oldest first: in the order etcd recorded them
// (decodeAudit).
func ReadAudit(ctx context.Context, cli *clientv3.Client, fleet, sw string) ([]core.AuditEntry, error) {
	p := prefixOf(fleet) + "audit/"
	if sw != "" {
		p += sw + "/"
	}
	r, err := cli.Get(ctx, p, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("fleet %s: %w", fleet, unanswered(cli, err))
	}
	return decodeAudit(fleet, r.Kvs)
}

// decodeAudit reads audit entries kept in etcd, in the order etcd first
// recorded them (each entry's Rev: its key's create revision), whatever
// the clocks that stamped them; entries of one transaction (one write's
// intents) in key order.
func decodeAudit(fleet string, kvs []*mvccpb.KeyValue) ([]core.AuditEntry, error) {
	es, err := decodeJSON[core.AuditEntry](fleet, "audit entry", kvs)
	if err != nil {
		return nil, err
	}
	for i, kv := range kvs {
		es[i].Rev = kv.CreateRevision
	}
	slices.SortStableFunc(es, func(a, b core.AuditEntry) int { return cmp.Compare(a.Rev, b.Rev) })
	return es, nil
}

// countAudit trims sw's audit entries in etcd to the newest AuditKeep once
// they pass twice that (a count kept per switch; the first write of a
// switch counts what is there). Trimming is best effort: an entry left
// over costs space, not safety.
func (n *Node) countAudit(ctx context.Context, sw string, added int) {
	n.mu.Lock()
	c, known := n.auditN[sw]
	n.mu.Unlock()
	if !known {
		r, err := n.cli.Get(ctx, n.auditPrefix(sw), clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return
		}
		c = int(r.Count)
	} else {
		c += added
	}
	if c > 2*AuditKeep {
		if err := n.trimAudit(ctx, sw); err == nil {
			c = AuditKeep
		}
	}
	n.mu.Lock()
	n.auditN[sw] = c
	n.mu.Unlock()
}

// trimAudit deletes sw's oldest resolved entries down to AuditKeep. Some
// stay whatever their age: an open one (the next owner needs it), each
// queue's first change the switch took (its Old is the queue's baseline:
// agent rollback --to baseline on any member restores it, whoever made
// that change) and every safety repair (a restore from before one keeps
// what it repaired); the rest of the long term is each agent's own log.
// Oldest and first are by the order etcd recorded the entries (their
// create revisions), not by the writers' clocks.
func (n *Node) trimAudit(ctx context.Context, sw string) error {
	r, err := n.cli.Get(ctx, n.auditPrefix(sw), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return err
	}
	var ops []clientv3.Op
	first := map[env.QueueKey]bool{}
	for i := 0; i < len(r.Kvs) && len(r.Kvs)-len(ops) > AuditKeep; i++ {
		var e core.AuditEntry
		if json.Unmarshal(r.Kvs[i].Value, &e) == nil {
			took := e.State == core.StateApplied || e.State == core.StateReconciled
			if e.Open() || took && e.Kind == core.KindRepair {
				continue
			}
			if took && !first[e.Key] {
				first[e.Key] = true
				continue
			}
		}
		ops = append(ops, clientv3.OpDelete(string(r.Kvs[i].Key)))
	}
	for len(ops) > 0 {
		k := min(len(ops), 100)
		if _, err := n.cli.Txn(ctx).Then(ops[:k]...).Commit(); err != nil {
			return err
		}
		ops = ops[k:]
	}
	return nil
}

// State is what a switch's previous owners kept in etcd: the guard's
// memory of its queues and its audit entries (oldest first).
type State struct {
	Memory []core.QueueMemory
	Audit  []core.AuditEntry
}

// States reads the kept state of switches, in as few transactions as
// etcd allows (two ranges a switch, 64 switches a transaction): a new
// owner taking many switches over waits one round trip, not two a switch.
func (n *Node) States(ctx context.Context, switches []string) (map[string]State, error) {
	out := make(map[string]State, len(switches))
	for len(switches) > 0 {
		k := min(len(switches), 64)
		var ops []clientv3.Op
		for _, sw := range switches[:k] {
			ops = append(ops, clientv3.OpGet(memoryPrefix(n.prefix, sw), clientv3.WithPrefix()), clientv3.OpGet(n.auditPrefix(sw), clientv3.WithPrefix()))
		}
		r, err := n.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return nil, err
		}
		for i, sw := range switches[:k] {
			st, err := n.decodeState(r.Responses[2*i].GetResponseRange().GetKvs(), r.Responses[2*i+1].GetResponseRange().GetKvs())
			if err != nil {
				return nil, err
			}
			out[sw] = st
		}
		switches = switches[k:]
	}
	return out, nil
}

func (n *Node) decodeState(mem, audit []*mvccpb.KeyValue) (State, error) {
	var st State
	var err error
	if st.Memory, err = decodeMemory(n.cfg.Name, mem); err != nil {
		return st, err
	}
	st.Audit, err = decodeAudit(n.cfg.Name, audit)
	return st, err
}
