package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
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
	hpcc := simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	for _, model := range []string{"static", "dynamic"} {
		t.Run(model, func(t *testing.T) {
			s, addr := sonicSim(t, model)
			tc := target0(addr, DialectSONiC)
			e := runE2ESample(t, ModeClosedLoop, mustStatic(t, "hpcc"), []TargetConfig{tc}, e2eGuard(), time.Second)
			e.obs.setAlter(func(o *env.Observation) {
				if o.Key.Port == "Ethernet0" && o.Valid && o.Current.KminBytes == hpcc.KminBytes {
					o.Metrics.DropFrac = 0.01
				}
			})
			waitFor(t, 40*time.Second, "changes applied and a rollback on port 0", func() bool {
				es, _ := e.j.Entries("", 0)
				applied, rolled := 0, false
				for _, x := range es {
					if x.State == StateApplied && x.Got != nil {
						applied++
					}
					if x.Kind == KindRollback && x.State == StateApplied && x.Key.Port == "Ethernet0" {
						rolled = true
					}
				}
				return applied >= 4 && rolled
			})
			e.stop(t)
			for p := 1; p < 4; p++ {
				if got := simECN(t, s, "sw0", p, 3); got != hpcc {
					t.Fatalf("port %d runs %+v, want %+v", p, got, hpcc)
				}
			}
			if n := counterWith(e.a, "ecntune_agent_sets_total", "result", "error") + counterWith(e.a, "ecntune_agent_sets_total", "result", "readback-error"); n != 0 {
				t.Fatalf("%g Sets or read-backs failed", n)
			}
			ti := e.a.Targets()
			if ti[0].Device != "sonic" {
				t.Fatalf("device %+v", ti[0])
			}
			if want := env.DeviceTelemetry["sonic"].String(); strings.Join(ti[0].Missing, ", ") != want {
				t.Fatalf("missing %v, want %s", ti[0].Missing, want)
			}
			es, _ := e.j.Entries("", 0)
			for _, x := range es {
				if x.State == StateMismatch || x.State == StateFailed {
					t.Fatalf("audit entry %+v", x)
				}
			}
			t.Logf("sonic (%s buffer model): %d audit entries, all applied and read back", model, len(es))
		})
	}
}

// Shadow mode against the sonic-gnmi imitation: a measured recommendation
// for every controlled queue within three intervals, naming what sonic
// lacks, and no Set sent.
func TestE2ERealSonicShadow(t *testing.T) {
	s, addr := sonicSim(t, "static")
	e := runE2ESample(t, ModeShadow, mustStatic(t, "hpcc"), []TargetConfig{target0(addr, DialectSONiC)}, e2eGuard(), time.Second)
	var recs []Recommendation
	waitFor(t, 30*time.Second, "a measured recommendation for every queue", func() bool {
		recs, _ = e.j.Recommendations("sw0", 0, 0)
		return len(queuesOf(recs)) == 4
	})
	e.stop(t)
	seen := map[int64]bool{}
	for _, r := range recs {
		seen[r.TimeNs] = true
	}
	if len(seen) > 3 {
		t.Fatalf("every queue decided only after %d intervals", len(seen))
	}
	want := "without " + env.DeviceTelemetry["sonic"].String()
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
