package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/ecntune/ecntune/internal/cputime"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simswitch"
)

// ServeEnv carries the fabric options (JSON) to the serving child.
const ServeEnv = "ECNTUNE_BENCH_AGENT_SERVE"

// lightCDF is a short-flow size distribution (bytes, percent of flows at
// or below): most flows small, a tail to 2 MB.
var lightCDF = []simenv.CDFPoint{{Bytes: 1_000, Percent: 0}, {Bytes: 10_000, Percent: 50},
	{Bytes: 100_000, Percent: 80}, {Bytes: 1_000_000, Percent: 97}, {Bytes: 2_000_000, Percent: 100}}

// Fabric builds the fabric: Pods independent two-tier Clos pods, each of
// Leaves leaves fully meshed to Spines spines, HostsPerLeaf hosts per leaf,
// every link 100 Gb/s. A leaf has HostsPerLeaf+Spines ports, a spine
// Leaves ports (the default 32 leaves x 18 spines x 14 hosts gives every
// switch 32 ports, 50 switches per pod). Each pod carries two light cdf
// workloads of its own hosts, on lossless priorities 3 and 4.
func Fabric(o AgentOptions) simenv.Config {
	cfg := simenv.DefaultConfig()
	cfg.Name = "bench-agent"
	cfg.Seed = o.Seed
	cfg.ECN = o.InitialECN
	// The runner keeps going past Duration; flows are generated up to it.
	cfg.Duration = simenv.Time(float64(simenv.FromDuration(time.Hour)) / o.Timescale)
	const rate = units.RefRateBps
	delay := simenv.Microsecond
	t := simenv.Topology{Kind: "leafspine-pods"}
	nHosts := o.Pods * o.Leaves * o.HostsPerLeaf
	for h := 0; h < nHosts; h++ {
		t.Nodes = append(t.Nodes, simenv.Node{Name: fmt.Sprintf("host%d", h)})
	}
	leaf0 := len(t.Nodes)
	for l := 0; l < o.Pods*o.Leaves; l++ {
		t.Nodes = append(t.Nodes, simenv.Node{Name: fmt.Sprintf("leaf%d", l), Switch: true})
	}
	spine0 := len(t.Nodes)
	for s := 0; s < o.Pods*o.Spines; s++ {
		t.Nodes = append(t.Nodes, simenv.Node{Name: fmt.Sprintf("spine%d", s), Switch: true})
	}
	for p := 0; p < o.Pods; p++ {
		var hosts []int
		for l := p * o.Leaves; l < (p+1)*o.Leaves; l++ {
			for h := 0; h < o.HostsPerLeaf; h++ {
				host := l*o.HostsPerLeaf + h
				hosts = append(hosts, host)
				t.Links = append(t.Links, simenv.Link{A: leaf0 + l, B: host, RateBps: rate, Delay: delay})
			}
			for s := p * o.Spines; s < (p+1)*o.Spines; s++ {
				t.Links = append(t.Links, simenv.Link{A: leaf0 + l, B: spine0 + s, RateBps: rate, Delay: delay})
			}
		}
		for _, prio := range []int{3, 4} {
			cfg.Workloads = append(cfg.Workloads, simenv.Workload{Kind: simenv.WorkloadCDF, CDF: lightCDF,
				Load: o.Load, Priority: prio, Hosts: hosts})
		}
	}
	cfg.Topology = t
	return cfg
}

// fabricHello is the serving child's first line.
type fabricHello struct {
	Addr     string         `json:"addr"`
	Switches map[string]int `json:"switches"` // name → ports
	Lossless []int          `json:"lossless"`
	Hosts    int            `json:"hosts"`
}

// fabricProbe answers a "cpu" line.
type fabricProbe struct {
	CPUNs int64 `json:"cpu_ns"`
	SimPs int64 `json:"sim_ps"`
	LagPs int64 `json:"lag_ps"`
}

// ServeFabric is the child: it serves the fabric of the options in the
// environment (ServeEnv) on 127.0.0.1 (port 0), says where on out,
// answers "cpu" lines of in, and stops when in closes.
func ServeFabric(ctx context.Context, in io.Reader, out io.Writer) error {
	var o AgentOptions
	if err := json.Unmarshal([]byte(os.Getenv(ServeEnv)), &o); err != nil {
		return fmt.Errorf("%s: %v", ServeEnv, err)
	}
	if err := o.checkFabric(); err != nil {
		return err
	}
	cfg := Fabric(o)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, addr, err := simswitch.Start(ctx, simswitch.Config{Sim: cfg, Listen: "127.0.0.1:0", Timescale: o.Timescale, Step: o.Step})
	if err != nil {
		return err
	}
	defer srv.Close()
	h := fabricHello{Addr: addr, Switches: map[string]int{}, Lossless: srv.LosslessPriorities(),
		Hosts: o.Pods * o.Leaves * o.HostsPerLeaf}
	for _, s := range srv.Switches() {
		h.Switches[s.Name] = len(s.Ports)
	}
	enc := json.NewEncoder(out)
	if err := enc.Encode(h); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "cpu" {
			continue
		}
		now, lag := srv.Status()
		if err := enc.Encode(fabricProbe{CPUNs: cputime.Process().Nanoseconds(), SimPs: int64(now), LagPs: int64(lag)}); err != nil {
			return err
		}
	}
	return nil
}

// ChildCommand runs exe with args, at the lowest CPU priority (nice 19)
// when nice is set and the system has the nice command: the switch side
// then yields the CPU to the agent on a small machine and falls behind
// instead of starving it.
func ChildCommand(ctx context.Context, nice bool, exe string, args ...string) *exec.Cmd {
	if nice {
		if n, err := exec.LookPath("nice"); err == nil {
			return exec.CommandContext(ctx, n, append([]string{"-n", "19", exe}, args...)...)
		}
	}
	return exec.CommandContext(ctx, exe, args...)
}

// child is the running serving child.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr *strings.Builder
	hello  fabricHello

	stopped bool
	stopErr error
}

// startChild starts cmd (whose environment gets the options) and reads
// its hello.
func startChild(cmd *exec.Cmd, o AgentOptions) (*child, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	cmd.Env = append(os.Environ(), ServeEnv+"="+string(b))
	c := &child{cmd: cmd, stderr: &strings.Builder{}}
	cmd.Stderr = c.stderr
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the simulated switches (%s): %v", cmd.Path, err)
	}
	c.lines = bufio.NewScanner(stdout)
	c.lines.Buffer(make([]byte, 1<<20), 1<<24)
	if err := c.read(&c.hello); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *child) read(v any) error {
	if !c.lines.Scan() {
		return fmt.Errorf("simulated switches ended: %v %s", c.lines.Err(), strings.TrimSpace(c.stderr.String()))
	}
	if err := json.Unmarshal(c.lines.Bytes(), v); err != nil {
		return fmt.Errorf("simulated switches said %q: %v", c.lines.Text(), err)
	}
	return nil
}

// probe asks the child for its CPU time and the simulator's progress.
func (c *child) probe() (fabricProbe, error) {
	var p fabricProbe
	if _, err := io.WriteString(c.stdin, "cpu\n"); err != nil {
		return p, err
	}
	return p, c.read(&p)
}

// stop closes the child's stdin (it exits) and waits for it; later calls
// return the first one's result.
func (c *child) stop() error {
	if c.stopped {
		return c.stopErr
	}
	c.stopped = true
	c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case c.stopErr = <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		c.stopErr = <-done
	}
	return c.stopErr
}
