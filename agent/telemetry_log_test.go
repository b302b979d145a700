package agent

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
)

// A target sending garbage is logged once as failing, again once a minute
// with the count, and once when it recovers; every error is counted.
// Before: one warning per error, 150 a second.
func TestTelemetryErrorsLoggedPerStateChange(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	var buf bytes.Buffer
	r.a.log = slog.New(slog.NewTextHandler(&buf, nil))
	bad := errors.New("leaf0 /interfaces/...: value -3 is negative")
	for i := 0; i < 150; i++ {
		r.a.targetEvent("leaf0", bad)
	}
	if n := strings.Count(buf.String(), "telemetry failing"); n != 1 || strings.Contains(buf.String(), "still failing") {
		t.Fatalf("150 errors in a second logged as:\n%s", buf.String())
	}
	r.clk.Add(61 * time.Second)
	r.a.targetEvent("leaf0", bad)
	if !strings.Contains(buf.String(), "telemetry still failing") || !strings.Contains(buf.String(), "errors_since_last_log=150") {
		t.Fatalf("a minute later:\n%s", buf.String())
	}
	r.a.Ingest(r.sw.snapshot(sec))
	r.a.targetEvent("leaf0", bad)
	if !strings.Contains(buf.String(), "telemetry good again") || strings.Count(buf.String(), "telemetry failing") != 2 {
		t.Fatalf("recovery and a new failure:\n%s", buf.String())
	}
	if n := testutilCounter(t, r.a, "ecntune_agent_telemetry_errors_total", "leaf0"); n != 152 {
		t.Fatalf("%g errors counted, want 152", n)
	}
}
