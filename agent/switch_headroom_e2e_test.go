package agent

import (
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simswitch"
	"github.com/ecntune/ecntune/train/rl"
)

// keepPolicy asks for every queue's current setting.
type keepPolicy struct{}

func (keepPolicy) Name() string { return "keep" }
func (keepPolicy) Decide(obs []env.Observation) []policy.Decision {
	d := make([]policy.Decision, len(obs))
	for i, o := range obs {
		d[i] = policy.Decision{Key: o.Key, Setting: o.Current, Action: -1, Confidence: 1, Reason: "keep"}
	}
	return d
}

// The agent against simswitch's sonic-gnmi imitation (static buffer model,
// where the headroom is settable) with a switch-level headroom model that
// always returns the headroom above the floor to the shared pool: one
// decision for the switch, written to every lossless PG's buffer profile
// through gNMI Set, read back, and run by the simulator; the guard's floor
// is never crossed. sonic-gnmi serves the headroom (the profile's xoff)
// but not its floor: the agent computes the floor from the switch's own
// CONFIG_DB CABLE_LENGTH and port mtu, with no cable stated for the target.
func TestE2ESwitchHeadroom(t *testing.T) {
	net, err := rl.NewNet(rl.Arch{In: env.NumSwitchFeatures, Out: env.SwitchActions(), Act: rl.Tanh})
	if err != nil {
		t.Fatal(err)
	}
	net.Kind = rl.OutputLogits
	net.Layers[0].B[1] = 5 // the floor, whatever the switch shows
	pol, err := policy.NewSwitchHeadroom(keepPolicy{}, "keep+headroom=model:floor", "model:floor", net)
	if err != nil {
		t.Fatal(err)
	}
	cfg := e2eSim(poorECN)
	cfg.PFC.HeadroomFactor = 3 // a vendor margin above the floor
	s, addr := startSim(t, cfg, "", func(c *simswitch.Config) {
		c.Device, c.SonicNativeWrite, c.SonicBufferModel = "sonic", true, "static"
	})
	floor := make([]int64, 4)
	for p := range floor {
		pg := simPG(t, s, p)
		floor[p] = pg.MinHeadroomBytes
		if pg.HeadroomBytes < 2*floor[p] {
			t.Fatalf("port %d starts at headroom %d, floor %d: want a margin to reclaim", p, pg.HeadroomBytes, floor[p])
		}
	}
	g := e2eGuard()
	g.RollbackDropFrac, g.RollbackPauseIncrease = 0.999, 1 // keep what is applied: this test is about the Set
	e := runE2ESample(t, config.ModeClosedLoop, pol, []config.Target{target0(addr, config.DialectSONiC)}, g, time.Second)
	waitFor(t, 40*time.Second, "every PG's headroom set to its floor and read back", func() bool {
		es, _ := e.j.Entries("", 0)
		done := map[string]bool{}
		for _, x := range es {
			if x.State == core.StateApplied && x.New.HeadroomBytes < x.Old.HeadroomBytes && x.Got != nil && x.Got.HeadroomBytes == x.New.HeadroomBytes {
				done[x.Key.Port] = true
			}
		}
		return len(done) == 4
	})
	e.stop(t)
	for p := range floor {
		pg := simPG(t, s, p)
		if pg.HeadroomBytes < floor[p] || pg.HeadroomBytes > floor[p]+floor[p]/20 {
			t.Fatalf("port %d: the simulator runs headroom %d, want its floor %d (within the profile's rounding)", p, pg.HeadroomBytes, floor[p])
		}
	}
	es, _ := e.j.Entries("", 0)
	for _, x := range es {
		if x.New.KminBytes != x.Old.KminBytes || x.New.KmaxBytes != x.Old.KmaxBytes {
			t.Fatalf("audit entry %+v: want headroom changes only", x)
		}
	}
}

func simPG(t *testing.T, s *simswitch.Server, port int) struct{ HeadroomBytes, MinHeadroomBytes int64 } {
	t.Helper()
	tel, err := s.Telemetry("sw0")
	if err != nil {
		t.Fatal(err)
	}
	pg := tel.Ports[port].PG[3]
	return struct{ HeadroomBytes, MinHeadroomBytes int64 }{pg.HeadroomBytes, pg.MinHeadroomBytes}
}
