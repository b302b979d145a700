package env_test

import (
	"fmt"

	"github.com/ecntune/ecntune/env"
)

// Two Snapshots of one 100 Gb/s queue, 1 ms apart: the first only starts
// the queue's history, the second yields a measured interval, its features
// and its reward.
func ExampleObserver() {
	key := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	setting := env.Setting{KminBytes: 1_048_576, KmaxBytes: 2_097_152, Pmax: 0.05}
	obs := env.NewObserver(env.ObserverConfig{}) // reference RTT 20 µs: 250 KB at 100 Gb/s

	first := env.Snapshot{Target: "leaf0", TimeNs: 1_000_000, Queues: []env.QueueSample{{
		Key: key, RateBps: 100e9, Setting: setting,
		TxPkts: 1_000, TxBytes: 4_000_000,
	}}}
	o := obs.Observe(first)[0]
	fmt.Printf("valid %v: %s\n", o.Valid, o.Problem)

	// 1 ms later: 10 MB sent (80% of what 100 Gb/s carries in 1 ms), 1 MB
	// of it ECN-marked, an average queue of 250 KB and a peak of 500 KB.
	second := env.Snapshot{Target: "leaf0", TimeNs: 2_000_000, Queues: []env.QueueSample{{
		Key: key, RateBps: 100e9, Setting: setting,
		TxPkts: 3_500, TxBytes: 14_000_000, MarkedPkts: 250, MarkedBytes: 1_000_000,
		AvgQueueBytes: 250_000, MaxQueueBytes: 500_000,
	}}}
	o = obs.Observe(second)[0]
	m := o.Metrics
	fmt.Printf("valid %v: util %.2f, marked %.2f, avg queue %.1f ref (%.0f µs), peak %.1f ref\n",
		o.Valid, m.Util, m.MarkFrac, m.AvgQueueFrac, m.AvgDelayNs/1e3, m.MaxQueueFrac)
	fmt.Printf("features: util %.2f, avg_queue %.2f, kmax %.2f of %d\n",
		o.Features[env.FeatUtil], o.Features[env.FeatAvgQueue], o.Features[env.FeatKmax], len(o.Features))
	fmt.Printf("reward %.2f\n", env.Reward(m, env.DefaultRewardWeights()))
	// Output:
	// valid false: first sample of this queue
	// valid true: util 0.80, marked 0.10, avg queue 1.0 ref (20 µs), peak 2.0 ref
	// features: util 0.80, avg_queue 0.14, kmax 0.38 of 57
	// reward 0.71
}
