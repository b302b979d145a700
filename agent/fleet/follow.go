package fleet

import (
	"context"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// follow keeps this member's owner keys in step with the placement: it
// takes the switches assigned to it (once their previous owner's key is
// gone) and gives up those assigned elsewhere, on every change of the
// assignments or owner keys and every TTL/3. It reads both key ranges
// once, at one revision, and keeps them up to date from watches that
// start right after it: at rest it reads nothing (a full read again
// every fullEvery rounds, and whenever a watch ends).
func (n *Node) follow(ctx context.Context) {
	t := time.NewTicker(n.cfg.TTL / 3)
	defer t.Stop()
	for ctx.Err() == nil {
		v, err := n.loadView(ctx)
		if err != nil {
			if ctx.Err() == nil {
				n.cfg.Logger.Warn("fleet: owner keys", "member", n.cfg.Member.ID, "err", err)
			}
			sleep(ctx, n.cfg.TTL/3)
			continue
		}
		n.followView(ctx, v, t.C)
	}
}

// fullEvery is how many rounds follow goes on its watches before it
// reads the key ranges whole again (a watch that stalls without ending
// costs at most that many rounds).
const fullEvery = 30

// followView reconciles from v on every watch event and tick until a
// watch ends or fullEvery rounds have passed.
func (n *Node) followView(ctx context.Context, v *keyView, tick <-chan time.Time) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := n.cli.Watch(wctx, n.prefix+"assign/", clientv3.WithPrefix(), clientv3.WithRev(v.rev+1))
	wo := n.cli.Watch(wctx, n.prefix+"owner/", clientv3.WithPrefix(), clientv3.WithRev(v.rev+1))
	for round := 0; round < fullEvery; round++ {
		if err := n.reconcile(ctx, v); err != nil && ctx.Err() == nil {
			n.cfg.Logger.Warn("fleet: owner keys", "member", n.cfg.Member.ID, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case r, ok := <-w:
			if !ok || r.Err() != nil {
				return // compaction, a lost connection: read whole again
			}
			v.apply(r.Events, len(n.prefix+"assign/"), false, n.lease)
		case r, ok := <-wo:
			if !ok || r.Err() != nil {
				return
			}
			v.apply(r.Events, len(n.prefix+"owner/"), true, n.lease)
		case <-tick:
		}
	}
}

// keyView is what follow knows of the assign/ and owner/ keys.
type keyView struct {
	rev    int64
	assign map[string]string // switch → member
	taken  map[string]bool   // switches with an owner key
	held   map[string]int64  // switches whose owner key is this member's → create revision
	// local is the revision of this member's own last write of a
	// switch's owner key, already in the view: older events of that key
	// still on their way through the watch are skipped.
	local map[string]int64
}

// loadView reads both ranges in one transaction (one revision).
func (n *Node) loadView(ctx context.Context) (*keyView, error) {
	r, err := n.cli.Txn(ctx).Then(clientv3.OpGet(n.prefix+"assign/", clientv3.WithPrefix()),
		clientv3.OpGet(n.prefix+"owner/", clientv3.WithPrefix())).Commit()
	if err != nil {
		return nil, err
	}
	v := &keyView{rev: r.Header.Revision, assign: map[string]string{}, taken: map[string]bool{}, held: map[string]int64{}, local: map[string]int64{}}
	for _, kv := range r.Responses[0].GetResponseRange().GetKvs() {
		v.assign[string(kv.Key[len(n.prefix+"assign/"):])] = string(kv.Value)
	}
	for _, kv := range r.Responses[1].GetResponseRange().GetKvs() {
		v.putOwner(string(kv.Key[len(n.prefix+"owner/"):]), kv, n.lease)
	}
	return v, nil
}

func (v *keyView) putOwner(sw string, kv *mvccpb.KeyValue, lease clientv3.LeaseID) {
	v.taken[sw] = true
	if clientv3.LeaseID(kv.Lease) == lease {
		v.held[sw] = kv.CreateRevision
	} else {
		delete(v.held, sw)
	}
}

// apply brings v up to date with watch events of one prefix (cut: its
// length): assign/ values are members, owner/ (owner) keys owners.
func (v *keyView) apply(evs []*clientv3.Event, cut int, owner bool, lease clientv3.LeaseID) {
	for _, e := range evs {
		sw := string(e.Kv.Key[cut:])
		if owner && e.Kv.ModRevision <= v.local[sw] {
			continue // this member's own write, in the view already, or older
		}
		switch {
		case owner && e.Type == clientv3.EventTypeDelete:
			delete(v.taken, sw)
			delete(v.held, sw)
		case owner:
			v.putOwner(sw, e.Kv, lease)
		case e.Type == clientv3.EventTypeDelete:
			delete(v.assign, sw)
		default:
			v.assign[sw] = string(e.Kv.Value)
		}
	}
}

// reconcile takes and gives up owner keys as the assignments say.
func (n *Node) reconcile(ctx context.Context, v *keyView) error {
	mine := map[string]bool{}
	for sw, m := range v.assign {
		if m == n.cfg.Member.ID {
			if !slices.Contains(n.cfg.Member.Switches, sw) {
				// a leader of an older version placed a switch this
				// member does not run: holding it, nobody would tune it
				n.notRun(sw)
				continue
			}
			mine[sw] = true
		}
	}
	held, taken := v.held, v.taken
	changed := false
	now := time.Now()
	n.noteUnplaced(v, now)
	for sw := range n.snapshotOwned() {
		if _, ok := held[sw]; !ok || !mine[sw] {
			n.mu.Lock()
			delete(n.owned, sw) // no write starts from now on
			if ok {
				// assigned elsewhere: its key goes once a write started
				// just now has landed (releaseDue): after its write
				// timeout, and no later than this member's write
				// deadline, where every write's context ends (Safe): a
				// switch's 60 s set timeout held the key 60 s where no
				// write could outlive the 4 s lease
				n.releasing[sw] = now.Add(n.writeTimeout(sw))
				if dl := n.deadline(); dl.Before(n.releasing[sw]) {
					n.releasing[sw] = dl
				}
			}
			n.mu.Unlock()
			changed = true
		}
	}
	if err := n.releaseDue(ctx, v, mine, now); err != nil {
		return err
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
			v.held[sw], v.taken[sw], v.local[sw] = r.Header.Revision, true, r.Header.Revision
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
	select {
	case <-n.done:
		return // the lease is gone: the key read was of it, no more
	default:
	}
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

// releaseDue deletes the owner keys of switches given up whose last write
// has had WriteTimeout to land (only this member's own key): the next
// owner, who waits for the key to go, never writes while a write of this
// member is on the wire. A switch assigned back meanwhile is kept.
func (n *Node) releaseDue(ctx context.Context, v *keyView, mine map[string]bool, now time.Time) error {
	n.mu.Lock()
	due := map[string]bool{}
	for sw, at := range n.releasing {
		switch {
		case mine[sw]:
			delete(n.releasing, sw) // ours again: the loop takes it back
		case !now.Before(at):
			due[sw] = true
		}
	}
	n.mu.Unlock()
	for sw := range due {
		k := n.ownerKey(sw)
		r, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.LeaseValue(k), "=", n.lease)).Then(clientv3.OpDelete(k)).Commit()
		if err != nil {
			return err
		}
		delete(v.held, sw) // the watch says so too, later
		delete(v.taken, sw)
		v.local[sw] = r.Header.Revision
		n.mu.Lock()
		delete(n.releasing, sw)
		n.mu.Unlock()
	}
	return nil
}

// unplacedAfter is how long a switch of this member's configuration may
// go without an assignment before it warns: the leader places every
// round (Every), so two rounds without one mean it does not place it.
func (n *Node) unplacedAfter() time.Duration { return 2*n.cfg.Every + n.cfg.TTL }

// noteUnplaced warns, once per switch, about switches of this member's
// configuration the leader does not place: the leader places the switches
// of its own configuration, so a switch added to some agents' (a rolling
// change that has not reached the leader) has no owner until it has.
func (n *Node) noteUnplaced(v *keyView, now time.Time) {
	n.mu.Lock() // Unowned reads it
	defer n.mu.Unlock()
	for _, s := range n.cfg.Switches {
		if _, ok := v.assign[s.Name]; ok {
			delete(n.unplaced, s.Name)
			continue
		}
		u, ok := n.unplaced[s.Name]
		switch {
		case !ok:
			n.unplaced[s.Name] = unplaced{since: now}
		case !u.warned && now.Sub(u.since) >= n.unplacedAfter():
			n.unplaced[s.Name] = unplaced{since: u.since, warned: true}
			n.cfg.Logger.Warn("fleet: a switch of this agent's configuration is not placed by the leader, so no agent writes it: every member that lists it is draining (ecntune fleet drain --undo), or the leader's configuration does not list it (a rolling change places it once the leader runs the new one; ecntune fleet resign moves the lead)",
				"member", n.cfg.Member.ID, "switch", s.Name, "unplaced_for", now.Sub(u.since).Round(time.Second))
		}
	}
}

// notRun warns, once per switch, of an assignment to this member of a
// switch its configuration does not list: it is not taken.
func (n *Node) notRun(sw string) {
	n.mu.Lock()
	warned := n.notRunWarned[sw]
	n.notRunWarned[sw] = true
	n.mu.Unlock()
	if !warned {
		n.cfg.Logger.Warn("fleet: the leader placed on this member a switch its configuration does not list; not taken (the leader runs an older version: upgrade it, or list the switch here)",
			"member", n.cfg.Member.ID, "switch", sw)
	}
}

// Unowned are the switches of this member's configuration the leader has
// placed on no member for longer than two placement rounds, and for how
// long: no agent of the fleet writes them (every member draining, or a
// configuration the leader does not run yet). An agent's health reads it.
func (n *Node) Unowned(now time.Time) map[string]time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out map[string]time.Duration
	for sw, u := range n.unplaced {
		if d := now.Sub(u.since); d >= n.unplacedAfter() {
			if out == nil {
				out = map[string]time.Duration{}
			}
			out[sw] = d
		}
	}
	return out
}

// unplaced is a switch of this member's configuration without an
// assignment, since when, and whether that was said.
type unplaced struct {
	since  time.Time
	warned bool
}
