package core_test

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

// One control interval through the core, as the agent's driver runs it:
// Tick takes the observations and the policy's decisions and returns a
// Ready (the recommendations, and the changes to write ahead and set);
// the driver sets them, reads them back and hands each outcome to Settle,
// which says how its audit entry ends.
func ExampleCore_Tick() {
	c, err := core.New(core.Options{Guard: core.DefaultGuardConfig(time.Second), Policy: "example"})
	if err != nil {
		panic(err)
	}
	cur := env.Setting{KminBytes: 1_048_576, KmaxBytes: 2_097_152, Pmax: 0.05}
	k := env.QueueKey{Target: "leaf0", Port: "Ethernet8", Queue: 3}
	obs := []env.Observation{{Key: k, RateBps: 100e9, Current: cur, Valid: true,
		Metrics: env.Metrics{IntervalNs: 1e9, Util: 0.9, MarkFrac: 0.01}}}
	want := env.Setting{KminBytes: 800_000, KmaxBytes: 2_000_000, Pmax: 0.1}
	decs := []policy.Decision{{Key: k, Setting: want, Action: -1, Confidence: 0.9, Reason: "deeper marking"}}

	rd, err := c.Tick(core.Interval{NowNs: 10e9, Observations: obs, Decisions: decs})
	if err != nil {
		panic(err)
	}
	r := rd.Recommendations[0]
	fmt.Printf("recommend %s: %s (%s)\n", r.Key, env.DescribeChange(r.Current, r.Recommended), r.Reason)
	for _, ch := range rd.Changes {
		fmt.Printf("set %s %s: %s\n", ch.Key, ch.Kind, core.AuditReason(ch))
		// The switch took it and reports it back: the change is applied
		// and goes on probation.
		s := c.Settle(core.Result{Change: ch, Seq: 1, Outcome: core.Applied, Got: ch.New}, false, 10e9)
		fmt.Printf("audit entry %d: %s, on probation: %v\n", 1, s.State, s.Memory.Probation != nil)
	}
	// Output:
	// recommend leaf0/Ethernet8/q3: kmin 1.049MB→800KB, kmax 2.097MB→2MB, pmax 5%→10% (deeper marking)
	// set leaf0/Ethernet8/q3 tune: change: kmin 1.049MB→800KB, kmax 2.097MB→2MB, pmax 5%→10%; wanted: deeper marking
	// audit entry 1: applied, on probation: true
}
