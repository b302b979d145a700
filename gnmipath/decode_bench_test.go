package gnmipath

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/internal/cputime"
)

// benchSamples encodes two consecutive samples of a 32-port switch (the
// counters differ, so every value changes) plus its initial configuration.
func benchSamples(d Dialect, enc gnmi.Encoding) (cfg []*gnmi.Notification, samples [2][]*gnmi.Notification, values int) {
	snap := testSwitch(32)
	cfg = Notifications(d, snap.Target, "", ConfigItems(d, InitialConfig(d, &snap, 3072, testAlpha)), 1, enc)
	e := NewEncoder(d, &snap)
	for i := range samples {
		for j := range snap.Queues {
			c := &snap.Queues[j]
			c.TxBytes += 6_000_000
			c.TxPkts += 6_000
			c.MarkedPkts += 300
			c.AvgQueueBytes += 1000
			c.PauseRx++
		}
		snap.TimeNs += 1_000_000
		samples[i] = Notifications(d, snap.Target, "", e.Encode(nil, &snap), testEpoch+snap.TimeNs, enc)
	}
	for _, n := range samples[0] {
		values += len(n.Update)
	}
	return cfg, samples, values
}

// BenchmarkDecode applies one sample of a 32-port switch with two lossless
// queues (64 queues, about 1,000 values) and takes its Snapshot; one op is
// one sample interval of one switch. ns/value and allocs/value cover
// Apply and Snapshot together; ms/1000q-interval is the CPU a decoder
// spends per 1,000 queues per sample interval.
func BenchmarkDecode(b *testing.B) {
	for _, d := range []Dialect{OpenConfig, Sonic} {
		for _, enc := range []gnmi.Encoding{gnmi.Encoding_JSON_IETF, gnmi.Encoding_JSON, gnmi.Encoding_PROTO} {
			b.Run(fmt.Sprintf("%s/%s", d, enc), func(b *testing.B) {
				cfg, samples, values := benchSamples(d, enc)
				dec := NewDecoder(Target{Name: "leaf0", Dialect: d}, lossless...)
				// configuration, then both samples once: the paths are known
				for _, n := range append(append(cfg, samples[0]...), samples[1]...) {
					if err := dec.Apply(n); err != nil {
						b.Fatal(err)
					}
				}
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				b.ResetTimer()
				queues := 0
				for i := 0; i < b.N; i++ {
					for _, n := range samples[i%2] {
						if err := dec.Apply(n); err != nil {
							b.Fatal(err)
						}
					}
					s, inc := dec.Snapshot()
					if len(inc) > 0 {
						b.Fatal(inc)
					}
					queues = len(s.Queues)
				}
				b.StopTimer()
				runtime.ReadMemStats(&ms1)
				if queues != 64 {
					b.Fatalf("%d queues, want 64", queues)
				}
				perVal := float64(b.N) * float64(values)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perVal, "ns/value")
				b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/perVal, "allocs/value")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(queues)*1000/1e6, "ms/1000q-interval")
			})
		}
	}
}

// fresh deep-copies a notification into newly allocated messages and
// strings, as unmarshalling it from the wire would make them.
func fresh(n *gnmi.Notification) *gnmi.Notification {
	path := func(p *gnmi.Path) *gnmi.Path {
		if p == nil {
			return nil
		}
		c := &gnmi.Path{Target: strings.Clone(p.Target), Origin: strings.Clone(p.Origin), Elem: make([]*gnmi.PathElem, len(p.Elem))}
		for i, e := range p.Elem {
			ce := &gnmi.PathElem{Name: strings.Clone(e.Name)}
			if len(e.Key) > 0 {
				ce.Key = make(map[string]string, len(e.Key))
				for k, v := range e.Key {
					ce.Key[strings.Clone(k)] = strings.Clone(v)
				}
			}
			c.Elem[i] = ce
		}
		return c
	}
	c := &gnmi.Notification{Timestamp: n.Timestamp, Prefix: path(n.Prefix), Update: make([]*gnmi.Update, len(n.Update))}
	for i, u := range n.Update {
		var tv *gnmi.TypedValue
		switch v := u.Val.GetValue().(type) {
		case *gnmi.TypedValue_JsonIetfVal:
			tv = &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: append([]byte(nil), v.JsonIetfVal...)}}
		case *gnmi.TypedValue_JsonVal:
			tv = &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: append([]byte(nil), v.JsonVal...)}}
		case *gnmi.TypedValue_StringVal:
			tv = &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: strings.Clone(v.StringVal)}}
		case *gnmi.TypedValue_UintVal:
			tv = &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: v.UintVal}}
		default:
			panic(fmt.Sprintf("fresh: value type %T", v))
		}
		c.Update[i] = &gnmi.Update{Path: path(u.Path), Val: tv}
	}
	return c
}

// BenchmarkDecodeFabric decodes one sample interval of a fabric of 100
// switches × 32 ports × 2 lossless queues (6,400 queues) and takes every
// switch's Snapshot; one op is one interval. Each interval's notifications
// are deep-copied outside the timer, so the decoder reads freshly made
// messages as a gNMI client's would be, and the decoders' state for the
// whole fabric does not fit in a CPU cache.
// cpu-ms/1000q-interval is process CPU time (GC included) in the timed
// part.
func BenchmarkDecodeFabric(b *testing.B) {
	for _, c := range []struct {
		d   Dialect
		enc gnmi.Encoding
	}{{OpenConfig, gnmi.Encoding_JSON_IETF}, {OpenConfig, gnmi.Encoding_PROTO}, {Sonic, gnmi.Encoding_JSON_IETF}} {
		b.Run(fmt.Sprintf("%s/%s", c.d, c.enc), func(b *testing.B) {
			const switches = 100
			snap := testSwitch(32)
			e := NewEncoder(c.d, &snap)
			decs := make([]*Decoder, switches)
			cfg := Notifications(c.d, snap.Target, "", ConfigItems(c.d, InitialConfig(c.d, &snap, 3072, testAlpha)), 1, c.enc)
			for s := range decs {
				decs[s] = NewDecoder(Target{Name: snap.Target, Dialect: c.d}, lossless...)
				for _, n := range cfg {
					if err := decs[s].Apply(n); err != nil {
						b.Fatal(err)
					}
				}
			}
			// next returns each switch's next sample.
			next := func() ([][]*gnmi.Notification, int) {
				out := make([][]*gnmi.Notification, switches)
				values := 0
				for s := range out {
					for j := range snap.Queues {
						snap.Queues[j].TxBytes += uint64(1_000_000 + s*1000)
						snap.Queues[j].TxPkts += uint64(1000 + s)
					}
					snap.TimeNs += 1_000_000
					for _, n := range Notifications(c.d, snap.Target, "", e.Encode(nil, &snap), testEpoch+snap.TimeNs, c.enc) {
						out[s] = append(out[s], fresh(n))
						values += len(n.Update)
					}
				}
				return out, values
			}
			interval := func(ns [][]*gnmi.Notification) int {
				queues := 0
				for s, list := range ns {
					for _, n := range list {
						if err := decs[s].Apply(n); err != nil {
							b.Fatal(err)
						}
					}
					snap, inc := decs[s].Snapshot()
					if len(inc) > 0 {
						b.Fatal(inc)
					}
					queues += len(snap.Queues)
				}
				return queues
			}
			ns, _ := next()
			interval(ns) // paths seen once
			var cpu time.Duration
			values, queues := 0, 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ns, v := next()
				values += v
				runtime.GC()
				b.StartTimer()
				c0 := cputime.Process()
				queues = interval(ns)
				cpu += cputime.Process() - c0
			}
			b.StopTimer()
			if queues != switches*64 {
				b.Fatalf("%d queues, want %d", queues, switches*64)
			}
			per1000 := func(d time.Duration) float64 {
				return float64(d.Nanoseconds()) / float64(b.N) / float64(queues) * 1000 / 1e6
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(values), "ns/value")
			b.ReportMetric(per1000(b.Elapsed()), "ms/1000q-interval")
			if cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(values), "cpu-ns/value")
				b.ReportMetric(per1000(cpu), "cpu-ms/1000q-interval")
			}
		})
	}
}
