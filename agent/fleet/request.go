package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// An operator steers the fleet through its leader with a request key,
// request/KIND, that the leader watches: it answers under result/KIND
// with the request's revision and deletes the request, both in one
// transaction that holds only while it leads, so that a request is
// answered once, by a leader, even across a change of leader (a new
// leader answers the requests waiting when it takes the lead).

// Result is the leader's answer to a request.
type Result struct {
	Kind string `json:"kind"`
	// Request is the revision of the request answered (a newer request
	// of the same kind replaces an older one waiting: both get its answer).
	Request int64  `json:"request_revision"`
	Leader  string `json:"leader"` // the member that answered
	Members int    `json:"members"`
	// Moved is how many switches the round placed anew, Rebalanced those
	// of them taken from a live member (at most Config.MaxMoves), Pending
	// how many more a rebalance would still move (later rounds, one every
	// Config.Every or request).
	Moved      int `json:"moved"`
	Rebalanced int `json:"rebalanced"`
	Pending    int `json:"pending"`
	// Resigned: the leader gave the lead up (a resign request for another
	// leader, answered after a change of leader, is not).
	Resigned bool   `json:"resigned,omitempty"`
	Error    string `json:"error,omitempty"`
}

// request is the value of a request key.
type request struct {
	By     string `json:"by,omitempty"`     // who asked (logs)
	Leader string `json:"leader,omitempty"` // resign: the leader asked to resign ("" whichever leads)
}

// Handoff is a resign's outcome: the leader that gave the lead up, the one
// elected after it (the same member when no other is up: Reelected) and
// how long from the request to the new leader's key.
type Handoff struct {
	From      string        `json:"from"`
	To        string        `json:"to"`
	Reelected bool          `json:"reelected,omitempty"`
	Took      time.Duration `json:"took_ns"`
}

const (
	kindRebalance = "rebalance"
	kindResign    = "resign"
)

// Rebalance asks fleet name's leader for a placement round now, with
// rebalancing (at most Config.MaxMoves switches taken from live members,
// as every round), and returns its answer. by names who asks (logs).
func Rebalance(ctx context.Context, cli *clientv3.Client, name, by string) (Result, error) {
	return ask(ctx, cli, name, kindRebalance, request{By: by})
}

// Resign asks fleet name's leader to give the lead up, and waits for the
// next leader: the member that campaigned longest, or the same one when
// no other member is up.
func Resign(ctx context.Context, cli *clientv3.Client, name, by string) (Handoff, error) {
	from, fromRev, err := leaderOf(ctx, cli, name)
	if err != nil {
		return Handoff{}, err
	}
	if from == "" {
		return Handoff{}, fmt.Errorf("fleet %s: no leader (no member is up; ecntune fleet status)", name)
	}
	start := time.Now()
	r, err := ask(ctx, cli, name, kindResign, request{By: by, Leader: from})
	if err != nil {
		return Handoff{}, err
	}
	if !r.Resigned { // the lead changed hands before the request was answered
		return Handoff{From: from, To: r.Leader, Took: time.Since(start)}, nil
	}
	for {
		id, rev, err := leaderOf(ctx, cli, name)
		if err != nil {
			return Handoff{}, err
		}
		if id != "" && rev != fromRev {
			return Handoff{From: from, To: id, Reelected: id == from, Took: time.Since(start)}, nil
		}
		select {
		case <-ctx.Done():
			return Handoff{}, fmt.Errorf("fleet %s: %s resigned; no new leader yet (%w)", name, from, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// leaderOf is the member that leads fleet name (the oldest key of the
// election) and its key's create revision; "" when none.
func leaderOf(ctx context.Context, cli *clientv3.Client, name string) (string, int64, error) {
	r, err := cli.Get(ctx, prefixOf(name)+"leader/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", 0, fmt.Errorf("fleet %s: %w", name, unanswered(cli, err))
	}
	if len(r.Kvs) == 0 {
		return "", 0, nil
	}
	return string(r.Kvs[0].Value), r.Kvs[0].CreateRevision, nil
}

// ask puts a request and waits for the leader's answer to it (or a newer
// one), until ctx ends; then it withdraws the request if it still waits.
func ask(ctx context.Context, cli *clientv3.Client, name, kind string, q request) (Result, error) {
	k := prefixOf(name) + "request/" + kind
	b, _ := json.Marshal(q)
	pr, err := cli.Put(ctx, k, string(b))
	if err != nil {
		return Result{}, fmt.Errorf("fleet %s: %s request: %w", name, kind, unanswered(cli, err))
	}
	rev := pr.Header.Revision
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range cli.Watch(wctx, prefixOf(name)+"result/"+kind, clientv3.WithRev(rev)) {
		if err := wr.Err(); err != nil {
			return Result{}, fmt.Errorf("fleet %s: %s request: %w", name, kind, unanswered(cli, err))
		}
		for _, ev := range wr.Events {
			var r Result
			if json.Unmarshal(ev.Kv.Value, &r) != nil || r.Request < rev {
				continue
			}
			if r.Error != "" {
				return r, fmt.Errorf("fleet %s: leader %s: %s: %s", name, r.Leader, kind, r.Error)
			}
			return r, nil
		}
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer dcancel()
	_, _ = cli.Txn(dctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", rev)).Then(clientv3.OpDelete(k)).Commit()
	return Result{}, fmt.Errorf("fleet %s: no leader answered the %s request (%w); ecntune fleet status shows whether a member leads", name, kind, ctx.Err())
}

// answer answers the requests waiting, with the round r just placed (err:
// its error), and says whether one asks this member to resign.
func (n *Node) answer(ctx context.Context, e *concurrency.Election, r round, err error) (resign bool) {
	rr, gerr := n.cli.Get(ctx, n.prefix+"request/", clientv3.WithPrefix())
	if gerr != nil {
		n.cfg.Logger.Warn("fleet: requests not read", "err", gerr)
		return false
	}
	for _, kv := range rr.Kvs {
		var q request
		_ = json.Unmarshal(kv.Value, &q)
		res := Result{Kind: string(kv.Key[len(n.prefix+"request/"):]), Request: kv.ModRevision, Leader: n.cfg.Member.ID}
		switch res.Kind {
		case kindRebalance:
			res.fill(n.cfg.Switches, r, err)
		case kindResign:
			res.Resigned = q.Leader == "" || q.Leader == n.cfg.Member.ID
		default:
			res.Error = "unknown request " + res.Kind
		}
		b, _ := json.Marshal(res)
		t, terr := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev()),
			clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(string(kv.Key)), clientv3.OpPut(n.prefix+"result/"+res.Kind, string(b))).Commit()
		if terr != nil || !t.Succeeded {
			continue // lost the lead, or a newer request came: its own wake-up answers it
		}
		n.cfg.Logger.Info("fleet: request answered", "kind", res.Kind, "by", q.By, "moved", res.Moved, "pending", res.Pending, "resigned", res.Resigned)
		resign = resign || res.Resigned
	}
	return resign
}

// fill gives a rebalance's answer: what round r did, and what a rebalance
// without a bound would still move.
func (res *Result) fill(switches []Switch, r round, err error) {
	if err != nil {
		res.Error = err.Error()
		return
	}
	res.Members, res.Moved, res.Rebalanced = len(r.members), len(r.p.Moved), len(r.p.Rebalanced)
	res.Pending = len(Place(switches, r.members, r.p.Owner, PlaceOptions{Rebalance: true}).Rebalanced)
}

// resign gives the lead up: the member that campaigned longest leads
// next, and this one campaigns again behind it.
func (n *Node) resign(ctx context.Context, e *concurrency.Election) {
	rctx, cancel := context.WithTimeout(ctx, n.cfg.TTL)
	defer cancel()
	if err := e.Resign(rctx); err != nil {
		n.cfg.Logger.Warn("fleet: resign", "member", n.cfg.Member.ID, "err", err)
		return
	}
	n.cfg.Logger.Info("fleet: resigned the lead on request", "member", n.cfg.Member.ID)
}

// Drain is Drain on this member's fleet.
func (n *Node) Drain(ctx context.Context, member string, on bool) error {
	return Drain(ctx, n.cli, n.cfg.Name, member, on)
}

// Rebalance is Rebalance on this member's fleet, asked by this member.
func (n *Node) Rebalance(ctx context.Context) (Result, error) {
	return Rebalance(ctx, n.cli, n.cfg.Name, n.cfg.Member.ID)
}

// Resign is Resign on this member's fleet (whichever member leads it),
// asked by this member.
func (n *Node) Resign(ctx context.Context) (Handoff, error) {
	return Resign(ctx, n.cli, n.cfg.Name, n.cfg.Member.ID)
}

// ErrNoMember: a drain names no member of the fleet.
var ErrNoMember = errors.New("no member")
