package core

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// A queue whose switch exports no congestion signal at all holds, and the
// reason says why; one with any signal keeps the policy's decision.
func TestHoldUndecidable(t *testing.T) {
	cur := env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.1}
	want := env.Setting{KminBytes: 200_000, KmaxBytes: 800_000, Pmax: 0.2}
	blind := env.TelMarkedPkts | env.TelMarkedBytes | env.TelMaxQueue | env.TelAvgQueue | env.TelCurQueue | env.TelPFCFrames
	obs := []env.Observation{{Current: cur, Missing: blind}, {Current: cur, Missing: env.DeviceTelemetry["arista-eos"]}}
	decs := []policy.Decision{{Setting: want, Action: 5, Confidence: 0.9, Reason: "policy"}, {Setting: want, Action: 5, Confidence: 0.9, Reason: "policy"}}
	holdUndecidable(obs, decs)
	if decs[0].Setting != cur || decs[0].Action != env.ActionHold || !strings.Contains(decs[0].Reason, "too little telemetry") {
		t.Fatalf("blind queue: %+v", decs[0])
	}
	if decs[1].Setting != want || decs[1].Reason != "policy" {
		t.Fatalf("arista queue (marks and PFC) overridden: %+v", decs[1])
	}
}
