package policy

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
)

// +alpha=A sets every lossless PG's alpha that the switch shows, before or
// after +headroom=, and leaves a PG whose alpha is unknown alone; values
// that are not powers of two within 1/64..8 are refused with the rule.
func TestAlphaRule(t *testing.T) {
	obs := []env.Observation{
		{Key: env.QueueKey{Target: "s", Port: "Ethernet0", Queue: 3}, RateBps: 100e9, MinHeadroomBytes: 40_000,
			Current: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 100_000, Alpha: 0.125}},
		{Key: env.QueueKey{Target: "s", Port: "Ethernet1", Queue: 3}, RateBps: 100e9,
			Current: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}}, // alpha unknown
	}
	for _, spec := range []string{"static:hpcc+headroom=floor+alpha=2", "static:hpcc+alpha=2+headroom=floor"} {
		p, err := Lookup(spec)
		if err != nil {
			t.Fatal(err)
		}
		ds := p.Decide(obs)
		if ds[0].Setting.Alpha != 2 || ds[0].Setting.HeadroomBytes != 40_000 || !strings.Contains(ds[0].Reason, "alpha 2 (the +alpha rule)") {
			t.Fatalf("%s: %+v", spec, ds[0])
		}
		if ds[1].Setting.Alpha != 0 || strings.Contains(ds[1].Reason, "alpha") {
			t.Fatalf("%s: a PG without alpha: %+v", spec, ds[1])
		}
		if p.Name() != spec {
			t.Fatalf("name %q", p.Name())
		}
	}
	if p, err := Lookup("builtin+alpha=1/4"); err != nil || p.Decide(obs)[0].Setting.Alpha != 0.25 {
		t.Fatalf("1/4: %v", err)
	}
	// a value a rounding error from a power of two is that power exactly
	// (SONiC stores log2 alpha as an integer); signs do not cancel
	for in, want := range map[string]float64{"2.0000000001": 2, "1/0.49999999999": 2, "7.99999999999": 8, "0.125": 0.125} {
		if a, err := ParseAlpha(in); err != nil || a != want {
			t.Errorf("ParseAlpha(%q) = %.17g, %v; want exactly %g", in, a, err, want)
		}
	}
	for _, twice := range []string{"static:hpcc+alpha=2+alpha=4", "static:hpcc+headroom=floor+alpha=2+headroom=floor*2"} {
		if _, err := Lookup(twice); err == nil || !strings.Contains(err.Error(), "twice") {
			t.Errorf("%s: %v", twice, err)
		}
	}
	if _, err := ParseAlpha("-1/-8"); err == nil {
		t.Error("ParseAlpha(-1/-8): no error")
	}
	// the rule's part of a hold is sure: a held ECN with the rule's alpha
	// is not an unsure change (confidence 1); an ECN change keeps the
	// inner policy's confidence
	hold, _ := NewAlpha(holdAll{}, "hold+alpha=2", "2")
	if d := hold.Decide(obs[:1])[0]; d.Confidence != 1 || d.Setting.Alpha != 2 {
		t.Errorf("a hold with +alpha=2: %+v, want alpha 2 at confidence 1", d)
	}
	for _, bad := range []string{"static:hpcc+alpha=3", "static:hpcc+alpha=16", "static:hpcc+alpha=1/128", "static:hpcc+alpha=", "static:hpcc+alpha=x", "nope+alpha=2"} {
		if _, err := Lookup(bad); err == nil {
			t.Errorf("%s: no error", bad)
		} else if !strings.Contains(bad, "nope") && !strings.Contains(err.Error(), "want a power of two from 1/64 to 8") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// The batch's notes: every decision keeps its reason and gains its own
// notes, in order; decisions without a note keep theirs untouched.
func TestNotes(t *testing.T) {
	ds := []Decision{{Reason: "a"}, {Reason: "b"}, {Reason: "c"}}
	nb := newNotes(ds)
	nb.add(0, "; x")
	nb.add(0, "; y")
	nb.add(2, "; z")
	nb.done()
	if ds[0].Reason != "a; x; y" || ds[1].Reason != "b" || ds[2].Reason != "c; z" {
		t.Fatalf("reasons %q %q %q", ds[0].Reason, ds[1].Reason, ds[2].Reason)
	}
	newNotes(nil).done() // nothing to do
}

// Per port role: alpha on the fabric ports only, the floor everywhere.
func TestAlphaByRole(t *testing.T) {
	p, err := Lookup("roles:host=static:hpcc+headroom=floor;fabric=static:hpcc+headroom=floor+alpha=2")
	if err != nil {
		t.Fatal(err)
	}
	cur := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 100_000, Alpha: 0.125}
	host, fabric := validObs(100e9, cur), validObs(100e9, cur)
	host.Peer, fabric.Peer = env.PeerHost, env.PeerSwitch
	host.MinHeadroomBytes, fabric.MinHeadroomBytes = 40_000, 40_000
	ds := p.Decide([]env.Observation{host, fabric})
	// host: alpha kept (0: not managed); fabric: alpha 2
	if ds[0].Setting.Alpha == 2 || ds[0].Setting.HeadroomBytes != 40_000 || ds[1].Setting.Alpha != 2 || ds[1].Setting.HeadroomBytes != 40_000 {
		t.Fatalf("host %+v, fabric %+v", ds[0].Setting, ds[1].Setting)
	}
}

func TestPrefixReasons(t *testing.T) {
	ds := []Decision{{Reason: "a"}, {Reason: ""}, {Reason: "ccc"}}
	prefixReasons(ds, "p: ")
	if ds[0].Reason != "p: a" || ds[1].Reason != "p: " || ds[2].Reason != "p: ccc" {
		t.Fatalf("%q %q %q", ds[0].Reason, ds[1].Reason, ds[2].Reason)
	}
	prefixReasons(nil, "x")
}

// holdAll holds every queue with confidence 0, as a policy that cannot
// act does.
type holdAll struct{}

func (holdAll) Name() string { return "hold" }
func (holdAll) Decide(obs []env.Observation) []Decision {
	out := make([]Decision, len(obs))
	for i, o := range obs {
		out[i] = Decision{Key: o.Key, Setting: o.Current, Action: env.ActionHold, Reason: "hold: test"}
	}
	return out
}
