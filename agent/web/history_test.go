package web

import (
	"slices"
	"testing"

	"github.com/ecntune/ecntune/env"
)

func TestHistoryRingAndSettings(t *testing.T) {
	h := NewHistory(3)
	k := env.QueueKey{Target: "s", Port: "Ethernet4", Queue: 3}
	s1 := env.Setting{KminBytes: 1, KmaxBytes: 2, Pmax: 0.1}
	s2 := env.Setting{KminBytes: 3, KmaxBytes: 4, Pmax: 0.1}
	obs := func(s env.Setting, util float64) []env.Observation {
		return []env.Observation{{Key: k, RateBps: 100e9, Current: s, Valid: true, Metrics: env.Metrics{Util: util}}}
	}
	h.Record(1, obs(s1, 0.1), nil)
	h.Record(2, obs(s1, 0.2), nil)
	h.Record(3, obs(s2, 0.3), nil)
	h.Record(4, obs(s2, 0.4), nil)
	h.Record(5, []env.Observation{{Key: k, Current: s2}}, nil) // not valid: no sample
	qs, ok := h.series(k)
	if !ok || !slices.Equal(qs.TimesNs, []int64{3, 4, 5}) {
		t.Fatalf("series %+v", qs)
	}
	if u := qs.Values[MetricUtil]; *u[0] != 30 || *u[1] != 40 || u[2] != nil {
		t.Errorf("util %v", u)
	}
	// s1 ended before the window: only s2, from time 3, is kept.
	if len(qs.Settings) != 1 || qs.Settings[0] != (settingAt{3, s2}) {
		t.Errorf("settings %+v", qs.Settings)
	}
	// Unheard for a whole window: forgotten.
	other := env.QueueKey{Target: "s", Port: "Ethernet12", Queue: 3}
	for i := int64(6); i < 10; i++ {
		h.Record(i, []env.Observation{{Key: other, Valid: true, RateBps: 1e9}}, nil)
	}
	if _, ok := h.series(k); ok {
		t.Error("a queue silent for a whole window is still kept")
	}
}
