package env

import (
	"fmt"
	"math"
	"time"

	"github.com/ecntune/ecntune/internal/units"
)

// Defaults of ObserverConfig. They are part of the observation spec: a model
// trained with one RefRTT reads different numbers under another.
const (
	DefaultRefRTT         = 20 * time.Microsecond
	DefaultPauseFrameTime = 10 * time.Microsecond
)

// ObserverConfig tunes the normalisation of observations. Zero fields take
// the defaults.
type ObserverConfig struct {
	// RefRTT sets the rate-scaled reference for queues and thresholds:
	// ref = rate · RefRTT / 8 bytes.
	RefRTT time.Duration
	// PauseFrameTime is the time one PFC frame counts for when pause frames
	// are turned into a fraction of the interval (pause_tx, and pause_rx
	// when the switch exports no paused time).
	PauseFrameTime time.Duration
}

func (c ObserverConfig) withDefaults() ObserverConfig {
	if c.RefRTT <= 0 {
		c.RefRTT = DefaultRefRTT
	}
	if c.PauseFrameTime <= 0 {
		c.PauseFrameTime = DefaultPauseFrameTime
	}
	return c
}

// counters are the cumulative figures of a sample that must never go back.
type counters struct {
	txPkts, txBytes, markedPkts, markedBytes uint64
	dropPkts, dropBytes                      uint64
	pauseTx, pauseRx, pausedNs               uint64
}

func countersOf(q *QueueSample) counters {
	return counters{q.TxPkts, q.TxBytes, q.MarkedPkts, q.MarkedBytes, q.DropPkts, q.DropBytes,
		q.PauseTx, q.PauseRx, q.PausedNs}
}

// wentBack names the first counter of c that is below the one of p.
func (c counters) wentBack(p counters) string {
	cur := [...]uint64{c.txPkts, c.txBytes, c.markedPkts, c.markedBytes, c.dropPkts, c.dropBytes, c.pauseTx, c.pauseRx, c.pausedNs}
	prev := [...]uint64{p.txPkts, p.txBytes, p.markedPkts, p.markedBytes, p.dropPkts, p.dropBytes, p.pauseTx, p.pauseRx, p.pausedNs}
	names := [...]string{"tx_pkts", "tx_bytes", "marked_pkts", "marked_bytes", "drop_pkts", "drop_bytes", "pause_tx", "pause_rx", "paused_ns"}
	for i := range cur {
		if cur[i] < prev[i] {
			return fmt.Sprintf("%s went back from %d to %d", names[i], prev[i], cur[i])
		}
	}
	return ""
}

// QueueCounters are the cumulative counters of a queue's sample
// (QueueSample.Counters): those of its last sample are what a later run of the observer is seeded with
// (Observer.Seed) to tell a switch that restarted meanwhile, whose
// counters went back, from one that did not.
type QueueCounters struct {
	TxPkts      uint64 `json:"tx_pkts,omitempty"`
	TxBytes     uint64 `json:"tx_bytes,omitempty"`
	MarkedPkts  uint64 `json:"marked_pkts,omitempty"`
	MarkedBytes uint64 `json:"marked_bytes,omitempty"`
	DropPkts    uint64 `json:"drop_pkts,omitempty"`
	DropBytes   uint64 `json:"drop_bytes,omitempty"`
	PauseTx     uint64 `json:"pause_tx,omitempty"`
	PauseRx     uint64 `json:"pause_rx,omitempty"`
	PausedNs    uint64 `json:"paused_ns,omitempty"`
}

// Counters are q's cumulative counters.
func (q *QueueSample) Counters() QueueCounters {
	return QueueCounters{q.TxPkts, q.TxBytes, q.MarkedPkts, q.MarkedBytes, q.DropPkts, q.DropBytes, q.PauseTx, q.PauseRx, q.PausedNs}
}

func (c QueueCounters) internal() counters {
	return counters{c.TxPkts, c.TxBytes, c.MarkedPkts, c.MarkedBytes, c.DropPkts, c.DropBytes, c.PauseTx, c.PauseRx, c.PausedNs}
}

// ResetSinceLastRun begins the Problem of the first Observation of a
// seeded queue (Observer.Seed) whose counters are below the ones the
// previous run saw last: the switch restarted, or its counters were
// cleared, meanwhile. The observation has Metrics.Reset.
const ResetSinceLastRun = "counter reset since the last run"

type queueState struct {
	seen    bool
	seeded  bool // ctr holds a previous run's last counters (Seed), not a sample
	timeNs  int64
	ctr     counters
	hist    [HistoryLen][IntervalFeatures]float32 // ring, hist[head] most recent
	head    int
	nhist   int
	metrics Metrics
	valid   bool
	problem string
}

func (st *queueState) clearHistory() {
	st.nhist = 0
	st.head = 0
}

func (st *queueState) push(block [IntervalFeatures]float32) {
	st.head = (st.head + HistoryLen - 1) % HistoryLen
	st.hist[st.head] = block
	if st.nhist < HistoryLen {
		st.nhist++
	}
}

// Observer turns consecutive Snapshots into per-queue Observations. It keeps
// the previous sample of every queue it has seen (by QueueKey). It is pure
// and deterministic, and not safe for concurrent use.
type Observer struct {
	cfg    ObserverConfig
	refSec float64 // RefRTT in seconds
	frameS float64 // PauseFrameTime in seconds
	queues map[QueueKey]*queueState
}

// NewObserver returns an Observer with no history.
func NewObserver(cfg ObserverConfig) *Observer {
	cfg = cfg.withDefaults()
	return &Observer{
		cfg:    cfg,
		refSec: cfg.RefRTT.Seconds(),
		frameS: cfg.PauseFrameTime.Seconds(),
		queues: make(map[QueueKey]*queueState),
	}
}

// Config returns the configuration in force (defaults filled in).
func (o *Observer) Config() ObserverConfig { return o.cfg }

// RefBytes is the reference queue size at rateBps: rate · RefRTT / 8.
func (o *Observer) RefBytes(rateBps float64) float64 { return rateBps * o.refSec / 8 }

// Forget drops every queue state of target (a switch that went away or
// rebooted): its next samples start afresh.
func (o *Observer) Forget(target string) {
	for k := range o.queues {
		if k.Target == target {
			delete(o.queues, k)
		}
	}
}

// ForgetQueue drops one queue's state (it is no longer reported).
func (o *Observer) ForgetQueue(k QueueKey) { delete(o.queues, k) }

// Seed gives the observer the last counters a previous run saw of queue
// k (QueueSample.Counters of its last sample), before its first sample: a first sample with a counter
// below them is a counter reset (Metrics.Reset, its Problem beginning with
// ResetSinceLastRun and naming the counter), as a sample after another
// would be; one at or above them is a first sample as usual. A queue
// already sampled is left as it is.
func (o *Observer) Seed(k QueueKey, c QueueCounters) {
	if st := o.queues[k]; st != nil && st.seen {
		return
	}
	o.queues[k] = &queueState{seeded: true, ctr: c.internal()}
}

// Len is the number of queues with state.
func (o *Observer) Len() int { return len(o.queues) }

// Observe returns one Observation per queue of s, in the order of s.Queues,
// each computed against the previous sample of the same queue. A sample
// whose Key has no Target takes s.Target. Re-sending an identical snapshot
// (same TimeNs, same counters) yields the same observations again.
func (o *Observer) Observe(s Snapshot) []Observation {
	out := make([]Observation, len(s.Queues))
	feats := make([]float32, len(s.Queues)*NumFeatures)
	states := make([]*queueState, len(s.Queues))
	for i := range s.Queues {
		q := &s.Queues[i]
		key := q.Key
		if key.Target == "" {
			key.Target = s.Target
		}
		st := o.queues[key]
		if st == nil {
			st = &queueState{}
			o.queues[key] = st
		}
		o.advance(st, q, s.TimeNs)
		states[i] = st
	}
	sw := switchContextOf(s.Queues, states)
	for i := range s.Queues {
		q, st := &s.Queues[i], states[i]
		key := q.Key
		if key.Target == "" {
			key.Target = s.Target
		}
		ob := &out[i]
		ob.Key = key
		ob.RateBps = q.RateBps
		ob.Peer = q.Peer
		ob.Current = q.Setting
		ob.XoffBytes = q.XoffBytes
		ob.BufferBytes = q.BufferBytes
		ob.MinHeadroomBytes = q.MinHeadroomBytes
		ob.FloorEstimated = q.FloorEstimated
		ob.HeadroomReported = q.HeadroomReported
		ob.Metrics = st.metrics
		ob.Valid = st.valid
		ob.Problem = st.problem
		ob.TimeNs = s.TimeNs
		ob.Missing = q.Missing
		ob.Features = feats[i*NumFeatures : (i+1)*NumFeatures : (i+1)*NumFeatures]
		o.fill(ob.Features, st, q)
		sw.fill(ob.Features, q, o.refSec)
	}
	return out
}

// advance updates st with sample q taken at timeNs.
func (o *Observer) advance(st *queueState, q *QueueSample, timeNs int64) {
	c := countersOf(q)
	if !st.seen {
		why := ""
		if st.seeded {
			why = c.wentBack(st.ctr)
		}
		st.seen, st.seeded = true, false
		if why != "" {
			o.rebase(st, c, timeNs, ResetSinceLastRun+": "+why)
			return
		}
		st.timeNs, st.ctr = timeNs, c
		st.clearHistory()
		st.metrics, st.valid, st.problem = Metrics{}, false, "first sample of this queue"
		return
	}
	if timeNs == st.timeNs && c == st.ctr {
		return // re-sent snapshot: no new interval, same answer
	}
	if timeNs <= st.timeNs {
		o.rebase(st, c, timeNs, fmt.Sprintf("timestamp %d ns is not after the previous %d ns", timeNs, st.timeNs))
		return
	}
	if why := c.wentBack(st.ctr); why != "" {
		o.rebase(st, c, timeNs, "counter reset: "+why)
		return
	}
	if !(q.RateBps > 0) || math.IsInf(q.RateBps, 0) {
		st.timeNs, st.ctr = timeNs, c
		st.clearHistory()
		st.metrics, st.valid = Metrics{}, false
		st.problem = fmt.Sprintf("rate_bps %g is not a positive finite link rate", q.RateBps)
		return
	}
	dtNs := timeNs - st.timeNs
	if why := impossibleTx(c.txBytes-st.ctr.txBytes, q.RateBps, dtNs); why != "" {
		o.rebase(st, c, timeNs, why)
		return
	}
	m := o.metrics(q, c, st.ctr, dtNs)
	st.timeNs, st.ctr = timeNs, c
	st.metrics, st.valid, st.problem = m, true, ""
	st.push(intervalBlock(&m))
}

// MaxUtil is the utilisation beyond which an interval's transmitted
// bytes cannot have crossed the link: the counters or the port speed the
// switch reports are wrong (a counter that jumped or was read as zero, a
// counter in other units, a speed below the link's). Sample timestamps
// jitter, so a little above 1 is measured; twice the link's capacity is
// not.
const MaxUtil = 2

// MalformedCounters begins an Observation's Problem where the interval's
// counters are beyond what the link carries (MaxUtil).
const MalformedCounters = "malformed counters"

// impossibleTx says why tx bytes in dtNs cannot have crossed a link of
// rateBps, or "".
func impossibleTx(tx uint64, rateBps float64, dtNs int64) string {
	capBytes := rateBps / 8 * float64(dtNs) * 1e-9
	if float64(tx) <= MaxUtil*capBytes {
		return ""
	}
	return fmt.Sprintf(MalformedCounters+": %d bytes sent in %v is %.0f%% of what the port's %s can carry (a counter jumped or is in other units, or the port speed is wrong): the interval is left out",
		tx, time.Duration(dtNs), 100*float64(tx)/capBytes, units.FormatRate(rateBps))
}

func (o *Observer) rebase(st *queueState, c counters, timeNs int64, why string) {
	st.timeNs, st.ctr = timeNs, c
	st.clearHistory()
	st.metrics = Metrics{Reset: true}
	st.valid = false
	st.problem = why
}

func finiteNonNeg(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 1) {
		return 0
	}
	return x
}

func clip(x, lo, hi float64) float64 {
	if x != x { // NaN
		return lo
	}
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

// metrics decodes one interval of dtNs > 0 at a positive finite rate.
func (o *Observer) metrics(q *QueueSample, c, p counters, dtNs int64) Metrics {
	dt := float64(dtNs) * 1e-9
	rate := q.RateBps
	capBytes := rate / 8 * dt
	ref := rate / 8 * o.refSec
	tx := float64(c.txBytes - p.txBytes)
	txPkts := float64(c.txPkts - p.txPkts)
	m := Metrics{IntervalNs: dtNs}
	m.Util = finiteNonNeg(tx / capBytes)

	marked := float64(c.markedBytes - p.markedBytes)
	switch {
	case tx > 0 && marked > 0:
		m.MarkFrac = clip(marked/tx, 0, 1)
	case txPkts > 0 && c.markedPkts > p.markedPkts:
		m.MarkFrac = clip(float64(c.markedPkts-p.markedPkts)/txPkts, 0, 1)
	}

	avgQ := finiteNonNeg(q.AvgQueueBytes)
	maxQ := math.Max(float64(q.MaxQueueBytes), float64(q.CurQueueBytes))
	maxQ = math.Max(finiteNonNeg(maxQ), avgQ)
	if q.Missing.Has(TelAvgQueue) && !q.Missing.Has(TelMaxQueue|TelCurQueue) {
		avgQ = maxQ // no average exported: the peak stands in
	}
	m.AvgQueueFrac = avgQ / ref
	m.MaxQueueFrac = maxQ / ref
	m.AvgDelayNs = avgQ * 8 / rate * 1e9
	m.MaxDelayNs = maxQ * 8 / rate * 1e9

	if c.pausedNs > p.pausedNs {
		m.PauseRxFrac = clip(float64(c.pausedNs-p.pausedNs)/float64(dtNs), 0, 1)
	} else if c.pauseRx > p.pauseRx {
		m.PauseRxFrac = clip(float64(c.pauseRx-p.pauseRx)*o.frameS/dt, 0, 1)
	}
	m.PauseTxFrac = clip(float64(c.pauseTx-p.pauseTx)*o.frameS/dt, 0, 1)

	drop := float64(c.dropBytes - p.dropBytes)
	dropPkts := float64(c.dropPkts - p.dropPkts)
	switch {
	case drop > 0:
		m.DropFrac = clip(drop/(tx+drop), 0, 1)
	case dropPkts > 0:
		m.DropFrac = clip(dropPkts/(txPkts+dropPkts), 0, 1)
	}

	peakiness := (m.MaxQueueFrac - m.AvgQueueFrac) / (m.MaxQueueFrac + 0.25)
	m.Incast = clip(math.Max(clip(peakiness, 0, 1)*math.Min(1, m.MaxQueueFrac/2), m.PauseTxFrac), 0, 1)
	return m
}

var (
	invLog2of128 = 1 / 7.0
	dropNorm     = 1 / math.Log10(1+1e4)
)

func queueFeature(frac float64) float32 {
	return float32(clip(math.Log2(1+clip(frac, 0, 1e9))*invLog2of128, 0, 1))
}

func intervalBlock(m *Metrics) [IntervalFeatures]float32 {
	var b [IntervalFeatures]float32
	b[FeatUtil] = float32(clip(m.Util, 0, 1))
	b[FeatMark] = float32(clip(m.MarkFrac, 0, 1))
	b[FeatAvgQueue] = queueFeature(m.AvgQueueFrac)
	b[FeatMaxQueue] = queueFeature(m.MaxQueueFrac)
	b[FeatPauseRx] = float32(clip(m.PauseRxFrac, 0, 1))
	b[FeatPauseTx] = float32(clip(m.PauseTxFrac, 0, 1))
	b[FeatDrop] = float32(clip(math.Log10(1+1e4*clip(m.DropFrac, 0, 1))*dropNorm, 0, 1))
	b[FeatIncast] = float32(clip(m.Incast, 0, 1))
	return b
}

// thresholdFeature is log2(bytes/ref)/8 clipped to [-1, 1].
func thresholdFeature(bytes int64, ref float64) float32 {
	if bytes <= 0 || !(ref > 0) {
		return -1
	}
	return float32(clip(math.Log2(float64(bytes)/ref)/8, -1, 1))
}

// fill writes the features of st and the setting of q into f (len NumFeatures).
func (o *Observer) fill(f []float32, st *queueState, q *QueueSample) {
	for i := range f {
		f[i] = 0
	}
	for b := 0; b < st.nhist; b++ {
		copy(f[b*IntervalFeatures:(b+1)*IntervalFeatures], st.hist[(st.head+b)%HistoryLen][:])
	}
	ref := 0.0
	if q.RateBps > 0 && !math.IsInf(q.RateBps, 0) {
		ref = q.RateBps / 8 * o.refSec
	}
	if ref > 0 {
		f[FeatKmin] = thresholdFeature(q.Setting.KminBytes, ref)
		f[FeatKmax] = thresholdFeature(q.Setting.KmaxBytes, ref)
	}
	if p := q.Setting.Pmax; p > 0 {
		f[FeatPmax] = float32(clip(1+math.Log10(p)/2, 0, 1))
	}
	if q.XoffBytes > 0 {
		f[FeatXoffKnown] = 1
		if q.Setting.KmaxBytes > 0 {
			f[FeatKmaxOverXoff] = float32(clip(math.Log2(float64(q.Setting.KmaxBytes)/float64(q.XoffBytes))/4, -1, 1))
		} else {
			f[FeatKmaxOverXoff] = -1
		}
	}
	if st.valid {
		f[FeatValid] = 1
	}
	switch q.Peer {
	case PeerSwitch:
		f[FeatFabric], f[FeatPeerKnown] = 1, 1
	case PeerHost:
		f[FeatPeerKnown] = 1
	}
	known := func(i int, t Telemetry) {
		if !q.Missing.Has(t) {
			f[i] = 1
		}
	}
	known(FeatMarksKnown, TelMarkedPkts|TelMarkedBytes)
	known(FeatQlenKnown, TelMaxQueue|TelAvgQueue|TelCurQueue)
	known(FeatPFCKnown, TelPFCFrames)
	known(FeatPausedKnown, TelPausedTime)
	if h, fl := q.Setting.HeadroomBytes, q.MinHeadroomBytes; h > 0 && fl > 0 {
		f[FeatHeadroomKnown] = 1
		f[FeatHeadroom] = float32(clip(math.Log2(float64(h)/float64(fl))/2, 0, 1))
	}
	if a := q.Setting.Alpha; a > 0 && !math.IsInf(a, 0) {
		f[FeatAlphaKnown] = 1
		f[FeatAlpha] = float32(clip((math.Log2(a)+4)/6, 0, 1))
	}
}
