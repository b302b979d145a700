package fleet

import (
	"context"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Members says how many members fleet has as this member sees them
// (draining ones too), for its metrics: from its first call the node
// lists members/ once and then follows a watch of it (one stream, no
// request at rest). It is 0 until the first list, and once the member's
// session has ended.
func (n *Node) Members() int {
	select {
	case <-n.ended():
		return 0
	default:
	}
	v, loaded := views.LoadOrStore(n, &memberView{ids: map[string]bool{}})
	mv := v.(*memberView)
	if !loaded {
		go mv.follow(n)
	}
	mv.mu.Lock()
	defer mv.mu.Unlock()
	return len(mv.ids)
}

// views are the nodes' member views, each kept while its node's session
// and client live.
var views sync.Map // *Node → *memberView

type memberView struct {
	mu  sync.Mutex
	ids map[string]bool
}

// follow lists the members and follows their changes until the node's
// session or client ends; a watch that breaks (compaction, a lost
// connection) is followed by a new list after TTL/3.
func (v *memberView) follow(n *Node) {
	defer views.Delete(n)
	ctx, cancel := n.sessionContext()
	defer cancel()
	p := n.prefix + "members/"
	for ctx.Err() == nil {
		r, err := n.cli.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			sleep(ctx, n.cfg.TTL/3)
			continue
		}
		v.mu.Lock()
		clear(v.ids)
		for _, kv := range r.Kvs {
			v.ids[string(kv.Key[len(p):])] = true
		}
		v.mu.Unlock()
		for wr := range n.cli.Watch(ctx, p, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithRev(r.Header.Revision+1)) {
			if wr.Err() != nil {
				break
			}
			v.mu.Lock()
			for _, ev := range wr.Events {
				if id := string(ev.Kv.Key[len(p):]); ev.Type == clientv3.EventTypeDelete {
					delete(v.ids, id)
				} else {
					v.ids[id] = true
				}
			}
			v.mu.Unlock()
		}
		sleep(ctx, n.cfg.TTL/3)
	}
}

// sessionContext is a context that ends when the node's session does
// (Close, a lost lease) or its client closes.
func (n *Node) sessionContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(n.cli.Ctx())
	go func() {
		select {
		case <-n.ended():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
