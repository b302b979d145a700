package agent_test

import (
	"fmt"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// The guard turns what a policy wants into what may be set. One queue's
// wish is too far a jump and is cut to the maximum step (2x per change);
// another's decision is below the confidence gate and is rejected.
func ExampleGuard() {
	g, err := core.NewGuard(core.DefaultGuardConfig(time.Second))
	if err != nil {
		panic(err)
	}
	cur := env.Setting{KminBytes: 1_048_576, KmaxBytes: 2_097_152, Pmax: 0.05} // sonic-default at 100 Gb/s
	a := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	b := env.QueueKey{Target: "leaf0", Port: "Ethernet1", Queue: 3}
	obs := []env.Observation{
		{Key: a, RateBps: 100e9, Current: cur, Valid: true, Metrics: env.Metrics{IntervalNs: 1e9, Util: 0.9}},
		{Key: b, RateBps: 100e9, Current: cur, Valid: true, Metrics: env.Metrics{IntervalNs: 1e9, Util: 0.9}},
	}
	want := env.Setting{KminBytes: 200_000, KmaxBytes: 8_000_000, Pmax: 0.04}
	decisions := []policy.Decision{
		{Key: a, Setting: want, Action: -1, Confidence: 0.9, Reason: "example"},
		{Key: b, Setting: want, Action: -1, Confidence: 0.3, Reason: "example"},
	}
	plan, err := g.Step(core.StepInput{NowNs: 10e9, Observations: obs, Decisions: decisions})
	if err != nil {
		panic(err)
	}
	for _, c := range plan.Changes {
		fmt.Printf("%s %s: kmin %d B, kmax %d B, pmax %g (clamped by %v)\n",
			c.Key, c.Kind, c.New.KminBytes, c.New.KmaxBytes, c.New.Pmax, c.Clamped)
	}
	for _, r := range plan.Rejections {
		fmt.Printf("%s rejected by %s: %s\n", r.Key, r.Rule, r.Reason)
	}
	// Output:
	// leaf0/Ethernet0/q3 tune: kmin 524288 B, kmax 4194304 B, pmax 0.04 (clamped by [max-step])
	// leaf0/Ethernet1/q3 rejected by confidence: confidence 0.3 below 0.5
}
