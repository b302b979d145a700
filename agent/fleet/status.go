package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// MemberStatus is one member as etcd shows it.
type MemberStatus struct {
	Member
	// LeaseTTL is how many seconds its lease has left (it renews every
	// ttl/3).
	LeaseTTL int64 `json:"lease_ttl_s"`
	Leader   bool  `json:"leader,omitempty"`
	Owns     int   `json:"owns"`
	Assigned int   `json:"assigned"`
}

// SwitchStatus is one switch: the member placed on it and the member
// holding it, with its fencing token.
type SwitchStatus struct {
	Switch   string `json:"switch"`
	Assigned string `json:"assigned,omitempty"`
	Owner    string `json:"owner,omitempty"`
	Token    int64  `json:"token,omitempty"`
}

// Status is a fleet as etcd shows it; a member's own view (Node.Status)
// adds who it is and the switches it holds.
type Status struct {
	Name     string         `json:"name"`
	Leader   string         `json:"leader,omitempty"`
	Members  []MemberStatus `json:"members"`
	Switches []SwitchStatus `json:"switches"`
	Self     string         `json:"self,omitempty"`
	// Owned are the switches this member holds the owner key of (it
	// writes them once its takeover wait is over), sorted.
	Owned []string `json:"owned,omitempty"`
}

func prefixOf(name string) string { return path.Join("/ecntune/fleet", name) + "/" }

// ReadStatus reads fleet name's members, leader, placement and owners:
// those key ranges alone, in one transaction (one revision), the leader's
// the oldest election key only. The fleet's audit and the guard's memory,
// under the same prefix and most of its bytes (up to 2×AuditKeep entries
// a switch), are not read.
func ReadStatus(ctx context.Context, cli *clientv3.Client, name string) (Status, error) {
	p := prefixOf(name)
	st := Status{Name: name}
	t, err := cli.Txn(ctx).Then(
		clientv3.OpGet(p+"members/", clientv3.WithPrefix()),
		clientv3.OpGet(p+"assign/", clientv3.WithPrefix()),
		clientv3.OpGet(p+"owner/", clientv3.WithPrefix()),
		clientv3.OpGet(p+"leader/", clientv3.WithFirstCreate()...),
	).Commit()
	if err != nil {
		return st, fmt.Errorf("fleet %s: %w", name, unanswered(cli, err))
	}
	var kvs []*mvccpb.KeyValue
	for _, r := range t.Responses {
		kvs = append(kvs, r.GetResponseRange().GetKvs()...)
	}
	members := map[string]*MemberStatus{}
	sws := map[string]*SwitchStatus{}
	sw := func(n string) *SwitchStatus {
		if sws[n] == nil {
			sws[n] = &SwitchStatus{Switch: n}
		}
		return sws[n]
	}
	var leaderRev int64
	for _, kv := range kvs {
		k := string(kv.Key[len(p):])
		switch dir, rest := splitKey(k); dir {
		case "members":
			var m Member
			if json.Unmarshal(kv.Value, &m) == nil {
				ms := &MemberStatus{Member: m}
				if tl, err := cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease)); err == nil {
					ms.LeaseTTL = tl.TTL
				}
				members[m.ID] = ms
			}
		case "assign":
			sw(rest).Assigned = string(kv.Value)
		case "owner":
			s := sw(rest)
			s.Owner, s.Token = string(kv.Value), kv.CreateRevision
		case "leader":
			// the election's keys: the oldest one leads
			if leaderRev == 0 || kv.CreateRevision < leaderRev {
				leaderRev, st.Leader = kv.CreateRevision, string(kv.Value)
			}
		}
	}
	// a switch a member runs that has neither assignment nor owner (every
	// member that lists it draining, or the leader not listing it) is
	// shown unplaced, not left out
	for _, m := range members {
		for _, n := range m.Switches {
			sw(n)
		}
	}
	for _, s := range sws {
		st.Switches = append(st.Switches, *s)
		if m := members[s.Assigned]; m != nil {
			m.Assigned++
		}
		if m := members[s.Owner]; m != nil {
			m.Owns++
		}
	}
	for _, m := range members {
		m.Leader = m.ID == st.Leader
		st.Members = append(st.Members, *m)
	}
	sort.Slice(st.Members, func(i, j int) bool { return st.Members[i].ID < st.Members[j].ID })
	sort.Slice(st.Switches, func(i, j int) bool { return st.Switches[i].Switch < st.Switches[j].Switch })
	return st, nil
}

func splitKey(k string) (dir, rest string) {
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			return k[:i], k[i+1:]
		}
	}
	return k, ""
}

// Drain marks a member as draining (or not): the leader moves its switches
// to the other members at its next placement, and gives it none. The
// member key keeps its lease; the write holds only if the key did not
// change meanwhile. An unknown member is an ErrNoMember.
func Drain(ctx context.Context, cli *clientv3.Client, name, member string, on bool) error {
	if member == "" || strings.ContainsAny(member, "/ \t\n") || dots(member) {
		return fmt.Errorf("fleet %s: %w %q: want a member id (ecntune fleet status lists them)", name, ErrNoMember, member)
	}
	k := prefixOf(name) + "members/" + member
	r, err := cli.Get(ctx, k)
	if err != nil {
		return fmt.Errorf("fleet %s: %w", name, unanswered(cli, err))
	}
	if len(r.Kvs) == 0 {
		if !on {
			// a member drained and stopped: undoing the drain lets it
			// join with switches when it starts
			d, err := cli.Delete(ctx, prefixOf(name)+"drained/"+member)
			if err != nil {
				return fmt.Errorf("fleet %s: %w", name, unanswered(cli, err))
			}
			if d.Deleted > 0 {
				return nil
			}
		}
		return fmt.Errorf("fleet %s: %w %q (ecntune fleet status lists them)", name, ErrNoMember, member)
	}
	kv := r.Kvs[0]
	var m Member
	if err := json.Unmarshal(kv.Value, &m); err != nil {
		return fmt.Errorf("fleet %s: member %q: %w", name, member, err)
	}
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", kv.ModRevision)}
	if on {
		// The last member not draining is not drained: the leader would
		// place the switches on nobody, and every member's health would
		// still say ok. The others are read, and the write holds only if
		// none of them changed meanwhile (two drains at once).
		others, err := cli.Get(ctx, prefixOf(name)+"members/", clientv3.WithPrefix())
		if err != nil {
			return fmt.Errorf("fleet %s: %w", name, unanswered(cli, err))
		}
		var active, draining []string
		var actives []Member
		for _, o := range others.Kvs {
			if string(o.Key) == k {
				continue
			}
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(string(o.Key)), "=", o.ModRevision))
			var om Member
			if json.Unmarshal(o.Value, &om) == nil && !om.Draining {
				active = append(active, om.ID)
				actives = append(actives, om)
			} else {
				draining = append(draining, om.ID)
			}
		}
		if len(active) == 0 {
			return fmt.Errorf("fleet %s: %w: draining %q would leave no member to run the switches (the others draining: %v): start another member or undrain one first",
				name, ErrLastMember, member, draining)
		}
		// Each of its switches needs another member whose configuration
		// lists it, or the leader places it on nobody: it goes untuned
		// and unwatched for the whole maintenance.
		var orphans []string
		for _, s := range m.Switches {
			if !slices.ContainsFunc(actives, func(o Member) bool { return o.runs(s) }) {
				orphans = append(orphans, s)
			}
		}
		if len(orphans) > 0 {
			return fmt.Errorf("fleet %s: %w: draining %q would leave %s with no member to run them (no other member not draining lists them in its configuration: %s): add them to another member's targets and restart it, or undrain one that lists them, first",
				name, ErrLastMember, member, strings.Join(orphans, ", "), strings.Join(active, ", "))
		}
	}
	m.Draining = on
	b, _ := json.Marshal(m)
	// drained/ID, bound to no lease, keeps the drain across the member's
	// restart (the maintenance a drain is for): it joins draining until
	// the drain is undone
	mark := clientv3.OpDelete(prefixOf(name) + "drained/" + member)
	if on {
		mark = clientv3.OpPut(prefixOf(name)+"drained/"+member, "1")
	}
	t, err := cli.Txn(ctx).If(cmps...).
		Then(clientv3.OpPut(k, string(b), clientv3.WithLease(clientv3.LeaseID(kv.Lease))), mark).Commit()
	if err != nil {
		return fmt.Errorf("fleet %s: %w", name, unanswered(cli, err))
	}
	if !t.Succeeded {
		return fmt.Errorf("fleet %s: member %q or another changed meanwhile; try again", name, member)
	}
	return nil
}

// ErrLastMember: a drain would leave the fleet no member to run its
// switches.
var ErrLastMember = errors.New("the last member")

// Status reads this member's fleet (ReadStatus), with this member and the
// switches it holds.
func (n *Node) Status(ctx context.Context) (Status, error) {
	st, err := ReadStatus(ctx, n.cli, n.cfg.Name)
	if err != nil {
		return st, err
	}
	st.Self = n.cfg.Member.ID
	for _, o := range n.Owned() {
		st.Owned = append(st.Owned, o.Switch)
	}
	return st, nil
}
