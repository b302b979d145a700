package soak

import (
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/internal/await"
)

// soakDuration is the soak's length: ECNTUNE_SOAK (a duration) or, in the
// normal test suite, a short run.
func soakDuration(t *testing.T) time.Duration {
	if s := os.Getenv("ECNTUNE_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("ECNTUNE_SOAK=%q: %v", s, err)
		}
		return d
	}
	return 25 * time.Second
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// proc is one run of a child process, its output appended to a file.
type proc struct {
	cmd  *exec.Cmd
	done chan error
}

func start(t *testing.T, out *os.File, bin string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p
}

func (p *proc) kill() { _ = p.cmd.Process.Kill(); <-p.done } // SIGKILL

func (p *proc) stop(t *testing.T) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Errorf("%s did not stop on SIGTERM", filepath.Base(p.cmd.Path))
		p.kill()
	}
}

const soakScenario = `name: soak
seed: 3
duration: 2s
topology: {kind: star, hosts: 8, host_rate: 100Gbps, link_delay: 1us, buffer: 32MB}
ecn: {kmin: 2000KB, kmax: 2800KB, pmax: 0.01}
pfc: {enabled: true, alpha: 0.125, cable: 5m}
mtu: 1000
workloads:
  - {kind: incast, fanin: 6, size: 500KB, every: 500us}
  - {kind: incast, fanin: 3, size: 64KB, every: 150us}
`

const soakAgent = `mode: closed-loop
policy: adaptive
interval: 200ms
sample-interval: 200ms
db: %s
metrics: %s
targets:
  sw0:
    address: %s
    insecure: true
    timeout: 2s
    retry-timer: 200ms
    dialect: openconfig
    ports: "*"
    queues: [3]
    fabric-ports: []
guardrails:
  bounds:
    - {rate: 100Gbps, kmin: [5KB, 5MB], kmax: [20KB, 12MB], pmax: [0.01, 1.0]}
  max-step-ratio: 2
  min-hold: %s
  change-budget: 32
  rollback:
    window: 3
    drop-frac: 0
    pause-increase: 0.05
    reward-drop: 0.3
  stale-freeze: 2s
  stale-revert: 10s
`

// TestSoakKill9 runs simswitch and the agent in closed loop as processes,
// kill -9s the agent every few seconds and simswitch every ten to twenty,
// restarting each at once, and then checks the audit log against
// simswitch's set log (see Check): no tuning change inside min-hold, no
// rollback to a setting the switch had not run since it (re)started, and
// every lossless PG at or above its headroom floor at the end.
func TestSoakKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak runs processes for tens of seconds")
	}
	dur := soakDuration(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "ecntune")
	build := exec.Command("go", "build", "-o", bin, "github.com/ecntune/ecntune/cmd/ecntune")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	scen := filepath.Join(dir, "soak.yaml")
	cfg := filepath.Join(dir, "agent.yaml")
	db := filepath.Join(dir, "agent.db")
	setLog := filepath.Join(dir, "sets.jsonl")
	minHold := 3 * time.Second
	if s := os.Getenv("ECNTUNE_SOAK_MINHOLD"); s != "" {
		d, err := time.ParseDuration(s)
		must(t, err)
		minHold = d
	}
	addr := freePort(t)
	must(t, os.WriteFile(scen, []byte(soakScenario), 0o644))
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf(soakAgent, db, freePort(t), addr, minHold)), 0o644))
	logf, err := os.Create(filepath.Join(dir, "processes.log"))
	must(t, err)
	defer logf.Close()

	startSwitch := func() *proc {
		return start(t, logf, bin, "simswitch", "--scenario", scen, "--listen", addr, "--timescale", "1000",
			"--set-log", setLog, "--status-every", "0")
	}
	startAgent := func() *proc { return start(t, logf, bin, "agent", "--config", cfg) }
	sw := startSwitch()
	// The listener first, or the agent's first dial waits a retry.
	await.Until(t, 30*time.Second, "simswitch listening on "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	ag := startAgent()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	end := time.Now().Add(dur)
	nextAgent := time.Now().Add(time.Duration(2000+rng.Intn(4000)) * time.Millisecond)
	nextSwitch := time.Now().Add(time.Duration(8000+rng.Intn(8000)) * time.Millisecond)
	agentKills, switchKills := 0, 0
	for time.Now().Before(end) {
		time.Sleep(50 * time.Millisecond)
		if now := time.Now(); now.After(nextAgent) {
			ag.kill()
			agentKills++
			time.Sleep(time.Duration(rng.Intn(500)) * time.Millisecond)
			ag = startAgent()
			nextAgent = time.Now().Add(time.Duration(2000+rng.Intn(4000)) * time.Millisecond)
		}
		if now := time.Now(); now.After(nextSwitch) {
			sw.kill()
			switchKills++
			time.Sleep(time.Duration(rng.Intn(500)) * time.Millisecond)
			sw = startSwitch()
			nextSwitch = time.Now().Add(time.Duration(8000+rng.Intn(8000)) * time.Millisecond)
		}
	}
	// Let the last runs settle (a change on probation, a repair) before
	// the end state is judged.
	time.Sleep(3 * time.Second)
	ag.stop(t)
	sw.stop(t)

	j, err := journal.OpenJournalReadOnly(db, 5*time.Second)
	must(t, err)
	entries, err := j.Entries("", 0)
	j.Close()
	must(t, err)
	f, err := os.Open(setLog)
	must(t, err)
	log, err := ReadSetLog(f)
	f.Close()
	must(t, err)
	r := Check(entries, log, minHold, 200*time.Millisecond) // soakAgent's interval
	r.StepViolations = Steps(entries, log, 2)               // soakAgent's max-step-ratio, dwell 1
	t.Logf("soak %v: agent killed %d times, simswitch %d times; %s", dur, agentKills, switchKills, r)
	for _, v := range r.All() {
		t.Error(v)
	}
	if r.Tunes == 0 || agentKills < 2 {
		out, _ := os.ReadFile(logf.Name())
		t.Fatalf("the soak exercised nothing (%d tunes, %d agent kills); process output:\n%s", r.Tunes, agentKills, tail(string(out), 4000))
	}
	if t.Failed() {
		out, _ := os.ReadFile(logf.Name())
		t.Logf("process output (end):\n%s", tail(string(out), 4000))
	}
	if keep := os.Getenv("ECNTUNE_SOAK_KEEP"); keep != "" {
		// the evidence, for a closer look: the agent db, the set log and
		// the processes' output
		must(t, os.MkdirAll(keep, 0o755))
		for _, f := range []string{db, setLog, logf.Name(), cfg, scen} {
			b, err := os.ReadFile(f)
			must(t, err)
			must(t, os.WriteFile(filepath.Join(keep, filepath.Base(f)), b, 0o644))
		}
		t.Logf("evidence kept in %s", keep)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := strings.IndexByte(s[len(s)-n:], '\n')
	return s[len(s)-n+i+1:]
}
