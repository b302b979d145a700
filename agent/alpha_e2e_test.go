package agent

import (
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simswitch"
)

// alphaPolicy asks for alpha a on every queue, with the ECN setting the
// queue has (or with Kmin moved to kmin, when kmin > 0, so that there is a
// change to make where alpha is not managed).
type alphaPolicy struct {
	a    float64
	kmin int64
}

func (p *alphaPolicy) Name() string { return "alpha-test" }
func (p *alphaPolicy) Decide(obs []env.Observation) []policy.Decision {
	d := make([]policy.Decision, len(obs))
	for i, o := range obs {
		s := o.Current
		s.Alpha = p.a
		if p.kmin > 0 {
			s.KminBytes = p.kmin
		}
		d[i] = policy.Decision{Key: o.Key, Setting: s, Action: -1, Confidence: 1, Reason: "alpha test policy"}
	}
	return d
}

// The agent against simswitch's sonic-gnmi imitation on loopback: it reads
// every PG's alpha (1/8, dynamic_th -3) from its buffer profile, writes
// the policy's alpha 1/2 as dynamic_th -1 through gNMI Set, reads it back
// as set, and the simulator runs it. Against the openconfig dialect, which
// has no alpha, the same policy changes ECN only and nothing fails.
func TestE2EAlpha(t *testing.T) {
	g := e2eGuard()
	g.RollbackDropFrac, g.RollbackPauseIncrease = 0.999, 1 // keep what is applied: this test is about the Set
	t.Run("sonic", func(t *testing.T) {
		s, addr := sonicSim(t, "static")
		for p := 0; p < 4; p++ {
			if a := simAlpha(t, s, p); a != 0.125 {
				t.Fatalf("port %d starts with alpha %g", p, a)
			}
		}
		e := runE2ESample(t, config.ModeClosedLoop, &alphaPolicy{a: 0.5}, []config.Target{target0(addr, config.DialectSONiC)}, g, time.Second)
		waitFor(t, 40*time.Second, "alpha 1/8→1/2 applied and read back on every port", func() bool {
			es, _ := e.j.Entries("", 0)
			done := map[string]bool{}
			for _, x := range es {
				if x.State == core.StateApplied && x.Old.Alpha == 0.125 && x.New.Alpha == 0.5 && x.Got != nil && x.Got.Alpha == 0.5 {
					done[x.Key.Port] = true
				}
			}
			return len(done) == 4
		})
		e.stop(t)
		for p := 0; p < 4; p++ {
			if a := simAlpha(t, s, p); a != 0.5 {
				t.Fatalf("port %d: the simulator runs alpha %g, want 1/2", p, a)
			}
		}
		es, _ := e.j.Entries("", 0)
		for _, x := range es {
			if x.State != core.StateApplied || x.New.KminBytes != x.Old.KminBytes || x.New.HeadroomBytes != x.Old.HeadroomBytes {
				t.Fatalf("audit entry %+v: want alpha changes only, applied", x)
			}
		}
		if n := counterWith(e.a, "ecntune_agent_sets_total", "result", "error") + counterWith(e.a, "ecntune_agent_sets_total", "result", "readback-error"); n != 0 {
			t.Fatalf("%g Sets or read-backs failed", n)
		}
	})
	t.Run("openconfig", func(t *testing.T) {
		s, addr := startSim(t, e2eSim(poorECN), "", nil)
		e := runE2E(t, config.ModeClosedLoop, &alphaPolicy{a: 0.5, kmin: 1_500_000}, []config.Target{target0(addr, config.DialectOpenConfig)}, g)
		waitFor(t, 30*time.Second, "the ECN change applied on every port", func() bool {
			es, _ := e.j.Entries("", 0)
			done := map[string]bool{}
			for _, x := range es {
				if x.State == core.StateApplied && x.New.KminBytes == 1_500_000 {
					done[x.Key.Port] = true
				}
			}
			return len(done) == 4
		})
		e.stop(t)
		es, _ := e.j.Entries("", 0)
		for _, x := range es {
			if x.State != core.StateApplied || x.New.Alpha != 0 || (x.Got != nil && x.Got.Alpha != 0) {
				t.Fatalf("audit entry %+v: openconfig has no alpha", x)
			}
		}
		for p := 0; p < 4; p++ {
			if a := simAlpha(t, s, p); a != 0.125 {
				t.Fatalf("port %d: alpha %g changed through a dialect without alpha", p, a)
			}
		}
	})
}

func simAlpha(t *testing.T, s *simswitch.Server, port int) float64 {
	t.Helper()
	tel, err := s.Telemetry("sw0")
	if err != nil {
		t.Fatal(err)
	}
	return tel.Ports[port].PG[3].Alpha
}
