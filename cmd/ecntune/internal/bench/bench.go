// Package bench holds the measurements behind "ecntune bench": the
// simulator's speed (sim.go), a policy's decision latency and training
// throughput (policy.go), and the agent's scale end to end over gNMI
// against a fabric of simulated switches served by a child process
// (agent*.go). Each takes options, returns a result that prints itself as
// text (WriteText) or encodes as JSON; the command only parses flags.
// Errors name the command's flags.
package bench

import (
	"math"
	"sort"
	"time"
)

// percentile is the p-th percentile (0 < p <= 100) of ds by the
// nearest-rank method; 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
