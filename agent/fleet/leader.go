package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
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

// Leader says whether this member leads the fleet: not once its lease has
// lapsed (renew), even where its campaign still waits for etcd to answer.
func (n *Node) Leader() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leader && !n.lapsed(time.Now())
}

// lead places the switches while this member leads: at once, on every
// change of the members, every Config.Every (a rebalance round) and on an
// operator's request (request/, answered under result/: a rebalance is
// answered with the round it caused; a resign ends the lead).
func (n *Node) lead(ctx context.Context, e *concurrency.Election) {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := n.cli.Watch(lctx, n.prefix+"members/", clientv3.WithPrefix())
	rw := n.cli.Watch(lctx, n.prefix+"request/", clientv3.WithPrefix(), clientv3.WithFilterDelete())
	t := time.NewTicker(n.cfg.Every)
	defer t.Stop()
	asked := true // requests made before this member led are answered first
	for {
		r, err := n.place(lctx, e)
		if err != nil {
			n.cfg.Logger.Warn("fleet: placement", "err", err)
			if ok, _ := n.stillLeader(lctx, e); !ok {
				return
			}
		}
		if asked {
			asked = false
			if n.answer(lctx, e, r, err) {
				n.resign(lctx, e)
				return
			}
		}
		var ok = true
		select {
		case <-lctx.Done():
			return
		case <-n.ended():
			return
		case _, ok = <-w:
		case _, ok = <-rw:
			asked = true
		case <-t.C:
		}
		if !ok {
			return
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

// round is what a placement round saw and decided.
type round struct {
	members []Member
	p       Placement
}

// place reads the members and the assignments, runs Place and writes what
// changed, in one transaction that holds only while this member leads.
func (n *Node) place(ctx context.Context, e *concurrency.Election) (round, error) {
	ms, err := n.members(ctx)
	if err != nil {
		return round{}, err
	}
	ar, err := n.cli.Get(ctx, n.prefix+"assign/", clientv3.WithPrefix())
	if err != nil {
		return round{}, err
	}
	cur := map[string]string{}
	for _, kv := range ar.Kvs {
		cur[string(kv.Key[len(n.prefix+"assign/"):])] = string(kv.Value)
	}
	p := Place(n.cfg.Switches, ms, cur, PlaceOptions{Rebalance: true, MaxMoves: n.cfg.MaxMoves})
	var ops []clientv3.Op
	// a switch the leader's configuration no longer lists is placed on
	// nobody: its owner gives it up (it was removed from the fleet, or a
	// rolling change has reached the leader first)
	for sw := range cur {
		if _, ok := p.Owner[sw]; !ok {
			p.Owner[sw] = ""
			p.Moved = append(p.Moved, sw)
		}
	}
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
		return round{ms, p}, nil
	}
	const maxOps = 100 // etcd's default --max-txn-ops is 128
	for len(ops) > 0 {
		k := min(len(ops), maxOps)
		r, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev())).Then(ops[:k]...).Commit()
		if err != nil {
			return round{}, err
		}
		if !r.Succeeded {
			return round{}, errNotLeader
		}
		ops = ops[k:]
	}
	n.cfg.Logger.Info("fleet: placed", "members", len(ms), "moved", len(p.Moved), "rebalanced", len(p.Rebalanced))
	return round{ms, p}, nil
}

var errNotLeader = errors.New("fleet: no longer the leader")

// members reads the fleet's members for a placement. Their records carry
// the switches each runs (a few KB on a thousand switches), and they
// change when a member joins, leaves or is drained: a round reads the
// keys alone and reads the records again only when a key is new or
// changed since the last round (the same one request at rest).
func (n *Node) members(ctx context.Context) ([]Member, error) {
	p := n.prefix + "members/"
	kr, err := n.cli.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	if sig := memberSig(kr.Kvs); sig == n.placing.sig && n.placing.members != nil {
		return n.placing.members, nil
	}
	mr, err := n.cli.Get(ctx, p, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	ms := []Member{}
	for _, kv := range mr.Kvs {
		var m Member
		if json.Unmarshal(kv.Value, &m) == nil && m.ID != "" {
			ms = append(ms, m)
		}
	}
	n.placing.members, n.placing.sig = ms, memberSig(mr.Kvs)
	return ms, nil
}

// memberSig identifies a set of member records: each key with its
// modification revision.
func memberSig(kvs []*mvccpb.KeyValue) string {
	var b strings.Builder
	for _, kv := range kvs {
		fmt.Fprintf(&b, "%s@%d;", kv.Key, kv.ModRevision)
	}
	return b.String()
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
