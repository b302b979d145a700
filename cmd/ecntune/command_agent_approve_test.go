package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmic/pkg/api"
	"google.golang.org/protobuf/encoding/prototext"
	"gopkg.in/yaml.v3"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/agent/web"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simswitch"
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
	want := "gnmic -a " + addr + " --insecure set --set-proto-request-file " + filepath.Join(gdir, "sw0-1.textproto")
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
	plan, err := os.ReadFile(filepath.Join(gdir, "sw0-1.textproto"))
	var sent gnmi.SetRequest
	if err == nil {
		err = prototext.Unmarshal(plan, &sent)
	}
	if err != nil || sent.GetPrefix().GetTarget() != "sw0" || len(sent.GetUpdate()) == 0 ||
		!strings.Contains(gnmipath.Describe(sent.GetPrefix(), sent.GetUpdate()[0].GetPath()), "queue-management-profile[name=") {
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
	if err := writeGnmicFiles(&b, dir, map[string][]web.GnmicFile{"../../x": {{Prototext: "prefix {}\n"}}}, nil); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("files in %s: %v", dir, ents)
	}
	if _, err := os.Stat(filepath.Join(root, "x-1.textproto")); err == nil {
		t.Fatal("written outside --gnmic DIR")
	}
}

// gnmicSetRequests builds the Set requests that a gnmic command line as
// agent pending --gnmic prints it sends, as gnmic's own code builds them
// (github.com/openconfig/gnmic, pkg/config Config.CreateSetRequest): a
// prototext file (--set-proto-request-file; --proto-file in gnmic v0.36 to
// v0.44.0) is sent as it is read (CreateSetRequestFromProtoFile); a
// request file (--request-file) is built into a request with no prefix
// target, as --target is not read on that path (CreateSetRequestFromFile);
// inline --update/--replace PATH:::ENCODING:::VALUE and --delete take
// --prefix and --target.
func gnmicSetRequests(args []string) ([]*gnmi.SetRequest, error) {
	flags := map[string][]string{}
	for i := 0; i < len(args); i++ {
		if strings.HasPrefix(args[i], "--") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			flags[args[i]] = append(flags[args[i]], args[i+1])
			i++
		}
	}
	protoFiles := append(flags["--set-proto-request-file"], flags["--proto-file"]...)
	switch {
	case len(protoFiles) > 0:
		var reqs []*gnmi.SetRequest
		for _, f := range protoFiles {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			req := new(gnmi.SetRequest)
			if err := prototext.Unmarshal(b, req); err != nil {
				return nil, err
			}
			reqs = append(reqs, req)
		}
		return reqs, nil
	case len(flags["--request-file"]) > 0:
		var reqs []*gnmi.SetRequest
		for _, f := range flags["--request-file"] {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			type item struct {
				Path     string `yaml:"path"`
				Value    any    `yaml:"value"`
				Encoding string `yaml:"encoding"`
			}
			var rf struct {
				Updates  []item   `yaml:"updates"`
				Replaces []item   `yaml:"replaces"`
				Deletes  []string `yaml:"deletes"`
			}
			if err := yaml.Unmarshal(b, &rf); err != nil {
				return nil, err
			}
			var opts []api.GNMIOption
			val := func(it item) (api.GNMIOption, error) {
				v, err := json.Marshal(it.Value)
				return api.Value(strings.TrimSpace(string(v)), it.Encoding), err
			}
			for _, u := range rf.Updates {
				v, err := val(u)
				if err != nil {
					return nil, err
				}
				opts = append(opts, api.Update(api.Path(strings.TrimSpace(u.Path)), v))
			}
			for _, u := range rf.Replaces {
				v, err := val(u)
				if err != nil {
					return nil, err
				}
				opts = append(opts, api.Replace(api.Path(strings.TrimSpace(u.Path)), v))
			}
			for _, d := range rf.Deletes {
				opts = append(opts, api.Delete(strings.TrimSpace(d)))
			}
			req, err := api.NewSetRequest(opts...)
			if err != nil {
				return nil, err
			}
			reqs = append(reqs, req)
		}
		return reqs, nil
	}
	prefix, target := "", ""
	if p := flags["--prefix"]; len(p) > 0 {
		prefix = p[0]
	}
	if t := flags["--target"]; len(t) > 0 {
		target = t[0]
	}
	opts := []api.GNMIOption{api.Prefix(prefix), api.Target(target)}
	for _, d := range flags["--delete"] {
		opts = append(opts, api.Delete(strings.TrimSpace(d)))
	}
	for _, flag := range []string{"--update", "--replace"} {
		for _, u := range flags[flag] {
			f := strings.SplitN(u, ":::", 3)
			if len(f) < 3 {
				return nil, fmt.Errorf("invalid inline %s format: %s", flag, u)
			}
			if flag == "--update" {
				opts = append(opts, api.Update(api.Path(strings.TrimSpace(f[0])), api.Value(f[2], f[1])))
			} else {
				opts = append(opts, api.Replace(api.Path(strings.TrimSpace(f[0])), api.Value(f[2], f[1])))
			}
		}
	}
	req, err := api.NewSetRequest(opts...)
	if err != nil {
		return nil, err
	}
	return []*gnmi.SetRequest{req}, nil
}

// The gnmic commands agent pending --gnmic prints send the agent's Set
// requests, prefix target and all: sent to a listener that serves several
// switches, they set the queue of the switch named, and no other (the
// request files they sent carried no prefix target: gnmic does not read
// --target with --request-file, and the listener refused the Set).
func TestGnmicCommandsSendTheAgentsSets(t *testing.T) {
	cfg := simenv.DefaultConfig()
	cfg.Topology = simenv.LeafSpineTopology(2, 1, 2, 100e9, 100e9, simenv.Microsecond)
	cfg.Workloads = []simenv.Workload{{Kind: simenv.WorkloadIncast, Fanin: 3, SizeBytes: 100_000, Every: 100 * simenv.Microsecond, Priority: 3}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, addr, err := simswitch.Start(ctx, simswitch.Config{Sim: cfg, Dialect: gnmipath.OpenConfig, Listen: "127.0.0.1:0", Timescale: 1, Step: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	before, _ := srv.Telemetry("leaf0")
	want := env.Setting{KminBytes: 150_000, KmaxBytes: 3_000_000, Pmax: 0.07}
	tg := gnmipath.Target{Name: "leaf1", Dialect: gnmipath.OpenConfig, Device: gnmipath.Devices["ecntune"]}
	var reqs []gnmipath.GnmicRequest
	for _, port := range []string{"Ethernet0", "Ethernet1"} {
		req, err := gnmipath.SetRequest(tg, env.QueueKey{Target: "leaf1", Port: port, Queue: 3}, want, gnmipath.Binding{})
		if err != nil {
			t.Fatal(err)
		}
		g, err := gnmipath.Gnmic(req)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, g)
	}
	dir := t.TempDir()
	var out strings.Builder
	if err := writeGnmicFiles(&out, dir, web.GnmicFiles(map[string][]gnmipath.GnmicRequest{"leaf1": reqs}), map[string]string{"leaf1": addr + " --insecure"}); err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(out.String())
	args := strings.Fields(line)
	if len(args) < 5 || strings.Join(args[:5], " ") != "gnmic -a "+addr+" --insecure set" || strings.Contains(line, "\n") {
		t.Fatalf("printed %q, want one gnmic set command for leaf1", line)
	}
	sent, err := gnmicSetRequests(args[5:])
	if err != nil {
		t.Fatal(err)
	}
	if len(sent) != len(reqs) {
		t.Fatalf("%s: gnmic sends %d requests, want %d", line, len(sent), len(reqs))
	}
	gc, err := api.NewTarget(api.Name("gnmic"), api.Address(addr), api.Insecure(true), api.Timeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := gc.CreateGNMIClient(ctx); err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	for i, r := range sent {
		if _, err := gc.Set(ctx, r); err != nil {
			t.Fatalf("%s: Set %d (prefix target %q): %v", line, i+1, r.GetPrefix().GetTarget(), err)
		}
	}
	after, _ := srv.Telemetry("leaf1")
	for i := range 2 {
		if e := after.Ports[i].Queues[3].ECN; e != (simenv.ECN{KminBytes: 150_000, KmaxBytes: 3_000_000, Pmax: 0.07}) {
			t.Errorf("leaf1 port %d queue 3 runs %+v after gnmic's Sets", i, e)
		}
	}
	if other, _ := srv.Telemetry("leaf0"); other.Ports[0].Queues[3].ECN != before.Ports[0].Queues[3].ECN {
		t.Errorf("leaf0 was set: %+v", other.Ports[0].Queues[3].ECN)
	}
}
