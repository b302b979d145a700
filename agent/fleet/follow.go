package fleet

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// follow keeps this member's owner keys in step with the placement: it
// takes the switches assigned to it (once their previous owner's key is
// gone) and gives up those assigned elsewhere, on every change of the
// assignments or owner keys and every TTL/3.
func (n *Node) follow(ctx context.Context) {
	// Puts of assignments, deletes of owner keys: what can change what
	// this member may or must hold.
	watch := func() (clientv3.WatchChan, clientv3.WatchChan) {
		return n.cli.Watch(ctx, n.prefix+"assign/", clientv3.WithPrefix(), clientv3.WithFilterDelete()),
			n.cli.Watch(ctx, n.prefix+"owner/", clientv3.WithPrefix(), clientv3.WithFilterPut())
	}
	w, wd := watch()
	t := time.NewTicker(n.cfg.TTL / 3)
	defer t.Stop()
	for {
		if err := n.reconcile(ctx); err != nil && ctx.Err() == nil {
			n.cfg.Logger.Warn("fleet: owner keys", "member", n.cfg.Member.ID, "err", err)
		}
		var ok1, ok2 = true, true
		select {
		case <-ctx.Done():
			return
		case _, ok1 = <-w:
		case _, ok2 = <-wd:
		case <-t.C:
		}
		if !ok1 || !ok2 { // a watch ended (compaction, a lost connection): a new one, not a spin
			sleep(ctx, n.cfg.TTL/3)
			w, wd = watch()
		}
	}
}

// reconcile takes and gives up owner keys as the assignments say.
func (n *Node) reconcile(ctx context.Context) error {
	ar, err := n.cli.Get(ctx, n.prefix+"assign/", clientv3.WithPrefix())
	if err != nil {
		return err
	}
	mine := map[string]bool{}
	for _, kv := range ar.Kvs {
		if string(kv.Value) == n.cfg.Member.ID {
			mine[string(kv.Key[len(n.prefix+"assign/"):])] = true
		}
	}
	or, err := n.cli.Get(ctx, n.prefix+"owner/", clientv3.WithPrefix())
	if err != nil {
		return err
	}
	held := map[string]int64{} // switches whose owner key is ours → create revision
	taken := map[string]bool{}
	for _, kv := range or.Kvs {
		sw := string(kv.Key[len(n.prefix+"owner/"):])
		taken[sw] = true
		if clientv3.LeaseID(kv.Lease) == n.lease {
			held[sw] = kv.CreateRevision
		}
	}
	changed := false
	for sw := range n.snapshotOwned() {
		if _, ok := held[sw]; !ok || !mine[sw] {
			if ok {
				// assigned elsewhere: give it up (only our own key)
				k := n.ownerKey(sw)
				if _, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.LeaseValue(k), "=", n.lease)).Then(clientv3.OpDelete(k)).Commit(); err != nil {
					return err
				}
			}
			n.mu.Lock()
			delete(n.owned, sw)
			n.mu.Unlock()
			changed = true
		}
	}
	owned := n.snapshotOwned() // once, not per switch: each call copies the map
	for sw := range mine {
		if _, own := owned[sw]; own {
			continue
		}
		if rev, ok := held[sw]; ok { // ours already (a restart of the loop)
			n.take(sw, rev)
			changed = true
			continue
		}
		if taken[sw] {
			continue // the previous owner's key: it goes with its lease
		}
		k := n.ownerKey(sw)
		r, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, n.cfg.Member.ID, clientv3.WithLease(n.lease))).Commit()
		if err != nil {
			return err
		}
		if r.Succeeded {
			n.take(sw, r.Header.Revision)
			changed = true
		}
	}
	if changed {
		n.mu.Lock()
		f := n.onChange
		n.mu.Unlock()
		if f != nil {
			f()
		}
	}
	return nil
}

// take records an owner key just created (rev: its create revision, the
// fencing token); the first write waits Takeover.
func (n *Node) take(sw string, rev int64) {
	now := time.Now()
	n.mu.Lock()
	n.owned[sw] = Ownership{Switch: sw, Token: rev, Since: now, WriteAt: now.Add(n.cfg.Takeover)}
	n.mu.Unlock()
	n.cfg.Logger.Info("fleet: owner", "member", n.cfg.Member.ID, "switch", sw, "token", rev)
}

func (n *Node) snapshotOwned() map[string]Ownership {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]Ownership, len(n.owned))
	for k, v := range n.owned {
		out[k] = v
	}
	return out
}
