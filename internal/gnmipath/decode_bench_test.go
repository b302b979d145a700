package gnmipath

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/simenv"
)

// benchSamples encodes two consecutive samples of a 32-port switch (the
// counters differ, so every value changes) plus its initial configuration.
func benchSamples(d Dialect, enc gnmi.Encoding) (cfg []*gnmi.Notification, samples [2][]*gnmi.Notification, values int) {
	info, tel := testSwitch(32)
	cfg = Notifications(d, info.Name, "", ConfigItems(d, InitialConfig(d, info, &tel, lossless, 3072)), 1, enc)
	e := NewEncoder(d, info, lossless)
	for i := range samples {
		for p := range tel.Ports {
			for _, q := range lossless {
				c := &tel.Ports[p].Queues[q]
				c.TxBytes += 6_000_000
				c.TxPkts += 6_000
				c.MarkedPkts += 300
				c.AvgBytes += 1000
				tel.Ports[p].PFC[q].PauseRx++
			}
		}
		tel.Time += simenv.Millisecond
		samples[i] = Notifications(d, info.Name, "", e.Encode(nil, &tel), SimTimestamp(tel.Time), enc)
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
				for _, n := range cfg {
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
