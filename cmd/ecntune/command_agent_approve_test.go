package main

import (
	"context"
	"fmt"
	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/web"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/simenv"
)

// Approve mode from the CLI against simulated switches: the agent sets
// nothing; 'agent pending' lists the proposals and writes them as gnmic
// request files; 'agent approve' lets one queue through, which the switch
// then runs, with the approver in the audit log.
func TestAgentApproveAgainstSimswitch(t *testing.T) {
	srv, addr := startIncastStar(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	web := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	db := filepath.Join(dir, "agent.db")
	conf := filepath.Join(dir, "agent.yaml")
	os.WriteFile(conf, []byte(fmt.Sprintf(`mode: closed-loop
approve: true
policy: static:hpcc
interval: 100ms
db: %s
metrics: %s
targets:
  sw0: {address: %s, insecure: true, retry-timer: 100ms, queues: [3]}
guardrails:
  max-step-ratio: 100
  min-hold: 100ms
  stale-freeze: 2s
  stale-revert: 10s
`, db, web, addr)), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, _, err := runAgentCmd(t, ctx, "--config", conf, "--log-level", "warn"); done <- err }()
	var out string
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out, "sw0/Ethernet3/q3") {
		if time.Now().After(deadline) {
			t.Fatalf("nothing pending: %q", out)
		}
		time.Sleep(50 * time.Millisecond)
		out, _, _ = runAgentCmd(t, context.Background(), "pending", "--config", conf)
	}
	m := regexp.MustCompile(`sw0/Ethernet3/q3 +([0-9a-f]{8}) +tune +2MB/2.8MB/1%( headroom \S+)? → 400KB/1.6MB/20%`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("pending:\n%s", out)
	}
	planID := m[1]
	gdir := filepath.Join(dir, "plan")
	want := "gnmic -a " + addr + " --insecure set --target sw0 --request-file " + filepath.Join(gdir, "sw0-1.yaml")
	// the plan is the newest interval's: one without the queue's telemetry
	// (a loaded machine) has nothing pending for it
	var errOut string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, errOut, err = runAgentCmd(t, context.Background(), "pending", "--config", conf, "--gnmic", gdir)
		if err == nil && strings.Contains(errOut, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pending --gnmic: %v\n%s", err, errOut)
		}
	}
	plan, err := os.ReadFile(filepath.Join(gdir, "sw0-1.yaml"))
	if err != nil || !strings.Contains(string(plan), "max-threshold") || !strings.Contains(string(plan), "queue-management-profile[name=") {
		t.Fatalf("gnmic file (%v):\n%s", err, plan)
	}
	if tel, _ := srv.Telemetry("sw0"); tel.Ports[3].Queues[3].ECN == (simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}) {
		t.Fatal("set without an approval")
	}
	if _, _, err := runAgentCmd(t, context.Background(), "approve", "--url", "http://"+web, "--queue", "sw9/Ethernet3/q3", "--by", "carol"); err == nil || !strings.Contains(err.Error(), "nothing pending for sw9/Ethernet3/q3") {
		t.Fatalf("approve an unknown queue: %v", err)
	}
	if _, _, err := runAgentCmd(t, context.Background(), "approve", "--config", conf, "--queue", "sw0/Ethernet3/q3", "--plan", "0badf00d", "--by", "carol"); err == nil || !strings.Contains(err.Error(), "not the one reviewed") {
		t.Fatalf("approve a plan not pending: %v", err)
	}
	if out, _, err = runAgentCmd(t, context.Background(), "approve", "--config", conf, "--queue", "sw0/Ethernet3/q3", "--plan", planID, "--by", "carol"); err != nil || !strings.Contains(out, "by carol") {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	hpcc := simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	for deadline = time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if tel, _ := srv.Telemetry("sw0"); tel.Ports[3].Queues[3].ECN == hpcc {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the approved change was not set")
		}
	}
	tel, _ := srv.Telemetry("sw0")
	if tel.Ports[2].Queues[3].ECN == hpcc {
		t.Fatal("an unapproved queue was set")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	j, err := journal.OpenJournalReadOnly(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	es, _ := j.Entries("", 0)
	if len(es) != 1 || es[0].ApprovedBy != "carol" || es[0].Key.Port != "Ethernet3" {
		t.Fatalf("audit %+v", es)
	}
}

// With no agent at the address, pending and approve say so and what they
// need (it was a bare "connection refused").
func TestPendingWithoutAgent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	for _, args := range [][]string{{"pending", "--url", "http://" + addr}, {"approve", "--url", "http://" + addr, "--all"}} {
		_, _, err := runAgentCmd(t, context.Background(), args...)
		if err == nil || !strings.Contains(err.Error(), "no agent answers at "+addr+": is it running") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// The gnmic commands agent pending --gnmic prints connect as the agent
// does: TLS CA, client certificate, skip-verify, insecure and user (they
// kept only --insecure, and gnmic fell back to the system CAs).
func TestGnmicConnFlags(t *testing.T) {
	for _, c := range []struct {
		t    config.Target
		want string
	}{
		{config.Target{Insecure: true}, " --insecure"},
		{config.Target{TLSCA: "/etc/ca.pem", Username: "admin", Password: "pw"}, " --tls-ca /etc/ca.pem -u admin"},
		{config.Target{SkipVerify: true, TLSCert: "c.pem", TLSKey: "my key.pem"}, " --skip-verify --tls-cert c.pem --tls-key 'my key.pem'"},
	} {
		if got := gnmicConnFlags(c.t); got != c.want {
			t.Errorf("%+v: %q, want %q", c.t, got, c.want)
		}
	}
}

// A target name the agent sends (it answers over plain HTTP) is made a
// file name inside --gnmic DIR: "../x" wrote outside it.
func TestGnmicFilesStayInDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "plan")
	var b strings.Builder
	if err := writeGnmicFiles(&b, dir, map[string][]web.GnmicFile{"../../x": {{YAML: "owned: true\n"}}}, nil); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("files in %s: %v", dir, ents)
	}
	if _, err := os.Stat(filepath.Join(root, "x-1.yaml")); err == nil {
		t.Fatal("written outside --gnmic DIR")
	}
}
