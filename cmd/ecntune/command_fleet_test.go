package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/fleet"
	"github.com/ecntune/ecntune/agent/gnmiclient"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/etcdtest"
)

func runFleet(t *testing.T, args ...string) (string, error) {
	t.Helper()
	c := newFleetCmd()
	var out bytes.Buffer
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(io.Discard)
	c.SilenceUsage, c.SilenceErrors = true, true
	err := c.Execute()
	return out.String(), err
}

// fleet status shows the members, the leader and the owners; fleet drain
// moves a member's switches away and back; fleet rebalance gets the
// leader's answer; fleet resign hands the lead over; a configuration
// without fleet: says so.
func TestFleetCommands(t *testing.T) {
	ep := etcdtest.Start(t)
	var nodes []*fleet.Node
	for _, id := range []string{"a", "b"} {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		n, err := fleet.Join(context.Background(), cli, fleet.Config{Name: "dc1", Member: fleet.Member{ID: id},
			Switches: []fleet.Switch{{Name: "leaf0"}, {Name: "leaf1"}, {Name: "leaf2"}, {Name: "leaf3"}}, TTL: 2 * time.Second,
			Takeover: 400 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		nodes = append(nodes, n)
	}
	dir := t.TempDir()
	cfg := writeFleetConfig(t, dir, ep)
	deadline := time.Now().Add(15 * time.Second)
	for len(nodes[0].Owned())+len(nodes[1].Owned()) != 4 {
		if time.Now().After(deadline) {
			t.Fatal("switches not owned in 15 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	out, err := runFleet(t, "status", "--config", cfg)
	if err != nil || !strings.Contains(out, "fleet dc1: 2 members") || !strings.Contains(out, "leaf3") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	// a rollback beside the running members is refused; with the fleet
	// paused it goes on (here to the missing db)
	ctx := context.Background()
	if _, _, err := runAgentCmd(t, ctx, "rollback", "--config", cfg, "--target", "leaf0"); err == nil ||
		!regexp.MustCompile(`fleet dc1 is running and its members own leaf0 \(member (a|b)\): a rollback now would write beside them; pause the fleet first`).MatchString(err.Error()) {
		t.Fatalf("rollback in a running fleet: %v", err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if err := fleet.SetPause(ctx, cli, "dc1", fleet.Pause{Paused: true, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runAgentCmd(t, ctx, "rollback", "--config", cfg, "--target", "leaf0"); err == nil || strings.Contains(err.Error(), "pause the fleet first") {
		t.Fatalf("rollback in a paused fleet: %v", err)
	}
	if err := fleet.SetPause(ctx, cli, "dc1", fleet.Pause{}); err != nil {
		t.Fatal(err)
	}
	if out, err = runFleet(t, "drain", "--config", cfg, "--member", "a"); err != nil || !strings.Contains(out, "member a of fleet dc1 is draining") {
		t.Fatalf("drain: %v\n%s", err, out)
	}
	deadline = time.Now().Add(20 * time.Second)
	for len(nodes[1].Owned()) != 4 {
		if time.Now().After(deadline) {
			t.Fatal("a's switches did not move to b")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out, err = runFleet(t, "status", "--config", cfg); err != nil || !strings.Contains(out, "draining") {
		t.Fatalf("status after drain: %v\n%s", err, out)
	}
	// undo the drain and rebalance: a takes switches back; the leader hands the lead over
	if out, err = runFleet(t, "drain", "--config", cfg, "--member", "a", "--undo"); err != nil || !strings.Contains(out, "active again") {
		t.Fatalf("drain --undo: %v\n%s", err, out)
	}
	if out, err = runFleet(t, "rebalance", "--config", cfg); err != nil || !strings.Contains(out, "placed 2 members' switches") {
		t.Fatalf("rebalance: %v\n%s", err, out)
	}
	if out, err = runFleet(t, "resign", "--config", cfg); err != nil || !regexp.MustCompile(`leader (a|b) resigned; (a|b) leads`).MatchString(out) {
		t.Fatalf("resign: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	if _, err = runFleet(t, "drain", "--config", cfg, "--member", "zz"); err == nil || !strings.Contains(err.Error(), `no member "zz"`) {
		t.Fatalf("drain of an unknown member: %v", err)
	}
	noFleet := filepath.Join(dir, "plain.yaml")
	os.WriteFile(noFleet, []byte("targets:\n  leaf0: {address: 127.0.0.1:1, insecure: true}\n"), 0o644)
	if _, err := runFleet(t, "status", "--config", noFleet); err == nil || !strings.Contains(err.Error(), "has no fleet: key") {
		t.Fatalf("no fleet: %v", err)
	}
}

// With etcd not answering, each fleet command names the endpoints it
// tried (it said "context deadline exceeded" alone).
func TestFleetCommandsNameAnEtcdThatDoesNotAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg := writeFleetConfig(t, t.TempDir(), ep)
	for _, args := range [][]string{{"status"}, {"resign"}, {"rebalance"}} { // status.go and request.go: drain shares status.go's
		_, err := runFleet(t, append(args, "--config", cfg)...)
		if err == nil || !strings.Contains(err.Error(), "etcd at "+ep+" did not answer") {
			t.Errorf("fleet %v: %v", args, err)
		}
	}
	// agent history --fleet and a rollback's read of the fleet's audit
	// too (they said "context deadline exceeded" alone)
	if _, _, err := runAgentCmd(t, context.Background(), "history", "--fleet", "--config", cfg); err == nil || !strings.Contains(err.Error(), "etcd at "+ep+" did not answer") {
		t.Errorf("agent history --fleet: %v", err)
	}
}

// writeFleetConfig writes, in dir, a closed-loop configuration of one
// target whose fleet dc1 (member a) is at etcd endpoint ep.
func writeFleetConfig(t *testing.T, dir, ep string) string {
	t.Helper()
	cfg := filepath.Join(dir, "agent.yaml")
	body := fmt.Sprintf("mode: closed-loop\ndb: %s\ntargets:\n  leaf0: {address: 127.0.0.1:1, insecure: true}\nfleet: {endpoints: [%s], name: dc1, member: a}\n",
		filepath.Join(dir, "a.db"), ep)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// After a failover, agent rollback --to baseline on the new owner restores
// what the switch ran before any member's first change: the previous
// owner's changes are in the fleet's audit in etcd, not in this member's
// log (the plan said kmin 400 KB -> 500 KB "back to the baseline": the
// setting the previous owner left).
func TestRollbackToBaselineAfterAFailover(t *testing.T) {
	ep := etcdtest.Start(t)
	dir := t.TempDir()
	cfg := writeFleetConfig(t, dir, ep)
	k := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	base := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.05}
	mid := env.Setting{KminBytes: 500_000, KmaxBytes: 1_600_000, Pmax: 0.05}
	now := time.Now().Add(-time.Minute).UnixNano()
	// b, the previous owner, tuned 400 KB -> 500 KB: in etcd only
	byB := core.AuditEntry{Seq: 1, TimeNs: now, Target: "leaf0", Writer: "b", Token: 1, State: core.StateApplied,
		Change: core.Change{Key: k, Kind: core.KindTune, Old: base, New: mid}}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	b, _ := json.Marshal(byB)
	if _, err := cli.Put(context.Background(), fmt.Sprintf("/ecntune/fleet/dc1/audit/leaf0/%019d-b-Ethernet0-3", now), string(b)); err != nil {
		t.Fatal(err)
	}
	// a, the new owner, tuned it back to 400 KB: in a's log (and etcd)
	j, err := journal.OpenJournal(filepath.Join(dir, "a.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w, err := j.Intent([]core.AuditEntry{{TimeNs: now + int64(time.Second), Target: "leaf0", Writer: "a", Token: 2,
		Change: core.Change{Key: k, Kind: core.KindTune, Old: mid, New: base}}})
	if err == nil {
		err = j.Resolve(w[0].Seq, core.StateApplied, &base, "", now+int64(2*time.Second))
	}
	j.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runAgentCmd(t, context.Background(), "rollback", "--config", cfg, "--target", "leaf0", "--to", "baseline", "--dry-run")
	if err != nil || !strings.Contains(out, "nothing to undo") {
		t.Fatalf("--to baseline after a failover: %v\n%s", err, out)
	}
	// a plain rollback undoes a's change, the last one
	out, _, err = runAgentCmd(t, context.Background(), "rollback", "--config", cfg, "--target", "leaf0", "--dry-run")
	if err != nil || !strings.Contains(out, "undo audit entry 1 of member a (tune)") || !strings.Contains(out, fmtSetting(base)+" -> "+fmtSetting(mid)) {
		t.Fatalf("plain rollback after a failover: %v\n%s", err, out)
	}
	// a third change by a: the baseline is b's Old, named as b's entry
	if err := writeEntry(filepath.Join(dir, "a.db"), core.AuditEntry{TimeNs: now + int64(3*time.Second), Target: "leaf0", Writer: "a", Token: 2,
		Change: core.Change{Key: k, Kind: core.KindTune, Old: base, New: mid}}, mid); err != nil {
		t.Fatal(err)
	}
	out, _, err = runAgentCmd(t, context.Background(), "rollback", "--config", cfg, "--target", "leaf0", "--to", "baseline", "--dry-run")
	if err != nil || !strings.Contains(out, fmtSetting(mid)+" -> "+fmtSetting(base)+" (back to the baseline: the setting before the first change, audit entry 1 of member b") {
		t.Fatalf("--to baseline: %v\n%s", err, out)
	}
}

func writeEntry(db string, e core.AuditEntry, got env.Setting) error {
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		return err
	}
	defer j.Close()
	w, err := j.Intent([]core.AuditEntry{e})
	if err != nil {
		return err
	}
	return j.Resolve(w[0].Seq, core.StateApplied, &got, "", e.TimeNs+1)
}

// agent pause --config of a fleet's configuration on a host with no agent
// db pauses the fleet in etcd (it failed: "agent db ... does not exist",
// while every member follows the pause from etcd).
func TestAgentPauseOfAFleetWithoutAnAgentDB(t *testing.T) {
	ep := etcdtest.Start(t)
	dir := t.TempDir()
	cfg := writeFleetConfig(t, dir, ep) // its db, a.db, is not there
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	out, _, err := runAgentCmd(t, ctx, "pause", "--config", cfg, "--by", "alice", "--reason", "incident 7")
	if err != nil || !strings.HasPrefix(out, "closed loop paused (by alice at ") {
		t.Fatalf("pause: %v\n%s", err, out)
	}
	if p, _, err := fleet.ReadPause(ctx, cli, "dc1"); err != nil || !p.Paused || p.By != "alice" || p.Reason != "incident 7" {
		t.Fatalf("the fleet's pause: %+v, %v", p, err)
	}
	// paused already: who paused it stays
	if out, _, err = runAgentCmd(t, ctx, "pause", "--config", cfg, "--by", "bob"); err != nil || !strings.HasPrefix(out, "closed loop paused (by alice at ") {
		t.Fatalf("second pause: %v\n%s", err, out)
	}
	if out, _, err = runAgentCmd(t, ctx, "resume", "--config", cfg, "--by", "bob"); err != nil || !strings.HasPrefix(out, "closed loop running (by bob") {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if p, _, err := fleet.ReadPause(ctx, cli, "dc1"); err != nil || p.Paused {
		t.Fatalf("the fleet's pause after resume: %+v, %v", p, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.db")); !os.IsNotExist(err) {
		t.Fatalf("an agent db was made: %v", err)
	}
}

// A rollback in a fleet writes its entries to the fleet's audit in etcd
// too, as the loop's changes go there: history --fleet lists it, and a
// rollback planned from the fleet's audit on another member finds
// nothing left to undo (they went to this member's log alone: member b's
// plan undid a's tune a second time).
func TestRollbackInAFleetReachesTheFleetAudit(t *testing.T) {
	ep := etcdtest.Start(t)
	_, addr := startIncastStar(t)
	dir := t.TempDir()
	conf := func(member string) string {
		p := filepath.Join(dir, member+".yaml")
		body := fmt.Sprintf("mode: closed-loop\npolicy: static:hpcc\ndb: %s\ntargets:\n  sw0: {address: %s, insecure: true, queues: [3]}\nfleet: {endpoints: [%s], name: dc1, member: %s}\n",
			filepath.Join(dir, member+".db"), addr, ep, member)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	confA, confB := conf("a"), conf("b")
	k := env.QueueKey{Target: "sw0", Port: "Ethernet0", Queue: 3}
	boot := env.Setting{KminBytes: incastStarECN.KminBytes, KmaxBytes: incastStarECN.KmaxBytes, Pmax: incastStarECN.Pmax}
	tuned := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	// a tuned the queue: in a's log and in the fleet's audit; the switch runs it
	tune := core.AuditEntry{TimeNs: time.Now().Add(-time.Minute).UnixNano(), Target: "sw0", Writer: "a", Token: 7,
		Change: core.Change{Key: k, Kind: core.KindTune, Old: boot, New: tuned}}
	if err := writeEntry(filepath.Join(dir, "a.db"), tune, tuned); err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	tune.Seq, tune.State, tune.Got = 1, core.StateApplied, &tuned
	b, _ := json.Marshal(tune)
	if _, err := cli.Put(context.Background(), fmt.Sprintf("/ecntune/fleet/dc1/audit/sw0/%019d-a-Ethernet0-3", tune.TimeNs), string(b)); err != nil {
		t.Fatal(err)
	}
	// the guard's memory a's loop left in etcd: it expects the tune
	mb, _ := json.Marshal(core.QueueMemory{Key: k, LastGood: tuned, Expect: &tuned, Changed: true, XoffWiden: 1})
	if _, err := cli.Put(context.Background(), "/ecntune/fleet/dc1/memory/sw0/"+k.String(), string(mb)); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(confA)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := gnmiclient.Dial(context.Background(), cfg.Targets[0], time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	if err := sw.Apply(context.Background(), map[env.QueueKey]env.Setting{k: tuned}); err != nil {
		t.Fatal(err)
	}
	// no member runs: a rolls its tune back
	out, _, err := runAgentCmd(t, context.Background(), "rollback", "--config", confA, "--target", "sw0")
	if err != nil || !strings.Contains(out, "applied") {
		t.Fatalf("rollback: %v\n%s", err, out)
	}
	es, err := fleet.ReadAudit(context.Background(), cli, "dc1", "sw0")
	if err != nil {
		t.Fatal(err)
	}
	var manual []core.AuditEntry
	for _, e := range es {
		if e.Kind == core.KindManual {
			manual = append(manual, e)
		}
	}
	if len(manual) != 1 || manual[0].State != core.StateApplied || manual[0].Writer != "a" || manual[0].New != boot || manual[0].Seq != 2 {
		t.Fatalf("the fleet's audit of sw0 after a's rollback: %+v, want a's rollback (seq 2) applied", es)
	}
	// the switch's next owner restores a memory that expects the rollback
	// (it took the rollback for another writer's change: an alarm and a
	// yield), with what the loop kept (the widened XOFF margin)
	ecnOf := func(s env.Setting) env.Setting {
		return env.Setting{KminBytes: s.KminBytes, KmaxBytes: s.KmaxBytes, Pmax: s.Pmax}
	}
	if ms, err := fleet.ReadMemory(context.Background(), cli, "dc1", "sw0"); err != nil || len(ms) != 1 || ms[0].Expect == nil ||
		ecnOf(*ms[0].Expect) != boot || ecnOf(ms[0].LastGood) != boot || ms[0].XoffWiden != 1 {
		t.Fatalf("the fleet's guard memory of sw0 after a's rollback: %+v, %v; want expect and last good %+v, xoff-widen 1", ms, err, boot)
	}
	out, _, err = runAgentCmd(t, context.Background(), "history", "--fleet", "--config", confB)
	if err != nil || !strings.Contains(out, "manual") {
		t.Errorf("history --fleet after the rollback: %v\n%s", err, out)
	}
	// b, with a log of its own that holds nothing of sw0, plans from the fleet's audit
	j, err := journal.OpenJournal(filepath.Join(dir, "b.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	out, _, err = runAgentCmd(t, context.Background(), "rollback", "--config", confB, "--target", "sw0", "--dry-run")
	if err != nil || !strings.Contains(out, "nothing to undo") {
		t.Fatalf("member b's rollback after a's: %v\n%s", err, out)
	}
	// a's own plan counts its rollback once (its log and the fleet's audit merged)
	out, _, err = runAgentCmd(t, context.Background(), "rollback", "--config", confA, "--target", "sw0", "--dry-run")
	if err != nil || !strings.Contains(out, "nothing to undo") {
		t.Fatalf("member a's rollback again: %v\n%s", err, out)
	}
}
