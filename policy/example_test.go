package policy_test

import (
	"fmt"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// A vendor preset by its spec, deciding for one 25 Gb/s queue: the
// preset is stated at 100 Gb/s and scaled to the port's rate, and the
// queue's headroom is kept.
func ExampleLookup() {
	p, err := policy.Lookup("static:sonic-default")
	if err != nil {
		panic(err)
	}
	obs := []env.Observation{{
		Key:     env.QueueKey{Target: "leaf0", Port: "Ethernet4", Queue: 3},
		RateBps: 25e9,
		Current: env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2, HeadroomBytes: 90_000},
		Valid:   true,
	}}
	for _, d := range p.Decide(obs) {
		s := d.Setting
		fmt.Printf("%s %s: kmin %d B, kmax %d B, pmax %s, headroom %d B\n",
			p.Name(), d.Key, s.KminBytes, s.KmaxBytes, env.FormatPmax(s.Pmax), s.HeadroomBytes)
		fmt.Printf("confidence %g, action %d, reason %q\n", d.Confidence, d.Action, d.Reason)
	}
	// Output:
	// static:sonic-default leaf0/Ethernet4/q3: kmin 262144 B, kmax 524288 B, pmax 5%, headroom 90000 B
	// confidence 1, action -1, reason "preset sonic-default"
}

// A spec to decisions: ParseSpec reads the spec once into its parts (a
// schedule of two entries, and an alpha rule around it), Lookup resolves
// it (ParseSpec, then Resolver.Resolve) and Decide asks the entry in force
// at each observation's time.
func ExampleParseSpec() {
	const spec = "schedule:sonic-default,3ms=fixed:400KB/1600KB/1%+alpha=2"
	sp, err := policy.ParseSpec(spec)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s, %d entries, rule %s%g\n", sp.Kind.Name, len(sp.Entries), sp.Rules[0].Name, sp.Rules[0].Alpha)
	for _, e := range sp.Entries {
		fmt.Printf("  from %s: %s (%s)\n", e.At, e.What, e.Spec.Kind.Name)
	}

	p, err := policy.Lookup(spec)
	if err != nil {
		panic(err)
	}
	o := env.Observation{
		Key:     env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3},
		RateBps: 100e9,
		Current: env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2, Alpha: 1},
		Valid:   true,
	}
	o.Metrics.IntervalNs = 1e6 // counters over 1 ms: the schedule starts 1 ms before the first decision
	for _, ms := range []int64{1, 4} {
		o.TimeNs = ms * 1e6
		d := p.Decide([]env.Observation{o})[0]
		s := d.Setting
		fmt.Printf("at %d ms: kmin %d B, kmax %d B, pmax %s, alpha %g: %s\n",
			ms, s.KminBytes, s.KmaxBytes, env.FormatPmax(s.Pmax), s.Alpha, d.Reason)
	}
	// Output:
	// schedule, 2 entries, rule +alpha=2
	//   from 0s: sonic-default (static)
	//   from 3ms: fixed:400KB/1600KB/1% (fixed)
	// at 1 ms: kmin 1048576 B, kmax 2097152 B, pmax 5%, alpha 2: schedule step 1 (from 0s): preset sonic-default; alpha 2 (the +alpha rule)
	// at 4 ms: kmin 400000 B, kmax 1600000 B, pmax 1%, alpha 2: schedule step 2 (from 3ms): fixed 400KB/1600KB/1%; alpha 2 (the +alpha rule)
}
