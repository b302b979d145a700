package agent

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// countingSwitch feeds a rig's agent snapshots of its fake switch with
// counters that run on (half the line rate, 5% marked) from the switch's
// boot: a reboot starts them again.
type countingSwitch struct {
	r      *rig
	uptime int64 // seconds since the switch booted
}

func (c *countingSwitch) sample(dtNs int64) env.Snapshot {
	c.r.tns += dtNs
	c.uptime += dtNs
	s := c.r.sw.snapshot(c.r.tns)
	for i := range s.Queues {
		q := &s.Queues[i]
		q.TxBytes = uint64(float64(c.uptime) * 1e-9 * 100e9 / 8 / 2)
		q.TxPkts = q.TxBytes / 1000
		q.MarkedBytes, q.MarkedPkts = q.TxBytes/20, q.TxPkts/20
	}
	return s
}

// interval feeds one snapshot a second (or n evenly within it) and ticks.
func (c *countingSwitch) interval(t *testing.T, n int) {
	t.Helper()
	c.r.clk.Add(time.Second)
	for range n {
		c.r.a.Ingest(c.sample(sec / int64(n)))
	}
	if err := c.r.a.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// observedRig is a closed-loop rig on db and sw whose observer is the real
// one, its log kept in log.
func observedRig(t *testing.T, db string, sw *fakeSwitch, log *syncBuffer) *rig {
	t.Helper()
	return newRigOpts(t, config.ModeClosedLoop, false, db, sw, nil, func(o *Options) {
		o.Observer = env.NewObserver(env.ObserverConfig{})
		o.Logger = slog.New(slog.NewTextHandler(log, nil))
	})
}

// tunedThenStopped runs an agent until it has tuned kA and kB to target,
// then stops it; it returns the rig (its db closed) and its switch.
func tunedThenStopped(t *testing.T) (*rig, *countingSwitch) {
	t.Helper()
	r := observedRig(t, "", nil, &syncBuffer{})
	cs := &countingSwitch{r: r, uptime: 3600 * sec}
	for i := 0; i < 4 && r.sw.get(kA) != target; i++ {
		cs.interval(t, 1)
	}
	if got := r.sw.get(kA); got != target {
		t.Fatalf("the first run never tuned %s: switch runs %s", kA, got.Describe())
	}
	cs.interval(t, 1)
	r.j.Close()
	return r, cs
}

// restarted starts an agent again on r's db and switch.
func restarted(t *testing.T, r *rig, cs *countingSwitch, log *syncBuffer) *rig {
	t.Helper()
	r2 := observedRig(t, r.db, r.sw, log)
	r2.clk.t, r2.tns = r.clk.Now().Add(time.Minute), r.tns+60*sec
	cs.r = r2
	return r2
}

// The switch restarted while the agent was down (its counters began
// again, it runs its startup configuration): the restarted agent takes
// what it runs as the new baseline, says so, and yields to no one.
func TestRestartAfterSwitchRestartTakesItsBaseline(t *testing.T) {
	r, cs := tunedThenStopped(t)
	r.sw.mu.Lock()
	r.sw.set[kA], r.sw.set[kB] = cur, cur // its startup configuration
	r.sw.mu.Unlock()
	cs.uptime = 30 * sec

	var log syncBuffer
	r2 := restarted(t, r, cs, &log)
	r2.pol.s = cur    // the policy is content with it: nothing written
	cs.interval(t, 2) // two samples in the interval: the reset's and the next
	for range 3 {
		cs.interval(t, 1)
	}
	out := log.String()
	if strings.Contains(out, "another writer") {
		t.Errorf("a switch that restarted read as another writer:\n%s", out)
	}
	if !strings.Contains(out, "the switch restarted while the agent was down (its tx_pkts went back from") ||
		!strings.Contains(out, "its running setting is the new baseline") {
		t.Errorf("the restart is not logged:\n%s", out)
	}
	mems, err := r2.j.GuardMemory()
	if err != nil {
		t.Fatal(err)
	}
	now := r2.clk.Now().UnixNano()
	for _, m := range mems {
		if m.LastGood != cur || m.Expect != nil || m.Probation != nil || m.YieldNs > now {
			t.Errorf("%s after the switch's restart: last good %s, expect %v, probation %v, yield until %d (now %d); want its startup setting %s the baseline, no hold",
				m.Key, m.LastGood.Describe(), m.Expect, m.Probation, m.YieldNs, now, cur.Describe())
		}
	}
	if len(mems) != 2 {
		t.Errorf("guard memory of %d queues, want 2", len(mems))
	}
}

// The switch did not restart (its counters ran on) but someone changed
// kA's setting while the agent was down: still another writer's change,
// yielded to; kB, untouched, keeps the agent's tune.
func TestRestartAfterAnotherWriterYields(t *testing.T) {
	r, cs := tunedThenStopped(t)
	theirs := target
	theirs.KmaxBytes = 1_000_000
	r.sw.mu.Lock()
	r.sw.set[kA] = theirs
	r.sw.mu.Unlock()
	cs.uptime += 60 * sec

	var log syncBuffer
	r2 := restarted(t, r, cs, &log)
	for range 3 {
		cs.interval(t, 1)
	}
	out := log.String()
	if !strings.Contains(out, "queue changed by another writer") {
		t.Errorf("another writer's change is not flagged:\n%s", out)
	}
	if strings.Contains(out, "the switch restarted") {
		t.Errorf("a switch that did not restart was taken as restarted:\n%s", out)
	}
	mems, err := r2.j.GuardMemory()
	if err != nil {
		t.Fatal(err)
	}
	now := r2.clk.Now().UnixNano()
	by := map[env.QueueKey]core.QueueMemory{}
	for _, m := range mems {
		by[m.Key] = m
	}
	if m := by[kA]; m.YieldNs <= now || m.LastGood != theirs {
		t.Errorf("%s: yield until %d (now %d), last good %s; want yielding to %s", kA, m.YieldNs, now, m.LastGood.Describe(), theirs.Describe())
	}
	if m := by[kB]; m.YieldNs > now || m.Expect == nil || *m.Expect != target {
		t.Errorf("%s: yield until %d, expect %v; want the agent's %s kept, no hold", kB, m.YieldNs, m.Expect, target.Describe())
	}
	if got := r2.sw.get(kA); got != theirs {
		t.Errorf("%s: switch runs %s, want the other writer's %s left", kA, got.Describe(), theirs.Describe())
	}
}
