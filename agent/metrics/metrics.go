package metrics

import (
	"math"
	"regexp"
	"sort"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// Instruments are the agent's Prometheus series, on a registry of their own.
//
// Per-queue series (labels target, port, queue) exist only for the
// queues shown: the PerQueue most congested ones of the last interval
// (highest average queue depth, then paused fraction), or every queue
// with AllQueues; a queue that leaves the set loses its series. Per-target
// aggregates (label target) cover every queue. METRICS.md lists them all
// with their labels and the series count at 10,000 queues.
type Instruments struct {
	Registry *prometheus.Registry

	recKmin, recKmax, recPmax, recHeadroom, recAlpha *prometheus.GaugeVec
	curKmin, curKmax, curPmax, curHeadroom, curAlpha *prometheus.GaugeVec
	reward, util, pause                              *prometheus.GaugeVec
	depth, maxDepth, markFrac, confidence            *prometheus.GaugeVec

	tQueues, tDepthMax, tDepthMean, tPausedMax, tPausedMean *prometheus.GaugeVec
	tMarkMax, tMarkMean, tUtilMean                          *prometheus.GaugeVec
	tConfMin, tConfMean, tToChange                          *prometheus.GaugeVec
	tKmin, tKmax, tPmax, tHeadroom, tAlpha                  *prometheus.GaugeVec
	tTxBytes, tMarkedBytes, tDropBytes, tPauseFrames        *prometheus.CounterVec
	shownQueues                                             prometheus.Gauge
	confHist                                                prometheus.Histogram

	Decisions  prometheus.Counter
	Ticks      prometheus.Counter
	SetLatency prometheus.Histogram
	// DecisionLatency is the time of an interval from taking the newest
	// observations to the guard's plan (sort, policy, recommendations,
	// guard), before any journal write or Set; intervals without
	// observations are not counted.
	DecisionLatency prometheus.Histogram
	Sets            *prometheus.CounterVec
	Rollbacks       *prometheus.CounterVec
	Rejections      *prometheus.CounterVec
	Clamps          *prometheus.CounterVec
	Alarms          *prometheus.CounterVec
	Staleness       *prometheus.GaugeVec
	TelemetryErr    *prometheus.CounterVec
	Snapshots       *prometheus.CounterVec
	Frozen          *prometheus.GaugeVec
	Paused          prometheus.Gauge
	// DBWriteFailures counts writes to the agent db that failed (a full
	// disk): while they fail nothing is recorded, and the closed loop
	// writes no switch (no write-ahead record).
	DBWriteFailures prometheus.Counter
	// Missing is 1 for each optional telemetry feature a target's
	// switch does not export (the names of env.Telemetry).
	Missing *prometheus.GaugeVec
	// Skipped counts telemetry elements the decoder did not understand
	// and skipped, by target and path shape.
	Skipped *prometheus.CounterVec
	// Conns is the gRPC connections open to each target.
	Conns *prometheus.GaugeVec
	// Churn: per target, the changes applied and the flaps (a queue set
	// back to a setting it left within core.FlapIntervals intervals) over
	// the last ChurnIntervals intervals.
	ChurnChanges, ChurnFlaps *prometheus.GaugeVec
	// FleetOwner is 1 for each target this agent owns in its fleet, 0
	// for the others (no series outside a fleet).
	FleetOwner *prometheus.GaugeVec
	// FleetMembers is the members of the agent's fleet it sees,
	// FleetLeader 1 while it leads the fleet (no labels; no series
	// outside a fleet).
	FleetMembers, FleetLeader *prometheus.GaugeVec

	collectors []prometheus.Collector // everything registered

	mu       sync.Mutex
	perQueue int                       // queues shown (AllQueues: every one)
	shown    map[env.QueueKey]bool     // queues with per-queue series
	prev     map[env.QueueKey]counters // last cumulative counters per queue
}

// counters are the cumulative switch counters the per-target totals
// follow.
type counters struct{ tx, marked, drop, pauseTx, pauseRx uint64 }

// NewInstruments creates the series on a new registry, showing
// DefaultMetricsQueues queues.
func NewInstruments() *Instruments {
	q := []string{"target", "port", "queue"}
	const shownNote = " (shown queues only: the most congested, see metrics-queues)"
	m := &Instruments{
		Registry:    prometheus.NewRegistry(),
		recKmin:     gv("queue_recommended_kmin_bytes", "Kmin the policy recommends"+shownNote+".", q...),
		recKmax:     gv("queue_recommended_kmax_bytes", "Kmax the policy recommends"+shownNote+".", q...),
		recPmax:     gv("queue_recommended_pmax", "Pmax (probability) the policy recommends"+shownNote+".", q...),
		recHeadroom: gv("queue_recommended_headroom_bytes", "PFC headroom the policy recommends"+shownNote+".", q...),
		recAlpha:    gv("queue_recommended_alpha", "Dynamic-threshold factor alpha of the lossless PG the policy recommends, where known"+shownNote+".", q...),
		curKmin:     gv("queue_applied_kmin_bytes", "Kmin the switch reports"+shownNote+".", q...),
		curKmax:     gv("queue_applied_kmax_bytes", "Kmax the switch reports"+shownNote+".", q...),
		curPmax:     gv("queue_applied_pmax", "Pmax (probability) the switch reports"+shownNote+".", q...),
		curHeadroom: gv("queue_applied_headroom_bytes", "PFC headroom the switch reports"+shownNote+".", q...),
		curAlpha:    gv("queue_applied_alpha", "Dynamic-threshold factor alpha of the lossless PG the switch reports, where known"+shownNote+".", q...),
		reward:      gv("queue_reward", "Reward of the last measured interval"+shownNote+".", q...),
		util:        gv("queue_utilisation", "Egress utilisation of the last measured interval"+shownNote+".", q...),
		pause:       gv("queue_pause_fraction", "Fraction of the last interval the queue was paused by PFC"+shownNote+".", q...),
		depth:       gv("queue_depth_bytes", "Average queue depth over the last interval"+shownNote+".", q...),
		maxDepth:    gv("queue_max_depth_bytes", "Peak queue depth over the last interval"+shownNote+".", q...),
		markFrac:    gv("queue_mark_fraction", "ECN-marked bytes over bytes sent in the last interval"+shownNote+".", q...),
		confidence:  gv("queue_confidence", "Confidence of the policy's last decision"+shownNote+".", q...),

		tQueues:     gv("target_queues", "Queues under control that reported in the last interval.", "target"),
		tDepthMax:   gv("target_queue_depth_max_bytes", "Highest average queue depth of the target's queues in the last interval.", "target"),
		tDepthMean:  gv("target_queue_depth_mean_bytes", "Mean of the average queue depths of the target's queues in the last interval.", "target"),
		tPausedMax:  gv("target_pause_fraction_max", "Highest fraction of the last interval a queue of the target was paused by PFC.", "target"),
		tPausedMean: gv("target_pause_fraction_mean", "Mean paused fraction of the target's queues in the last interval.", "target"),
		tMarkMax:    gv("target_mark_fraction_max", "Highest ECN-marked fraction of a queue of the target in the last interval.", "target"),
		tMarkMean:   gv("target_mark_fraction_mean", "Mean ECN-marked fraction of the target's queues in the last interval.", "target"),
		tUtilMean:   gv("target_utilisation_mean", "Mean egress utilisation of the target's queues in the last interval.", "target"),
		tConfMin:    gv("target_confidence_min", "Lowest confidence of the policy's decisions for the target's queues.", "target"),
		tConfMean:   gv("target_confidence_mean", "Mean confidence of the policy's decisions for the target's queues.", "target"),
		tToChange:   gv("target_recommended_changes", "Queues of the target whose recommendation differs from the setting the switch reports.", "target"),
		tKmin:       gv("target_setting_kmin_bytes", "Lowest (stat=min) and highest (stat=max) Kmin the target's queues run.", "target", "stat"),
		tKmax:       gv("target_setting_kmax_bytes", "Lowest and highest Kmax the target's queues run.", "target", "stat"),
		tPmax:       gv("target_setting_pmax", "Lowest and highest Pmax the target's queues run.", "target", "stat"),
		tHeadroom:   gv("target_setting_headroom_bytes", "Lowest and highest PFC headroom the target's queues run (queues that report it).", "target", "stat"),
		tAlpha:      gv("target_setting_alpha", "Lowest and highest dynamic-threshold factor alpha of the lossless PGs the target's queues run (queues that report it).", "target", "stat"),
		tTxBytes:    cv("target_tx_bytes_total", "Bytes the target's controlled queues sent (from the switch's counters).", "target"),
		tMarkedBytes: cv("target_marked_bytes_total",
			"ECN-marked bytes of the target's controlled queues; rate() over target_tx_bytes_total's is the mark rate.", "target"),
		tDropBytes: cv("target_drop_bytes_total", "Bytes the target's controlled queues dropped.", "target"),
		tPauseFrames: cv("target_pfc_pause_frames_total",
			"PFC pause frames of the controlled queues' priorities: direction=tx sent by the switch, rx received.", "target", "direction"),
		shownQueues: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "ecntune", Name: "agent_shown_queues",
			Help: "Queues that have per-queue series now (at most metrics-queues)."}),
		confHist: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "ecntune", Name: "agent_decision_confidence",
			Help: "Confidence of every decision the policy made.", Buckets: linearBuckets(1, 10, 10)}),

		Missing: gv("target_telemetry_missing", "1 for each optional telemetry feature the target's switch does not export.", "target", "feature"),
		Skipped: cv("target_telemetry_skipped_total",
			"Telemetry elements the agent did not understand (a queue named other than by an index, a priority outside 0..7) and skipped, by the shape of their path; the rest of each notification is used.", "target", "shape"),
		Conns: gv("target_connections", "gRPC connections open to the target (one, plus one per Subscribe on a switch that serves one Subscribe per connection).", "target"),

		perQueue: config.DefaultMetricsQueues,
		shown:    map[env.QueueKey]bool{},
		prev:     map[env.QueueKey]counters{},
	}
	m.agentSeries()
	m.register()
	return m
}

// agentSeries makes the agent-wide series: decisions and intervals,
// latencies, Sets, the guard's verdicts, telemetry health and the pause.
func (m *Instruments) agentSeries() {
	m.Decisions = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "ecntune", Name: "agent_decisions_total",
		Help: "Queue decisions made (rate() gives decisions/s)."})
	m.Ticks = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "ecntune", Name: "agent_intervals_total",
		Help: "Control intervals run."})
	m.SetLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "ecntune", Name: "agent_set_latency_seconds",
		Help: "Latency of a gNMI Set with its read-back Get.", Buckets: shortest(prometheus.ExponentialBuckets(0.0005, 2, 14))})
	m.DecisionLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "ecntune", Name: "agent_decision_seconds",
		Help:    "Time from taking an interval's observations to the guard's plan (policy and guard; Sets excluded).",
		Buckets: shortest(prometheus.ExponentialBuckets(0.0001, 2, 16))})
	m.Sets = cv("agent_sets_total", "Set requests by result.", "result")
	m.Rollbacks = cv("agent_rollbacks_total", "Rollbacks and reverts by kind.", "kind")
	m.Rejections = cv("agent_guardrail_rejections_total", "Decisions the guard refused, by rule.", "rule")
	m.Clamps = cv("agent_guardrail_clamps_total", "Decisions the guard adjusted, by rule.", "rule")
	m.Alarms = cv("agent_alarms_total", "Alarms by rule.", "rule")
	m.Staleness = gv("agent_telemetry_staleness_seconds", "Time since the last decoded telemetry of a target.", "target")
	m.TelemetryErr = cv("agent_telemetry_errors_total", "Telemetry stream and decode errors.", "target")
	m.Snapshots = cv("agent_snapshots_total", "Telemetry snapshots decoded.", "target")
	m.Frozen = gv("agent_target_frozen", "1 while the stale-telemetry watchdog holds a target.", "target")
	m.ChurnChanges = gv("target_changes_last_100_intervals", "Changes applied to the target's queues over the last 100 control intervals (recounted at each change and every 10 intervals: up to 10 intervals behind).", "target")
	m.ChurnFlaps = gv("target_flaps_last_100_intervals", "Changes over the last 100 intervals that set a queue back to a setting it left within 10 intervals (recounted as target_changes_last_100_intervals is).", "target")
	m.FleetOwner = gv("agent_fleet_owner", "1 for a target this agent owns (writes) in its fleet, 0 for one another member owns.", "target")
	m.FleetMembers = gv("agent_fleet_members", "Members of this agent's fleet, as it sees them (draining ones too).")
	m.FleetLeader = gv("agent_fleet_leader", "1 while this agent is its fleet's leader (it places the switches), else 0.")
	m.DBWriteFailures = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "ecntune", Name: "agent_db_write_failures_total",
		Help: "Writes to the agent db that failed (a full disk): nothing recorded, no switch written in closed loop."})
	m.Paused = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "ecntune", Name: "agent_paused",
		Help: "1 while an operator has paused the closed loop (it records, writes nothing)."})
}

// linearBuckets is the n bucket bounds i/div for i = from, from+1, ...:
// each the float64 nearest its decimal, so that /metrics prints le="0.3"
// (prometheus.LinearBuckets adds up 0.1s: le="0.30000000000000004", and
// its last bound 0.9999999999999999 leaves a confidence of 1 to +Inf).
func linearBuckets(from, div, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = float64(from+i) / float64(div)
	}
	return b
}

// shortest rounds each bucket bound to 10 significant digits, the
// float64 nearest the decimal it stands for.
func shortest(b []float64) []float64 {
	for i, v := range b {
		b[i], _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 10, 64), 64)
	}
	return b
}

// gv is a gauge vector named ecntune_NAME.
func gv(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "ecntune", Name: name, Help: help}, labels)
}

// cv is a counter vector named ecntune_NAME.
func cv(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ecntune", Name: name, Help: help}, labels)
}

// register puts every series on the instruments' registry.
func (m *Instruments) register() {
	m.collectors = []prometheus.Collector{m.recKmin, m.recKmax, m.recPmax, m.recHeadroom, m.recAlpha,
		m.curKmin, m.curKmax, m.curPmax, m.curHeadroom, m.curAlpha,
		m.reward, m.util, m.pause, m.depth, m.maxDepth, m.markFrac, m.confidence,
		m.tQueues, m.tDepthMax, m.tDepthMean, m.tPausedMax, m.tPausedMean, m.tMarkMax, m.tMarkMean, m.tUtilMean,
		m.tConfMin, m.tConfMean, m.tToChange, m.tKmin, m.tKmax, m.tPmax, m.tHeadroom, m.tAlpha,
		m.tTxBytes, m.tMarkedBytes, m.tDropBytes, m.tPauseFrames, m.shownQueues, m.confHist,
		m.Decisions, m.Ticks, m.SetLatency, m.DecisionLatency, m.Sets, m.Rollbacks,
		m.Rejections, m.Clamps, m.Alarms, m.Staleness, m.TelemetryErr, m.Snapshots, m.Frozen, m.Paused, m.ChurnChanges, m.ChurnFlaps, m.Missing, m.Skipped, m.Conns, m.FleetOwner,
		m.FleetMembers, m.FleetLeader, m.DBWriteFailures}
	m.Registry.MustRegister(m.collectors...)
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// MetricNames are the names of every series the agent can export, sorted:
// a histogram's as _bucket, _sum and _count.
func (m *Instruments) MetricNames() []string {
	var names []string
	for _, c := range m.collectors {
		ch := make(chan *prometheus.Desc, 4)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			mm := fqName.FindStringSubmatch(d.String())
			if mm == nil {
				continue
			}
			if _, ok := c.(prometheus.Histogram); ok {
				names = append(names, mm[1]+"_bucket", mm[1]+"_sum", mm[1]+"_count")
			} else {
				names = append(names, mm[1])
			}
		}
	}
	sort.Strings(names)
	return names
}

// SetPerQueue sets how many queues get per-queue series: n > 0 the n most
// congested, AllQueues every one; 0 means DefaultMetricsQueues. It takes
// effect at the next interval.
func (m *Instruments) SetPerQueue(n int) {
	if n == 0 {
		n = config.DefaultMetricsQueues
	}
	m.mu.Lock()
	m.perQueue = n
	m.mu.Unlock()
}

func qLabels(k env.QueueKey) prometheus.Labels {
	return prometheus.Labels{"target": k.Target, "port": k.Port, "queue": strconv.Itoa(k.Queue)}
}

// depthBytes is the average and peak queue depth of an interval, in bytes
// (the observer keeps them as queueing delays at the port's rate).
// depthKnown says whether o's switch measures its queue's depth (an
// average or current queue length; Arista EOS, say, marks both not
// supported).
func depthKnown(o *env.Observation) bool {
	return !(o.Missing.Has(env.TelAvgQueue) && o.Missing.Has(env.TelCurQueue))
}

// peakKnown says whether o's switch measures its queue's peak depth.
func peakKnown(o *env.Observation) bool {
	return !(o.Missing.Has(env.TelMaxQueue) && o.Missing.Has(env.TelCurQueue))
}

func depthBytes(o *env.Observation) (avg, peak float64) {
	if !env.KnownRate(o.RateBps) {
		return 0, 0
	}
	return o.Metrics.AvgDelayNs * o.RateBps / 8e9, o.Metrics.MaxDelayNs * o.RateBps / 8e9
}

// Snapshot adds the growth of a snapshot's cumulative counters to the
// per-target totals. A counter that went backwards (a switch restart)
// only sets the new baseline.
func (m *Instruments) Snapshot(s *env.Snapshot) {
	var tx, marked, drop, ptx, prx float64
	m.mu.Lock()
	for i := range s.Queues {
		q := &s.Queues[i]
		c := counters{q.TxBytes, q.MarkedBytes, q.DropBytes, q.PauseTx, q.PauseRx}
		p, ok := m.prev[q.Key]
		m.prev[q.Key] = c
		if !ok {
			continue
		}
		d := func(now, was uint64) float64 {
			if now < was {
				return 0
			}
			return float64(now - was)
		}
		tx += d(c.tx, p.tx)
		marked += d(c.marked, p.marked)
		drop += d(c.drop, p.drop)
		ptx += d(c.pauseTx, p.pauseTx)
		prx += d(c.pauseRx, p.pauseRx)
	}
	m.mu.Unlock()
	t := s.Target
	m.tTxBytes.WithLabelValues(t).Add(tx)
	m.tMarkedBytes.WithLabelValues(t).Add(marked)
	m.tDropBytes.WithLabelValues(t).Add(drop)
	m.tPauseFrames.WithLabelValues(t, "tx").Add(ptx)
	m.tPauseFrames.WithLabelValues(t, "rx").Add(prx)
}

// aggregate is one target's figures over an interval's observations.
type aggregate struct {
	n, valid, decided, toChange int
	depthMax, depthSum          float64
	depthN                      int // valid queues whose switch measures depth
	pausedMax, pausedSum        float64
	markMax, markSum, utilSum   float64
	confMin, confSum            float64
	kmin, kmax, pmax, headroom  [2]float64 // min, max
	alpha                       [2]float64 // min, max over the queues whose alpha is known
	haveHeadroom, haveAlpha     bool
}

func widen(r *[2]float64, v float64, first bool) {
	if first {
		*r = [2]float64{v, v}
		return
	}
	r[0], r[1] = math.Min(r[0], v), math.Max(r[1], v)
}

// Interval publishes an interval's observations and the recommendations
// made for them (recs[i] is obs[i]'s; recs is empty when the policy made
// none): per-target aggregates of every queue, per-queue series of the
// shown ones. rewarded says whether the recommendations carry a reward.
func (m *Instruments) Interval(obs []env.Observation, recs []core.Recommendation, rewarded bool) {
	aggs := map[string]*aggregate{}
	for i := range obs {
		o := &obs[i]
		a := aggs[o.Key.Target]
		if a == nil {
			a = &aggregate{confMin: math.Inf(1)}
			aggs[o.Key.Target] = a
		}
		first := a.n == 0
		a.n++
		c := o.Current
		widen(&a.kmin, float64(c.KminBytes), first)
		widen(&a.kmax, float64(c.KmaxBytes), first)
		widen(&a.pmax, c.Pmax, first)
		if c.HeadroomBytes > 0 {
			widen(&a.headroom, float64(c.HeadroomBytes), !a.haveHeadroom)
			a.haveHeadroom = true
		}
		if c.Alpha > 0 {
			widen(&a.alpha, c.Alpha, !a.haveAlpha)
			a.haveAlpha = true
		}
		if o.Valid {
			a.valid++
			if avg, _ := depthBytes(o); depthKnown(o) {
				a.depthMax = math.Max(a.depthMax, avg)
				a.depthSum += avg
				a.depthN++
			}
			a.pausedMax = math.Max(a.pausedMax, o.Metrics.PauseRxFrac)
			a.pausedSum += o.Metrics.PauseRxFrac
			a.markMax = math.Max(a.markMax, o.Metrics.MarkFrac)
			a.markSum += o.Metrics.MarkFrac
			a.utilSum += o.Metrics.Util
		}
		if i < len(recs) {
			r := &recs[i]
			a.decided++
			a.confMin = math.Min(a.confMin, r.Confidence)
			a.confSum += r.Confidence
			m.confHist.Observe(r.Confidence)
			if !RecommendsCurrent(r.Recommended, r.Current) {
				a.toChange++
			}
		}
	}
	for t, a := range aggs {
		m.tQueues.WithLabelValues(t).Set(float64(a.n))
		if a.valid > 0 {
			v := float64(a.valid)
			if a.depthN > 0 {
				m.tDepthMax.WithLabelValues(t).Set(a.depthMax)
				m.tDepthMean.WithLabelValues(t).Set(a.depthSum / float64(a.depthN))
			} else {
				// a switch that measures no queue depth: no series, not a 0
				// that reads as empty queues
				m.tDepthMax.DeleteLabelValues(t)
				m.tDepthMean.DeleteLabelValues(t)
			}
			m.tPausedMax.WithLabelValues(t).Set(a.pausedMax)
			m.tPausedMean.WithLabelValues(t).Set(a.pausedSum / v)
			m.tMarkMax.WithLabelValues(t).Set(a.markMax)
			m.tMarkMean.WithLabelValues(t).Set(a.markSum / v)
			m.tUtilMean.WithLabelValues(t).Set(a.utilSum / v)
		}
		if a.decided > 0 {
			m.tConfMin.WithLabelValues(t).Set(a.confMin)
			m.tConfMean.WithLabelValues(t).Set(a.confSum / float64(a.decided))
			m.tToChange.WithLabelValues(t).Set(float64(a.toChange))
		}
		for _, x := range []struct {
			g *prometheus.GaugeVec
			r [2]float64
			o bool
		}{{m.tKmin, a.kmin, true}, {m.tKmax, a.kmax, true}, {m.tPmax, a.pmax, true}, {m.tHeadroom, a.headroom, a.haveHeadroom},
			{m.tAlpha, a.alpha, a.haveAlpha}} {
			if x.o {
				x.g.WithLabelValues(t, "min").Set(x.r[0])
				x.g.WithLabelValues(t, "max").Set(x.r[1])
			} else {
				// none of the target's queues reports it (any more)
				x.g.DeleteLabelValues(t, "min")
				x.g.DeleteLabelValues(t, "max")
			}
		}
	}
	m.showQueues(obs, recs, rewarded)
}

// RecommendsCurrent says whether a recommendation is the setting in place
// (headroom and alpha compared only when both are known).
func RecommendsCurrent(a, b env.Setting) bool {
	return a.KminBytes == b.KminBytes && a.KmaxBytes == b.KmaxBytes && a.Pmax == b.Pmax &&
		(a.HeadroomBytes == 0 || b.HeadroomBytes == 0 || a.HeadroomBytes == b.HeadroomBytes) &&
		(a.Alpha == 0 || b.Alpha == 0 || a.Alpha == b.Alpha)
}

// showQueues picks the shown queues among obs (the most congested) and
// writes their series; queues no longer shown lose theirs.
func (m *Instruments) showQueues(obs []env.Observation, recs []core.Recommendation, rewarded bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	idx := make([]int, len(obs))
	for i := range idx {
		idx[i] = i
	}
	if m.perQueue != config.AllQueues && len(idx) > m.perQueue {
		// depth, then pause, then marks, then utilisation: a switch that
		// measures no depth (Arista EOS) ranked by name before, and its
		// "most congested" queues were the first 20 alphabetically
		score := func(i int) [4]float64 {
			o := &obs[i]
			if !o.Valid {
				return [4]float64{-1, -1, -1, -1}
			}
			avg, _ := depthBytes(o)
			return [4]float64{avg, o.Metrics.PauseRxFrac, o.Metrics.MarkFrac, o.Metrics.Util}
		}
		sort.SliceStable(idx, func(a, b int) bool {
			sa, sb := score(idx[a]), score(idx[b])
			for k := range sa {
				if sa[k] != sb[k] {
					return sa[k] > sb[k]
				}
			}
			return env.QueueKeyLess(obs[idx[a]].Key, obs[idx[b]].Key)
		})
		idx = idx[:m.perQueue]
	}
	now := make(map[env.QueueKey]bool, len(idx))
	for _, i := range idx {
		o := &obs[i]
		now[o.Key] = true
		var rec *core.Recommendation
		if i < len(recs) {
			rec = &recs[i]
		}
		m.writeQueue(o, rec, rewarded)
	}
	for k := range m.shown {
		if !now[k] {
			m.deleteQueue(k)
		}
	}
	m.shown = now
	m.shownQueues.Set(float64(len(now)))
}

// writeQueue writes one shown queue's series. Callers hold m.mu.
func (m *Instruments) writeQueue(o *env.Observation, rec *core.Recommendation, rewarded bool) {
	l := qLabels(o.Key)
	m.setCurrent(l, o.Current)
	if rec != nil {
		m.recKmin.With(l).Set(float64(rec.Recommended.KminBytes))
		m.recKmax.With(l).Set(float64(rec.Recommended.KmaxBytes))
		m.recPmax.With(l).Set(rec.Recommended.Pmax)
		if rec.Recommended.HeadroomBytes > 0 {
			m.recHeadroom.With(l).Set(float64(rec.Recommended.HeadroomBytes))
		}
		setAlpha(m.recAlpha, l, rec.Recommended.Alpha)
		m.confidence.With(l).Set(rec.Confidence)
	}
	if o.Valid {
		avg, peak := depthBytes(o)
		// what the switch does not measure has no series (a 0 read as
		// an empty queue)
		if depthKnown(o) {
			m.depth.With(l).Set(avg)
		} else {
			m.depth.Delete(l)
		}
		if peakKnown(o) {
			m.maxDepth.With(l).Set(peak)
		} else {
			m.maxDepth.Delete(l)
		}
		m.markFrac.With(l).Set(o.Metrics.MarkFrac)
		m.util.With(l).Set(o.Metrics.Util)
		m.pause.With(l).Set(o.Metrics.PauseRxFrac)
		if rec != nil && rewarded {
			m.reward.With(l).Set(rec.Reward)
		}
	}
}

func (m *Instruments) setCurrent(l prometheus.Labels, s env.Setting) {
	m.curKmin.With(l).Set(float64(s.KminBytes))
	m.curKmax.With(l).Set(float64(s.KmaxBytes))
	m.curPmax.With(l).Set(s.Pmax)
	if s.HeadroomBytes > 0 {
		m.curHeadroom.With(l).Set(float64(s.HeadroomBytes))
	}
	setAlpha(m.curAlpha, l, s.Alpha)
}

// setAlpha exports a known alpha (> 0) and drops the series of an
// unknown one.
func setAlpha(g *prometheus.GaugeVec, l prometheus.Labels, alpha float64) {
	if alpha > 0 && !math.IsInf(alpha, 0) {
		g.With(l).Set(alpha)
	} else {
		g.Delete(l)
	}
}

// ForgetTarget drops target's interval series (its per-target gauges of
// the newest interval, and its shown queues' series): a target whose
// telemetry is stale has no newest interval, and its last values stood on
// /metrics as if it had (a silent switch's depth and utilisation, for as
// long as it was silent). Its counters stay: they count what happened.
func (m *Instruments) ForgetTarget(target string) {
	for _, g := range []*prometheus.GaugeVec{m.tQueues, m.tDepthMax, m.tDepthMean, m.tPausedMax, m.tPausedMean, m.tMarkMax, m.tMarkMean,
		m.tUtilMean, m.tConfMin, m.tConfMean, m.tToChange, m.tKmin, m.tKmax, m.tPmax, m.tHeadroom, m.tAlpha} {
		g.DeletePartialMatch(prometheus.Labels{"target": target})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.shown {
		if k.Target == target {
			m.deleteQueue(k)
			delete(m.shown, k)
		}
	}
	m.shownQueues.Set(float64(len(m.shown)))
}

// deleteQueue drops every per-queue series of k. Callers hold m.mu.
func (m *Instruments) deleteQueue(k env.QueueKey) {
	l := qLabels(k)
	for _, g := range []*prometheus.GaugeVec{m.recKmin, m.recKmax, m.recPmax, m.recHeadroom, m.recAlpha, m.curKmin, m.curKmax,
		m.curPmax, m.curHeadroom, m.curAlpha, m.reward, m.util, m.pause, m.depth, m.maxDepth, m.markFrac, m.confidence} {
		g.Delete(l)
	}
}

// Applied records a setting the switch confirmed (a shown queue's series
// only).
func (m *Instruments) Applied(k env.QueueKey, s env.Setting) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shown[k] {
		m.setCurrent(qLabels(k), s)
	}
}
