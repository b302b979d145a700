package agent

import (
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// The queues and settings the agent's tests share (the core's tests have
// their own).
const sec = int64(time.Second)

var (
	kA  = env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	kB  = env.QueueKey{Target: "leaf0", Port: "Ethernet1", Queue: 3}
	kC  = env.QueueKey{Target: "leaf1", Port: "Ethernet0", Queue: 3}
	cur = env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 100_000}
	// curA is cur on a switch that reports the PG's alpha (SONiC: 1/8).
	curA = env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 100_000, Alpha: 0.125}
)

func testGuardConfig() core.GuardConfig {
	c := core.DefaultGuardConfig(time.Second)
	c.MinHold = 5 * time.Second
	c.StaleFreeze = 5 * time.Second
	c.StaleRevert = 30 * time.Second
	return c
}

func ob(k env.QueueKey, s env.Setting) env.Observation {
	return env.Observation{Key: k, RateBps: 100e9, Current: s, Valid: true, Metrics: env.Metrics{IntervalNs: sec, Util: 0.5}}
}
