package env

import "testing"

func TestTelemetryNames(t *testing.T) {
	if got := (TelPFCFrames | TelPausedTime).String(); got != "PFC frames, PFC paused time" {
		t.Fatalf("String = %q", got)
	}
	if len(AllTelemetry.Names()) != numTelemetry {
		t.Fatalf("AllTelemetry has %d names, want %d", len(AllTelemetry.Names()), numTelemetry)
	}
	if !AllTelemetry.Has(TelPortSpeed|TelMarkedPkts) || Telemetry(0).Has(TelXoff) {
		t.Fatal("Has is wrong")
	}
	if Telemetry(0).String() != "" {
		t.Fatal("empty set must render empty")
	}
}
