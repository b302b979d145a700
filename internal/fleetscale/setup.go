package fleetscale

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ecntune/ecntune/internal/childproc"
)

// Config is one measured point.
type Config struct {
	Dir      string // working directory: logs, dbs, configurations
	Bin      string // the ecntune binary
	Etcd     string // the etcdmain binary (Build makes both)
	Switches int    // simulated switches (at least 10)
	Agents   int    // agents (default 4)
	// Interval is the agents' control and sample interval (default 10 s).
	Interval time.Duration
	// Window is how long the fleet is measured at rest (default 3 min).
	Window time.Duration
	// Settle bounds the wait for placement and telemetry (default 10 min).
	Settle time.Duration
	Logf   func(format string, args ...any)
}

func (c *Config) defaults() {
	if c.Agents <= 0 {
		c.Agents = 4
	}
	if c.Interval <= 0 {
		c.Interval = 10 * time.Second
	}
	if c.Window <= 0 {
		c.Window = 3 * time.Minute
	}
	if c.Settle <= 0 {
		c.Settle = 10 * time.Minute
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// Build compiles ecntune and etcdmain into dir.
func Build(dir string) (bin, etcd string, err error) {
	if bin, err = childproc.BuildEcntune(dir); err != nil {
		return "", "", err
	}
	etcd, err = childproc.Build(dir, "etcdmain", "github.com/ecntune/ecntune/internal/fleetscale/etcdmain")
	return bin, etcd, err
}

// spines of the fabric: two, so that a leaf has three ports (a host, two
// uplinks) and a spine one per leaf.
const spines = 2

// scenario is a leaf-spine of n switches, one host a leaf, and the
// lightest traffic the format allows (it wants a workload): one incast of
// two 1 KB flows in the first 20 ms of simulated time (20 s of wall time),
// idle after (simswitch runs without --loop). A spine has a port per leaf,
// so the buffer is large enough for the MMU's per-port reserve and
// headroom of 1,000 ports.
func scenario(n int) string {
	return fmt.Sprintf(`name: fleetscale
seed: 1
duration: 20ms
topology: {kind: leafspine, leaves: %d, spines: %d, hosts_per_leaf: 1, host_rate: 100Gbps,
           fabric_rate: 100Gbps, link_delay: 1us, buffer: 256MB}
workloads:
  - {kind: incast, fanin: 2, size: 1KB, every: 20ms}
`, n-spines, spines)
}

var (
	bannerAddr   = regexp.MustCompile(`simswitch: gNMI for all switches on (\S+)`)
	bannerFabric = regexp.MustCompile(`simswitch: (\S+) fabric-ports: \[([^\]]*)\]`)
)

// switchTarget is one switch: its name and the fabric ports the banner
// gives it.
type switchTarget struct {
	name   string
	fabric []string
}

// startSwitches runs simswitch (one listener for every switch) and reads
// its address and switches from its banner.
func (h *harness) startSwitches() error {
	scen := filepath.Join(h.cfg.Dir, "fleetscale.yaml")
	if err := os.WriteFile(scen, []byte(scenario(h.cfg.Switches)), 0o644); err != nil {
		return err
	}
	var err error
	h.sw, err = start(h.cfg.Dir, "simswitch", h.cfg.Bin, "simswitch", "--scenario", scen, "--listen", "127.0.0.1:0", "--status-every", "0")
	if err != nil {
		return err
	}
	if h.swAddr, err = h.sw.waitLine("simswitch: gNMI for all switches on ", 5*time.Minute); err != nil {
		return err
	}
	b, _ := os.ReadFile(h.sw.log)
	for _, m := range bannerFabric.FindAllSubmatch(b, -1) {
		h.switches = append(h.switches, switchTarget{string(m[1]), strings.Split(string(m[2]), ", ")})
	}
	if len(h.switches) != h.cfg.Switches {
		return fmt.Errorf("simswitch serves %d switches, want %d", len(h.switches), h.cfg.Switches)
	}
	return nil
}

// ports are the ports and queue each agent reads of a switch.
var ports = []string{"Ethernet0", "Ethernet1"}

const agentConfig = `mode: shadow
policy: builtin
interval: %[1]s
sample-interval: %[1]s
db: %[2]s
metrics: 127.0.0.1:0
fleet: {endpoints: [%[3]s], name: scale, member: %[4]s}
targets:
`

// writeAgent writes agent i's configuration: every switch, the fleet on
// etcd.
func (h *harness) writeAgent(i int) (string, error) {
	name := fmt.Sprintf("agent-%c", 'a'+i)
	var b strings.Builder
	fmt.Fprintf(&b, agentConfig, h.cfg.Interval, filepath.Join(h.cfg.Dir, name+".db"), h.etcdAddr, name)
	for _, s := range h.switches {
		var fab []string
		for _, p := range ports {
			if slices.Contains(s.fabric, p) {
				fab = append(fab, p)
			}
		}
		fmt.Fprintf(&b, "  %s: {address: %q, insecure: true, timeout: 5s, retry-timer: 2s, dialect: openconfig, ports: [%s], queues: [3], fabric-ports: [%s]}\n",
			s.name, h.swAddr, strings.Join(ports, ", "), strings.Join(fab, ", "))
	}
	cfg := filepath.Join(h.cfg.Dir, name+".yaml")
	return cfg, os.WriteFile(cfg, []byte(b.String()), 0o644)
}

// startAgents writes every agent's configuration, starts them all, and
// reads each one's /metrics address from its log.
func (h *harness) startAgents() error {
	for i := range h.cfg.Agents {
		cfg, err := h.writeAgent(i)
		if err != nil {
			return err
		}
		p, err := start(h.cfg.Dir, fmt.Sprintf("agent-%c", 'a'+i), h.cfg.Bin, "agent", "--config", cfg)
		if err != nil {
			return err
		}
		h.agents = append(h.agents, p)
	}
	for _, p := range h.agents {
		line, err := p.waitLine("serving /metrics and /recommendations", 2*time.Minute)
		if err != nil {
			return err
		}
		m := metricsAddr.FindStringSubmatch(line)
		if m == nil {
			return fmt.Errorf("%s: no address in %q", p.name, line)
		}
		h.agentAddr = append(h.agentAddr, m[1])
	}
	return nil
}

var metricsAddr = regexp.MustCompile(`addr="?([^"\s]+)`)
