package fleetsoak

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ownerKey is one owner key's life as the harness saw it, from a watch of
// its own (not through the agents' proxies): who held the switch under
// which fencing token (the key's create revision) and lease, from when
// until when (Deleted zero: still held at the end). Times are when the
// harness saw the event, a little after it happened.
type ownerKey struct {
	Switch, Member   string
	Token, Lease     int64
	Created, Deleted time.Time
}

// history is the fleet's owner keys and member leases over a run.
type history struct {
	mu       sync.Mutex
	owners   map[string][]*ownerKey // by switch, in creation order
	leaseEnd map[int64]time.Time    // a member key deleted: its lease ended
	joined   map[string][]time.Time // member keys created, by member
}

// watchHistory records the fleet's owner keys and member keys from now
// until ctx ends, resuming after a lost watch.
func watchHistory(ctx context.Context, cli *clientv3.Client, fleet string) (*history, error) {
	h := &history{owners: map[string][]*ownerKey{}, leaseEnd: map[int64]time.Time{}, joined: map[string][]time.Time{}}
	prefix := "/ecntune/fleet/" + fleet + "/"
	r, err := cli.Get(ctx, prefix+"owner/", clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for _, kv := range r.Kvs {
		sw := strings.TrimPrefix(string(kv.Key), prefix+"owner/")
		h.owners[sw] = append(h.owners[sw], &ownerKey{Switch: sw, Member: string(kv.Value), Token: kv.CreateRevision, Lease: kv.Lease, Created: now})
	}
	rev := r.Header.Revision + 1
	for _, sub := range []string{"owner/", "members/"} {
		go h.watch(ctx, cli, prefix+sub, rev)
	}
	return h, nil
}

func (h *history) watch(ctx context.Context, cli *clientv3.Client, prefix string, rev int64) {
	for ctx.Err() == nil {
		wc := cli.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithRev(rev))
		for wr := range wc {
			now := time.Now()
			for _, ev := range wr.Events {
				h.note(prefix, ev, now)
				rev = ev.Kv.ModRevision + 1
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (h *history) note(prefix string, ev *clientv3.Event, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	owner := strings.HasSuffix(prefix, "/owner/")
	sw := strings.TrimPrefix(string(ev.Kv.Key), prefix)
	switch {
	case ev.Type == clientv3.EventTypePut && owner && ev.IsCreate():
		h.owners[sw] = append(h.owners[sw], &ownerKey{Switch: sw, Member: string(ev.Kv.Value), Token: ev.Kv.CreateRevision, Lease: ev.Kv.Lease, Created: now})
	case ev.Type == clientv3.EventTypeDelete && owner && ev.PrevKv != nil:
		if k := h.find(sw, ev.PrevKv.CreateRevision); k != nil && k.Deleted.IsZero() {
			k.Deleted = now
		}
	case ev.Type == clientv3.EventTypePut && !owner && ev.IsCreate():
		h.joined[sw] = append(h.joined[sw], now)
	case ev.Type == clientv3.EventTypeDelete && !owner && ev.PrevKv != nil:
		if _, ok := h.leaseEnd[ev.PrevKv.Lease]; !ok {
			h.leaseEnd[ev.PrevKv.Lease] = now
		}
	}
}

// joinedAfter says whether member's key was created after t (a run of it
// joined the fleet).
func (h *history) joinedAfter(member string, t time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, j := range h.joined[member] {
		if j.After(t) {
			return true
		}
	}
	return false
}

// find is switch sw's owner key of token tok (h.mu held).
func (h *history) find(sw string, tok int64) *ownerKey {
	for _, k := range h.owners[sw] {
		if k.Token == tok {
			return k
		}
	}
	return nil
}

// key is a copy of switch sw's owner key of token tok.
func (h *history) key(sw string, tok int64) (ownerKey, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if k := h.find(sw, tok); k != nil {
		return *k, true
	}
	return ownerKey{}, false
}

// leaseEnded is when the harness saw lease's member key go (ok false: not
// seen).
func (h *history) leaseEnded(lease int64) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.leaseEnd[lease]
	return t, ok
}

// heldAt lists the owner keys alive at t (created by then, not deleted).
func (h *history) heldAt(t time.Time) []ownerKey {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []ownerKey
	for _, ks := range h.owners {
		for _, k := range ks {
			if !k.Created.After(t) && (k.Deleted.IsZero() || k.Deleted.After(t)) {
				out = append(out, *k)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Switch < out[j].Switch })
	return out
}

// next is switch sw's first owner key created after t.
func (h *history) next(sw string, t time.Time) (ownerKey, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range h.owners[sw] {
		if k.Created.After(t) {
			return *k, true
		}
	}
	return ownerKey{}, false
}

// created counts the owner keys seen.
func (h *history) created() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, ks := range h.owners {
		n += len(ks)
	}
	return n
}

// ownedBy counts the owner keys member holds now.
func (h *history) ownedBy(member string) int {
	n := 0
	for _, k := range h.heldAt(time.Now()) {
		if k.Member == member {
			n++
		}
	}
	return n
}
