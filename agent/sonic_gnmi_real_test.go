package agent

import (
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/sonictest"
	"github.com/ecntune/ecntune/policy"
)

// The agent against the real sonic-gnmi server (internal/sonictest: built
// by ../shared/tools/sonic, run when SONIC_DIR points at it, skipped
// otherwise); SONIC_SOAK sets how long each layout runs (default 20s).
//
// Two layouts, each in shadow mode with the builtin model, as a new user
// would configure it (device sonic, four ports, queue 3): the tool's seed of
// a Broadcom-style switch (10 queues a port, 0-7 unicast and 8-9
// multicast, aliases etp1..etp4, no CABLE_LENGTH) and a Mellanox-style seed
// (sonictest.MellanoxSeed: 8 queues, aliases Eth1/N, ports Ethernet0/8/16/24,
// cable lengths). Each must give every controlled queue a recommendation
// within three sample intervals, log no malformed telemetry and no
// resubscription over the run, hold no queue as outside its validated
// interval, and the server must close no stream as a duplicate.
func TestE2ERealSonicGNMIServer(t *testing.T) {
	sonictest.Tools(t)
	soak := 20 * time.Second
	if s := os.Getenv("SONIC_SOAK"); s != "" {
		var err error
		if soak, err = time.ParseDuration(s); err != nil {
			t.Fatalf("SONIC_SOAK: %v", err)
		}
	}
	for _, c := range []struct {
		name  string
		seed  []byte // nil: the tool's
		ports []string
	}{
		{"broadcom-10q", nil, []string{"Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"}},
		{"mellanox-8q", sonictest.MellanoxSeed(), []string{"Ethernet0", "Ethernet8", "Ethernet16", "Ethernet24"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := sonictest.Start(t, c.seed)
			srv.Tick(t, soak+30*time.Second)
			runAgainstRealSonic(t, srv, c.ports, soak)
		})
	}
}

// runAgainstRealSonic runs the agent in shadow mode on the server at addr
// for soak and checks what the closed issue asked of it.
func runAgainstRealSonic(t *testing.T, srv *sonictest.Server, ports []string, soak time.Duration) {
	addr := srv.Addr
	pol, err := policy.Lookup("builtin")
	if err != nil {
		t.Fatal(err)
	}
	tc := config.Target{Name: "sonic0", Address: addr, Insecure: true, Timeout: 5 * time.Second, RetryTimer: 2 * time.Second,
		Dialect: config.DialectSONiC, Device: "sonic", Ports: ports, Queues: []int{3}}
	var logs syncBuffer
	start := time.Now()
	e := runE2EFull(t, config.ModeShadow, pol, []config.Target{tc}, e2eGuard(), slog.New(slog.NewTextHandler(&logs, nil)), time.Second)
	var recs []core.Recommendation
	waitFor(t, 30*time.Second, "a recommendation for every controlled queue", func() bool {
		recs, _ = e.j.Recommendations("sonic0", 0, 0)
		return len(queuesOf(recs)) == len(ports)
	})
	first := time.Since(start)
	intervals := map[int64]bool{}
	for _, r := range recs {
		intervals[r.TimeNs] = true
	}
	if len(intervals) > 3 {
		t.Errorf("every queue had a recommendation only after %d sample intervals (want at most 3)", len(intervals))
	}
	time.Sleep(soak - time.Since(start))
	ti := e.a.Targets()
	all, _ := e.j.Recommendations("sonic0", 0, 0)
	e.stop(t)
	log := logs.String()
	for _, bad := range []string{"malformed telemetry", "resubscribing", "queue: disposed"} {
		if n := strings.Count(log, bad); n > 0 {
			t.Errorf("the agent's log has %d lines with %q over %s:\n%s", n, bad, soak, log)
		}
	}
	if n := strings.Count(srv.Log(), "Delete duplicate client"); n > 0 {
		t.Errorf("the server closed %d subscriptions as duplicates of another on the same connection", n)
	}
	held := 0
	for _, r := range all {
		if r.Held == policy.HoldInterval {
			held++
		}
	}
	if held > 0 {
		t.Errorf("%d of %d recommendations held as outside the validated interval", held, len(all))
	}
	if len(ti) != 1 {
		t.Fatalf("targets %+v", ti)
	}
	b, _ := json.Marshal(ti[0])
	t.Logf("%s: every queue recommended after %s (%d sample intervals); %d recommendations over %s; /targets %s",
		addr, first.Round(10*time.Millisecond), len(intervals), len(all), soak, b)
}

// The closed loop against the real sonic-gnmi, which takes no write here
// (its config updater, over D-Bus, does not run): every Set is answered
// with an error at once, audited failed with that error (not an outcome
// unknown, not "applied"), the target's writes back off and /healthz
// names the error; CONFIG_DB is left as it was, no profile of the agent's
// half-written.
func TestE2ERealSonicClosedLoopWithoutConfigUpdater(t *testing.T) {
	srv := sonictest.Start(t, nil)
	srv.Tick(t, time.Minute)
	pol, err := policy.Lookup("fixed:387KB/774KB/1%")
	if err != nil {
		t.Fatal(err)
	}
	tc := config.Target{Name: "sonic0", Address: srv.Addr, Insecure: true, Timeout: 5 * time.Second, RetryTimer: 2 * time.Second,
		Dialect: config.DialectSONiC, Device: "sonic", Ports: []string{"Ethernet0", "Ethernet4"}, Queues: []int{3}, SetTimeout: config.SonicSetTimeout}
	var logs syncBuffer
	e := runE2EFull(t, config.ModeClosedLoop, pol, []config.Target{tc}, e2eGuard(), slog.New(slog.NewTextHandler(&logs, nil)), time.Second)
	var problems []string
	waitFor(t, 40*time.Second, "/healthz naming the failed Sets", func() bool {
		problems, _ = e.a.Health()
		return strings.Contains(strings.Join(problems, "; "), "Sets failed (")
	})
	time.Sleep(10 * time.Second)
	es, err := e.j.Entries("sonic0", 0)
	e.stop(t)
	if err != nil || len(es) == 0 {
		t.Fatalf("audit %v, %v", es, err)
	}
	newest := map[env.QueueKey]uint64{}
	for _, en := range es {
		newest[en.Key] = max(newest[en.Key], en.Seq)
	}
	for _, en := range es {
		if en.State == core.StateIntent && en.Seq == newest[en.Key] {
			continue // its Set in flight when the agent stopped
		}
		if en.State != core.StateFailed || en.Error == "" {
			t.Fatalf("entry %d: %s (%s): want failed with the server's error", en.Seq, en.State, en.Error)
		}
	}
	if !strings.Contains(logs.String(), "writes back off") {
		t.Errorf("no backoff in the log:\n%s", logs.String())
	}
	if q := strings.TrimSpace(srv.ConfigDB(t, "HGET", "QUEUE|Ethernet0|3", "wred_profile")); q != "AZURE_LOSSLESS" {
		t.Errorf("QUEUE|Ethernet0|3 wred_profile %q after the failed Sets", q)
	}
	if k := strings.TrimSpace(srv.ConfigDB(t, "KEYS", "WRED_PROFILE|ecntune*")); k != "" {
		t.Errorf("profiles of the agent's left in CONFIG_DB: %q", k)
	}
	t.Logf("%d audit entries over the run, all failed (%s); /healthz: %s", len(es), es[0].Error, strings.Join(problems, "; "))
}
