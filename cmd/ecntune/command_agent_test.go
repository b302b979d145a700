package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/gnmiclient"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simswitch"
)

func runAgentCmd(t *testing.T, ctx context.Context, args ...string) (string, string, error) {
	t.Helper()
	c := newAgentCmd()
	var out, errb bytes.Buffer
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(&errb)
	c.SilenceUsage, c.SilenceErrors = true, true
	err := c.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

func TestAgentCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("mode: closed-loop\ntargets:\n  sw0:\n    address: 127.0.0.1:1\n    dialect: eos\n"), 0o644)
	unknownPreset := filepath.Join(dir, "preset.yaml")
	os.WriteFile(unknownPreset, []byte("targets:\n  sw0:\n    address: 127.0.0.1:1\nguardrails:\n  safe-preset: nope\n"), 0o644)
	ctx := context.Background()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{}, "--config is required"},
		{[]string{"--config", bad}, bad + ": line 5: targets.sw0.dialect"},
		{[]string{"--config", unknownPreset}, "guardrails.safe-preset: unknown preset \"nope\""},
		{[]string{"--config", bad, "--log-format", "xml"}, "--log-format"},
		{[]string{"history", "--db", filepath.Join(dir, "none.db")}, "none.db does not exist"},
		{[]string{"history", "--db", filepath.Join(dir, "none.db"), "--since", "yesterday"}, "--since"},
		{[]string{"rollback", "--config", bad}, "--target is required"},
		{[]string{"rollback", "--target", "sw0"}, "--config is required"},
		{[]string{"resume", "--db", filepath.Join(dir, "none.db"), "--by", " "}, "--by: say who asks"},
		{[]string{"pause", "--db", dir}, "agent db " + dir + " is a directory"},
		// a running agent serves at most web.MaxRecommendationsLimit (the
		// request failed with the server's 400 on a limit of its own)
		{[]string{"recommendations", "--url", "http://127.0.0.1:1", "--limit", "200000"}, "--limit 200000: a running agent serves at most the newest 100000"},
	}
	for _, c := range cases {
		_, _, err := runAgentCmd(t, ctx, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
}

// incastStarECN is startIncastStar's ECN setting.
var incastStarECN = simenv.ECN{KminBytes: 2_000_000, KmaxBytes: 2_800_000, Pmax: 0.01}

// startIncastStar serves a 4-host star (sw0) with a 3-to-1 incast every
// 100 us, ECN at 2MB/2.8MB/1% (late, but below XOFF), on loopback until the
// test ends.
func startIncastStar(t *testing.T) (*simswitch.Server, string) {
	t.Helper()
	cfg := simenv.DefaultConfig()
	cfg.Topology = simenv.StarTopology(4, 100e9, simenv.Microsecond)
	cfg.ECN = incastStarECN
	cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Fanin: 3, SizeBytes: 300_000, Every: 100 * simenv.Microsecond, Priority: 3}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, addr, err := simswitch.Start(ctx, simswitch.Config{Sim: cfg, Dialect: gnmipath.OpenConfig, Listen: "127.0.0.1:0", Timescale: 200, Step: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, addr
}

// The CLI end to end: run the closed loop against simswitch, read the
// history, roll back from the audit log.
func TestAgentCommandAgainstSimswitch(t *testing.T) {
	srv, addr := startIncastStar(t)
	start := incastStarECN // the switch's setting before the agent
	dir := t.TempDir()
	db := filepath.Join(dir, "agent.db")
	conf := filepath.Join(dir, "agent.yaml")
	os.WriteFile(conf, []byte(fmt.Sprintf(`mode: closed-loop
policy: static:hpcc
interval: 100ms
store-recommendations: true
db: %s
metrics: ""
targets:
  sw0: {address: %s, insecure: true, retry-timer: 100ms, queues: [3]}
guardrails:
  max-step-ratio: 100
  min-hold: 100ms
  stale-freeze: 2s
  stale-revert: 10s
`, db, addr)), 0o644)
	hpcc := simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, _, err := runAgentCmd(t, ctx, "--config", conf, "--log-level", "warn"); done <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tel, _ := srv.Telemetry("sw0")
		if tel.Ports[3].Queues[3].ECN == hpcc {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("the agent did not set hpcc")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out, _, err := runAgentCmd(t, context.Background(), "history", "--db", db, "--target", "sw0")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[3] == "tune" && f[4] == "applied" {
			n++
		}
	}
	if n != 4 || !strings.Contains(out, "2MB/2.8MB/1%") || !strings.Contains(out, "400KB/1.6MB/20%") {
		t.Fatalf("history (%d applied):\n%s", n, out)
	}
	// What it recommended, after it stopped; and the run drawn.
	out, _, err = runAgentCmd(t, context.Background(), "recommendations", "--db", db, "--target", "sw0", "--changing")
	if err != nil || !strings.Contains(out, "RECOMMENDED") || !strings.Contains(out, "2MB/2.8MB/1%") {
		t.Fatalf("recommendations: %v\n%s", err, out)
	}
	// One row per queue and interval: time, target, port, queue, current
	// → recommended, action, confidence, guard, reason (the closed loop's
	// first interval, unmeasured, is rejected by the guard).
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(strings.Fields(lines[0])) != 11 || !strings.HasPrefix(lines[0], "TIME  ") {
		t.Fatalf("recommendations header: %q", lines[0])
	} else {
		f := strings.Fields(lines[1])
		if f[1] != "sw0" || !strings.HasPrefix(f[2], "Ethernet") || f[3] != "3" || f[4] != "2MB/2.8MB/1%" ||
			!regexp.MustCompile(`2MB/2.8MB/1%( headroom \S+)? → 400KB/1.6MB/20%( headroom \S+)?  +(change  +100%|rejected  +100%  +invalid-observation)  +preset hpcc$`).MatchString(lines[1]) {
			t.Fatalf("recommendations row: %q", lines[1])
		}
	}
	out, _, err = runAgentCmd(t, context.Background(), "recommendations", "--db", db, "--target", "sw0", "--changing", "--json")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); err != nil || len(lines) < 4 {
		t.Fatalf("recommendations --json: %v\n%s", err, out)
	} else {
		for _, l := range lines {
			var r core.Recommendation
			if err := json.Unmarshal([]byte(l), &r); err != nil || r.Key.Target != "sw0" || r.Recommended.KminBytes != 400_000 {
				t.Fatalf("recommendations --json line %q: %v", l, err)
			}
		}
	}
	if out, _, err = runAgentCmd(t, context.Background(), "recommendations", "--db", db, "--target", "sw9"); err != nil || !strings.Contains(out, "no recommendations stored") {
		t.Fatalf("recommendations of another target: %v\n%s", err, out)
	}
	rep := filepath.Join(t.TempDir(), "rep")
	if out, _, err = runAgentCmd(t, context.Background(), "report", "--db", db, "--out", rep); err != nil || !strings.Contains(out, "wrote "+filepath.Join(rep, "index.html")) {
		t.Fatalf("report: %v\n%s", err, out)
	}
	// a --since after every stored interval says when they are, not that
	// the db has none (which sent the operator to the configuration)
	if _, _, err = runAgentCmd(t, context.Background(), "report", "--db", db, "--out", rep+"2", "--since", "1ms"); err == nil ||
		!strings.Contains(err.Error(), "no recommendations stored since ") || !strings.Contains(err.Error(), "stored intervals run from ") {
		t.Fatalf("report --since after the stored intervals: %v", err)
	}
	out, _, err = runAgentCmd(t, context.Background(), "rollback", "--config", conf, "--target", "sw0", "--dry-run")
	if err != nil || strings.Count(out, "-> 2MB/2.8MB/1%") != 4 {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if tel, _ := srv.Telemetry("sw0"); tel.Ports[0].Queues[3].ECN != hpcc {
		t.Fatal("dry-run rollback changed the switch")
	}
	// --all in an incident: every target, sw0 rolled back although sw9
	// (configured, with changes in the log, unreachable) fails, and the
	// command fails naming it.
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	k9 := env.QueueKey{Target: "sw9", Port: "Ethernet0", Queue: 3}
	old9, new9 := env.Setting{KminBytes: 100_000, KmaxBytes: 200_000, Pmax: 0.1}, env.Setting{KminBytes: 300_000, KmaxBytes: 600_000, Pmax: 0.1}
	if _, err := j.Intent([]core.AuditEntry{{TimeNs: time.Now().UnixNano(), Target: "sw9",
		Change: core.Change{Key: k9, Kind: core.KindTune, Old: old9, New: new9}, State: core.StateApplied}}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	// a target the configuration no longer lists keeps what the agent set
	// on it: said (rollback --target of it said only "not a target", and
	// --all passed it over in silence)
	if _, _, err := runAgentCmd(t, context.Background(), "rollback", "--config", conf, "--target", "sw9", "--dry-run"); err == nil ||
		!strings.Contains(err.Error(), "but the agent db has sw9 (1 changes applied") {
		t.Fatalf("rollback of a target no longer configured: %v", err)
	}
	if _, errOut, err := runAgentCmd(t, context.Background(), "rollback", "--config", conf, "--all", "--dry-run"); err != nil ||
		!strings.Contains(errOut, "not rolled back: sw9 (1 changes applied") {
		t.Fatalf("rollback --all with a target no longer configured: %v\n%s", err, errOut)
	}
	confAll := filepath.Join(dir, "agent-all.yaml")
	body, _ := os.ReadFile(conf)
	os.WriteFile(confAll, bytes.Replace(body, []byte("targets:\n"), []byte("targets:\n  sw9: {address: 127.0.0.1:1, insecure: true, timeout: 300ms, queues: [3]}\n"), 1), 0o644)
	out, _, err = runAgentCmd(t, context.Background(), "rollback", "--config", confAll, "--all")
	if err == nil || !strings.Contains(err.Error(), "target sw9") || strings.Contains(err.Error(), "target sw0") ||
		strings.Count(out, ": applied") != 4 || !strings.Contains(out, "target sw0:") || !strings.Contains(out, "target sw9:") {
		t.Fatalf("rollback --all: %v\n%s", err, out)
	}
	for p := 0; p < 4; p++ {
		if tel, _ := srv.Telemetry("sw0"); tel.Ports[p].Queues[3].ECN != start {
			t.Fatalf("port %d after rollback: %+v", p, tel.Ports[p].Queues[3].ECN)
		}
	}
	out, _, _ = runAgentCmd(t, context.Background(), "history", "--db", db, "--json", "--since", "1h", "--target", "sw0")
	if strings.Count(out, "\n") != 8 || !strings.Contains(out, `"kind":"manual"`) {
		t.Fatalf("json history:\n%s", out)
	}
	// Run again, a plain rollback finds nothing to undo (it used to put
	// the change back); --to baseline is already there too.
	for _, args := range [][]string{{}, {"--to", "baseline"}} {
		out, _, err = runAgentCmd(t, context.Background(), append([]string{"rollback", "--config", conf, "--target", "sw0"}, args...)...)
		if err != nil || strings.Contains(out, ": applied") {
			t.Fatalf("rollback %v again: %v\n%s", args, err, out)
		}
		if tel, _ := srv.Telemetry("sw0"); tel.Ports[0].Queues[3].ECN != start {
			t.Fatalf("rollback %v again changed the switch: %+v", args, tel.Ports[0].Queues[3].ECN)
		}
	}
}

// An agent killed after its Set reached the switch and before it judged it
// leaves the audit entry open; `agent rollback`, the agent stopped, judges
// it by what the switch runs and undoes it (before: "nothing to undo").
func TestAgentRollbackUndoesAChangeLeftOpen(t *testing.T) {
	srv, dir, db, conf, k, old, tuned := changeLeftOpen(t, 0)
	out, _, err := runAgentCmd(t, context.Background(), "rollback", "--config", conf, "--target", "sw0", "--dry-run")
	if err != nil || !strings.Contains(out, "audit 1 open, the switch says: reconciled") || !strings.Contains(out, "-> 2MB/2.8MB/1%") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	out, _, err = runAgentCmd(t, context.Background(), "rollback", "--config", conf, "--target", "sw0")
	if err != nil || !strings.Contains(out, "audit 2 sw0/Ethernet0/q3: applied") {
		t.Fatalf("rollback: %v\n%s", err, out)
	}
	if tel, _ := srv.Telemetry("sw0"); tel.Ports[0].Queues[3].ECN != incastStarECN {
		t.Fatalf("after the rollback the switch runs %+v", tel.Ports[0].Queues[3].ECN)
	}
	// a dry run that cannot reach the switch prints the plan without the
	// open entries, and says so; a rollback that cannot fails
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Intent([]core.AuditEntry{{TimeNs: time.Now().UnixNano(), Target: "sw0", Change: core.Change{Key: k, Kind: core.KindTune, Old: old, New: tuned}}}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	gone := filepath.Join(dir, "gone.yaml")
	os.WriteFile(gone, []byte(fmt.Sprintf("mode: closed-loop\npolicy: static:hpcc\ndb: %s\ntargets:\n  sw0: {address: 127.0.0.1:1, insecure: true, timeout: 300ms, queues: [3]}\n", db)), 0o644)
	out, _, err = runAgentCmd(t, context.Background(), "rollback", "--config", gone, "--target", "sw0", "--dry-run")
	if err != nil || !strings.Contains(out, "left out of the plan") {
		t.Fatalf("dry run, switch unreachable: %v\n%s", err, out)
	}
	if _, _, err = runAgentCmd(t, context.Background(), "rollback", "--config", gone, "--target", "sw0"); err == nil || !strings.Contains(err.Error(), "open audit entries") {
		t.Fatalf("rollback, switch unreachable: %v", err)
	}
}

// An open entry whose confirmed commit may still be pending on the switch
// (its writer killed between the Set and the confirm, the rollback
// duration not yet over) is neither judged nor planned around: a dry run
// says the plan is not final, and a rollback refuses and writes nothing,
// since which setting the queue keeps is not known until the switch
// confirms or reverts the commit.
func TestAgentRollbackWaitsForAPendingCommit(t *testing.T) {
	srv, _, db, conf, _, _, tuned := changeLeftOpen(t, time.Hour)
	out, _, err := runAgentCmd(t, context.Background(), "rollback", "--config", conf, "--target", "sw0", "--dry-run")
	if err != nil || !strings.Contains(out, "audit 1 open, left open") || !strings.Contains(out, "not final") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	out, _, err = runAgentCmd(t, context.Background(), "rollback", "--config", conf, "--target", "sw0")
	if err == nil || !strings.Contains(err.Error(), "may still be pending") {
		t.Fatalf("rollback with a commit pending: %v\n%s", err, out)
	}
	want := simenv.ECN{KminBytes: tuned.KminBytes, KmaxBytes: tuned.KmaxBytes, Pmax: tuned.Pmax}
	if tel, _ := srv.Telemetry("sw0"); tel.Ports[0].Queues[3].ECN != want {
		t.Fatalf("a rollback refused wrote the switch: it runs %+v", tel.Ports[0].Queues[3].ECN)
	}
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if es, err := j.Entries("sw0", 0); err != nil || len(es) != 1 || es[0].State != core.StateIntent {
		t.Fatalf("the audit log after the refusal: %+v, %v", es, err)
	}
}

// changeLeftOpen is an agent killed after its Set of sw0's queue 3 reached
// the switch (the simulated incast star) and before it judged it: its
// configuration (conf, db in dir) and one open audit entry old -> tuned,
// whose confirmed commit may be pending for revertBy more (0: not a
// confirmed commit), the switch running tuned.
func changeLeftOpen(t *testing.T, revertBy time.Duration) (srv *simswitch.Server, dir, db, conf string, k env.QueueKey, old, tuned env.Setting) {
	t.Helper()
	srv, addr := startIncastStar(t)
	dir = t.TempDir()
	db = filepath.Join(dir, "agent.db")
	conf = filepath.Join(dir, "agent.yaml")
	os.WriteFile(conf, []byte(fmt.Sprintf("mode: closed-loop\npolicy: static:hpcc\ndb: %s\ntargets:\n  sw0: {address: %s, insecure: true, queues: [3]}\n", db, addr)), 0o644)
	cfg, err := config.Load(conf)
	if err != nil {
		t.Fatal(err)
	}
	k = env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}
	old = env.Setting{KminBytes: incastStarECN.KminBytes, KmaxBytes: incastStarECN.KmaxBytes, Pmax: incastStarECN.Pmax}
	tuned = env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	e := core.AuditEntry{TimeNs: time.Now().UnixNano(), Target: "sw0", Change: core.Change{Key: k, Kind: core.KindTune, Old: old, New: tuned}}
	if revertBy > 0 {
		e.RevertByNs = e.TimeNs + int64(revertBy)
	}
	if _, err := j.Intent([]core.AuditEntry{e}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	sw, err := gnmiclient.Dial(context.Background(), cfg.Targets[0], time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	if err := sw.Apply(context.Background(), map[env.QueueKey]env.Setting{k: tuned}); err != nil { // the Set went out; the agent died
		t.Fatal(err)
	}
	return srv, dir, db, conf, k, old, tuned
}

// A switch that restarted after the agent's changes runs its startup
// setting again: a rollback of the agent's last change (tuned -> mid)
// would write mid, a half-tuned setting, over it. The queue is left
// alone, said in the dry run and the rollback; --force writes it.
func TestAgentRollbackLeavesAQueueTheSwitchMoved(t *testing.T) {
	srv, addr := startIncastStar(t)
	dir := t.TempDir()
	db, conf := filepath.Join(dir, "agent.db"), filepath.Join(dir, "agent.yaml")
	os.WriteFile(conf, []byte(fmt.Sprintf("mode: closed-loop\npolicy: static:hpcc\ndb: %s\ntargets:\n  sw0: {address: %s, insecure: true, queues: [3]}\n", db, addr)), 0o644)
	k := env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}
	boot := env.Setting{KminBytes: incastStarECN.KminBytes, KmaxBytes: incastStarECN.KmaxBytes, Pmax: incastStarECN.Pmax}
	mid := env.Setting{KminBytes: 696_600, KmaxBytes: 774_000, Pmax: 0.02}
	tuned := env.Setting{KminBytes: 696_600, KmaxBytes: 774_000, Pmax: 0.01}
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixNano()
	if _, err := j.Intent([]core.AuditEntry{
		{TimeNs: now - 2e9, Target: "sw0", Change: core.Change{Key: k, Kind: core.KindTune, Old: boot, New: mid}, State: core.StateApplied},
		{TimeNs: now - 1e9, Target: "sw0", Change: core.Change{Key: k, Kind: core.KindTune, Old: mid, New: tuned}, State: core.StateApplied},
	}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	// the switch never ran them (it restarted since): it runs boot
	left := regexp.MustCompile(`sw0/Ethernet0/q3: left alone: the switch runs 2MB/2.8MB/1%( headroom \S+)?, not what the agent left \(restarted, or set by another\); --force writes 696.6KB/774KB/2% over it`)
	out, _, err := runAgentCmd(t, context.Background(), "rollback", "--config", conf, "--target", "sw0", "--dry-run")
	if err != nil || !strings.Contains(out, "696.6KB/774KB/1% -> 696.6KB/774KB/2%") || !left.MatchString(out) {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	out, _, err = runAgentCmd(t, context.Background(), "rollback", "--config", conf, "--target", "sw0")
	if err != nil || !left.MatchString(out) || strings.Contains(out, "applied") {
		t.Fatalf("rollback: %v\n%s", err, out)
	}
	if tel, _ := srv.Telemetry("sw0"); tel.Ports[0].Queues[3].ECN != incastStarECN {
		t.Fatalf("after the rollback the switch runs %+v, want its own %+v", tel.Ports[0].Queues[3].ECN, incastStarECN)
	}
	out, _, err = runAgentCmd(t, context.Background(), "rollback", "--config", conf, "--target", "sw0", "--force")
	if err != nil || !strings.Contains(out, "sw0/Ethernet0/q3: applied") {
		t.Fatalf("rollback --force: %v\n%s", err, out)
	}
	if tel, _ := srv.Telemetry("sw0"); tel.Ports[0].Queues[3].ECN != (simenv.ECN{KminBytes: mid.KminBytes, KmaxBytes: mid.KmaxBytes, Pmax: mid.Pmax}) {
		t.Fatalf("after rollback --force the switch runs %+v", tel.Ports[0].Queues[3].ECN)
	}
}

// --dry-run on a shadow configuration is refused: it has no Sets to leave
// out (it was accepted, and did nothing).
func TestAgentDryRunNeedsClosedLoop(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "agent.yaml")
	os.WriteFile(conf, []byte("mode: shadow\ndb: "+filepath.Join(dir, "a.db")+"\ntargets:\n  sw0: {address: '127.0.0.1:1', insecure: true}\n"), 0o644)
	_, _, err := runAgentCmd(t, context.Background(), "--config", conf, "--dry-run")
	if err == nil || !strings.Contains(err.Error(), "--dry-run runs a closed loop without its Sets; this configuration's mode is shadow") {
		t.Fatalf("got %v", err)
	}
}
