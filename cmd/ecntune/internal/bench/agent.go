package bench

// The agent's scale measured end to end over gNMI (ecntune bench agent).
//
// The simulated switches run in a child process (the ecntune binary again,
// in a hidden serve mode: ServeFabric), so that the getrusage CPU time and
// the Go heap of this process are the agent's alone: no subtraction of a
// simulator share is needed. The child answers "cpu" on its stdin with its
// own CPU time, which the report gives as the switch side's cost.
//
// The jobs, one file each: the fabric and its serving child
// (agent_fabric.go), the agent wired through agent.Open with probes
// around its policy, observer and switches (agent_wiring.go), the
// measurement loop (agent_measure.go) and the result (agent_result.go).

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
)

// AgentOptions are the options of one measurement. The fabric's (with JSON
// names) go to the serving child in its environment (ServeEnv).
type AgentOptions struct {
	Pods         int           `json:"pods"`
	Leaves       int           `json:"leaves_per_pod"`
	Spines       int           `json:"spines_per_pod"`
	HostsPerLeaf int           `json:"hosts_per_leaf"`
	Load         float64       `json:"load"`
	Timescale    float64       `json:"timescale"`
	Step         time.Duration `json:"step_ns"`
	Seed         uint64        `json:"seed"`
	InitialECN   simenv.ECN    `json:"initial_ecn"`

	Interval     time.Duration `json:"-"`
	Intervals    int           `json:"-"`
	Warmup       int           `json:"-"`
	Mode         config.Mode   `json:"-"`
	Policy       string        `json:"-"`
	Encoding     string        `json:"-"`
	ChangeBudget int           `json:"-"`
	LogLevel     slog.Level    `json:"-"`
	Log          io.Writer     `json:"-"`
	// Progress, when set, is called with 0 once the agent runs (the
	// switches are served and it is connected) and then with each
	// interval it has decided, of Warmup+Intervals.
	Progress func(done, total int) `json:"-"`
}

// DefaultAgentOptions are the command's defaults (InitialECN is left to
// InitialECN of the policy).
func DefaultAgentOptions() AgentOptions {
	return AgentOptions{Pods: 2, Leaves: 32, Spines: 18, HostsPerLeaf: 14, Load: 0.01, Timescale: 20000,
		Step: 100 * time.Millisecond, Seed: 1, Interval: time.Second, Intervals: 10, Warmup: 3,
		Mode: config.ModeClosedLoop, Policy: policy.StaticPrefix + "hpcc", Encoding: "json_ietf", ChangeBudget: 64,
		LogLevel: slog.LevelWarn}
}

// checkFabric validates the fabric options; errors name the flag.
func (o AgentOptions) checkFabric() error {
	switch {
	case o.Pods < 1:
		return fmt.Errorf("--pods %d: must be at least 1", o.Pods)
	case o.Leaves < 1:
		return fmt.Errorf("--leaves %d: must be at least 1", o.Leaves)
	case o.Spines < 1:
		return fmt.Errorf("--spines %d: must be at least 1", o.Spines)
	case o.HostsPerLeaf < 1 || o.Leaves*o.HostsPerLeaf < 2:
		return fmt.Errorf("--hosts-per-leaf %d: each pod needs at least 2 hosts and every leaf at least 1", o.HostsPerLeaf)
	case !(o.Load > 0 && o.Load <= 1):
		return fmt.Errorf("--load %g: must be in (0, 1]", o.Load)
	case !(o.Timescale > 0) || math.IsInf(o.Timescale, 0):
		return fmt.Errorf("--timescale %g: must be > 0 (wall seconds per simulated second)", o.Timescale)
	case o.Step <= 0:
		return fmt.Errorf("--step %v: must be positive", o.Step)
	}
	return o.InitialECN.Validate()
}

// check validates all the options; errors name the flag.
func (o AgentOptions) check() error {
	if err := o.checkFabric(); err != nil {
		return err
	}
	switch {
	case o.Interval < time.Millisecond:
		return fmt.Errorf("--interval %v: must be at least 1ms", o.Interval)
	case o.Intervals < 1:
		return fmt.Errorf("--intervals %d: must be at least 1", o.Intervals)
	case o.Warmup < 2:
		return fmt.Errorf("--warmup %d: must be at least 2 (the first interval has no rates yet)", o.Warmup)
	case o.Mode != config.ModeShadow && o.Mode != config.ModeClosedLoop:
		return fmt.Errorf("--mode %q: want shadow or closed-loop", o.Mode)
	case o.ChangeBudget < 1:
		return fmt.Errorf("--change-budget %d: must be at least 1", o.ChangeBudget)
	}
	switch o.Encoding {
	case "json_ietf", "json", "proto":
	default:
		return fmt.Errorf("--encoding %q: want json_ietf, json or proto", o.Encoding)
	}
	return nil
}

// InitialECN is the switches' starting setting for a policy spec: 1.5x the
// thresholds of the policy's preset (static:NAME), else of the hpcc preset,
// so that the policy changes every queue within the guard's max step of 2x.
func InitialECN(spec string) simenv.ECN {
	name, ok := strings.CutPrefix(spec, policy.StaticPrefix)
	p, err := policy.Preset(name)
	if !ok || err != nil {
		p, _ = policy.Preset("hpcc")
	}
	s := p.Setting(units.RefRateBps)
	return simenv.ECN{KminBytes: s.KminBytes * 3 / 2, KmaxBytes: s.KmaxBytes * 3 / 2, Pmax: s.Pmax}
}

// RunAgent serves the fabric from child (this binary in its serve mode,
// see ChildCommand), runs the agent against it over gNMI and measures
// Warmup+Intervals intervals.
func RunAgent(ctx context.Context, o AgentOptions, child *exec.Cmd) (*AgentResult, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	heapBase := liveHeap()
	// The policy package's Lookup: no model registry.
	pol, err := policy.Lookup(o.Policy)
	if err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	c, err := startChild(child, o)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	res := newAgentResult(o, pol.Name(), c.hello, heapBase)

	dir, err := os.MkdirTemp("", "ecntune-bench-agent-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	run, err := startAgent(ctx, o, c.hello, pol, filepath.Join(dir, "agent.db"))
	if err != nil {
		return nil, err
	}
	defer run.close()
	w, err := measure(ctx, o, run, c)
	if err != nil {
		return nil, err
	}
	if err := run.stop(); err != nil {
		return nil, err
	}
	if err := c.stop(); err != nil {
		return nil, fmt.Errorf("simulated switches: %v %s", err, strings.TrimSpace(c.stderr.String()))
	}
	if err := res.measured(o, w, run); err != nil {
		return nil, err
	}
	return res, nil
}
