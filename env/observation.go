package env

import (
	"math"
	"strconv"
)

// SpecVersion names the observation layout below: the meaning of every
// Metrics field and of every index of Observation.Features. A model records
// the SpecVersion it was trained with and refuses to run on another.
//
// # Observation spec obs-v3
//
// Every figure is a delta over the interval Δ between two consecutive
// Snapshots of the same queue, normalised so that one policy reads the same
// numbers at 25, 100 or 400 Gb/s and at any Δ (hundreds of µs in training,
// about a second from production telemetry):
//
//   - rates are divided by what the link could carry in Δ (rate·Δ);
//   - queue depths and thresholds are divided by a rate-scaled reference,
//     ref = rate · RefRTT / 8 bytes: the bandwidth-delay product at the
//     reference RTT (default 20 µs, the RTT of Huawei's "Kmax = 2–3 × BDP"
//     rule), 250 KB at 100 Gb/s, 62.5 KB at 25 Gb/s, 1 MB at 400 Gb/s;
//   - PFC frame counts become rates (frames per PauseFrameTime of interval).
//
// Features holds HistoryLen interval blocks of IntervalFeatures values, the
// most recent interval first (block b starts at index b·IntervalFeatures;
// blocks not yet measured are zero), then SettingFeatures values about the
// current setting. Within a block:
//
//	idx  name        value                                         range
//	0    util        tx bytes·8 / (rate·Δ)                          [0, 1]
//	1    mark        ECN-marked bytes / tx bytes (pkts if no bytes) [0, 1]
//	2    avg_queue   log2(1 + avg queue/ref) / 7                    [0, 1]
//	3    max_queue   log2(1 + max queue/ref) / 7                    [0, 1]
//	4    pause_rx    fraction of Δ the queue was held paused        [0, 1]
//	5    pause_tx    PFC frames sent · PauseFrameTime / Δ           [0, 1]
//	6    drop        log10(1 + 1e4·drop frac) / log10(1 + 1e4)      [0, 1]
//	7    incast      incast estimate (see Metrics.Incast)           [0, 1]
//
// The log scales put 0.25 ref → 0.05, 1 ref → 0.14, 8 ref → 0.45 and the
// 128 ref of a full 32 MB buffer at 100 Gb/s → 1; a drop fraction of 1e-4
// → 0.08, 1e-2 → 0.50, 1 → 1. After the blocks, at index
// HistoryLen·IntervalFeatures + i:
//
//	i  name           value                                      range
//	0  kmin           log2(Kmin/ref) / 8  (Kmin 0 → -1)           [-1, 1]
//	1  kmax           log2(Kmax/ref) / 8                          [-1, 1]
//	2  pmax           1 + log10(Pmax) / 2 (1% → 0, 10% → .5)      [0, 1]
//	3  kmax_xoff      log2(Kmax/XOFF) / 4, 0 when XOFF unknown    [-1, 1]
//	4  xoff_known     1 when the switch exports the PG's XOFF     {0, 1}
//	5  valid          1 when this interval was measured           {0, 1}
//	6  fabric         1 when the port faces another switch        {0, 1}
//	7  peer_known     1 when what the port faces is known         {0, 1}
//	8  marks_known    1 when the switch exports ECN marks         {0, 1}
//	9  qlen_known     1 when it exports a queue length            {0, 1}
//	10 pfc_known      1 when it exports PFC frames                {0, 1}
//	11 paused_known   1 when it exports paused time               {0, 1}
//	12 headroom       log2(headroom/lossless floor) / 2            [0, 1]
//	13 hdrm_known     1 when both the headroom and its floor are known {0, 1}
//	14 alpha          (log2(alpha) + 4) / 6  (1/16 → 0, 1 → .67)  [0, 1]
//	15 alpha_known    1 when the PG's alpha is known              {0, 1}
//	16 rate           log2(rate / 12.5 Gb/s) / 6 (25G → .17,       [0, 1]
//	                  100G → .5, 400G → .83, 800G → 1; 0 unknown)
//	17 buf_port       log2(shared buffer per port / ref) / 6       [-1, 1]
//	18 buf_known      1 when the switch's shared buffer is known   {0, 1}
//	19 oversub        log2(host-facing / fabric-facing capacity    [-1, 1]
//	                  of the switch) / 2; 0 on a switch without
//	                  one of the two
//	20 oversub_known  1 when every port of the switch has a known  {0, 1}
//	                  peer (so 19 is measured, not assumed)
//	21 sw_util        mean util of the switch's queues             [0, 1]
//	22 sw_mark        mean mark of the switch's queues             [0, 1]
//	23 sw_max_queue   largest max_queue of the switch's queues     [0, 1]
//	24 sw_pause_tx    mean pause_tx of the switch's queues         [0, 1]
//
// (obs-v5 adds 16-24: what tells fabrics apart (the port rate, buffer per
// port, the switch's oversubscription, all measurable by the agent from
// the port table, the buffer pool and LLDP) and the switch's context this
// interval (21-24, over the snapshot's queues whose interval was
// measured, 0 when none was), so that one model can act differently on a
// 25 Gb/s 3:1 leaf and on an 800 Gb/s star, and see a change of traffic
// mix across its switch. The ports of a switch are those of its
// snapshot: the queues under control.)
//
// (obs-v4 adds 12-15 for the PFC actions of act-v3; the first 44 features
// are obs-v3's, so a model trained on obs-v3 still runs: it reads them
// only, ObsSpecFeatures.)
//
// (obs-v3 adds 8-11: a switch that does not export a feature reads 0 there,
// which must not look like "no congestion"; see QueueSample.Missing. Where
// a queue's switch lacks one queue length the others stand in: the max
// for a missing average, the average or current length for a missing max.)
//
// (fabric and peer_known come from QueueSample.Peer: the simulator knows
// it; for a real switch the agent takes it from the target's
// fabric-ports, and without them both are 0.)
//
// The thresholds use the same ref as the queues, so Kmin and Kmax read as
// multiples of the reference BDP: 2^-8..2^8 ref covers 1 KB..64 MB at
// 100 Gb/s. Δ itself is deliberately absent; the link rate is feature 16
// (obs-v5), beside the thresholds measured in its reference.
// When an interval is not valid (first sample, counter reset, bad rate) the
// history is cleared and every block is zero.
//
// Why obs-v2 tells the policy the port's peer, with the measurement that
// decided it, is in env/DESIGN.md.
const SpecVersion = "obs-v5"

// Layout constants of SpecVersion.
const (
	HistoryLen       = 4
	IntervalFeatures = 8
	SettingFeatures  = 25
	NumFeatures      = HistoryLen*IntervalFeatures + SettingFeatures
)

// ObsSpecFeatures is how many leading features a model of observation spec
// spec reads (0: a spec this build cannot feed). Each spec extends the one
// before it by appending, so an older model reads a prefix.
func ObsSpecFeatures(spec string) int {
	switch spec {
	case SpecVersion:
		return NumFeatures
	case "obs-v4":
		return HistoryLen*IntervalFeatures + 16
	case "obs-v3":
		return HistoryLen*IntervalFeatures + 12
	}
	return 0
}

// ReadableObsSpecs are the observation specs ObsSpecFeatures accepts,
// this build's first.
var ReadableObsSpecs = []string{SpecVersion, "obs-v4", "obs-v3"}

// Indices within an interval block (add b·IntervalFeatures for block b).
const (
	FeatUtil = iota
	FeatMark
	FeatAvgQueue
	FeatMaxQueue
	FeatPauseRx
	FeatPauseTx
	FeatDrop
	FeatIncast
)

// Indices of the setting features.
const (
	FeatKmin = HistoryLen*IntervalFeatures + iota
	FeatKmax
	FeatPmax
	FeatKmaxOverXoff
	FeatXoffKnown
	FeatValid
	FeatFabric
	FeatPeerKnown
	FeatMarksKnown
	FeatQlenKnown
	FeatPFCKnown
	FeatPausedKnown
	FeatHeadroom
	FeatHeadroomKnown
	FeatAlpha
	FeatAlphaKnown
	FeatRate
	FeatBufPort
	FeatBufKnown
	FeatOversub
	FeatOversubKnown
	FeatSwUtil
	FeatSwMark
	FeatSwMaxQueue
	FeatSwPauseTx
)

// FeatureNames returns the name of every index of Features, in order, for
// logs and model provenance.
func FeatureNames() []string {
	block := []string{"util", "mark", "avg_queue", "max_queue", "pause_rx", "pause_tx", "drop", "incast"}
	names := make([]string, 0, NumFeatures)
	for b := 0; b < HistoryLen; b++ {
		for _, n := range block {
			names = append(names, n+"_t-"+strconv.Itoa(b))
		}
	}
	return append(names, "kmin", "kmax", "pmax", "kmax_xoff", "xoff_known", "valid", "fabric", "peer_known",
		"marks_known", "qlen_known", "pfc_known", "paused_known",
		"headroom", "hdrm_known", "alpha", "alpha_known",
		"rate", "buf_port", "buf_known", "oversub", "oversub_known", "sw_util", "sw_mark", "sw_max_queue", "sw_pause_tx")
}

// Metrics are the interval figures of one queue, decoded from two
// consecutive QueueSamples. They are what a human reads; Features are what
// a policy reads. IntervalNs > 0 exactly when the interval was measured.
type Metrics struct {
	IntervalNs   int64   `json:"interval_ns"`
	Util         float64 `json:"util"`           // tx bytes / (rate * interval)
	MarkFrac     float64 `json:"mark_frac"`      // ECN-marked bytes / tx bytes
	AvgQueueFrac float64 `json:"avg_queue_frac"` // avg queue / BDP reference
	MaxQueueFrac float64 `json:"max_queue_frac"` // max queue / BDP reference
	PauseRxFrac  float64 `json:"pause_rx_frac"`  // fraction of the interval the queue was paused
	PauseTxFrac  float64 `json:"pause_tx_frac"`  // PFC frames sent on the port, normalised
	DropFrac     float64 `json:"drop_frac"`      // dropped bytes / (tx + dropped bytes)
	Reset        bool    `json:"reset"`          // counters went backwards: interval discarded

	// AvgDelayNs and MaxDelayNs are the average and peak queueing delay a
	// packet met: queue bytes · 8 / rate.
	AvgDelayNs float64 `json:"avg_delay_ns"`
	MaxDelayNs float64 `json:"max_delay_ns"`
	// Incast is a heuristic in [0, 1] from counters alone: a queue whose
	// peak stands far above its average and reaches two reference BDPs (a
	// synchronised many-to-one burst), or a port sending PFC pauses (its
	// ingress overflowed), scores near 1; a steady or short queue near 0.
	// It is max(peakiness · min(1, MaxQueueFrac/2), PauseTxFrac), with
	// peakiness = (max − avg) / (max + 0.25) in reference BDPs.
	Incast float64 `json:"incast"`
}

// Idle reports whether the interval carried under util of its link and no
// ECN marks, received pause or drops: it says nothing about the queue's
// setting (the agent's guardrails.idle-util; eval counts idle intervals the
// same way).
func (m Metrics) Idle(util float64) bool {
	return m.Util < util && !(m.MarkFrac > 0) && !(m.PauseRxFrac > 0) && !(m.DropFrac > 0)
}

// Observation is one queue's view for a policy at one decision point.
type Observation struct {
	Key       QueueKey `json:"key"`
	RateBps   float64  `json:"rate_bps"`
	Peer      Peer     `json:"peer,omitempty"`
	Current   Setting  `json:"current"`
	XoffBytes int64    `json:"xoff_bytes,omitempty"`
	// BufferBytes is the switch's shared buffer (QueueSample.BufferBytes,
	// 0: unknown): XOFF, a dynamic threshold, is alpha times its free part.
	BufferBytes      int64   `json:"buffer_bytes,omitempty"`
	MinHeadroomBytes int64   `json:"min_headroom_bytes,omitempty"`
	FloorEstimated   bool    `json:"floor_estimated,omitempty"`   // see QueueSample.FloorEstimated
	HeadroomReported bool    `json:"headroom_reported,omitempty"` // see QueueSample.HeadroomReported
	Metrics          Metrics `json:"metrics"`
	// Features is the normalised vector a learned policy reads; its layout
	// is fixed by SpecVersion.
	Features []float32 `json:"features"`
	// Valid is false when the interval could not be measured (first sample,
	// counter reset, zero interval): policies should hold.
	Valid bool `json:"valid"`
	// Problem says, when Valid is false, why (naming the counter or field).
	Problem string `json:"problem,omitempty"`
	// TimeNs is the timestamp of the Snapshot this observation ends at.
	TimeNs int64 `json:"time_ns"`
	// Missing is the optional telemetry the queue's switch does not export
	// (QueueSample.Missing).
	Missing Telemetry `json:"missing,omitempty"`
}

// HeadroomFloor is the lowest headroom a change may give a queue whose
// floor is floor (0: unknown) and whose headroom is cur: the floor, or,
// when the floor is ecntune's estimate (estimated) and the switch already
// runs below it, the switch's own headroom (never raised by a change that
// does not ask for more, never lowered further).
func HeadroomFloor(floor int64, estimated bool, cur int64) int64 {
	if estimated && cur > 0 && cur < floor {
		return cur
	}
	return floor
}

// HeadroomAt is the headroom factor times o's lossless floor, rounded up,
// for a decision that sets the headroom as a multiple of the floor; ok is
// false when the floor is unknown, or when it is ecntune's estimate and
// the switch already runs below it (the vendor sized it by a tighter rule
// than the estimate: a multiple of the estimate would only raise it).
func (o *Observation) HeadroomAt(factor float64) (bytes int64, ok bool) {
	f := o.ActionableFloor()
	if f == 0 {
		return 0, false
	}
	return int64(math.Ceil(float64(f) * factor)), true
}

// ActionableFloor is o's lossless floor when a decision may set the
// headroom from it, else 0: the floor is unknown, or it is ecntune's
// estimate and the switch already runs below it.
func (o *Observation) ActionableFloor() int64 {
	if o.MinHeadroomBytes <= 0 || HeadroomFloor(o.MinHeadroomBytes, o.FloorEstimated, o.Current.HeadroomBytes) < o.MinHeadroomBytes {
		return 0
	}
	return o.MinHeadroomBytes
}
