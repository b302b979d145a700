package gym

import (
	"math"

	"github.com/ecntune/ecntune/env"
)

// Ground truth per queue for an asymmetric actor-critic (Options.Truth):
// the critic, which training alone uses, sees what the switch cannot show,
// so its value estimates, and with them the actor's advantages, are less
// noisy; the actor still reads counters only. Each row is
// NumTruthFeatures values, in this order:
const (
	// TruthTimeLeft is the share of the episode still to run (1 at the
	// start, 0 at the end): a counter-only critic cannot tell a state near
	// an episode's end, whose future is cut short, from the same state
	// early on.
	TruthTimeLeft = iota
	// TruthActiveSmall, TruthActiveMedium and TruthActiveLarge are
	// log(1+n) of the flows in flight whose path crosses the queue, by
	// eval's classes (< 100 KB, 100 KB to 1 MB, ≥ 1 MB).
	TruthActiveSmall
	TruthActiveMedium
	TruthActiveLarge
	// TruthBacklog is log(1+b) of the bytes those flows have yet to have
	// acknowledged, b in intervals of the queue's line rate.
	TruthBacklog
	// TruthSmallSlowdown and TruthLargeSlowdown are the mean log2 slowdown
	// of the small and large flows that finished in the last interval
	// after crossing the queue (0 when none did): the reward's
	// ground-truth terms, unweighted.
	TruthSmallSlowdown
	TruthLargeSlowdown
	// NumTruthFeatures is the width of a Truth row.
	NumTruthFeatures
)

// TruthSpec names the layout above; a model trained with it records it.
const TruthSpec = "truth-v1"

// Truth returns the ground truth of every queue at the last observation
// (Keys order, NumTruthFeatures each), or nil unless Options.Truth. The
// rows stay valid until the next Step or Reset.
func (e *Env) Truth() [][]float32 {
	if !e.opts.Truth || len(e.truthFeat) == 0 {
		return nil
	}
	out := make([][]float32, len(e.keys))
	for i := range out {
		out[i] = e.truthFeat[i*NumTruthFeatures : (i+1)*NumTruthFeatures : (i+1)*NumTruthFeatures]
	}
	return out
}

// observeTruth fills truthFeat for the observations obs just taken; the
// finished flows' slowdowns are those addTruth summed into e.truth.
func (e *Env) observeTruth(obs []env.Observation) {
	n := len(e.keys)
	if cap(e.truthFeat) < n*NumTruthFeatures {
		e.truthFeat = make([]float32, n*NumTruthFeatures)
	}
	f := e.truthFeat[:n*NumTruthFeatures]
	clear(f)
	e.truthFeat = f
	left := 1 - float64(e.sim.Now())/float64(e.cfg.Duration)
	// per queue: flows in flight by class (small, medium, large), then
	// their backlog
	if cap(e.inFlight) < 4*n {
		e.inFlight = make([]float64, 4*n)
	}
	fl := e.inFlight[:4*n]
	clear(fl)
	if e.paths == nil {
		e.paths = make(map[int][]int)
	}
	e.active = e.sim.ActiveFlows(e.active[:0])
	for _, a := range e.active {
		qs, ok := e.paths[a.ID]
		if !ok {
			qs = e.FlowQueues(nil, a.ID)
			e.paths[a.ID] = qs
		}
		class := 1
		switch {
		case a.SizeBytes < truthSmallBytes:
			class = 0
		case a.SizeBytes >= truthLargeBytes:
			class = 2
		}
		for _, i := range qs {
			fl[4*i+class]++
			fl[4*i+3] += float64(a.Remaining)
		}
	}
	acc := e.truth
	for i := 0; i < n; i++ {
		row := f[i*NumTruthFeatures : (i+1)*NumTruthFeatures]
		row[TruthTimeLeft] = float32(min(max(left, 0), 1))
		row[TruthActiveSmall] = float32(math.Log1p(fl[4*i]))
		row[TruthActiveMedium] = float32(math.Log1p(fl[4*i+1]))
		row[TruthActiveLarge] = float32(math.Log1p(fl[4*i+2]))
		if per := obs[i].RateBps / 8 * e.interval.Seconds(); per > 0 {
			row[TruthBacklog] = float32(math.Log1p(fl[4*i+3] / per))
		}
		if i < len(acc) {
			if acc[i].nSmall > 0 {
				row[TruthSmallSlowdown] = float32(acc[i].small / float64(acc[i].nSmall))
			}
			if acc[i].nLarge > 0 {
				row[TruthLargeSlowdown] = float32(acc[i].large / float64(acc[i].nLarge))
			}
		}
	}
}

// FlowQueues appends to dst the indices (Keys order) of the controlled
// queues that flow id of the current run crosses: ground truth, as Truth.
func (e *Env) FlowQueues(dst []int, id int) []int {
	if e.sim == nil {
		return dst
	}
	e.path = e.sim.FlowPath(e.path[:0], id)
	for _, r := range e.path {
		if i, ok := e.byRef[r]; ok {
			dst = append(dst, i)
		}
	}
	return dst
}
