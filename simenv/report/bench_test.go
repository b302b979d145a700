package report

import (
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ecntune/ecntune/simenv"
)

func benchFlows(n int) []simenv.FlowRecord {
	r := rand.New(rand.NewPCG(1, 2))
	flows := make([]simenv.FlowRecord, n)
	for i := range flows {
		flows[i] = flow(i, int64(r.ExpFloat64()*1e6)+1, 1+r.ExpFloat64()*2)
	}
	return flows
}

// BenchmarkSummarize100k summarises a run of 100,000 flows.
func BenchmarkSummarize100k(b *testing.B) {
	flows := benchFlows(100_000)
	st := simenv.Stats{Now: simenv.Second, Hosts: 32, HostTxBusy: simenv.Second}
	for b.Loop() {
		Summarize(flows, st, time.Second)
	}
}

// BenchmarkWriteFCT100k writes 100,000 flows in the fct format.
func BenchmarkWriteFCT100k(b *testing.B) {
	flows := benchFlows(100_000)
	for b.Loop() {
		if err := WriteFCT(io.Discard, flows); err != nil {
			b.Fatal(err)
		}
	}
}
