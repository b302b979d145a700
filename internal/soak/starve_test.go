package soak

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/internal/childproc"
)

// Outside inputs that must not starve the control loop (issue 38, items 6
// and 7), measured on real processes: simswitch and the agent in closed
// loop at 1 s intervals, its recommendations stored, so that the pace of
// each target's intervals is read from the agent db afterwards.
//
//	ECNTUNE_STARVE_CONNS   idle connections held to the agent's metrics: (default 2000)
//	ECNTUNE_STARVE_FOR     how long they are held (default 20s)
//	ECNTUNE_HUNG_FOR       how long one of two switches is stopped (default 15s)
//	ECNTUNE_SOAK_BIN       an ecntune binary to run instead of one built from the tree
//	                       (an older commit's, to measure before a fix)

const starveAgent = `mode: closed-loop
policy: adaptive
interval: 1s
sample-interval: 1s
store-recommendations: true
db: %s
metrics: %s
targets:
%s
guardrails:
  bounds:
    - {rate: 100Gbps, kmin: [5KB, 5MB], kmax: [20KB, 12MB], pmax: [0.01, 1.0]}
  max-step-ratio: 2
  min-hold: 3s
  stale-freeze: 3s
  stale-revert: 10s
`

const starveTarget = `  %s:
    address: %s
    insecure: true
    timeout: 5s
    retry-timer: 1s
    dialect: openconfig
    ports: "*"
    queues: [3]
    fabric-ports: []
`

// A leaf-spine for the second switch process (its target: leaf0).
const starveLeafSpine = `name: starve-leafspine
seed: 4
duration: 2s
topology: {kind: leafspine, leaves: 2, spines: 1, hosts_per_leaf: 4, host_rate: 100Gbps,
           fabric_rate: 100Gbps, link_delay: 1us, buffer: 32MB}
ecn: {kmin: 2000KB, kmax: 2800KB, pmax: 0.01}
pfc: {enabled: true, alpha: 0.125, cable: 5m}
mtu: 1000
workloads:
  - {kind: incast, fanin: 3, size: 300KB, every: 400us}
`

var simBanner = regexp.MustCompile(`gNMI for all switches on (\S+)`)

// starveRig is simswitch processes and one agent over them.
type starveRig struct {
	t        *testing.T
	dir, bin string
	log      *os.File
	db       string
	metrics  string
	sims     map[string]*childproc.Proc // by target
	agent    *childproc.Proc
}

func newStarveRig(t *testing.T) *starveRig {
	if testing.Short() {
		t.Skip("runs simswitch and the agent as processes for tens of seconds")
	}
	dir := t.TempDir()
	bin := os.Getenv("ECNTUNE_SOAK_BIN")
	if bin == "" {
		var err error
		bin, err = childproc.BuildEcntune(dir)
		must(t, err)
	}
	logf, err := os.Create(filepath.Join(dir, "processes.log"))
	must(t, err)
	t.Cleanup(func() { logf.Close() })
	r := &starveRig{t: t, dir: dir, bin: bin, log: logf, db: filepath.Join(dir, "agent.db"),
		metrics: freePort(t), sims: map[string]*childproc.Proc{}}
	t.Cleanup(r.stop)
	return r
}

// sim starts simswitch on scenario text (looping, all switches on one
// port) and returns its gNMI address.
func (r *starveRig) sim(target, scenario string) string {
	t := r.t
	scen := filepath.Join(r.dir, target+".yaml")
	must(t, os.WriteFile(scen, []byte(scenario), 0o644))
	out, err := os.Create(filepath.Join(r.dir, target+"-simswitch.log"))
	must(t, err)
	t.Cleanup(func() { out.Close() })
	p, err := childproc.Start(out, r.bin, "simswitch", "--scenario", scen, "--listen", "127.0.0.1:0",
		"--timescale", "1000", "--loop", "--status-every", "0")
	must(t, err)
	r.sims[target] = p
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(out.Name())
		if m := simBanner.FindSubmatch(b); m != nil {
			return string(m[1])
		}
		if p.Exited() {
			t.Fatalf("simswitch ended: %v: %s", p.Err(), childproc.LastLines(out.Name(), 5))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("simswitch: no gNMI address in 60 s: %s", childproc.LastLines(out.Name(), 5))
	return ""
}

// startAgent runs the agent on the targets (name → address).
func (r *starveRig) startAgent(targets map[string]string) {
	var ts strings.Builder
	for _, name := range []string{"sw0", "leaf0"} {
		if a, ok := targets[name]; ok {
			fmt.Fprintf(&ts, starveTarget, name, a)
		}
	}
	cfg := filepath.Join(r.dir, "agent.yaml")
	must(r.t, os.WriteFile(cfg, []byte(fmt.Sprintf(starveAgent, r.db, r.metrics, ts.String())), 0o644))
	p, err := childproc.Start(r.log, r.bin, "agent", "--config", cfg)
	must(r.t, err)
	r.agent = p
}

func (r *starveRig) stop() {
	if r.agent != nil && !r.agent.Exited() {
		if err := r.agent.Stop(20 * time.Second); err != nil {
			r.t.Error(err)
		}
	}
	for _, p := range r.sims {
		if !p.Exited() {
			_ = p.Stop(20 * time.Second)
		}
	}
}

// intervals reads the times of target's intervals (its stored
// recommendations, one batch an interval) from the stopped agent's db.
func (r *starveRig) intervals(target string) []time.Time {
	j, err := journal.OpenJournalReadOnly(r.db, 5*time.Second)
	must(r.t, err)
	defer j.Close()
	recs, err := j.Recommendations(target, 0, 0)
	must(r.t, err)
	var out []time.Time
	for _, rec := range recs {
		if n := len(out); n == 0 || rec.TimeNs != out[n-1].UnixNano() {
			out = append(out, time.Unix(0, rec.TimeNs))
		}
	}
	return out
}

// pace counts the intervals in [from, to) and their largest gap (from
// the window's start and to its end included).
func pace(ts []time.Time, from, to time.Time) (n int, gap time.Duration) {
	last := from
	for _, x := range ts {
		if x.Before(from) || !x.Before(to) {
			continue
		}
		n++
		gap = max(gap, x.Sub(last))
		last = x
	}
	return n, max(gap, to.Sub(last))
}

// waitAgent lets the agent run for d, failing the test if it ends.
func (r *starveRig) waitAgent(d time.Duration) {
	select {
	case <-r.agent.Done():
		r.t.Fatalf("the agent ended: %v: %s", r.agent.Err(), childproc.LastLines(r.log.Name(), 8))
	case <-time.After(d):
	}
}

// fds counts the open descriptors of process pid.
func fds(pid int) int {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(es)
}

// Many idle connections to the agent's metrics: endpoint (each sends one
// keep-alive request, reads its answer and stays silent; every one the
// agent closes is opened again) leave the control loop at its pace: 1
// interval a second for its switch, no Set failing for want of a
// descriptor. Before the connection cap and timeouts, 20,000 took every
// descriptor of the agent: telemetry was lost and no Set could be sent.
func TestIdleConnectionsLeaveTheLoopAtPace(t *testing.T) {
	conns := childproc.EnvInt(t, "ECNTUNE_STARVE_CONNS", 2000)
	hold := childproc.EnvDur(t, "ECNTUNE_STARVE_FOR", 20*time.Second)
	r := newStarveRig(t)
	addr := r.sim("sw0", soakScenario+"\n")
	r.startAgent(map[string]string{"sw0": addr})
	r.waitAgent(10 * time.Second)

	// Holders in processes of their own (this one's descriptor limit is
	// the agent's), up to 9,000 connections each.
	var holders []*exec.Cmd
	var outs []*strings.Builder
	from := time.Now()
	for left := conns; left > 0; left -= 9000 {
		n := min(left, 9000)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHoldIdleConnections$", "-test.v")
		cmd.Env = append(os.Environ(), fmt.Sprintf("ECNTUNE_HOLD=%s,%d,%s", r.metrics, n, hold))
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		must(t, cmd.Start())
		holders, outs = append(holders, cmd), append(outs, &out)
	}
	peak := 0
	for time.Since(from) < hold {
		peak = max(peak, fds(r.agent.Cmd.Process.Pid))
		time.Sleep(500 * time.Millisecond)
	}
	to := time.Now()
	var stats []string
	for i, h := range holders {
		if err := h.Wait(); err != nil {
			t.Errorf("holder %d: %v\n%s", i, err, outs[i])
		}
		if m := regexp.MustCompile(`held: .*`).FindString(outs[i].String()); m != "" {
			stats = append(stats, m)
		}
	}
	r.waitAgent(3 * time.Second)
	r.stop()
	n, gap := pace(r.intervals("sw0"), from, to)
	logs, _ := os.ReadFile(r.log.Name())
	starved := strings.Count(string(logs), "too many open files")
	t.Logf("%d idle connections held for %v: the agent ran %d intervals of sw0 (1 s each), largest gap %v; "+
		"its descriptors peaked at %d; %d 'too many open files'; holders: %s",
		conns, hold.Round(time.Second), n, gap.Round(10*time.Millisecond), peak, starved, strings.Join(stats, "; "))
	if want := int(to.Sub(from)/time.Second) - 2; n < want || gap > 2500*time.Millisecond {
		t.Errorf("the control loop lost its pace: %d intervals in %v (want at least %d), largest gap %v", n, to.Sub(from).Round(time.Second), want, gap)
	}
	if starved > 0 {
		t.Errorf("the agent ran out of descriptors %d times", starved)
	}
}

// TestHoldIdleConnections is the connection holder of
// TestIdleConnectionsLeaveTheLoopAtPace, run in a process of its own
// (ECNTUNE_HOLD=ADDR,N,DURATION): N connections to ADDR, each sends one
// keep-alive GET /healthz, reads the answer and stays idle; one the
// server closes is opened again, until DURATION has passed.
func TestHoldIdleConnections(t *testing.T) {
	spec := os.Getenv("ECNTUNE_HOLD")
	if spec == "" {
		t.Skip("the holder of TestIdleConnectionsLeaveTheLoopAtPace")
	}
	parts := strings.Split(spec, ",")
	var lim syscall.Rlimit // as many descriptors as the system lets this process have
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	n, _ := strconv.Atoi(parts[1])
	d, _ := time.ParseDuration(parts[2])
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var open, peak, opened, closedByServer, failed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				var dl net.Dialer
				dctx, dcancel := context.WithTimeout(ctx, 3*time.Second)
				c, err := dl.DialContext(dctx, "tcp", parts[0])
				dcancel()
				if err != nil {
					failed.Add(1)
					time.Sleep(100 * time.Millisecond)
					continue
				}
				opened.Add(1)
				if o := open.Add(1); o > peak.Load() {
					peak.Store(o)
				}
				stop := context.AfterFunc(ctx, func() { c.Close() })
				_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: agent\r\n\r\n")
				_, err = io.Copy(io.Discard, bufio.NewReader(c)) // answer, then idle until the server closes
				if ctx.Err() == nil && (err == nil || !isClosedByUs(err)) {
					closedByServer.Add(1)
				}
				stop()
				c.Close()
				open.Add(-1)
			}
		}()
	}
	wg.Wait()
	fmt.Printf("held: %d connections at most at once, %d opened in all, %d closed by the agent, %d dials failed\n",
		peak.Load(), opened.Load(), closedByServer.Load(), failed.Load())
}

func isClosedByUs(err error) bool {
	return strings.Contains(err.Error(), "use of closed network connection")
}

// One switch stopped with SIGSTOP (its connections up, its RPCs never
// answered) delays only itself: the other switch's intervals go on at 1 a
// second. Before, one hung switch's Set, read-back and reconcile read
// blocked the tick for every switch (9 intervals in 60 s).
func TestHungSwitchProcessDelaysOnlyItself(t *testing.T) {
	hung := childproc.EnvDur(t, "ECNTUNE_HUNG_FOR", 15*time.Second)
	r := newStarveRig(t)
	a := r.sim("sw0", soakScenario+"\n")
	b := r.sim("leaf0", starveLeafSpine)
	r.startAgent(map[string]string{"sw0": a, "leaf0": b})
	r.waitAgent(10 * time.Second)
	from := time.Now()
	r.sims["leaf0"].Signal(syscall.SIGSTOP)
	r.waitAgent(hung)
	to := time.Now()
	r.sims["leaf0"].Signal(syscall.SIGCONT)
	r.waitAgent(5 * time.Second)
	r.stop()
	n, gap := pace(r.intervals("sw0"), from, to)
	nb, gapB := pace(r.intervals("leaf0"), from, to)
	t.Logf("leaf0 stopped for %v: sw0 ran %d intervals (1 s each), largest gap %v; leaf0 %d, largest gap %v",
		hung.Round(time.Second), n, gap.Round(10*time.Millisecond), nb, gapB.Round(10*time.Millisecond))
	if want := int(to.Sub(from)/time.Second) - 2; n < want || gap > 2500*time.Millisecond {
		t.Errorf("the hung switch stalled the other: sw0 ran %d intervals in %v (want at least %d), largest gap %v",
			n, to.Sub(from).Round(time.Second), want, gap)
	}
}
