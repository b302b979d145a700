package agent

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simswitch"
)

func sonicSim(t *testing.T, model string) (*simswitch.Server, string) {
	cfg := e2eSim(poorECN)
	return startSim(t, cfg, "", func(c *simswitch.Config) {
		c.Device, c.SonicNativeWrite, c.SonicBufferModel = "sonic", true, model
	})
}

// The agent against simswitch imitating sonic-gnmi, inferring the device:
// it decides every queue from the virtual paths (aliases mapped back to
// names), applies field by field, reads back and rolls back; under the
// dynamic buffer model ECN is tuned and headroom is not.
func TestE2ERealSonic(t *testing.T) {
	for _, model := range []string{"static", "dynamic"} {
		t.Run(model, func(t *testing.T) {
			s, addr := sonicSim(t, model)
			e := runE2ESample(t, config.ModeClosedLoop, mustStatic(t, "hpcc"), []config.Target{target0(addr, config.DialectSONiC)}, e2eGuard(), time.Second)
			n := closedLoopOnDevice(t, e, s, 40*time.Second)
			ti := e.a.Targets()
			if ti[0].Device != "sonic" {
				t.Fatalf("device %+v", ti[0])
			}
			// sonic-gnmi serves no lossless floor; under the static buffer
			// model the decoder computes it from the switch's CABLE_LENGTH
			// and port mtu, so the headroom telemetry is complete there.
			// Under the dynamic model no profile shows a headroom at all.
			want := env.DeviceTelemetry["sonic"]
			if model == "static" {
				want &^= env.TelHeadroom
			}
			if strings.Join(ti[0].Missing, ", ") != want.String() {
				t.Fatalf("missing %v, want %s", ti[0].Missing, want)
			}
			t.Logf("sonic (%s buffer model): %d audit entries, all applied and read back", model, n)
		})
	}
}

// A SONiC switch with no CABLE_LENGTH table, whose sonic-gnmi refuses a
// subscription to it (NotFound, as older images do for a table with no
// keys): the agent loses the floor estimate alone, says so once, and
// still tunes every queue; the headroom telemetry is reported missing.
func TestE2ERealSonicNoCableLength(t *testing.T) {
	cfg := e2eSim(poorECN)
	s, addr := startSim(t, cfg, "", func(c *simswitch.Config) {
		c.Device, c.SonicNativeWrite, c.SonicNoCableLength = "sonic", true, true
	})
	var logs syncBuffer
	e := runE2EFull(t, config.ModeClosedLoop, mustStatic(t, "hpcc"), []config.Target{target0(addr, config.DialectSONiC)}, e2eGuard(),
		slog.New(slog.NewTextHandler(&logs, nil)), time.Second)
	n := closedLoopOnDevice(t, e, s, 40*time.Second)
	ti := e.a.Targets()
	if want := env.DeviceTelemetry["sonic"]; strings.Join(ti[0].Missing, ", ") != want.String() {
		t.Fatalf("missing %v, want %s (the headroom floor unknown without cable lengths)", ti[0].Missing, want)
	}
	if strings.Join(ti[0].Refused, ",") != "cable-length" {
		t.Fatalf("refused groups %v, want the cable-length one alone\n%s", ti[0].Refused, logs.String())
	}
	t.Logf("sonic without CABLE_LENGTH: %d audit entries, all applied and read back", n)
}

// Shadow mode against the sonic-gnmi imitation (one Subscribe per
// connection, 10 queues a port): a measured recommendation for every
// controlled queue within three intervals, naming what sonic lacks, no Set
// sent, no stream closed and nothing malformed on the way; every Subscribe
// on a connection of its own.
func TestE2ERealSonicShadow(t *testing.T) {
	s, addr := sonicSim(t, "static")
	var logs syncBuffer
	e := runE2EFull(t, config.ModeShadow, mustStatic(t, "hpcc"), []config.Target{target0(addr, config.DialectSONiC)}, e2eGuard(),
		slog.New(slog.NewTextHandler(&logs, nil)), time.Second)
	var recs []core.Recommendation
	waitFor(t, 30*time.Second, "a measured recommendation for every queue", func() bool {
		recs, _ = e.j.Recommendations("sw0", 0, 0)
		return len(queuesOf(recs)) == 4
	})
	waitFor(t, 10*time.Second, "the connections counted", func() bool { return e.a.Targets()[0].Connections > 0 })
	ti := e.a.Targets()[0]
	e.stop(t)
	// One for Get/Set, one per group (counters, config, cable-length) and
	// one per profile subscription.
	if ti.Connections < 5 {
		t.Errorf("%d connections to a switch that serves one Subscribe per connection", ti.Connections)
	}
	for _, bad := range []string{"malformed telemetry", "resubscribing", "queue: disposed"} {
		if strings.Contains(logs.String(), bad) {
			t.Errorf("the log has %q:\n%s", bad, logs.String())
		}
	}
	seen := map[int64]bool{}
	for _, r := range recs {
		seen[r.TimeNs] = true
	}
	if len(seen) > 3 {
		t.Fatalf("every queue decided only after %d intervals", len(seen))
	}
	want := "without " + (env.DeviceTelemetry["sonic"] &^ env.TelHeadroom).String() // the floor comes from CABLE_LENGTH
	if r := recs[len(recs)-1]; !strings.Contains(r.Reason, want) {
		t.Fatalf("reason %q lacks %q", r.Reason, want)
	}
	for p := 0; p < 4; p++ {
		if got := simECN(t, s, "sw0", p, 3); got != poorECN {
			t.Fatalf("shadow mode changed port %d: %+v", p, got)
		}
	}
	t.Logf("sonic shadow: %d recommendations over %d intervals", len(recs), len(seen))
}
