package env

import (
	"fmt"
	"math"
	"reflect"
	"strings"
)

// RewardWeights weigh the terms of Reward. All must be finite and >= 0.
type RewardWeights struct {
	// Throughput is paid per unit of link utilisation.
	Throughput float64 `json:"throughput"`
	// FabricThroughput, when set, replaces Throughput on a port that faces
	// another switch (RewardAt with PeerSwitch). Every byte delivered to a
	// host leaves exactly one host port but crosses zero to several fabric
	// queues, so paying throughput at host ports only counts each delivered
	// byte once, while delay is charged wherever the byte waits: with 0 a
	// transit queue is rewarded for being short, not for being full.
	FabricThroughput *float64 `json:"fabric_throughput,omitempty"`
	// Delay is charged per reference RTT (ObserverConfig.RefRTT, 20 µs by
	// default) of average queueing delay. Metrics.AvgQueueFrac is the
	// average queue in rate-scaled BDPs, i.e. the delay in reference RTTs,
	// so the charge is the same for the same delay at any link rate.
	Delay float64 `json:"delay"`
	// TailDelay is charged per reference RTT of peak queueing delay.
	TailDelay float64 `json:"tail_delay"`
	// OverMark is charged per unit of MarkFrac · (1 − util): marking while
	// the port had spare capacity, i.e. senders slowed below what the link
	// could carry (thresholds too low or Pmax too high).
	OverMark float64 `json:"over_mark"`
	// Pause is charged per unit of PFC activity: the larger of the fraction
	// of the interval the queue was paused and the normalised rate of pause
	// frames the port sent.
	Pause float64 `json:"pause"`
	// PauseEvent is charged once in any interval with PFC activity.
	PauseEvent float64 `json:"pause_event"`
	// Drop is charged per unit of the drop score, log10(1+1e4·f)/4 for a
	// drop fraction f (1e-4 → 0.08, 1e-2 → 0.5, all → 1).
	Drop float64 `json:"drop"`
	// DropEvent is charged once in any interval with a drop.
	DropEvent float64 `json:"drop_event"`

	// FlowSmall and FlowLarge weigh ground truth that no counter shows,
	// which only the simulator knows (simenv/gym adds them; Reward, from
	// counters, ignores them): each queue is charged FlowSmall per unit of
	// the mean log2 FCT slowdown of the flows under 100 KB that finished
	// in the interval after crossing it, and FlowLarge the same for flows
	// of 1 MB or more. A policy still observes counters only; the reward
	// it learns from sees what the counters hide (a short flow's tail
	// behind a full queue, a long flow slowed by marking too early).
	FlowSmall float64 `json:"flow_small,omitempty"`
	FlowLarge float64 `json:"flow_large,omitempty"`
	// FlowSmallTail weighs the same ground truth's tail: each queue is
	// charged FlowSmallTail per unit of the largest log2 FCT slowdown among
	// the flows under 100 KB that finished in the interval after crossing
	// it. The mean (FlowSmall) hardly moves when a few of many small flows
	// wait behind a full queue; the run's small-flow p99 is made of those.
	// A preference-conditioned training run does not scale it with the
	// preference, so its throughput end is still charged for them.
	FlowSmallTail float64 `json:"flow_small_tail,omitempty"`
	// FlowLargeProgress charges large flows (1 MB or more) as they fall
	// behind, finished or not: a flow's lateness is log2 of its time so
	// far over its standalone FCT (0 until that time has passed; its log2
	// slowdown once it finishes), a lower bound on its final log2
	// slowdown that only grows, and each interval charges a queue
	// FlowLargeProgress times the mean, over the large flows crossing it
	// then, of the growth of their lateness in the interval. Summed over
	// a flow's life that is its log2 slowdown, as FlowLarge charges it on
	// finishing; but a flow slowed past the episode's end is charged what
	// it is late by then, which FlowLarge never charges, and the charge
	// comes while the flow is slow, not when it ends.
	FlowLargeProgress float64 `json:"flow_large_progress,omitempty"`

	// Change is charged to a queue in each interval its policy changed its
	// ECN setting (Kmin, Kmax or Pmax) at the interval's start. No counter
	// shows it, so Reward ignores it; the simulator's environment
	// (simenv/gym) charges it in training. Without it every interval is a
	// free choice and a policy flips between settings worth about the
	// same; with it a change must promise more than it costs, as the
	// agent's guard asks of a change before it applies it.
	Change float64 `json:"change,omitempty"`
}

// DefaultRewardWeights returns the weights used for training and for the
// adaptive baseline. A full link earns 1; each reference RTT of average
// queueing delay costs 0.05 and of peak delay 0.01; marking while the link
// had spare capacity costs MarkFrac · (1 − util); an interval with PFC
// activity costs 0.1 plus 2 per unit of it, one with a drop 2 plus 4 per
// unit of drop score, so a drop costs more than the best interval can
// earn. The reasoning behind these weights, and how they were checked on
// the simulator, are in env/DESIGN.md.
func DefaultRewardWeights() RewardWeights {
	return RewardWeights{
		Throughput: 1,
		Delay:      0.05,
		TailDelay:  0.01,
		OverMark:   1,
		Pause:      2,
		PauseEvent: 0.1,
		Drop:       4,
		DropEvent:  2,
	}
}

// RewardWeightNames lists the JSON names of RewardWeights' fields in
// their order: the counter terms, then the ground-truth ones.
func RewardWeightNames() []string {
	t := reflect.TypeFor[RewardWeights]()
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

// Validate reports the first weight that is negative or not finite.
func (w RewardWeights) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"throughput", w.Throughput}, {"fabric_throughput", w.fabricThroughput()}, {"delay", w.Delay}, {"tail_delay", w.TailDelay}, {"over_mark", w.OverMark}, {"pause", w.Pause},
		{"pause_event", w.PauseEvent}, {"drop", w.Drop}, {"drop_event", w.DropEvent}, {"flow_small", w.FlowSmall}, {"flow_large", w.FlowLarge},
		{"flow_small_tail", w.FlowSmallTail}, {"flow_large_progress", w.FlowLargeProgress}, {"change", w.Change}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("reward weight %s = %g: must be a finite number >= 0", f.name, f.v)
		}
	}
	return nil
}

// GroundTruth reports whether w weighs any of the simulator's ground truth
// (FlowSmall, FlowLarge, FlowSmallTail, FlowLargeProgress), which only a
// simulation can compute.
func (w RewardWeights) GroundTruth() bool {
	return w.FlowSmall != 0 || w.FlowLarge != 0 || w.FlowSmallTail != 0 || w.FlowLargeProgress != 0
}

// maxQueueRefs caps the queue terms: 128 reference BDPs is a full 32 MB
// buffer at 100 Gb/s.
const maxQueueRefs = 128

// fabricThroughput is the throughput weight at a port facing a switch.
func (w RewardWeights) fabricThroughput() float64 {
	if w.FabricThroughput != nil {
		return *w.FabricThroughput
	}
	return w.Throughput
}

// WithoutQueueing is m without what a queue's depth, PFC and drops put in
// its reward (RewardAt's queue, tail, pause and drop terms): scored, it is
// the throughput and over-mark terms alone, and Reward(m) minus it is the
// rest. A guard judges a change that marks earlier on the first part and
// one that marks later on the second.
func (m Metrics) WithoutQueueing() Metrics {
	m.AvgQueueFrac, m.MaxQueueFrac, m.PauseRxFrac, m.PauseTxFrac, m.DropFrac = 0, 0, 0, 0, 0
	return m
}

// Reward scores one measured interval of one queue from its counters:
//
//	Throughput·util − Delay·avg_queue − TailDelay·max_queue − OverMark·mark·(1−util)
//	− [pfc] (PauseEvent + Pause·pfc) − [drop] (DropEvent + Drop·drop_score)
//
// with util clipped to [0, 1], queues in reference BDPs (= delay in
// reference RTTs) clipped to [0, 128], pfc = max(pause_rx, pause_tx) in
// [0, 1]. An interval that was not measured (IntervalNs <= 0 or Reset)
// scores 0. The result is always finite.
func Reward(m Metrics, w RewardWeights) float64 { return RewardAt(m, PeerUnknown, w) }

// RewardAt is Reward for a queue whose port faces peer: with PeerSwitch the
// throughput term is weighted by FabricThroughput (when set).
func RewardAt(m Metrics, peer Peer, w RewardWeights) float64 {
	if m.Reset || m.IntervalNs <= 0 {
		return 0
	}
	util := clip(m.Util, 0, 1)
	tw := w.Throughput
	if peer == PeerSwitch {
		tw = w.fabricThroughput()
	}
	r := tw * util
	r -= w.OverMark * clip(m.MarkFrac, 0, 1) * (1 - util)
	r -= w.Delay * clip(m.AvgQueueFrac, 0, maxQueueRefs)
	r -= w.TailDelay * clip(m.MaxQueueFrac, 0, maxQueueRefs)
	if pfc := math.Max(clip(m.PauseRxFrac, 0, 1), clip(m.PauseTxFrac, 0, 1)); pfc > 0 {
		r -= w.PauseEvent + w.Pause*pfc
	}
	if d := clip(m.DropFrac, 0, 1); d > 0 {
		r -= w.DropEvent + w.Drop*math.Log10(1+1e4*d)*dropNorm
	}
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return 0
	}
	return r
}
