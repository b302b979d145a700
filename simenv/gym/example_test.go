package gym_test

import (
	"fmt"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/gym"
)

// An episode on one switch with four hosts and a 3-to-1 incast: every
// queue holds its setting at first, then all take the same catalogue
// setting, until the episode ends (here when the flows are done, before
// Config.Duration).
func Example() {
	cfg := simenv.DefaultConfig()
	cfg.Topology = simenv.StarTopology(4, 100e9, simenv.Microsecond)
	cfg.Duration = simenv.Millisecond
	cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadTrace, Priority: 3, Flows: []simenv.TraceFlow{
		{Src: 2, Dst: 1, Priority: 3, SizeBytes: 1_000_000},
		{Src: 3, Dst: 1, Priority: 3, SizeBytes: 1_000_000},
		{Src: 4, Dst: 1, Priority: 3, SizeBytes: 1_000_000},
	}}}
	e, err := gym.New(cfg, gym.Options{Interval: 100 * simenv.Microsecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	obs, err := e.Reset(1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d queues, first %v; %d observations\n", len(e.Keys()), e.Keys()[0], len(obs))

	actions := make([]int, len(obs)) // env.ActionHold for every queue
	steps, done := 0, false
	var info gym.StepInfo
	for !done {
		if steps == 1 {
			for i := range actions {
				actions[i] = env.NumRelativeActions // the first absolute setting
			}
		}
		var rewards []float64
		obs, rewards, done, info, err = e.Step(actions)
		if err != nil {
			fmt.Println(err)
			return
		}
		steps++
		if steps == 2 {
			fmt.Printf("step 2: %d observations, %d rewards, done %v, setting %s\n",
				len(obs), len(rewards), done, e.Catalogue().Describe(actions[0]))
		}
	}
	fmt.Printf("done after %d steps at %v: %d of %d flows finished\n", steps, info.Now, info.FlowsFinished, info.FlowsStarted)
	// Output:
	// 4 queues, first sw0/Ethernet0/q3; 4 observations
	// step 2: 4 observations, 4 rewards, done false, setting kmin 50KB kmax 100KB pmax 0.3% @100G
	// done after 6 steps at 700µs: 3 of 3 flows finished
}
