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
