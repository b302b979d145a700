package core

import (
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// restartedAgent is a core restarted with the memory of a guard that tuned
// kA (applyTune: on probation, the tune expected on the switch), and the
// setting it tuned to.
func restartedAgent(t *testing.T) (*Core, env.Setting) {
	t.Helper()
	g := newTestGuard(t, nil)
	set := applyTune(t, g, env.Metrics{IntervalNs: sec, Util: 0.5})
	mem := g.Memory(kA)
	if mem.Expect == nil || mem.Probation == nil {
		t.Fatalf("memory before the restart: %+v, want the tune expected and on probation", mem)
	}
	c, err := New(Options{Guard: testGuardConfig(), Policy: "test", Memory: []QueueMemory{mem}})
	if err != nil {
		t.Fatal(err)
	}
	c.AddTarget("leaf0", 20*sec)
	return c, set
}

// firstAfterRestart is the first observation of kA after the agent's
// restart: a seeded observer's counter reset (reset), else a first sample.
func firstAfterRestart(s env.Setting, reset bool) env.Observation {
	o := ob(kA, s)
	o.Valid = false
	o.Metrics, o.Problem = env.Metrics{}, "first sample of this queue"
	if reset {
		o.Metrics.Reset = true
		o.Problem = env.ResetSinceLastRun + ": tx_pkts went back from 90000 to 12"
	}
	return o
}

func tickRestarted(t *testing.T, c *Core, now int64, o env.Observation) Ready {
	t.Helper()
	rd, err := c.Tick(Interval{NowNs: now, Observations: []env.Observation{o}, Decisions: []policy.Decision{dc(kA, o.Current, 0.9)}})
	if err != nil {
		t.Fatal(err)
	}
	return rd
}

// The switch restarted while the agent was down: the first sample after
// the agent's restart shows its counters went back and its startup
// configuration. That is the queue's new baseline, not another writer's
// change: no alarm, no hold, and the guard says what it took.
func TestRestartAfterSwitchRestartTakesBaseline(t *testing.T) {
	c, set := restartedAgent(t)
	boot := cur // the switch's startup configuration
	now := 30 * sec
	rd := tickRestarted(t, c, now, firstAfterRestart(boot, true))
	if len(rd.Baselines) != 1 || rd.Baselines[0].Key != kA || rd.Baselines[0].Was != set || rd.Baselines[0].Now != boot {
		t.Errorf("baselines %+v, want %s: was %s, now %s", rd.Baselines, kA, set.Describe(), boot.Describe())
	}
	for i := 0; i < 3; i++ {
		for _, a := range rd.Alarms {
			t.Errorf("interval %d after the restart: alarm %s: %s", i+1, a.Rule, a.Msg)
		}
		for _, r := range rd.Rejections {
			if r.Rule == RuleExternal {
				t.Errorf("interval %d after the restart: rejected %s: %s", i+1, r.Rule, r.Reason)
			}
		}
		now += sec
		rd = tickRestarted(t, c, now, ob(kA, boot))
		if len(rd.Baselines) != 0 {
			t.Errorf("interval %d: baselines again %+v", i+2, rd.Baselines)
		}
	}
	m := c.guard.Memory(kA)
	if m.LastGood != boot || m.Expect != nil || m.Probation != nil {
		t.Errorf("memory after the restart: last good %s, expect %v, probation %v; want the startup setting %s, neither expected nor on probation",
			m.LastGood.Describe(), m.Expect, m.Probation, boot.Describe())
	}
}

// Counters cleared while the agent was down, the agent's setting kept
// (the switch did not restart): only an interval not measured; the tune
// stays expected and on probation.
func TestRestartAfterCountersClearedKeepsProbation(t *testing.T) {
	c, set := restartedAgent(t)
	now := 30 * sec
	for i, o := range []env.Observation{firstAfterRestart(set, true), ob(kA, set)} {
		rd := tickRestarted(t, c, now, o)
		now += sec
		if len(rd.Baselines) != 0 || len(rd.Alarms) != 0 {
			t.Errorf("interval %d: baselines %+v alarms %+v, want none", i+1, rd.Baselines, rd.Alarms)
		}
	}
	m := c.guard.Memory(kA)
	if m.Expect == nil || *m.Expect != set || m.Probation == nil || m.Probation.To != set {
		t.Errorf("memory: expect %v probation %+v; want %s expected and on probation", m.Expect, m.Probation, set.Describe())
	}
}

// Another writer changed the queue while the agent was down, and the
// switch did not restart (no counter went back): still another writer's.
func TestRestartAfterAnotherWriterStillFlagged(t *testing.T) {
	c, set := restartedAgent(t)
	theirs := set
	theirs.KmaxBytes = 1_000_000
	now := 30 * sec
	var ext []Alarm
	for _, o := range []env.Observation{firstAfterRestart(theirs, false), ob(kA, theirs)} {
		rd := tickRestarted(t, c, now, o)
		now += sec
		if len(rd.Baselines) != 0 {
			t.Errorf("baselines %+v, want none (the switch did not restart)", rd.Baselines)
		}
		for _, a := range rd.Alarms {
			if a.Rule == RuleExternal {
				ext = append(ext, a)
			}
		}
	}
	if len(ext) != 1 {
		t.Errorf("alarms of another writer %+v, want one", ext)
	}
}
