package fleetsoak

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ecntune/ecntune/internal/childproc"
	"github.com/ecntune/ecntune/internal/etcdrun"
)

// Config is a fleet soak's shape.
type Config struct {
	Dir      string // working directory: logs, dbs, the set log, the report
	Bin      string // the ecntune binary (Build makes one)
	Cycles   int    // fault cycles (default 4)
	Members  int    // agents (default 3)
	Switches int    // simulated switches (default 30, at least 3)
	TTL      time.Duration
	Interval time.Duration // the agents' loop interval (default 500 ms)
	MinHold  time.Duration // the guard's min-hold (default 2 s)
	Settle   time.Duration // the loop runs this long between faults (default 2 s)
	// Kinds are the faults, taken in turn (default every kind: Kill,
	// Pause, Cut, Leader).
	Kinds []string
	// Fence runs simswitch with --fence: stale tokens refused.
	Fence bool
	Seed  int64
	Logf  func(format string, args ...any)
}

// Fault kinds.
const (
	Kill   = "kill"   // kill -9 an agent, restart it after its switches moved
	Pause  = "pause"  // SIGSTOP an agent past its lease, then SIGCONT
	Cut    = "cut"    // cut an agent from etcd past its lease, then restore
	Leader = "leader" // stop etcd's Raft leader member, then restart it
)

func (c *Config) defaults() {
	if c.Cycles <= 0 {
		c.Cycles = 4
	}
	if c.Members <= 0 {
		c.Members = 3
	}
	if c.Switches < 3 {
		c.Switches = 30
	}
	if c.TTL <= 0 {
		c.TTL = 5 * time.Second
	}
	if c.Interval <= 0 {
		c.Interval = 500 * time.Millisecond
	}
	if c.MinHold <= 0 {
		c.MinHold = 2 * time.Second
	}
	if c.Settle <= 0 {
		c.Settle = 2 * time.Second
	}
	if len(c.Kinds) == 0 {
		c.Kinds = []string{Kill, Pause, Cut, Leader}
	}
	if c.Seed == 0 {
		c.Seed = time.Now().UnixNano()
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// Build compiles the ecntune binary into dir.
func Build(dir string) (string, error) { return childproc.BuildEcntune(dir) }

// fault is one fault injected: its kind, its victim (an agent's member id,
// or an etcd member's name), and when it began and was undone.
type fault struct {
	Kind, Victim string
	At, Undone   time.Time
}

// harness is a running fleet soak.
type harness struct {
	cfg      Config
	rng      *rand.Rand
	etcd     *etcdrun.Cluster
	cli      *clientv3.Client
	hist     *history
	proxies  []*Proxy
	names    []string // member ids
	cfgs     []string // agent configuration files
	dbs      []string
	outs     []*os.File // each agent's output, every run appended
	swOut    *os.File
	setLog   string
	sw       *proc
	switches []switchTarget

	mu       sync.Mutex
	agents   []*proc
	handling map[int]bool // agents a fault owns: not restarted by ensure
	faults   []fault
	notes    []string
	restarts int
	rejoins  int       // paused or cut agents that joined again by themselves
	ended    time.Time // when the cycles ended (the agents stop after)
	quick    int       // agents that ended within 5 s of their start
	broken   error     // the run cannot go on
}

func (h *harness) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	h.mu.Lock()
	h.notes = append(h.notes, time.Now().Format("15:04:05.000")+" "+s)
	h.mu.Unlock()
	h.cfg.Logf("fleetsoak: %s", s)
}

// Run runs a fleet soak and checks it: see the package comment.
func Run(cfg Config) (*Report, error) {
	cfg.defaults()
	h := &harness{cfg: cfg, rng: rand.New(rand.NewSource(cfg.Seed)), handling: map[int]bool{}}
	began := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := h.setUp(ctx); err != nil {
		h.tearDown()
		return nil, err
	}
	runErr := h.cycles(ctx)
	time.Sleep(cfg.Settle + time.Second) // let the last changes land
	h.ended = time.Now()
	h.tearDown()
	cancel()
	if runErr != nil {
		h.note("the run stopped early: %v", runErr)
	}
	r, err := h.check()
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	r.Wall = time.Since(began)
	if err := os.WriteFile(filepath.Join(cfg.Dir, "report.txt"), []byte(r.String()), 0o644); err != nil {
		return r, errors.Join(runErr, err)
	}
	return r, runErr
}

// setUp starts etcd, the proxies, simswitch and the agents, and waits
// until every switch has an owner.
func (h *harness) setUp(ctx context.Context) error {
	c := h.cfg
	var err error
	if h.etcd, err = etcdrun.Start(filepath.Join(c.Dir, "etcd"), 3); err != nil {
		return err
	}
	h.cli, err = clientv3.New(clientv3.Config{Endpoints: h.etcd.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	if h.hist, err = watchHistory(ctx, h.cli, "soak"); err != nil {
		return err
	}
	addr, err := h.startSwitches()
	if err != nil {
		return err
	}
	for i := range c.Members {
		if err := h.addMember(i, addr); err != nil {
			return err
		}
	}
	h.agents = make([]*proc, c.Members)
	for i := range c.Members {
		if err := h.startAgent(i); err != nil {
			return err
		}
	}
	if !h.until(ctx, 60*time.Second, func() bool { return len(h.hist.heldAt(time.Now())) == c.Switches }) {
		return fmt.Errorf("fleetsoak: in 60 s only %d of %d switches got an owner (%v); see %s", len(h.hist.heldAt(time.Now())), c.Switches, h.err(), c.Dir)
	}
	h.cfg.Logf("fleetsoak: %d agents own the %d switches", c.Members, c.Switches)
	return nil
}

// tearDown stops the agents, simswitch, the proxies and etcd (each that
// runs).
func (h *harness) tearDown() {
	h.mu.Lock()
	agents := append([]*proc(nil), h.agents...)
	h.mu.Unlock()
	for i, a := range agents {
		if a != nil && !a.Exited() {
			if err := a.Stop(20 * time.Second); err != nil {
				h.note("agent %s: %v", h.names[i], err)
			}
		}
	}
	if h.sw != nil {
		if err := h.sw.Stop(20 * time.Second); err != nil {
			h.note("simswitch: %v", err)
		}
	}
	for _, p := range h.proxies {
		p.Close()
	}
	if h.cli != nil {
		h.cli.Close()
	}
	if h.etcd != nil {
		h.etcd.Close()
	}
	for _, f := range append(h.outs, h.swOut) {
		if f != nil {
			f.Close()
		}
	}
}

// until polls ok every 100 ms for at most d, restarting agents that ended
// on their own meanwhile (ensure).
func (h *harness) until(ctx context.Context, d time.Duration, ok func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) && ctx.Err() == nil && h.err() == nil {
		if ok() {
			return true
		}
		h.ensure()
		time.Sleep(100 * time.Millisecond)
	}
	return ok()
}

func (h *harness) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.broken
}

// ensure restarts an agent that ended when no fault made it (noted: an
// agent should not end by itself outside a fault).
func (h *harness) ensure() {
	for i := range h.names {
		h.mu.Lock()
		a, busy := h.agents[i], h.handling[i]
		h.mu.Unlock()
		if busy || a == nil || !a.Exited() {
			continue
		}
		if time.Since(a.Started) < 5*time.Second {
			h.quick++
		}
		if h.quick > 5 {
			h.mu.Lock()
			h.broken = fmt.Errorf("agents end at start again and again: %s: %s", h.names[i], lastLines(h.outs[i].Name(), 1))
			h.mu.Unlock()
			return
		}
		h.note("agent %s ended outside a fault (%v): %s; restarted", h.names[i], a.Err(), lastLines(h.outs[i].Name(), 3))
		if err := h.startAgent(i); err != nil {
			h.note("agent %s: restart: %v", h.names[i], err)
		}
	}
}
