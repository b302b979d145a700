package bench

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/ecntune/ecntune/internal/cputime"
)

// window is what measure samples at the start and the end of the measured
// intervals.
type window struct {
	cpu0, cpu1         time.Duration // this process's CPU time
	wall0, wall1       time.Time
	child0, child1     fabricProbe // the switch side's CPU time and simulator progress
	samples0, samples1 int64       // queue samples the agent took in
	heapLive           uint64      // live Go heap while the agent runs
}

// liveHeap is the live Go heap after a garbage collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// measure waits for the agent's intervals with observations (the policy's
// calls mark them): the first Warmup are not measured, the next Intervals
// are. It then takes the live heap and waits one more interval, so that
// the last measured interval's decision latency is recorded.
func measure(ctx context.Context, o AgentOptions, run *agentRun, c *child) (window, error) {
	var w window
	var err error
	limit := time.Duration(o.Warmup+o.Intervals)*6*o.Interval + 30*time.Second
	deadline := time.NewTimer(limit + 30*time.Second)
	defer deadline.Stop()
	progress := func(n int) {
		if o.Progress != nil {
			o.Progress(n, o.Warmup+o.Intervals)
		}
	}
	progress(0)
	for n := 0; n < o.Warmup+o.Intervals; {
		select {
		case n = <-run.probe.ticks:
		case err := <-run.runErr:
			run.done = true
			return w, fmt.Errorf("agent stopped: %v", err)
		case <-deadline.C:
			return w, fmt.Errorf("only %d of %d intervals with observations in %v: is telemetry arriving? %s",
				n, o.Warmup+o.Intervals, limit+30*time.Second, strings.TrimSpace(c.stderr.String()))
		case <-ctx.Done():
			return w, ctx.Err()
		}
		progress(n)
		switch n {
		case o.Warmup:
			w.cpu0, w.wall0, w.samples0 = cputime.Process(), time.Now(), run.obs.samples.Load()
			if w.child0, err = c.probe(); err != nil {
				return w, err
			}
		case o.Warmup + o.Intervals:
			w.cpu1, w.wall1, w.samples1 = cputime.Process(), time.Now(), run.obs.samples.Load()
			if w.child1, err = c.probe(); err != nil {
				return w, err
			}
		}
	}
	// The live heap while the agent runs (its state for every queue).
	runtime.GC()
	w.heapLive = liveHeap()
	select {
	case <-run.probe.ticks:
	case <-time.After(3 * o.Interval):
	}
	return w, nil
}
