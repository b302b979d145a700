package fleetscale

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ecntune/ecntune/internal/cputime"
)

// harness is one running point: etcd, simswitch and the agents.
type harness struct {
	cfg       Config
	etcd      *proc
	etcdAddr  string
	sw        *proc
	swAddr    string
	switches  []switchTarget
	agents    []*proc
	agentAddr []string
}

// Run measures one point: it starts etcd (a child process), simswitch and
// the agents, waits until the fleet has placed every switch and every
// owner has telemetry of its switches, measures the window and stops
// everything. A Point comes back with whatever was measured; the error
// says what went wrong (an agent died, switches unowned or silent).
func Run(ctx context.Context, cfg Config) (*Point, error) {
	cfg.defaults()
	h := &harness{cfg: cfg}
	defer h.tearDown()
	if err := h.setUp(); err != nil {
		return nil, err
	}
	began := time.Now()
	if err := h.settle(ctx); err != nil {
		return nil, err
	}
	cfg.Logf("fleetscale: %d switches placed on %d agents, each with telemetry, in %v", cfg.Switches, cfg.Agents, time.Since(began).Round(time.Second))
	return h.measure(ctx)
}

// setUp starts etcd, simswitch and the agents.
func (h *harness) setUp() error {
	var err error
	if h.etcd, err = start(h.cfg.Dir, "etcd", h.cfg.Etcd, "-dir", filepath.Join(h.cfg.Dir, "etcd")); err != nil {
		return err
	}
	if h.etcdAddr, err = h.etcd.waitLine("etcdmain: endpoint ", time.Minute); err != nil {
		return err
	}
	t0 := time.Now()
	if err := h.startSwitches(); err != nil {
		return err
	}
	h.cfg.Logf("fleetscale: simswitch serves %d switches on %s (up in %v)", len(h.switches), h.swAddr, time.Since(t0).Round(time.Millisecond))
	return h.startAgents()
}

func (h *harness) tearDown() {
	for _, p := range h.agents {
		p.Stop(20 * time.Second)
	}
	if h.sw != nil {
		h.sw.Stop(20 * time.Second)
	}
	if h.etcd != nil {
		h.etcd.Stop(20 * time.Second)
	}
}

// dead is an error naming the first child that has ended.
func (h *harness) dead() error {
	for _, p := range append([]*proc{h.etcd, h.sw}, h.agents...) {
		if p != nil && p.Exited() {
			return fmt.Errorf("%s ended (%v): %s", p.name, p.Err(), lastLines(p.log, 5))
		}
	}
	return nil
}

// fleetView is the fleet as the agents' /metrics show it.
type fleetView struct {
	owner     map[string]int // switch → agent owning it
	twice     []string       // switches more than one agent owns
	owned     []int          // switches per agent
	leader    int            // -1: none
	snapshots map[string]float64
	silent    int // owned switches without a snapshot yet
}

// view scrapes every agent.
func (h *harness) view(ctx context.Context) (*fleetView, error) {
	v := &fleetView{owner: map[string]int{}, owned: make([]int, len(h.agents)), leader: -1, snapshots: map[string]float64{}}
	for i, addr := range h.agentAddr {
		sc, _, err := getMetrics(ctx, addr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", h.agents[i].name, err)
		}
		snaps := sc.by("ecntune_agent_snapshots_total", "target")
		for t, o := range sc.by("ecntune_agent_fleet_owner", "target") {
			if o != 1 {
				continue
			}
			if _, ok := v.owner[t]; ok {
				v.twice = append(v.twice, t)
			}
			v.owner[t], v.snapshots[t] = i, snaps[t]
			v.owned[i]++
			if snaps[t] == 0 {
				v.silent++
			}
		}
		if sc.sum("ecntune_agent_fleet_leader") == 1 {
			v.leader = i
		}
	}
	return v, nil
}

// balanced: every agent within the leader's bound, ceil(1.25 n / agents).
func (v *fleetView) balanced(n int) bool {
	bound := (n*5 + 4*len(v.owned) - 1) / (4 * len(v.owned))
	for _, k := range v.owned {
		if k > bound {
			return false
		}
	}
	return true
}

func sameOwners(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// settle waits until every switch has one owner, within the leader's
// bound, every owner has telemetry of its switches, and the owners have
// not changed for three polls (15 s: three of the leader's rounds).
func (h *harness) settle(ctx context.Context) error {
	var prev *fleetView
	stable := 0
	end := time.Now().Add(h.cfg.Settle)
	for ; time.Now().Before(end); time.Sleep(5 * time.Second) {
		if err := errors.Join(ctx.Err(), h.dead()); err != nil {
			return err
		}
		v, err := h.view(ctx)
		if err != nil {
			return err
		}
		ok := len(v.owner) == h.cfg.Switches && len(v.twice) == 0 && v.silent == 0 && v.balanced(h.cfg.Switches)
		if ok && prev != nil && sameOwners(prev.owner, v.owner) {
			stable++
		} else {
			stable = 0
		}
		prev = v
		h.cfg.Logf("fleetscale: owned %v (%d of %d), %d silent, leader %d, stable %d", v.owned, len(v.owner), h.cfg.Switches, v.silent, v.leader, stable)
		if stable >= 3 {
			return nil
		}
	}
	return fmt.Errorf("fleetscale: not settled in %v", h.cfg.Settle)
}

// readings are what the measure reads at each end of the window.
type readings struct {
	at   time.Time
	load string
	etcd scrape
	// etcdRaw is etcd's /metrics as it came (kept beside the report)
	etcdRaw []byte
	fleet   *fleetView
	use     map[string]usage // by process name
	self    time.Duration    // this process's CPU time
}

// read scrapes etcd and the agents, then reads every process's usage
// (scrapes first at the start, last at the end: the window is quiet).
func (h *harness) read(ctx context.Context, scrapeFirst bool) (*readings, error) {
	r := &readings{use: map[string]usage{}}
	scrapeAll := func() error {
		var err error
		if r.etcd, r.etcdRaw, err = getMetrics(ctx, h.etcdAddr); err != nil {
			return fmt.Errorf("etcd: %w", err)
		}
		r.fleet, err = h.view(ctx)
		return err
	}
	if scrapeFirst {
		if err := scrapeAll(); err != nil {
			return nil, err
		}
	}
	r.at, r.load, r.self = time.Now(), loadAvg(), cputime.Process()
	for _, p := range append([]*proc{h.etcd, h.sw}, h.agents...) {
		u, err := procUsage(p.Cmd.Process.Pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		r.use[p.name] = u
	}
	if !scrapeFirst {
		if err := scrapeAll(); err != nil {
			return nil, err
		}
	}
	return r, nil
}
