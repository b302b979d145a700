package gnmipath

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// matchSlow is the definition of Match, tried the naive way: "..."
// stands for any number of elements, the pattern is a prefix.
func matchSlow(pattern, leaf []*gnmi.PathElem) bool {
	if len(pattern) == 0 {
		return true
	}
	if pattern[0].GetName() == "..." {
		for j := 0; j <= len(leaf); j++ {
			if matchSlow(pattern[1:], leaf[j:]) {
				return true
			}
		}
		return false
	}
	return len(leaf) > 0 && Match(pattern[:1], leaf[:1]) && matchSlow(pattern[1:], leaf[1:])
}

// A pattern of many "..." elements is matched in time linear in its
// length: a Get or Subscribe path is client input, and the recursive
// matcher took time exponential in the number of "..." (12 of them: 10 ms
// per leaf; 40: hours).
func TestMatchEllipsesBounded(t *testing.T) {
	_, leaf, _ := ParsePath("/qos/interfaces/interface[interface-id=Ethernet8]/output/queues/queue[name=3]/state/transmit-pkts")
	for _, s := range []string{
		strings.Repeat("/...", 40) + "/nowhere",
		strings.Repeat("/*/...", 40),
		strings.Repeat("/...", 40) + "/state/transmit-pkts",
	} {
		_, pat, err := ParsePath(s)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan bool, 1)
		go func() { done <- Match(pat, leaf) }()
		select {
		case got := <-done:
			want := strings.HasSuffix(s, "transmit-pkts")
			if got != want {
				t.Errorf("Match(%.30s...) = %v, want %v", s, got, want)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("Match(%.30s...) still running after 2 s", s)
		}
	}
	// Same answers as the definition on small patterns.
	parts := []string{"...", "qos", "*", "interfaces", "interface[interface-id=Ethernet8]", "queue[name=4]", "state", "transmit-pkts"}
	var pats []string
	var grow func(p string, n int)
	grow = func(p string, n int) {
		pats = append(pats, p)
		if n == 0 {
			return
		}
		for _, x := range parts {
			grow(p+"/"+x, n-1)
		}
	}
	grow("", 4)
	for _, s := range pats {
		_, pat, _ := ParsePath(s)
		if got, want := Match(pat, leaf), matchSlow(pat, leaf); got != want {
			t.Errorf("Match(%s) = %v, want %v", s, got, want)
		}
	}
}

// selects reports whether a subscription (or Get) of sub selects leaf l of
// target tg.
func selects(tg Target, sub Subscription, l Leaf) bool {
	db, el := LeafPath(tg.Dialect, l)
	for _, p := range sub.Paths {
		pdb, pel, err := Route(tg.Dialect, tg.Namespace, tg.Name, sub.Prefix.GetTarget(), originOf(sub.Prefix, p), FullElems(sub.Prefix, p))
		if err == nil && pdb == db && Match(pel, el) {
			return true
		}
	}
	return false
}

// serveGet answers a Get of prefix and paths from a config tree as a
// switch would: the leaves the paths select.
func serveGet(tg Target, tree Tree, prefix *gnmi.Path, paths []*gnmi.Path) *gnmi.GetResponse {
	var items []Item
	for _, it := range ConfigItems(tg.Dialect, tree) {
		if selects(tg, Subscription{Prefix: prefix, Paths: paths}, it.Leaf) {
			items = append(items, it)
		}
	}
	return &gnmi.GetResponse{Notification: Notifications(tg.Dialect, tg.Name, tg.Namespace, items, 1, gnmi.Encoding_JSON_IETF)}
}

// A client subscribes to, and reads back, only the profiles its queues
// are bound to, never a whole profile table: any client can fill those
// (30k junk profiles made a 47 MB notification, over gRPC's 4 MB).
func TestOnlyProfilesInUse(t *testing.T) {
	snap := testSwitch(2) // Ethernet0 and Ethernet4, queues 3 and 4
	for _, d := range []Dialect{OpenConfig, Sonic} {
		for _, ns := range []string{"", "leaf0"} {
			if d == OpenConfig && ns != "" {
				continue
			}
			tg := Target{Name: "leaf0", Dialect: d, Namespace: ns}
			tree := InitialConfig(d, &snap, 3072, testAlpha)
			junk := []Leaf{{Field: WREDMin, Name: "junk"}, {Field: WREDMax, Name: ECNProfileName("Ethernet4", 4)}}
			tree[Leaf{Field: WREDMin, Name: "junk"}] = Val{U: 1}
			if d == Sonic {
				junk = append(junk, Leaf{Field: BPXoff, Name: "junk"}, Leaf{Field: BPXoff, Name: PGProfileName("Ethernet4", 4)})
				tree[Leaf{Field: BPXoff, Name: "junk"}] = Val{U: 1}
			}
			_, cfg := Subscriptions(tg)
			for _, l := range junk {
				if selects(tg, cfg, l) {
					t.Errorf("%s: the config subscription selects %s", d, PathString(ocLeafPath(l)))
				}
			}
			bindings := []Leaf{{Field: QueueProfile, Port: "Ethernet4", Index: 3}}
			if d == Sonic {
				bindings = append(bindings, Leaf{Field: PGProfile, Port: "Ethernet4", PGs: "3"})
			}
			for _, l := range bindings {
				if !selects(tg, cfg, l) {
					t.Errorf("%s: the config subscription misses binding %+v", d, l)
				}
			}

			// The decoder names the profiles its queues (priority 3) use.
			dec := NewDecoder(tg, 3)
			v0 := dec.BindingsVersion()
			for _, n := range serveGet(tg, tree, cfg.Prefix, cfg.Paths).Notification {
				if err := dec.Apply(n); err != nil {
					t.Fatal(err)
				}
			}
			ecn, buf := dec.Profiles()
			wantE := []string{ECNProfileName("Ethernet0", 3), ECNProfileName("Ethernet4", 3)}
			if d == Sonic { // the shared profiles the queues are bound to
				wantE = nil
				for _, port := range []string{"Ethernet0", "Ethernet4"} {
					if n := tree[Leaf{Field: QueueProfile, Port: port, Index: 3}].S; !slices.Contains(wantE, n) {
						wantE = append(wantE, n)
					}
				}
				slices.Sort(wantE)
			}
			var wantB []string
			if d == Sonic {
				wantB = []string{PGProfileName("Ethernet0", 3), PGProfileName("Ethernet4", 3)}
			}
			if !slices.Equal(ecn, wantE) || !slices.Equal(buf, wantB) || dec.BindingsVersion() == v0 {
				t.Fatalf("%s: profiles %v %v (want %v %v), version %d from %d", d, ecn, buf, wantE, wantB, dec.BindingsVersion(), v0)
			}
			ps := ProfileSubscription(tg, ecn, buf)
			if len(ps.Paths) != len(wantE)+len(wantB) || ps.Mode != gnmi.SubscriptionMode_ON_CHANGE {
				t.Fatalf("%s: profile subscription %v", d, ps)
			}
			for _, l := range junk {
				if selects(tg, ps, l) {
					t.Errorf("%s: the profile subscription selects %+v", d, l)
				}
			}
			if !selects(tg, ps, Leaf{Field: WREDProb, Name: wantE[1]}) || (d == Sonic && !selects(tg, ps, Leaf{Field: BPXoff, Name: wantB[1]})) {
				t.Errorf("%s: the profile subscription misses a profile in use", d)
			}
			if r := ProfileSubscribeRequest(tg, ecn, buf); len(r.GetSubscribe().GetSubscription()) != len(ps.Paths) ||
				r.GetSubscribe().GetMode() != gnmi.SubscriptionList_STREAM || ProfileSubscribeRequest(tg, nil, nil) != nil {
				t.Errorf("%s: ProfileSubscribeRequest %v", d, r)
			}

			// Counters leave the version alone; a new binding changes it.
			v1 := dec.BindingsVersion()
			for _, n := range encodeAll(d, ns, snap, gnmi.Encoding_JSON_IETF) {
				n.Update = slices.DeleteFunc(n.Update, func(u *gnmi.Update) bool {
					l, err := ParseLeaf(d, n.GetPrefix().GetTarget(), FullElems(n.GetPrefix(), u.GetPath())[len(n.GetPrefix().GetElem()):])
					return err != nil || l.Field.IsConfig()
				})
				if err := dec.Apply(n); err != nil {
					t.Fatal(err)
				}
			}
			if dec.BindingsVersion() != v1 {
				t.Fatalf("%s: counters changed the bindings version", d)
			}
			tree[Leaf{Field: QueueProfile, Port: "Ethernet4", Index: 3}] = Val{S: "other"}
			for _, n := range serveGet(tg, tree, cfg.Prefix, cfg.Paths).Notification {
				if err := dec.Apply(n); err != nil {
					t.Fatal(err)
				}
			}
			if ecn, _ := dec.Profiles(); dec.BindingsVersion() == v1 || !slices.Contains(ecn, "other") || slices.Contains(ecn, wantE[1]) {
				t.Fatalf("%s: after rebinding: version %d, profiles %v", d, dec.BindingsVersion(), ecn)
			}
			tree[Leaf{Field: QueueProfile, Port: "Ethernet4", Index: 3}] = Val{S: wantE[1]}

			// Read-back: the bindings, then the profiles they name.
			key := env.QueueKey{Target: "leaf0", Port: "Ethernet4", Queue: 3}
			prefix, paths := SettingPaths(tg, key)
			for _, l := range append(junk, Leaf{Field: WREDMin, Name: wantE[1]}) {
				if selects(tg, Subscription{Prefix: prefix, Paths: paths}, l) {
					t.Errorf("%s: SettingPaths select profile leaf %+v", d, l)
				}
			}
			r1 := serveGet(tg, tree, prefix, paths)
			rd := NewDecoder(tg)
			for _, n := range r1.Notification {
				if err := rd.Apply(n); err != nil {
					t.Fatal(err)
				}
			}
			e, b := rd.ProfilesOf(key.Port, key.Queue)
			if e != wantE[1] || (d == Sonic && b != wantB[1]) || (d == OpenConfig && b != "") {
				t.Fatalf("%s: ProfilesOf = %q %q", d, e, b)
			}
			var bs []string
			if b != "" {
				bs = []string{b}
			}
			p2 := ProfileSubscription(tg, []string{e}, bs)
			r2 := serveGet(tg, tree, p2.Prefix, p2.Paths)
			got, err := ParseSetting(tg, key, &gnmi.GetResponse{Notification: append(r1.Notification, r2.Notification...)})
			if want, _ := Resolve(d, tree, key.Port, key.Queue); err != nil || got != want {
				t.Fatalf("%s: read back %+v (%v), want %+v", d, got, err, want)
			}
		}
	}
}
