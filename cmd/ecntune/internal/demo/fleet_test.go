package demo

import (
	"bufio"
	"context"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/fleet"
	"github.com/ecntune/ecntune/internal/await"
	"github.com/ecntune/ecntune/simenv"
)

// fleetFabric is smallFabric on 4 leaves and 2 spines (6 switches, 2 for
// each of 3 agents), its traffic repeating.
func fleetFabric() simenv.Config {
	c := smallFabric()
	c.Name = "fleet"
	c.Topology = simenv.LeafSpineTopology(4, 2, 2, 100e9, 100e9, simenv.Microsecond)
	return c
}

// events collects Config.Events lines.
type events struct {
	mu    sync.Mutex
	lines []string
}

func (e *events) add(l string) { e.mu.Lock(); e.lines = append(e.lines, l); e.mu.Unlock() }
func (e *events) has(sub string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, l := range e.lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}
func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.lines, "\n")
}

// startFleet starts a fleet demo of 3 agents and runs it; stop cancels it
// and returns Run's error and how long Run took to return.
func startFleet(t *testing.T, cfg Config) (d *Demo, ev *events, stop func() (error, time.Duration)) {
	t.Helper()
	ev = &events{}
	cfg.Scenario, cfg.Listen, cfg.Timescale, cfg.Interval, cfg.Fleet, cfg.Events = fleetFabric(), "127.0.0.1:0", 300, 200*time.Millisecond, 3, ev.add
	ctx, cancel := context.WithCancel(context.Background())
	t0 := time.Now()
	d, err := Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Logf("started in %v", time.Since(t0).Round(time.Millisecond))
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, nil) }()
	return d, ev, func() (error, time.Duration) {
		t0 := time.Now()
		cancel()
		select {
		case err := <-done:
			return err, time.Since(t0)
		case <-time.After(30 * time.Second):
			t.Fatal("Run still running 30 s after its context ended")
			return nil, 0
		}
	}
}

// fleetOf reads GET /fleet of an agent.
func fleetOf(t *testing.T, url string) fleet.Status {
	var st fleet.Status
	if code := getJSON(t, url+"fleet", &st); code != 200 {
		t.Fatalf("%sfleet: %d", url, code)
	}
	return st
}

// changesOf reads GET /changes of an agent.
func changesOf(t *testing.T, url string) []core.AuditEntry {
	var p struct {
		Changes []core.AuditEntry `json:"changes"`
	}
	if code := getJSON(t, url+"changes?limit=1000", &p); code != 200 {
		t.Fatalf("%schanges: %d", url, code)
	}
	return p.Changes
}

// ownedBy reads ecntune_agent_fleet_owner of an agent's /metrics: the
// targets it says it owns (writes) now.
func ownedBy(t *testing.T, url string) []string {
	resp, err := http.Get(url + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, `ecntune_agent_fleet_owner{target="`) && strings.HasSuffix(l, " 1") {
			out = append(out, strings.SplitN(l, `"`, 3)[1])
		}
	}
	return out
}

// TestDemoFleetOfThree: demo --fleet 3 starts three agents, each a member
// with its own endpoints; every switch has exactly one owner (etcd's owner
// key, and exactly one agent's ecntune_agent_fleet_owner); changes are
// applied in closed loop, and every switch's changes were written by its
// owner under its fencing token and are in its audit log only; stopping
// ends everything.
func TestDemoFleetOfThree(t *testing.T) {
	base := runtime.NumGoroutine()
	d, ev, stop := startFleet(t, Config{})
	ms := d.Members()
	if len(ms) != 3 || ms[0].ID != "a" || ms[2].ID != "c" || ms[0].URL == ms[1].URL || ms[1].URL == ms[2].URL || ms[0].DB == ms[1].DB {
		t.Fatalf("members %+v", ms)
	}
	switches := len(d.Switches().Switches())
	var st fleet.Status
	await.Until(t, time.Minute, "three members and an owner for every switch", func() bool {
		st = fleetOf(t, ms[1].URL)
		owned := 0
		for _, s := range st.Switches {
			if s.Owner != "" && s.Owner == s.Assigned {
				owned++
			}
		}
		return len(st.Members) == 3 && owned == switches
	})
	t.Logf("placement: %s", DescribePlacement(st))
	// Each switch is writable by exactly one agent, as the agents see it.
	await.Until(t, time.Minute, "every switch writable by exactly one agent", func() bool {
		by := map[string][]string{}
		for _, m := range ms {
			for _, sw := range ownedBy(t, m.URL) {
				by[sw] = append(by[sw], m.ID)
			}
		}
		for sw, ids := range by {
			if len(ids) > 1 {
				t.Fatalf("switch %s writable by %v at once", sw, ids)
			}
		}
		return len(by) == switches
	})
	var logs [][]core.AuditEntry
	applied := 0
	await.Until(t, time.Minute, "a change applied in closed loop", func() bool {
		logs, applied = nil, 0
		for _, m := range ms {
			cs := changesOf(t, m.URL)
			logs = append(logs, cs)
			for _, c := range cs {
				if c.State == core.StateApplied {
					applied++
				}
			}
		}
		return applied > 0
	})
	st = fleetOf(t, ms[0].URL)
	checkWriters(t, ms, st, logs)
	// reported once two polls agree: it may come after the first change
	await.Until(t, time.Minute, "the placement reported", func() bool { return ev.has("placement: a owns") })
	err, took := stop()
	if err != nil {
		t.Errorf("Run: %v", err)
	}
	t.Logf("%d changes applied; stopped in %v; events:\n%s", applied, took.Round(time.Millisecond), ev)
	for _, m := range ms {
		if _, err := http.Get(m.URL + "healthz"); err == nil {
			t.Errorf("agent %s still answers after Run returned", m.ID)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	leaked(t, base)
}

// checkWriters: every switch's audit entries were written by its owner now
// (the entry's writer), under the fencing token it holds, and are in that
// agent's log only, under its owner name.
func checkWriters(t *testing.T, ms []Member, st fleet.Status, logs [][]core.AuditEntry) {
	t.Helper()
	owner := map[string]fleet.SwitchStatus{}
	for _, s := range st.Switches {
		owner[s.Switch] = s
	}
	writers := map[string]map[string]int{}
	for i, cs := range logs {
		id := ms[i].ID
		for _, c := range cs {
			if writers[c.Target] == nil {
				writers[c.Target] = map[string]int{}
			}
			writers[c.Target][id]++
			if o := owner[c.Target]; c.Writer != id || c.Owner != "ecntune-demo-"+id || c.Writer != o.Owner || c.Token != o.Token {
				t.Errorf("agent %s's audit entry %d for %s: writer %q, owner %q, token %d; the switch's owner %s, token %d",
					id, c.Seq, c.Target, c.Writer, c.Owner, c.Token, o.Owner, o.Token)
			}
		}
	}
	for sw, by := range writers {
		if len(by) != 1 || by[owner[sw].Owner] == 0 {
			t.Errorf("switch %s (owner %s) in the audit logs of %v", sw, owner[sw].Owner, by)
		}
	}
	t.Logf("audit entries per switch and agent: %v", writers)
}

// TestDemoFleetFailover: with FleetKillAfter the last agent stops and
// leaves; its switches go to the other two, the demo reports it and keeps
// running, and stops cleanly.
func TestDemoFleetFailover(t *testing.T) {
	d, ev, stop := startFleet(t, Config{FleetKillAfter: 2 * time.Second})
	ms := d.Members()
	switches := len(d.Switches().Switches())
	await.Until(t, time.Minute, "agent c stopped", func() bool { return ev.has("agent c stopped and left the fleet") })
	await.Until(t, time.Minute, "c's switches owned by a and b", func() bool {
		st, err := d.Placement(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range st.Switches {
			if s.Owner == "a" || s.Owner == "b" {
				n++
			}
		}
		return len(st.Members) == 2 && n == switches
	})
	await.Until(t, time.Minute, "the placement without c reported", func() bool {
		return ev.has("placement: a owns") && !strings.Contains(lastPlacement(ev), "c owns")
	})
	if _, err := http.Get(ms[2].URL + "healthz"); err == nil {
		t.Errorf("agent c still answers after it stopped")
	}
	if st := fleetOf(t, ms[0].URL); len(st.Members) != 2 {
		t.Errorf("a's /fleet: %+v", st)
	}
	if err, _ := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	t.Logf("events:\n%s", ev)
}

func lastPlacement(ev *events) string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	for i := len(ev.lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(ev.lines[i], "placement: ") {
			return ev.lines[i]
		}
	}
	return ""
}
