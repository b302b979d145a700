package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
)

// Each role's queues get its policy's decision, in the order they came;
// a queue of unknown peer holds unless other= is given.
func TestRolesDecide(t *testing.T) {
	cur := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	obs := make([]env.Observation, 6)
	peers := []env.Peer{env.PeerHost, env.PeerSwitch, env.PeerUnknown, env.PeerSwitch, env.PeerHost, "odd"}
	for i := range obs {
		obs[i] = validObs(100e9, cur)
		obs[i].Key.Port = "Ethernet" + string(rune('0'+i))
		obs[i].Peer = peers[i]
	}
	want := func(spec string) env.Setting {
		p, err := Lookup(spec)
		if err != nil {
			t.Fatal(err)
		}
		return p.Decide(obs[:1])[0].Setting
	}
	host, fabric, other := want("static:nvidia"), want("fixed:100KB/400KB/5%"), want("static:hpcc")
	if host == fabric || host == other || fabric == other {
		t.Fatalf("test settings not distinct: %v %v %v", host, fabric, other)
	}

	p, err := Lookup("roles:host=static:nvidia; fabric=fixed:100KB/400KB/5%")
	if err != nil {
		t.Fatal(err)
	}
	ds := p.Decide(obs)
	for i, d := range ds {
		if d.Key != obs[i].Key {
			t.Fatalf("decision %d is for %v, observation %v", i, d.Key, obs[i].Key)
		}
	}
	for i, w := range []env.Setting{host, fabric, cur, fabric, host, cur} {
		if ds[i].Setting != w {
			t.Errorf("queue %d (peer %q): %v, want %v (%s)", i, peers[i], ds[i].Setting, w, ds[i].Reason)
		}
	}
	if !strings.HasPrefix(ds[0].Reason, "host port, static:nvidia: ") || !strings.HasPrefix(ds[1].Reason, "fabric port, fixed:100KB/400KB/5%: ") {
		t.Errorf("reasons %q, %q", ds[0].Reason, ds[1].Reason)
	}
	if ds[2].Action != env.ActionHold || !strings.Contains(ds[2].Reason, "no other= policy") {
		t.Errorf("unknown peer: %+v", ds[2])
	}

	p, err = Lookup("roles:host=static:nvidia;fabric=fixed:100KB/400KB/5%;other=static:hpcc")
	if err != nil {
		t.Fatal(err)
	}
	ds = p.Decide(obs)
	if ds[2].Setting != other || ds[5].Setting != other || !strings.HasPrefix(ds[5].Reason, "other port, static:hpcc: ") {
		t.Errorf("other=: %+v / %+v", ds[2], ds[5])
	}
}

// A part may be any spec, a learned one or one with +headroom=, and the
// learned policy sees only its role's queues.
func TestRolesParts(t *testing.T) {
	p, err := Lookup("roles:host=builtin:prefer=0.5+headroom=floor;fabric=static:sonic-default")
	if err != nil {
		t.Fatal(err)
	}
	ro := p.(*Roles)
	if _, ok := ro.Policy(env.PeerHost).(*Headroom); !ok {
		t.Fatalf("host part is %T, want the +headroom wrapper", ro.Policy(env.PeerHost))
	}
	if ro.Policy(env.PeerUnknown) != nil || ro.Name() != "roles:host=builtin:prefer=0.5+headroom=floor;fabric=static:sonic-default" {
		t.Fatalf("other %v, name %q", ro.Policy(env.PeerUnknown), ro.Name())
	}
}

func TestRolesErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"roles:host=static:nvidia":                           "no fabric= part",
		"roles:fabric=static:nvidia":                         "no host= part",
		"roles:host=static:nvidia;fabric=static:x":           `role fabric: policy "static:x"`,
		"roles:host=static:nvidia;host=static:hpcc;fabric=x": "role host given twice",
		"roles:host=static:nvidia;spine=static:hpcc":         `part "spine=static:hpcc"`,
		"roles:host=;fabric=static:hpcc":                     "role host: no policy spec",
		"roles:host=static:nvidia;fabric=roles:host=a":       "does not nest",
		"roles:static:nvidia":                                `part "static:nvidia"`,
	} {
		_, err := Lookup(spec)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "roles:") {
			t.Errorf("%s: error %v, want one naming the spec and %q", spec, err, want)
		}
	}
}

// A fixed: setting in a part with a Kmin below one MTU is warned about,
// naming the role.
func TestRolesSpecWarnings(t *testing.T) {
	w := SpecWarnings("roles:host=fixed:400B/1600KB/1%;fabric=static:hpcc")
	if len(w) != 1 || !strings.HasPrefix(w[0], "host: ") {
		t.Fatalf("warnings %q", w)
	}
}

// Roles large enough are decided side by side: the decisions are those of
// each role's policy on its own queues, in the input's order.
func TestRolesLargeBatch(t *testing.T) {
	spec := "roles:host=builtin+headroom=floor;fabric=builtin+headroom=floor+alpha=2"
	p, err := Lookup(spec)
	if err != nil {
		t.Fatal(err)
	}
	cur := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 100_000, Alpha: 0.125}
	obs := make([]env.Observation, 2*minParallelChunk+10)
	var host, fabric []env.Observation
	for i := range obs {
		o := validObs(100e9, cur)
		o.Key.Port = fmt.Sprintf("Ethernet%d", i)
		o.MinHeadroomBytes = int64(30_000 + i)
		o.Features[env.FeatUtil] = float32(i%7) / 7
		if i%2 == 0 {
			o.Peer = env.PeerHost
			host = append(host, o)
		} else {
			o.Peer = env.PeerSwitch
			fabric = append(fabric, o)
		}
		obs[i] = o
	}
	ds := p.Decide(obs)
	hp, _ := Lookup("builtin+headroom=floor")
	fp, _ := Lookup("builtin+headroom=floor+alpha=2")
	hd, fd := hp.Decide(host), fp.Decide(fabric)
	for i, d := range ds {
		want := hd[i/2]
		if i%2 == 1 {
			want = fd[i/2]
		}
		if d.Key != want.Key || d.Setting != want.Setting || !strings.HasSuffix(d.Reason, want.Reason) {
			t.Fatalf("queue %d: %+v, want %+v", i, d, want)
		}
	}
}

// panicky is a policy that panics, as a faulty one may.
type panicky struct{}

func (panicky) Name() string                        { return "panicky" }
func (panicky) Decide([]env.Observation) []Decision { panic("boom") }

// A role's policy that panics, also one decided on a goroutine of its own
// (a role of minParallelChunk queues or more), panics on the caller's
// goroutine, where agent.decide recovers it, and names the role.
func TestRolesPanicReachesCaller(t *testing.T) {
	ro := &Roles{name: "r", byPeer: map[env.Peer]Policy{env.PeerHost: panicky{}, env.PeerSwitch: panicky{}},
		specs: map[env.Peer]string{env.PeerHost: "p", env.PeerSwitch: "p"}}
	for _, n := range []int{3, 2 * minParallelChunk} {
		obs := make([]env.Observation, n)
		for i := range obs {
			obs[i].Peer = env.PeerHost
			if i%2 == 1 {
				obs[i].Peer = env.PeerSwitch
			}
			obs[i].Key = env.QueueKey{Target: "t", Port: fmt.Sprint("Ethernet", i), Queue: 3}
		}
		var got any
		func() {
			defer func() { got = recover() }()
			ro.Decide(obs)
		}()
		if s, _ := got.(string); !strings.Contains(s, "boom") || !strings.Contains(s, "ports' policy p") {
			t.Fatalf("%d queues: the caller recovered %v", n, got)
		}
	}
}
