package fleetsoak

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// scenario is the simulated fabric: a leaf-spine of n switches, two hosts
// a leaf, incasts across it that keep the lossless queues marking (the
// adaptive policy then keeps tuning).
func scenario(n int) string {
	spines := 4
	if n < 10 {
		spines = 2
	}
	return fmt.Sprintf(`name: fleetsoak
seed: 5
duration: 20ms
topology: {kind: leafspine, leaves: %d, spines: %d, hosts_per_leaf: 2, host_rate: 100Gbps,
           fabric_rate: 100Gbps, link_delay: 1us, buffer: 32MB}
ecn: {kmin: 2000KB, kmax: 2800KB, pmax: 0.01}
pfc: {enabled: true, alpha: 0.125, cable: 5m}
mtu: 1000
workloads:
  - {kind: incast, fanin: 6, size: 300KB, every: 400us}
  - {kind: incast, fanin: 3, size: 64KB, every: 150us}
`, n-spines, spines)
}

var (
	bannerAddr   = regexp.MustCompile(`simswitch: gNMI for all switches on (\S+)`)
	bannerFabric = regexp.MustCompile(`simswitch: (\S+) fabric-ports: \[([^\]]*)\]`)
)

// switchTarget is one switch as the agents' configuration lists it.
type switchTarget struct{ name, fabric string }

// startSwitches runs simswitch on the scenario (port 0, looping), and
// reads its address and switches from its banner.
func (h *harness) startSwitches() (string, error) {
	scen := filepath.Join(h.cfg.Dir, "fleetsoak.yaml")
	if err := os.WriteFile(scen, []byte(scenario(h.cfg.Switches)), 0o644); err != nil {
		return "", err
	}
	var err error
	if h.swOut, err = os.Create(filepath.Join(h.cfg.Dir, "simswitch.log")); err != nil {
		return "", err
	}
	h.setLog = filepath.Join(h.cfg.Dir, "sets.jsonl")
	args := []string{"simswitch", "--scenario", scen, "--listen", "127.0.0.1:0", "--timescale", "1000", "--loop",
		"--set-log", h.setLog, "--status-every", "0"}
	if h.cfg.Fence {
		args = append(args, "--fence")
	}
	if h.sw, err = start(h.swOut, h.cfg.Bin, args...); err != nil {
		return "", err
	}
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(h.swOut.Name())
		if m := bannerAddr.FindSubmatch(b); m != nil {
			h.switches = nil
			for _, f := range bannerFabric.FindAllSubmatch(b, -1) {
				h.switches = append(h.switches, switchTarget{string(f[1]), string(f[2])})
			}
			return string(m[1]), nil
		}
		if h.sw.Exited() {
			return "", fmt.Errorf("simswitch ended: %v: %s", h.sw.Err(), lastLines(h.swOut.Name(), 5))
		}
	}
	return "", fmt.Errorf("simswitch: no gNMI address in 60 s: %s", lastLines(h.swOut.Name(), 5))
}

const agentConfig = `mode: closed-loop
policy: %[7]q
interval: %[1]s
sample-interval: %[1]s
db: %[2]s
metrics: ""
fleet: {endpoints: [%[3]s], name: soak, member: %[4]s, ttl: %[5]s}
guardrails:
  bounds:
    - {rate: 100Gbps, kmin: [5KB, 5MB], kmax: [20KB, 12MB], pmax: [0.01, 1.0]}
  max-step-ratio: 2
  min-hold: %[6]s
  change-budget: 64
  rollback:
    window: 3
    drop-frac: 0
    pause-increase: 0.05
    reward-drop: 0.3
  stale-freeze: 2s
  stale-revert: 10s
targets:
`

// policy is a schedule that alternates each queue between two settings
// every 1.5 ms of simulated time (1.5 s of wall time at simswitch's
// timescale of 1000) for 5 minutes from the agent's start: a loop that
// keeps writing, each change a tune that min-hold governs. The faults
// take the agent that has run longest, so that none outlives its
// schedule by much (the policy's name, this spec, is in every audit
// record, in etcd too: a schedule for the whole run would fill etcd).
func (h *harness) policy() string {
	n := int(5*time.Minute/(1500*time.Millisecond)) + 1
	var b strings.Builder
	b.WriteString("schedule:2000KB/2800KB/1%")
	for i := 1; i < n; i++ {
		s := "2000KB/2800KB/1%"
		if i%2 == 1 {
			s = "2400KB/3200KB/2%"
		}
		fmt.Fprintf(&b, ",%dus=%s", i*1500, s)
	}
	return b.String()
}

// addMember makes member i's proxy to etcd and its configuration.
func (h *harness) addMember(i int, addr string) error {
	p, err := NewProxy(h.etcd.Endpoints())
	if err != nil {
		return err
	}
	h.proxies = append(h.proxies, p)
	name := fmt.Sprintf("agent-%c", 'a'+i)
	db := filepath.Join(h.cfg.Dir, name+".db")
	var b strings.Builder
	fmt.Fprintf(&b, agentConfig, h.cfg.Interval, db, p.Addr(), name, h.cfg.TTL, h.cfg.MinHold, h.policy())
	for _, s := range h.switches {
		fmt.Fprintf(&b, "  %s: {address: %q, insecure: true, timeout: 2s, retry-timer: 200ms, dialect: openconfig, ports: [Ethernet0, Ethernet1], queues: [3], fabric-ports: []}\n",
			s.name, addr)
	}
	cfg := filepath.Join(h.cfg.Dir, name+".yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return err
	}
	out, err := os.Create(filepath.Join(h.cfg.Dir, name+".log"))
	if err != nil {
		return err
	}
	h.names, h.cfgs, h.dbs, h.outs = append(h.names, name), append(h.cfgs, cfg), append(h.dbs, db), append(h.outs, out)
	return nil
}

// startAgent starts (or restarts) agent i.
func (h *harness) startAgent(i int) error {
	p, err := start(h.outs[i], h.cfg.Bin, "agent", "--config", h.cfgs[i])
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.agents[i] = p
	h.restarts++
	h.mu.Unlock()
	return nil
}
