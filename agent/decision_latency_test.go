package agent

import (
	"context"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// slowPolicy takes a known time per Decide.
type slowPolicy struct {
	fixedPolicy
	d time.Duration
}

func (p *slowPolicy) Decide(obs []env.Observation) []policy.Decision {
	time.Sleep(p.d)
	return p.fixedPolicy.Decide(obs)
}

// histogram reads count and sum of a histogram from the agent's registry.
func histogram(t *testing.T, a *Agent, name string) (uint64, float64) {
	t.Helper()
	mfs, err := a.Instruments().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatalf("no series %s", name)
	return 0, 0
}

func TestDecisionLatencyMetric(t *testing.T) {
	for _, mode := range []config.Mode{config.ModeShadow, config.ModeClosedLoop} {
		r := newRig(t, mode, false, "", nil)
		sp := &slowPolicy{fixedPolicy: *r.pol, d: 30 * time.Millisecond}
		r.a.o.Policy = sp
		// An interval without observations is not a decision.
		if err := r.a.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n, _ := histogram(t, r.a, "ecntune_agent_decision_seconds"); n != 0 {
			t.Fatalf("%s: %d decision latencies recorded without observations", mode, n)
		}
		r.interval(t)
		r.interval(t)
		n, sum := histogram(t, r.a, "ecntune_agent_decision_seconds")
		if n != 2 {
			t.Fatalf("%s: %d decision latencies, want 2", mode, n)
		}
		// Each covers the policy's 30 ms; the fake clock does not move
		// during a tick, so this is measured on the real one.
		if sum < 0.060 || sum > 5 {
			t.Fatalf("%s: decision latency sum %.4f s, want at least 2 x 30 ms", mode, sum)
		}
	}
}
