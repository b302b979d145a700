package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// campaign runs for leadership; the leader places the switches whenever
// the members change, and every Config.Every, until it loses the lead.
func (n *Node) campaign(ctx context.Context) {
	e := concurrency.NewElection(n.sess, n.prefix+"leader")
	for ctx.Err() == nil {
		if err := e.Campaign(ctx, n.cfg.Member.ID); err != nil {
			if ctx.Err() == nil {
				n.cfg.Logger.Warn("fleet: campaign", "member", n.cfg.Member.ID, "err", err)
				sleep(ctx, n.cfg.TTL/3)
			}
			continue
		}
		n.setLeader(true)
		n.cfg.Logger.Info("fleet: leader", "member", n.cfg.Member.ID)
		n.lead(ctx, e)
		n.setLeader(false)
	}
}

func (n *Node) setLeader(b bool) { n.mu.Lock(); n.leader = b; n.mu.Unlock() }

// Leader says whether this member leads the fleet.
func (n *Node) Leader() bool { n.mu.Lock(); defer n.mu.Unlock(); return n.leader }

// lead places the switches while this member leads: at once, on every
// change of the members, and every Config.Every (a rebalance round).
func (n *Node) lead(ctx context.Context, e *concurrency.Election) {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := n.cli.Watch(lctx, n.prefix+"members/", clientv3.WithPrefix())
	t := time.NewTicker(n.cfg.Every)
	defer t.Stop()
	for {
		if err := n.place(lctx, e); err != nil {
			n.cfg.Logger.Warn("fleet: placement", "err", err)
			if ok, _ := n.stillLeader(lctx, e); !ok {
				return
			}
		}
		select {
		case <-lctx.Done():
			return
		case <-n.sess.Done():
			return
		case _, ok := <-w:
			if !ok {
				return
			}
		case <-t.C:
		}
	}
}

func (n *Node) stillLeader(ctx context.Context, e *concurrency.Election) (bool, error) {
	r, err := n.cli.Get(ctx, e.Key())
	if err != nil {
		return false, err
	}
	return len(r.Kvs) == 1 && r.Kvs[0].CreateRevision == e.Rev(), nil
}

// place reads the members and the assignments, runs Place and writes what
// changed, in one transaction that holds only while this member leads.
func (n *Node) place(ctx context.Context, e *concurrency.Election) error {
	mr, err := n.cli.Get(ctx, n.prefix+"members/", clientv3.WithPrefix())
	if err != nil {
		return err
	}
	var ms []Member
	for _, kv := range mr.Kvs {
		var m Member
		if json.Unmarshal(kv.Value, &m) == nil && m.ID != "" {
			ms = append(ms, m)
		}
	}
	ar, err := n.cli.Get(ctx, n.prefix+"assign/", clientv3.WithPrefix())
	if err != nil {
		return err
	}
	cur := map[string]string{}
	for _, kv := range ar.Kvs {
		cur[string(kv.Key[len(n.prefix+"assign/"):])] = string(kv.Value)
	}
	p := Place(n.cfg.Switches, ms, cur, PlaceOptions{Rebalance: true, MaxMoves: n.cfg.MaxMoves})
	var ops []clientv3.Op
	for sw, id := range p.Owner {
		switch {
		case id == cur[sw]:
		case id == "":
			ops = append(ops, clientv3.OpDelete(n.assignKey(sw)))
		default:
			ops = append(ops, clientv3.OpPut(n.assignKey(sw), id))
		}
	}
	if len(ops) == 0 {
		return nil
	}
	const maxOps = 100 // etcd's default --max-txn-ops is 128
	for len(ops) > 0 {
		k := min(len(ops), maxOps)
		r, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev())).Then(ops[:k]...).Commit()
		if err != nil {
			return err
		}
		if !r.Succeeded {
			return errNotLeader
		}
		ops = ops[k:]
	}
	n.cfg.Logger.Info("fleet: placed", "members", len(ms), "moved", len(p.Moved), "rebalanced", len(p.Rebalanced))
	return nil
}

var errNotLeader = errors.New("fleet: no longer the leader")

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
