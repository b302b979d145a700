package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Pause is an operator's pause of the fleet's closed loops: while it
// holds, every member decides and records and writes nothing. It lives in
// the fleet's pause key, bound to no lease: it outlasts every member's
// restart and a failover (a member that takes a paused member's switches
// is paused too), until an operator resumes.
type Pause struct {
	Paused  bool   `json:"paused"`
	By      string `json:"by,omitempty"`
	Reason  string `json:"reason,omitempty"`
	SinceNs int64  `json:"since_ns,omitempty"`
}

func pauseKey(name string) string { return prefixOf(name) + "pause" }

// SetPause writes fleet name's pause (every member follows it: FollowPause).
func SetPause(ctx context.Context, cli *clientv3.Client, name string, p Pause) error {
	b, _ := json.Marshal(p)
	if _, err := cli.Put(ctx, pauseKey(name), string(b)); err != nil {
		return fmt.Errorf("fleet %s: pause: %w", name, unanswered(cli, err))
	}
	return nil
}

// ReadPause reads fleet name's pause; ok is false when no pause or resume
// was ever written.
func ReadPause(ctx context.Context, cli *clientv3.Client, name string) (p Pause, ok bool, err error) {
	p, rev, err := readPause(ctx, cli, name)
	return p, rev > 0, err
}

// readPause is ReadPause with the pause key's revision (0: none written).
func readPause(ctx context.Context, cli *clientv3.Client, name string) (p Pause, rev int64, err error) {
	r, err := cli.Get(ctx, pauseKey(name))
	if err != nil {
		return p, 0, fmt.Errorf("fleet %s: pause: %w", name, unanswered(cli, err))
	}
	if len(r.Kvs) == 0 {
		return p, 0, nil
	}
	rev = r.Kvs[0].ModRevision
	if err := json.Unmarshal(r.Kvs[0].Value, &p); err != nil {
		// unreadable: paused, as the journal's own unreadable record is
		return Pause{Paused: true, By: "?", Reason: fmt.Sprintf("the fleet's pause record is unreadable: %v", err)}, rev, nil
	}
	return p, rev, nil
}

// ReadPause reads this member's fleet's pause (ReadPause).
func (n *Node) ReadPause(ctx context.Context) (Pause, bool, error) {
	return ReadPause(ctx, n.cli, n.cfg.Name)
}

// SetPause writes this member's fleet's pause.
func (n *Node) SetPause(ctx context.Context, p Pause) error {
	return SetPause(ctx, n.cli, n.cfg.Name, p)
}

// FollowPause calls fn with the fleet's pause as it is (when one was ever
// written), before it returns, so that a member starting in a paused
// fleet writes nothing; then at every change of it, on a goroutine of its
// own, until the node ends (a watch that breaks is followed by a new read
// after TTL/3).
func (n *Node) FollowPause(fn func(Pause)) {
	k := pauseKey(n.cfg.Name)
	gctx, gcancel := context.WithTimeout(n.cli.Ctx(), n.cfg.TTL)
	first, ferr := n.cli.Get(gctx, k)
	gcancel()
	if ferr == nil && len(first.Kvs) > 0 {
		fn(decodePause(first.Kvs[0].Value))
	}
	n.wg.Add(1) // Close waits for it: no late call of fn after
	go func() {
		defer n.wg.Done()
		ctx, cancel := n.sessionContext()
		defer cancel()
		for ctx.Err() == nil {
			r, err := first, ferr
			first, ferr = nil, errors.New("read again")
			if r == nil || err != nil {
				if r, err = n.cli.Get(ctx, k); err != nil {
					sleep(ctx, n.cfg.TTL/3)
					continue
				}
				if len(r.Kvs) > 0 {
					fn(decodePause(r.Kvs[0].Value))
				}
			}
			for wr := range n.cli.Watch(ctx, k, clientv3.WithRev(r.Header.Revision+1)) {
				if wr.Err() != nil {
					break
				}
				for _, ev := range wr.Events {
					if ev.Type == clientv3.EventTypePut {
						fn(decodePause(ev.Kv.Value))
					}
				}
			}
			sleep(ctx, n.cfg.TTL/3)
		}
	}()
}

func decodePause(b []byte) Pause {
	var p Pause
	if err := json.Unmarshal(b, &p); err != nil {
		return Pause{Paused: true, By: "?", Reason: fmt.Sprintf("the fleet's pause record is unreadable: %v", err)}
	}
	return p
}
