// The benchmarks report process CPU time (internal/cputime) besides wall
// time.

package agent

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/internal/cputime"
	"github.com/ecntune/ecntune/policy"
)

// benchFabric is a synthetic fabric of switches with growing counters,
// encoded as a switch would send it.
type benchFabric struct {
	snaps []env.Snapshot
	encs  []*gnmipath.Encoder
	decs  []*gnmipath.Decoder
	items []gnmipath.Item
	t     int64 // ns
	enc   gnmi.Encoding
}

var benchQueues = []int{3, 4}

// benchEpoch stamps the synthetic notifications (any Unix time will do).
const benchEpoch int64 = 1_767_225_600_000_000_000

func newBenchFabric(switches, ports int, enc gnmi.Encoding) *benchFabric {
	f := &benchFabric{enc: enc}
	for s := 0; s < switches; s++ {
		name := fmt.Sprintf("sw%d", s)
		snap := env.Snapshot{Target: name}
		for p := 0; p < ports; p++ {
			for _, q := range benchQueues {
				snap.Queues = append(snap.Queues, env.QueueSample{Key: env.QueueKey{Target: name, Port: fmt.Sprintf("Ethernet%d", p), Queue: q},
					RateBps: 100e9, BufferBytes: 32_000_000, XoffBytes: 4_000_000, MinHeadroomBytes: 60_000,
					Setting: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 100_000}})
			}
		}
		d := gnmipath.NewDecoder(gnmipath.Target{Name: name, Dialect: gnmipath.OpenConfig}, benchQueues...)
		cfg := gnmipath.InitialConfig(gnmipath.OpenConfig, &snap, 0, nil)
		for _, n := range gnmipath.Notifications(gnmipath.OpenConfig, name, "", gnmipath.ConfigItems(gnmipath.OpenConfig, cfg), 0, gnmi.Encoding_JSON_IETF) {
			if err := d.Apply(n); err != nil {
				panic(err)
			}
		}
		f.snaps = append(f.snaps, snap)
		f.encs = append(f.encs, gnmipath.NewEncoder(gnmipath.OpenConfig, &snap))
		f.decs = append(f.decs, d)
	}
	return f
}

// next advances every counter by one millisecond of traffic at about half
// the line rate and returns each switch's notifications.
func (f *benchFabric) next() [][]*gnmi.Notification {
	f.t += 1_000_000
	out := make([][]*gnmi.Notification, len(f.snaps))
	for s := range f.snaps {
		snap := &f.snaps[s]
		snap.TimeNs = f.t
		for i := range snap.Queues {
			c := &snap.Queues[i]
			p, q := i/len(benchQueues), c.Key.Queue
			bytes := uint64(6_000_000 + (s*31+p*7+q)%1000*1000)
			c.TxBytes += bytes
			c.TxPkts += bytes / 1000
			c.MarkedBytes += bytes / 20
			c.MarkedPkts += bytes / 20000
			c.MaxQueueBytes = int64(200_000 + p*1000)
			c.AvgQueueBytes = float64(80_000 + q*1000)
			c.PauseRx += uint64(p % 3)
			c.PausedNs += uint64(p%3) * 10_000
		}
		f.items = f.encs[s].Encode(f.items[:0], snap)
		out[s] = gnmipath.Notifications(gnmipath.OpenConfig, snap.Target, "", f.items, benchEpoch+f.t, f.enc)
	}
	return out
}

// BenchmarkLoop runs the agent's pure loop (decode → observe → decide →
// guard) over 100 switches × 32 ports × 2 lossless queues = 6,400 queues;
// one op is one control interval over the whole fabric. Encoding the
// notifications (the switch's work) is outside the timer. cpu-ns/1000queues
// and decode-cpu-ns/1000q are process CPU time (GC included), which other
// load on the machine does not inflate as it does wall time.
func BenchmarkLoop(b *testing.B) {
	for _, pc := range []struct {
		name string
		enc  gnmi.Encoding
		mk   func() policy.Policy
	}{
		{"static/json_ietf", gnmi.Encoding_JSON_IETF, func() policy.Policy { p, _ := policy.NewStatic("hpcc"); return p }},
		{"static/proto", gnmi.Encoding_PROTO, func() policy.Policy { p, _ := policy.NewStatic("hpcc"); return p }},
		{"adaptive/proto", gnmi.Encoding_PROTO, func() policy.Policy { return policy.NewAdaptive(policy.AdaptiveConfig{}) }},
		{"builtin/proto", gnmi.Encoding_PROTO, func() policy.Policy {
			p, err := policy.Lookup("builtin")
			if err != nil {
				panic(err)
			}
			return p
		}},
	} {
		b.Run(pc.name, func(b *testing.B) {
			const switches, ports = 100, 32
			f := newBenchFabric(switches, ports, pc.enc)
			obsr := env.NewObserver(env.ObserverConfig{})
			pol := pc.mk()
			gc := core.DefaultGuardConfig(time.Second)
			w := env.DefaultRewardWeights()
			gc.Reward = func(m env.Metrics) float64 { return env.Reward(m, w) }
			g, err := core.NewGuard(gc)
			if err != nil {
				b.Fatal(err)
			}
			// Two warm-up intervals so that observations are valid.
			now := int64(0)
			var all []env.Observation
			var cpuDec, cpuAll time.Duration
			interval := func(ns [][]*gnmi.Notification) (tDecode, tObserve, tDecide, tGuard time.Duration, queues int) {
				c0 := cputime.Process()
				t0 := time.Now()
				snaps := make([]env.Snapshot, len(ns))
				for s, list := range ns {
					for _, n := range list {
						if err := f.decs[s].Apply(n); err != nil {
							b.Fatal(err)
						}
					}
					snaps[s], _ = f.decs[s].Snapshot()
				}
				t1 := time.Now()
				c1 := cputime.Process()
				all = all[:0]
				for _, sn := range snaps {
					all = append(all, obsr.Observe(sn)...)
				}
				t2 := time.Now()
				decs := pol.Decide(all)
				t3 := time.Now()
				now += int64(time.Second)
				plan, err := g.Step(core.StepInput{NowNs: now, Observations: all, Decisions: decs})
				if err != nil {
					b.Fatal(err)
				}
				for _, c := range plan.Changes {
					g.Result(c, core.Applied, c.New, now)
				}
				t4 := time.Now()
				c4 := cputime.Process()
				cpuDec += c1 - c0
				cpuAll += c4 - c0
				return t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3), len(all)
			}
			interval(f.next())
			interval(f.next())
			cpuDec, cpuAll = 0, 0
			var dDec, dObs, dPol, dGuard time.Duration
			queues := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ns := f.next()
				b.StartTimer()
				a, o, p, gd, q := interval(ns)
				dDec += a
				dObs += o
				dPol += p
				dGuard += gd
				queues = q
			}
			b.StopTimer()
			if queues != switches*ports*len(benchQueues) {
				b.Fatalf("%d queues observed, want %d", queues, switches*ports*len(benchQueues))
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) / float64(queues) * 1000 }
			b.ReportMetric(per(dDec+dObs+dPol+dGuard), "ns/1000queues")
			b.ReportMetric(per(dDec), "decode-ns/1000q")
			b.ReportMetric(per(dObs), "observe-ns/1000q")
			b.ReportMetric(per(dPol), "decide-ns/1000q")
			b.ReportMetric(per(dGuard), "guard-ns/1000q")
			b.ReportMetric(per(cpuAll), "cpu-ns/1000queues")
			b.ReportMetric(per(cpuDec), "decode-cpu-ns/1000q")
			// Decision latency: from the last snapshot decoded to the
			// guard's plan, for the whole fabric.
			b.ReportMetric(float64((dObs+dPol+dGuard).Microseconds())/float64(b.N)/1000, "decision-ms")
		})
	}
}

// BenchmarkShadowStore stores one interval of shadow recommendations for
// 6,400 queues in the db (one transaction).
func BenchmarkShadowStore(b *testing.B) {
	j, err := journal.OpenJournal(b.TempDir()+"/a.db", time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	recs := make([]core.Recommendation, 6400)
	for i := range recs {
		recs[i] = core.Recommendation{Key: env.QueueKey{Target: fmt.Sprintf("sw%d", i/64), Port: fmt.Sprintf("Ethernet%d", i%64/2), Queue: 3 + i%2},
			Policy: "adaptive", Current: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2},
			Recommended: env.Setting{KminBytes: 538_500, KmaxBytes: 2_154_000, Pmax: 0.3}, Confidence: 0.8,
			Reason: "probing kmax 1.6MB→2.154MB", Valid: true, Metrics: env.Metrics{IntervalNs: 1e9, Util: 0.4, MarkFrac: 0.01}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range recs {
			recs[k].TimeNs = int64(i+1) * 1e9
		}
		if err := j.PutRecommendations(recs); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st, _ := os.Stat(j.Path())
	b.ReportMetric(float64(st.Size())/float64(b.N)/6400, "db-bytes/rec")
}

// BenchmarkGuardStep is the guard alone over 6,400 queues whose policy
// asks for a change every interval (the worst case: every rule runs).
func BenchmarkGuardStep(b *testing.B) {
	const n = 6400
	obs := make([]env.Observation, n)
	decs := make([]policy.Decision, n)
	for i := range obs {
		k := env.QueueKey{Target: fmt.Sprintf("sw%d", i/64), Port: fmt.Sprintf("Ethernet%d", i%64/2), Queue: 3 + i%2}
		obs[i] = env.Observation{Key: k, RateBps: 100e9, Valid: true, XoffBytes: 4_000_000, MinHeadroomBytes: 60_000,
			Current: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 100_000},
			Metrics: env.Metrics{IntervalNs: 1e9, Util: 0.5, PauseRxFrac: 0.01}}
		decs[i] = policy.Decision{Key: k, Setting: env.Setting{KminBytes: 500_000, KmaxBytes: 5_000_000, Pmax: 0.3}, Confidence: 0.9}
	}
	gc := core.DefaultGuardConfig(time.Second)
	gc.MinHold = 0
	g, err := core.NewGuard(gc)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now := int64(i+1) * 1e9
		p, err := g.Step(core.StepInput{NowNs: now, Observations: obs, Decisions: decs})
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range p.Changes {
			g.Discard(c)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n*1000, "ns/1000queues")
}
