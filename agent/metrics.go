package agent

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ecntune/ecntune/env"
)

// Instruments are the agent's Prometheus series, on a registry of their own.
type Instruments struct {
	Registry *prometheus.Registry

	recKmin, recKmax, recPmax *prometheus.GaugeVec
	curKmin, curKmax, curPmax *prometheus.GaugeVec
	reward, util, pause       *prometheus.GaugeVec

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
	// Missing is 1 for each optional telemetry feature a target's
	// switch does not export (the names of env.Telemetry).
	Missing *prometheus.GaugeVec
}

// NewInstruments creates the series on a new registry.
func NewInstruments() *Instruments {
	q := []string{"target", "port", "queue"}
	gv := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "ecntune", Name: name, Help: help}, labels)
	}
	cv := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ecntune", Name: name, Help: help}, labels)
	}
	m := &Instruments{
		Registry: prometheus.NewRegistry(),
		recKmin:  gv("queue_recommended_kmin_bytes", "Kmin the policy recommends.", q...),
		recKmax:  gv("queue_recommended_kmax_bytes", "Kmax the policy recommends.", q...),
		recPmax:  gv("queue_recommended_pmax", "Pmax (probability) the policy recommends.", q...),
		curKmin:  gv("queue_applied_kmin_bytes", "Kmin the switch reports.", q...),
		curKmax:  gv("queue_applied_kmax_bytes", "Kmax the switch reports.", q...),
		curPmax:  gv("queue_applied_pmax", "Pmax (probability) the switch reports.", q...),
		reward:   gv("queue_reward", "Reward of the last measured interval.", q...),
		util:     gv("queue_utilisation", "Egress utilisation of the last measured interval.", q...),
		pause:    gv("queue_pause_fraction", "Fraction of the last interval the queue was paused by PFC.", q...),
		Decisions: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "ecntune", Name: "agent_decisions_total",
			Help: "Queue decisions made (rate() gives decisions/s)."}),
		Ticks: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "ecntune", Name: "agent_intervals_total",
			Help: "Control intervals run."}),
		SetLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "ecntune", Name: "agent_set_latency_seconds",
			Help: "Latency of a gNMI Set with its read-back Get.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		DecisionLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "ecntune", Name: "agent_decision_seconds",
			Help:    "Time from taking an interval's observations to the guard's plan (policy and guard; Sets excluded).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}),
		Sets:         cv("agent_sets_total", "Set requests by result.", "result"),
		Rollbacks:    cv("agent_rollbacks_total", "Rollbacks and reverts by kind.", "kind"),
		Rejections:   cv("agent_guardrail_rejections_total", "Decisions the guard refused, by rule.", "rule"),
		Clamps:       cv("agent_guardrail_clamps_total", "Decisions the guard adjusted, by rule.", "rule"),
		Alarms:       cv("agent_alarms_total", "Alarms by rule.", "rule"),
		Staleness:    gv("agent_telemetry_staleness_seconds", "Time since the last decoded telemetry of a target.", "target"),
		TelemetryErr: cv("agent_telemetry_errors_total", "Telemetry stream and decode errors.", "target"),
		Snapshots:    cv("agent_snapshots_total", "Telemetry snapshots decoded.", "target"),
		Frozen:       gv("agent_target_frozen", "1 while the stale-telemetry watchdog holds a target.", "target"),
		Missing:      gv("target_telemetry_missing", "1 for each optional telemetry feature the target's switch does not export.", "target", "feature"),
	}
	m.Registry.MustRegister(m.recKmin, m.recKmax, m.recPmax, m.curKmin, m.curKmax, m.curPmax,
		m.reward, m.util, m.pause, m.Decisions, m.Ticks, m.SetLatency, m.DecisionLatency, m.Sets, m.Rollbacks,
		m.Rejections, m.Clamps, m.Alarms, m.Staleness, m.TelemetryErr, m.Snapshots, m.Frozen, m.Missing)
	return m
}

func qLabels(k env.QueueKey) prometheus.Labels {
	return prometheus.Labels{"target": k.Target, "port": k.Port, "queue": strconv.Itoa(k.Queue)}
}

// observe records one queue's observation and the policy's recommendation.
func (m *Instruments) observe(o *env.Observation, rec *env.Setting, reward float64, haveReward bool) {
	l := qLabels(o.Key)
	m.curKmin.With(l).Set(float64(o.Current.KminBytes))
	m.curKmax.With(l).Set(float64(o.Current.KmaxBytes))
	m.curPmax.With(l).Set(o.Current.Pmax)
	if rec != nil {
		m.recKmin.With(l).Set(float64(rec.KminBytes))
		m.recKmax.With(l).Set(float64(rec.KmaxBytes))
		m.recPmax.With(l).Set(rec.Pmax)
	}
	if o.Valid {
		m.util.With(l).Set(o.Metrics.Util)
		m.pause.With(l).Set(o.Metrics.PauseRxFrac)
		if haveReward {
			m.reward.With(l).Set(reward)
		}
	}
}

// applied records a setting the switch confirmed.
func (m *Instruments) applied(k env.QueueKey, s env.Setting) {
	l := qLabels(k)
	m.curKmin.With(l).Set(float64(s.KminBytes))
	m.curKmax.With(l).Set(float64(s.KmaxBytes))
	m.curPmax.With(l).Set(s.Pmax)
}
