package policy

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/ecntune/ecntune/env"
)

// splitPart is one policy of a split spec (roles:, rate:) and the queues
// it decides.
type splitPart struct {
	policy Policy
	label  string // what its queues are, for reasons and panics: "host port", "port from 400Gbps"
	spec   string // its spec as written
	idx    []int  // the indices in obs of the queues it decides
}

// decideSplit gives each part's queues to its policy, in one batch per
// part (in the order they came), writing out and prefixing each reason
// with the part's label and spec. Large parts are decided side by side (a
// part's batch may be too small for its policy to split it across cores),
// small ones one after the other. A part's policy that panics is
// re-panicked on the caller's goroutine once every part is done
// (agent.decide recovers it there: one interval lost, not the agent),
// never on a goroutine of its own; kind names the split in its message.
func decideSplit(kind string, obs []env.Observation, out []Decision, parts []splitPart) {
	decide := func(pt *splitPart) {
		sub := obs // a part with every queue (in order) decides them in place
		if len(pt.idx) != len(obs) {
			sub = make([]env.Observation, len(pt.idx))
			for j, i := range pt.idx {
				sub[j] = obs[i]
			}
		}
		ds := pt.policy.Decide(sub)
		if len(ds) != len(sub) {
			panic(fmt.Sprintf("gave %d decisions for %d queues", len(ds), len(sub)))
		}
		prefixReasons(ds, pt.label+", "+pt.spec+": ")
		for j, d := range ds {
			out[pt.idx[j]] = d
		}
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		panicked any
	)
	guarded := func(pt *splitPart) {
		defer func() {
			if r := recover(); r != nil {
				mu.Lock()
				if panicked == nil {
					panicked = fmt.Sprintf("%s: %ss' policy %s: %v", kind, pt.label, pt.spec, r)
				}
				mu.Unlock()
			}
		}()
		decide(pt)
	}
	for i := range parts {
		pt := &parts[i]
		switch n := len(pt.idx); {
		case n == 0:
		case n >= minParallelChunk && runtime.GOMAXPROCS(0) > 1:
			wg.Add(1)
			go func() {
				defer wg.Done()
				guarded(pt)
			}()
		default:
			guarded(pt)
		}
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}
