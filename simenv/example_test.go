package simenv_test

import (
	"fmt"

	"github.com/ecntune/ecntune/simenv"
)

// A 3-to-1 incast on one switch: run a while, tighten the ECN setting of the
// receiver's queue, run on, and read the switch's counters.
func Example() {
	cfg := simenv.DefaultConfig()
	// sw0 (node 0) with host0..host3 (nodes 1..4) at 100 Gb/s, 1 us links;
	// the switch port facing host0 is Ethernet0 (port 0).
	cfg.Topology = simenv.StarTopology(4, 100e9, simenv.Microsecond)
	cfg.Duration = simenv.Millisecond
	cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadTrace, Priority: 3, Flows: []simenv.TraceFlow{
		{Src: 2, Dst: 1, Priority: 3, SizeBytes: 1_000_000},
		{Src: 3, Dst: 1, Priority: 3, SizeBytes: 1_000_000},
		{Src: 4, Dst: 1, Priority: 3, SizeBytes: 1_000_000},
	}}}
	sim, err := simenv.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	toHost0 := simenv.QueueRef{Switch: 0, Port: 0, Queue: 3}

	sim.RunUntil(50 * simenv.Microsecond)
	q := sim.Telemetry(0).Ports[toHost0.Port].Queues[toHost0.Queue]
	fmt.Printf("at %v: %d packets out, %d marked, queue %d B (peak %d B), setting %+v\n",
		sim.Now(), q.TxPkts, q.MarkedPkts, q.CurBytes, q.MaxBytes, sim.ECN(toHost0))

	if err := sim.SetECN(toHost0, simenv.ECN{KminBytes: 10_000, KmaxBytes: 50_000, Pmax: 1}); err != nil {
		fmt.Println(err)
		return
	}
	sim.RunUntil(100 * simenv.Microsecond)
	q = sim.Telemetry(0).Ports[toHost0.Port].Queues[toHost0.Queue]
	fmt.Printf("at %v: %d packets out, %d marked, queue %d B (peak %d B), setting %+v\n",
		sim.Now(), q.TxPkts, q.MarkedPkts, q.CurBytes, q.MaxBytes, q.ECN)

	sim.Run()
	st := sim.Stats()
	fmt.Printf("flows finished %d of %d, drops %d, PFC pauses %d\n", st.FlowsFinished, st.FlowsStarted, st.Drops, st.PFCPauses)
	// Output:
	// at 50µs: 584 packets out, 27 marked, queue 745128 B (peak 808008 B), setting {KminBytes:400000 KmaxBytes:1600000 Pmax:0.2}
	// at 100µs: 1180 packets out, 623 marked, queue 153008 B (peak 745128 B), setting {KminBytes:10000 KmaxBytes:50000 Pmax:1}
	// flows finished 3 of 3, drops 0, PFC pauses 0
}
