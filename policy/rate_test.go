package policy

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy/builtin"
)

// Each port gets the part of its speed: below the lowest rate the first,
// from a rate (inclusive) up to the next that rate's, in the order the
// queues came; a queue of unknown rate goes to the first part and holds.
func TestByRateDecide(t *testing.T) {
	cur := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	rates := []float64{25e9, 400e9, 100e9, 800e9, 399e9, 0, 1.6e12}
	obs := make([]env.Observation, len(rates))
	for i, r := range rates {
		obs[i] = validObs(r, cur)
		obs[i].Key.Port = "Ethernet" + string(rune('0'+i))
		if r == 0 {
			obs[i].Valid, obs[i].Problem = false, "rate_bps 0 is not a positive finite link rate"
		}
	}
	at := func(spec string, i int) env.Setting {
		p, err := Lookup(spec)
		if err != nil {
			t.Fatal(err)
		}
		return p.Decide(obs[i : i+1])[0].Setting
	}
	p, err := Lookup("rate:static:nvidia; 800G=static:hpcc;400G=fixed:100KB/400KB/5%")
	if err != nil {
		t.Fatal(err)
	}
	ds := p.Decide(obs)
	want := []string{"static:nvidia", "fixed:100KB/400KB/5%", "static:nvidia", "static:hpcc", "static:nvidia", "", "static:hpcc"}
	labels := []string{"port below 400Gbps", "port from 400Gbps", "port below 400Gbps", "port from 800Gbps", "port below 400Gbps", "", "port from 800Gbps"}
	for i, d := range ds {
		if d.Key != obs[i].Key {
			t.Fatalf("decision %d is for %v, observation %v", i, d.Key, obs[i].Key)
		}
		if want[i] == "" {
			if d.Setting != cur || !strings.HasPrefix(d.Reason, "port below 400Gbps, static:nvidia: ") {
				t.Errorf("unknown rate: %+v, want a hold by the first part", d)
			}
			continue
		}
		if w := at(want[i], i); d.Setting != w || !strings.HasPrefix(d.Reason, labels[i]+", "+want[i]+": ") {
			t.Errorf("queue %d at %g: %v (%q), want %v from %s", i, rates[i], d.Setting, d.Reason, w, want[i])
		}
	}
	if at("static:nvidia", 0) == at("static:hpcc", 0) || at("static:nvidia", 0) == at("fixed:100KB/400KB/5%", 0) {
		t.Fatal("test settings not distinct")
	}
	br := p.(*ByRate)
	if br.Part(100e9).Name() != "static:nvidia" || br.Part(400e9).Name() != "fixed:100KB/400KB/5%" || br.Part(800e9).Name() != "static:hpcc" {
		t.Fatalf("parts %s %s %s", br.Part(100e9).Name(), br.Part(400e9).Name(), br.Part(800e9).Name())
	}
}

// The shipped split: the built-in model below 400 Gb/s and the model for
// faster ports from there, each deciding exactly as it does alone, with
// rules on a part applied to that part only.
func TestByRateBuiltinSplit(t *testing.T) {
	obs := make([]env.Observation, 4)
	for i, r := range []float64{100e9, 400e9, 25e9, 800e9} {
		obs[i] = validObs(r, env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2})
		obs[i].Key.Port = "Ethernet" + string(rune('0'+i))
	}
	split, err := Lookup("rate:builtin;400G=builtin:400g+headroom=floor")
	if err != nil {
		t.Fatal(err)
	}
	base, _ := Lookup("builtin")
	high, err := Lookup("builtin:400g")
	if err != nil {
		t.Fatal(err)
	}
	if high.Name() != "builtin:400g" {
		t.Fatalf("name %q", high.Name())
	}
	if b, h := base.Decide(obs[:1])[0], high.Decide(obs[:1])[0]; b.Action == h.Action {
		t.Fatalf("both models ask for action %d on the test queue: the split is not seen", b.Action)
	}
	ds := split.Decide(obs)
	for i, d := range ds {
		alone, label := base, "port below 400Gbps, builtin: "
		if obs[i].RateBps >= 400e9 {
			alone, label = high, "port from 400Gbps, builtin:400g+headroom=floor: "
		}
		a := alone.Decide([]env.Observation{obs[i]})[0]
		if d.Action != a.Action || d.Setting.KminBytes != a.Setting.KminBytes || d.Setting.KmaxBytes != a.Setting.KmaxBytes ||
			d.Setting.Pmax != a.Setting.Pmax || !strings.HasPrefix(d.Reason, label) {
			t.Errorf("queue %d: %+v, alone %+v", i, d, a)
		}
	}
}

func TestParseRateSplitErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"rate:builtin":                                        "no RATE=SPEC part",
		"rate:400G=builtin:400g":                              "no part for the ports below",
		"rate:builtin;static:hpcc;400G=x":                     "two parts without a rate",
		"rate:builtin;400G=static:hpcc;400Gbps=static:nvidia": "rate 400Gbps given twice",
		"rate:builtin;400=static:hpcc":                        "has no unit",
		"rate:builtin;400G=":                                  "no policy spec after 400G=",
		"rate:builtin;400G=static:x":                          `part 400G: policy "static:x"`,
		"rate:roles:host=a;400G=b":                            "roles: does not nest in rate:",
		"rate:builtin;400G=rate:a":                            "rate: does not nest in rate:",
		"roles:host=rate:a;400G=b;fabric=c":                   "roles: and rate: do not nest",
		"schedule:rate:a;400G=b,1ms=static:hpcc":              "cannot hold rate:",
		"builtin:400g:prefer=1":                               "takes no other option",
		"builtin:fast":                                        "prefer=P or 400g",
	} {
		if _, err := Lookup(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", spec, err, want)
		}
	}
	if err := CheckSpec("rate:builtin;400G=builtin:400g"); err != nil {
		t.Fatal(err)
	}
	sp, err := ParseSpec("rate:model:a;400G=model:b+headroom=model:h")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sp.Models(), ","); got != "a,b,h" || (Resolver{}).KindOf(sp.Text) != KindRate {
		t.Fatalf("models %q, kind %v", got, sp.Kind)
	}
}

// The agent's default policy splits where the built-in package says the
// model for fast ports takes over.
func TestDefaultSpecSplitsAtHighRateFrom(t *testing.T) {
	p, err := Lookup(DefaultSpec)
	if err != nil {
		t.Fatal(err)
	}
	br, ok := p.(*ByRate)
	if !ok || CheckSpec(DefaultSpec) != nil {
		t.Fatalf("%s is %T", DefaultSpec, p)
	}
	if below, from := br.Part(builtin.HighRateFrom*0.99).Name(), br.Part(builtin.HighRateFrom).Name(); below != BuiltinSpec || from != HighRateSpec {
		t.Fatalf("below %s, from %s", below, from)
	}
}

// A part whose spec ends in +headroom= or +alpha= keeps its = (the spec
// builtin+headroom=floor was read as the rate "builtin+headroom").
func TestRateSplitPartWithRuleSuffix(t *testing.T) {
	for _, s := range []string{"rate:builtin+headroom=floor;400G=builtin:400g", "rate:adaptive+alpha=1/8;400G=builtin:400g",
		"rate:builtin:400g;100G=builtin+headroom=floor"} {
		if _, err := Lookup(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}
