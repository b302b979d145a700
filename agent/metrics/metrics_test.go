package metrics

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// fabric10k is 10,000 lossless queues: 100 targets x 100 ports x queue 3,
// the queue of index i (in key order) with an average depth of i bytes
// shifted by rot, so that rot changes which queues are the deepest.
func fabric10k(rot int) ([]env.Observation, []core.Recommendation) {
	const targets, ports = 100, 100
	n := targets * ports
	obs := make([]env.Observation, 0, n)
	recs := make([]core.Recommendation, 0, n)
	cur := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 120_000, Alpha: 0.125}
	rec := env.Setting{KminBytes: 200_000, KmaxBytes: 1_000_000, Pmax: 0.1, HeadroomBytes: 130_000, Alpha: 0.25}
	for t := 0; t < targets; t++ {
		for p := 0; p < ports; p++ {
			i := t*ports + p
			depth := float64((i + rot) % n)
			k := env.QueueKey{Target: fmt.Sprintf("leaf%03d", t), Port: fmt.Sprintf("Ethernet%03d", p), Queue: 3}
			o := env.Observation{Key: k, RateBps: 100e9, Current: cur, Valid: true,
				Metrics: env.Metrics{IntervalNs: sec, Util: 0.5, MarkFrac: 0.01, PauseRxFrac: 0.001,
					AvgDelayNs: depth * 8e9 / 100e9, MaxDelayNs: 2 * depth * 8e9 / 100e9}}
			obs = append(obs, o)
			recs = append(recs, core.Recommendation{Key: k, Current: cur, Recommended: rec, Confidence: 0.8, Reward: 0.3})
		}
	}
	return obs, recs
}

// seriesCount gathers the registry and counts the series a scrape
// exposes (a histogram: its buckets, +Inf, _sum and _count), and those
// with a per-queue label.
func seriesCount(t *testing.T, m *Instruments) (total, perQueue int, queues map[env.QueueKey]bool) {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	queues = map[env.QueueKey]bool{}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			n := 1
			if f.GetType() == dto.MetricType_HISTOGRAM {
				n = len(s.GetHistogram().GetBucket()) + 3
			}
			total += n
			var k env.QueueKey
			for _, l := range s.GetLabel() {
				switch l.GetName() {
				case "target":
					k.Target = l.GetValue()
				case "port":
					k.Port = l.GetValue()
				case "queue":
					k.Queue, _ = strconv.Atoi(l.GetValue())
				}
			}
			if k.Port != "" {
				perQueue += n
				queues[k] = true
			}
		}
	}
	return total, perQueue, queues
}

// scrape10k runs two intervals of the 10k-queue fabric through fresh
// instruments showing perQueue queues, with every per-target series
// the agent writes set, and returns the series counts.
func scrape10k(t *testing.T, perQueue int) (m *Instruments, total, queueSeries int, shown map[env.QueueKey]bool) {
	m = NewInstruments()
	m.SetPerQueue(perQueue)
	obs, recs := fabric10k(0)
	for _, round := range []uint64{1, 2} {
		byTarget := map[string]*env.Snapshot{}
		for _, o := range obs {
			s := byTarget[o.Key.Target]
			if s == nil {
				s = &env.Snapshot{Target: o.Key.Target}
				byTarget[o.Key.Target] = s
			}
			s.Queues = append(s.Queues, env.QueueSample{Key: o.Key, TxBytes: round * 1000, MarkedBytes: round * 10, PauseTx: round, PauseRx: round})
		}
		for n, s := range byTarget {
			m.Snapshot(s)
			m.Snapshots.WithLabelValues(n).Inc()
			m.Staleness.WithLabelValues(n).Set(0.5)
		}
	}
	m.Interval(obs, recs, true)
	total, queueSeries, shown = seriesCount(t, m)
	return m, total, queueSeries, shown
}

// TestMetricsCardinalityAt10kQueues: at 10,000 queues the per-queue series
// are those of the metrics-queues most congested queues only (17 series
// each, headroom and alpha known), the per-target aggregates grow with targets, not queues, and a
// queue that stops being among the most congested loses its series.
func TestMetricsCardinalityAt10kQueues(t *testing.T) {
	m, total, queueSeries, shown := scrape10k(t, config.DefaultMetricsQueues)
	const perQueueNames = 17
	if queueSeries != perQueueNames*config.DefaultMetricsQueues || len(shown) != config.DefaultMetricsQueues {
		t.Fatalf("per-queue series %d over %d queues, want %d over %d", queueSeries, len(shown), perQueueNames*config.DefaultMetricsQueues, config.DefaultMetricsQueues)
	}
	// the deepest queues are the last 20 in key order
	obs, _ := fabric10k(0)
	for _, o := range obs[len(obs)-config.DefaultMetricsQueues:] {
		if !shown[o.Key] {
			t.Errorf("%v, among the %d deepest queues, has no per-queue series", o.Key, config.DefaultMetricsQueues)
		}
	}
	// 100 targets: the per-target series are bounded by a constant per target
	const targets, perTargetMax = 100, 30
	if limit := perQueueNames*config.DefaultMetricsQueues + perTargetMax*targets + 100; total > limit {
		t.Errorf("%d series at 10,000 queues on %d targets, above the bound %d", total, targets, limit)
	}
	t.Logf("10,000 queues on %d targets, metrics-queues %d: %d series (%d per-queue)", targets, config.DefaultMetricsQueues, total, queueSeries)

	// the next interval has other deepest queues: the old ones go
	obs2, recs2 := fabric10k(5000)
	m.Interval(obs2, recs2, true)
	_, queueSeries2, shown2 := seriesCount(t, m)
	if queueSeries2 != queueSeries {
		t.Errorf("after the congestion moved: %d per-queue series, want %d", queueSeries2, queueSeries)
	}
	var keys []string
	for k := range shown2 {
		if shown[k] {
			keys = append(keys, k.String())
		}
	}
	sort.Strings(keys)
	if len(keys) != 0 {
		t.Errorf("queues no longer the most congested kept their series: %v", keys)
	}

	if testing.Short() {
		return
	}
	_, totalAll, queueAll, _ := scrape10k(t, config.AllQueues)
	if queueAll != perQueueNames*10000 {
		t.Errorf("metrics-queues all: %d per-queue series, want %d", queueAll, perQueueNames*10000)
	}
	t.Logf("10,000 queues on %d targets, metrics-queues all: %d series (%d per-queue)", targets, totalAll, queueAll)
}

// TestTargetCountersFollowTheSwitch: the per-target totals grow by the
// switch counters' growth, and a counter that goes backwards (a switch
// restart) only sets the new baseline.
func TestTargetCountersFollowTheSwitch(t *testing.T) {
	m := NewInstruments()
	snap := func(tx, ptx uint64) {
		m.Snapshot(&env.Snapshot{Target: "leaf0", Queues: []env.QueueSample{
			{Key: kA, TxBytes: tx, MarkedBytes: tx / 10, PauseTx: ptx, PauseRx: 2 * ptx},
			{Key: kB, TxBytes: tx, PauseTx: ptx}}})
	}
	value := func(name string, labels ...string) float64 {
		fams, _ := m.Registry.Gather()
		for _, f := range fams {
			if f.GetName() != name {
				continue
			}
		next:
			for _, s := range f.GetMetric() {
				for i := 0; i+1 < len(labels); i += 2 {
					found := false
					for _, l := range s.GetLabel() {
						found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
					}
					if !found {
						continue next
					}
				}
				return s.GetCounter().GetValue()
			}
		}
		return -1
	}
	snap(1000, 5) // baseline
	snap(3000, 7)
	snap(500, 1) // restart: baseline only
	snap(700, 4)
	if got := value("ecntune_target_tx_bytes_total", "target", "leaf0"); got != 2*2000+2*200 {
		t.Errorf("tx bytes %g, want %d", got, 2*2000+2*200)
	}
	if got := value("ecntune_target_marked_bytes_total", "target", "leaf0"); got != 200+20 {
		t.Errorf("marked bytes %g, want 220", got)
	}
	if got := value("ecntune_target_pfc_pause_frames_total", "target", "leaf0", "direction", "tx"); got != 2*2+2*3 {
		t.Errorf("pause frames sent %g, want 10", got)
	}
	if got := value("ecntune_target_pfc_pause_frames_total", "target", "leaf0", "direction", "rx"); got != 4+6 {
		t.Errorf("pause frames received %g, want 10", got)
	}
}

// The per-target ranges of headroom and alpha cover only the queues that
// report them, and a target none of whose queues does has no series (nor
// keeps an old one).
func TestTargetSettingRanges(t *testing.T) {
	m := NewInstruments()
	kC := env.QueueKey{Target: "leaf0", Port: "Ethernet2", Queue: 3}
	k1 := env.QueueKey{Target: "leaf1", Port: "Ethernet0", Queue: 3}
	withAlpha := func(s env.Setting, a float64) env.Setting { s.Alpha = a; return s }
	noHeadroom := cur
	noHeadroom.HeadroomBytes = 0
	bigHeadroom := withAlpha(cur, 0.5)
	bigHeadroom.HeadroomBytes = 150_000
	obs := func(s ...env.Setting) []env.Observation {
		var out []env.Observation
		for i, k := range []env.QueueKey{kA, kB, kC, k1}[:len(s)] {
			out = append(out, ob(k, s[i]))
		}
		return out
	}
	gauges := func() map[string]float64 {
		fams, err := m.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, f := range fams {
			if !strings.HasPrefix(f.GetName(), "ecntune_target_setting_") {
				continue
			}
			for _, s := range f.GetMetric() {
				l := map[string]string{}
				for _, p := range s.GetLabel() {
					l[p.GetName()] = p.GetValue()
				}
				out[strings.TrimPrefix(f.GetName(), "ecntune_target_setting_")+","+l["target"]+","+l["stat"]] = s.GetGauge().GetValue()
			}
		}
		return out
	}
	check := func(when string, want map[string]float64, absent ...string) {
		t.Helper()
		got := gauges()
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("%s: %s = %v (present %v), want %v", when, k, g, ok, v)
			}
		}
		for _, k := range absent {
			if g, ok := got[k]; ok {
				t.Errorf("%s: %s = %v, want no series", when, k, g)
			}
		}
	}

	// leaf0: alpha 1/8 and 1/2 and one unknown; leaf1: alpha unknown.
	m.Interval(obs(curA, bigHeadroom, noHeadroom, cur), nil, false)
	check("first interval", map[string]float64{
		"alpha,leaf0,min": 0.125, "alpha,leaf0,max": 0.5,
		"headroom_bytes,leaf0,min": 100_000, "headroom_bytes,leaf0,max": 150_000,
		"headroom_bytes,leaf1,min": 100_000, "headroom_bytes,leaf1,max": 100_000,
		"kmin_bytes,leaf0,min": 400_000, "kmin_bytes,leaf1,max": 400_000,
	}, "alpha,leaf1,min", "alpha,leaf1,max")

	// leaf0's switch stops reporting alpha and headroom: their ranges go.
	m.Interval(obs(noHeadroom, noHeadroom), nil, false)
	check("alpha no longer known", map[string]float64{"kmax_bytes,leaf0,max": 1_600_000},
		"alpha,leaf0,min", "alpha,leaf0,max", "headroom_bytes,leaf0,min", "headroom_bytes,leaf0,max")
}

// The queues and settings these tests share.
const sec = int64(time.Second)

var (
	kA   = env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	kB   = env.QueueKey{Target: "leaf0", Port: "Ethernet1", Queue: 3}
	kC   = env.QueueKey{Target: "leaf1", Port: "Ethernet0", Queue: 3}
	cur  = env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 100_000}
	curA = env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 100_000, Alpha: 0.125}
)

func ob(k env.QueueKey, s env.Setting) env.Observation {
	return env.Observation{Key: k, RateBps: 100e9, Current: s, Valid: true, Metrics: env.Metrics{IntervalNs: sec, Util: 0.5}}
}

// TestHistogramBoundsPrintAsWritten: every histogram's bucket bounds are
// the shortest decimals they stand for (le="0.3", not
// le="0.30000000000000004"), as /metrics prints them.
func TestHistogramBoundsPrintAsWritten(t *testing.T) {
	m := NewInstruments()
	m.confHist.Observe(0.5)
	m.SetLatency.Observe(0.01)
	m.DecisionLatency.Observe(0.001)
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range fams {
		for _, mm := range f.GetMetric() {
			for _, b := range mm.GetHistogram().GetBucket() {
				n++
				le := strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)
				if short := strconv.FormatFloat(b.GetUpperBound(), 'g', 10, 64); len(le) > len(short) {
					t.Errorf("%s: bucket le=%q, want %q", f.GetName(), le, short)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no histogram buckets gathered")
	}
}

// A switch that measures no queue depth (Arista EOS) has no depth series,
// per queue or per target, rather than 0 B that reads as empty queues, and
// its most congested queues are ranked by marks then utilisation (they
// were the first by name).
func TestNoDepthTelemetryNoDepthSeries(t *testing.T) {
	m := NewInstruments()
	m.SetPerQueue(2)
	var obs []env.Observation
	for p, mark := range []float64{0, 0.001, 0.02, 0.005} {
		o := ob(env.QueueKey{Target: "eos", Port: fmt.Sprintf("Ethernet%d", p), Queue: 3}, cur)
		o.Missing = env.TelAvgQueue | env.TelMaxQueue | env.TelCurQueue
		o.Metrics.MarkFrac = mark
		obs = append(obs, o)
	}
	m.Interval(obs, nil, false)
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, f := range fams {
		n := f.GetName()
		if strings.Contains(n, "depth") && len(f.GetMetric()) > 0 {
			t.Errorf("%s has %d series for a switch that measures no depth", n, len(f.GetMetric()))
		}
		if n == "ecntune_queue_mark_fraction" {
			for _, s := range f.GetMetric() {
				for _, l := range s.GetLabel() {
					if l.GetName() == "port" {
						shown[l.GetValue()] = true
					}
				}
			}
		}
	}
	if len(shown) != 2 || !shown["Ethernet2"] || !shown["Ethernet3"] {
		t.Errorf("queues shown %v, want the two that mark most (Ethernet2, Ethernet3)", shown)
	}
}
