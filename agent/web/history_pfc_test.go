package web

import (
	"math"
	"testing"

	"github.com/ecntune/ecntune/env"
)

// A switch's host-facing port is never held paused (hosts send no PFC);
// its PFC is the PAUSE frames it sends to the host. The dashboard's PFC
// metric shows that share of the interval, not "no PFC pauses".
func TestHistoryPFCShowsPausesTheSwitchSends(t *testing.T) {
	h := NewHistory(3)
	k := env.QueueKey{Target: "s", Port: "Ethernet4", Queue: 3}
	h.Record(1, []env.Observation{{Key: k, RateBps: 100e9, Valid: true,
		Metrics: env.Metrics{Util: 0.5, PauseTxFrac: 0.3}}}, nil)
	h.Record(2, []env.Observation{{Key: k, RateBps: 100e9, Valid: true,
		Metrics: env.Metrics{Util: 0.5, PauseRxFrac: 0.2, PauseTxFrac: 0.1}}}, nil)
	qs, ok := h.series(k)
	if !ok {
		t.Fatal("no series")
	}
	p := qs.Values[MetricPFC]
	if len(p) != 2 || p[0] == nil || p[1] == nil {
		t.Fatalf("pfc %v", p)
	}
	if math.Abs(*p[0]-30) > 1e-4 || math.Abs(*p[1]-20) > 1e-4 {
		t.Errorf("pfc %g%%, %g%%: want 30%% (pausing the peer) and 20%% (held paused, the larger)", *p[0], *p[1])
	}
}
