package agent

// End-to-end tests: the production loop (gNMI via gnmic → decoder →
// env.Observer → policy → Guard → Set/read-back) against simulated switches
// served in process by simswitch on 127.0.0.1, port 0.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/internal/await"
	"github.com/ecntune/ecntune/internal/simtest"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simswitch"
)

// poorECN marks late: queues grow deep before ECN slows senders. Its Kmax
// stays below the PGs' XOFF (about 3.8 MB in these fabrics), inside the
// invariants; unsafeECN (Kmax far above XOFF) is not.
var (
	poorECN   = simenv.ECN{KminBytes: 2_000_000, KmaxBytes: 2_800_000, Pmax: 0.01}
	unsafeECN = simenv.ECN{KminBytes: 6_000_000, KmaxBytes: 24_000_000, Pmax: 0.01}
)

func e2eSim(ecn simenv.ECN) simenv.Config { return simtest.Star(ecn) }

func startSim(t *testing.T, cfg simenv.Config, d gnmipath.Dialect, mod func(*simswitch.Config)) (*simswitch.Server, string) {
	t.Helper()
	return simtest.Start(t, cfg, d, mod)
}

// wrapObserver lets a test alter observations (injected degradation).
type wrapObserver struct {
	mu    sync.Mutex
	inner *env.Observer
	alter func(*env.Observation)
}

func (w *wrapObserver) Observe(s env.Snapshot) []env.Observation {
	obs := w.inner.Observe(s)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.alter != nil {
		for i := range obs {
			w.alter(&obs[i])
		}
	}
	return obs
}
func (w *wrapObserver) Forget(t string) { w.inner.Forget(t) }
func (w *wrapObserver) setAlter(f func(*env.Observation)) {
	w.mu.Lock()
	w.alter = f
	w.mu.Unlock()
}

type e2e struct {
	a      *Agent
	j      *journal.Journal
	obs    *wrapObserver
	cancel context.CancelFunc
	done   chan error
}

func e2eGuard() core.GuardConfig {
	g := core.DefaultGuardConfig(100 * time.Millisecond)
	g.MaxStepRatio = 100
	g.MinHold = 100 * time.Millisecond
	g.RollbackWindow = 2
	g.StaleFreeze = 600 * time.Millisecond
	g.StaleRevert = 1500 * time.Millisecond
	g.Safe = env.Setting{KminBytes: 1_048_576, KmaxBytes: 2_097_152, Pmax: 0.05}
	w := env.DefaultRewardWeights()
	g.Reward = func(m env.Metrics) float64 { return env.Reward(m, w) }
	g.RollbackRewardDrop = 1e9 // the reward rule is exercised in the pure tests
	return g
}

func runE2E(t *testing.T, mode config.Mode, pol policy.Policy, targets []config.Target, g core.GuardConfig) *e2e {
	t.Helper()
	return runE2ELog(t, mode, pol, targets, g, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// runE2ELog is runE2E with the agent logging to log: the agent as Open
// builds it from a configuration, over gNMI.
func runE2ELog(t *testing.T, mode config.Mode, pol policy.Policy, targets []config.Target, g core.GuardConfig, log *slog.Logger) *e2e {
	return runE2EFull(t, mode, pol, targets, g, log, 100*time.Millisecond)
}

// runE2ESample is runE2E with a sample interval (and interval) of its own
// (devices with a floor: sonic-gnmi samples at most once a second).
func runE2ESample(t *testing.T, mode config.Mode, pol policy.Policy, targets []config.Target, g core.GuardConfig, sample time.Duration) *e2e {
	return runE2EFull(t, mode, pol, targets, g, slog.New(slog.NewTextHandler(io.Discard, nil)), sample)
}

func runE2EFull(t *testing.T, mode config.Mode, pol policy.Policy, targets []config.Target, g core.GuardConfig, log *slog.Logger, sample time.Duration) *e2e {
	t.Helper()
	cfg := &config.Config{Mode: mode, Policy: pol.Name(), Interval: sample, SampleInterval: sample,
		DB: filepath.Join(t.TempDir(), "agent.db"), Owner: "e2e", Targets: targets, Guardrails: g}
	ctx, cancel := context.WithCancel(context.Background())
	obs := &wrapObserver{inner: env.NewObserver(env.ObserverConfig{})}
	a, err := Open(ctx, cfg, Deps{Policy: pol, Observer: obs, SetTimeout: 3 * time.Second, Logger: log, LockTimeout: time.Second})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	e := &e2e{a: a, j: a.Journal(), obs: obs, cancel: cancel, done: make(chan error, 1)}
	go func() { e.done <- a.Run(ctx) }()
	t.Cleanup(func() {
		e.stop(t)
		a.Close()
	})
	return e
}

func (e *e2e) stop(t *testing.T) {
	if e.cancel == nil {
		return
	}
	e.cancel()
	e.cancel = nil
	select {
	case err := <-e.done:
		if err != nil {
			t.Errorf("agent: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("agent did not stop")
	}
}

func target0(addr string, d string) config.Target {
	return config.Target{Name: "sw0", Address: addr, Insecure: true, Timeout: 3 * time.Second,
		RetryTimer: 100 * time.Millisecond, Dialect: d, AllPorts: true, Queues: []int{3}}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	await.Until(t, d, what, cond)
}

// waitSimulated waits until simswitch s has simulated until at, judging by
// simulated progress rather than wall time: it fails only when the
// simulation makes no progress for a whole minute (a busy machine slows
// it down, it does not stop it), or after 15 minutes in all.
func waitSimulated(t *testing.T, s *simswitch.Server, at simenv.Time) {
	t.Helper()
	await.Reached(t, "simulated time (ns)", func() int64 { now, _ := s.Status(); return int64(now) }, int64(at))
}

func simECN(t *testing.T, s *simswitch.Server, sw string, port, q int) simenv.ECN {
	t.Helper()
	tel, err := s.Telemetry(sw)
	if err != nil {
		t.Fatal(err)
	}
	return tel.Ports[port].Queues[q].ECN
}

func mustStatic(t *testing.T, name string) policy.Policy {
	p, err := policy.NewStatic(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func snapshots(a *Agent) float64 { return counterSum(a, "ecntune_agent_snapshots_total") }

func counterSum(a *Agent, name string) float64 {
	mfs, _ := a.Instruments().Registry.Gather()
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				if m.Counter != nil {
					sum += m.Counter.GetValue()
				} else if m.Gauge != nil {
					sum += m.Gauge.GetValue()
				}
			}
		}
	}
	return sum
}

func TestE2EShadowNeverSets(t *testing.T) {
	s, addr := startSim(t, e2eSim(poorECN), gnmipath.OpenConfig, nil)
	e := runE2E(t, config.ModeShadow, mustStatic(t, "hpcc"), []config.Target{target0(addr, config.DialectOpenConfig)}, e2eGuard())
	waitFor(t, 10*time.Second, "recommendations with valid observations", func() bool {
		recs, _ := e.j.Recommendations("", 0, 0)
		valid := 0
		for _, r := range recs {
			if r.Valid && r.Metrics.Util > 0 {
				valid++
			}
		}
		return valid >= 8
	})
	e.stop(t)
	recs, _ := e.j.Recommendations("sw0", 0, 0)
	r := recs[len(recs)-1]
	if r.Current.KminBytes != poorECN.KminBytes || r.Recommended.KminBytes != 400_000 || r.Recommended.KmaxBytes != 1_600_000 || r.Policy != "static:hpcc" {
		t.Fatalf("recommendation %+v", r)
	}
	for p := 0; p < 4; p++ {
		if got := simECN(t, s, "sw0", p, 3); got != poorECN {
			t.Fatalf("shadow mode changed port %d: %+v", p, got)
		}
	}
	if es, _ := e.j.Entries("", 0); len(es) != 0 {
		t.Fatalf("shadow mode wrote %d audit entries", len(es))
	}
}

// smallP99 is the p99 FCT slowdown of flows under 100 KB that started
// before horizon.
func smallP99(flows []simenv.FlowRecord, horizon simenv.Time) (float64, int) {
	var v []float64
	for _, f := range flows {
		if f.SizeBytes < 100_000 && f.Start < horizon && f.Finish > 0 {
			v = append(v, f.Slowdown())
		}
	}
	if len(v) == 0 {
		return 0, 0
	}
	sort.Float64s(v)
	i := (99*len(v) + 99) / 100
	return v[i-1], len(v)
}

func TestE2EClosedLoopImprovesSmallFlows(t *testing.T) {
	cfg := e2eSim(poorECN)
	cfg.Topology = simenv.StarTopology(8, 100e9, simenv.Microsecond)
	web := []simenv.CDFPoint{{Bytes: 1000, Percent: 0}, {Bytes: 10_000, Percent: 50}, {Bytes: 50_000, Percent: 70},
		{Bytes: 1_000_000, Percent: 90}, {Bytes: 5_000_000, Percent: 100}}
	cfg.Workloads = []simenv.Workload{
		{Kind: simenv.WorkloadCDF, CDF: web, Load: 0.5, Priority: 3},
		{Kind: simenv.WorkloadIncast, Fanin: 6, SizeBytes: 500_000, Every: 500 * simenv.Microsecond, Priority: 3},
	}
	s, addr := startSim(t, cfg, gnmipath.OpenConfig, nil)
	e := runE2E(t, config.ModeClosedLoop, mustStatic(t, "hpcc"), []config.Target{target0(addr, config.DialectOpenConfig)}, e2eGuard())
	waitFor(t, 10*time.Second, "the agent to set hpcc on every port", func() bool {
		for p := 0; p < 8; p++ {
			if simECN(t, s, "sw0", p, 3) != (simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}) {
				return false
			}
		}
		return true
	})
	applied, _ := s.Status()
	const horizon = 8 * simenv.Millisecond
	waitSimulated(t, s, horizon+simenv.Millisecond)
	e.stop(t)
	flows, err := s.Flows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	with, n := smallP99(flows, horizon)
	base, err := simenv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now, _ := s.Status()
	base.RunUntil(now)
	without, nb := smallP99(base.Flows(), horizon)
	t.Logf("agent applied hpcc by %v sim time; small-flow p99 slowdown with agent %.2f (%d flows), without %.2f (%d flows)", applied, with, n, without, nb)
	if n < 50 || nb < 50 {
		t.Fatalf("too few small flows: %d, %d", n, nb)
	}
	if !(with < without) {
		t.Fatalf("small-flow p99 slowdown did not improve: %.3f with the agent, %.3f without", with, without)
	}
	es, _ := e.j.Entries("sw0", 0)
	if len(es) == 0 || es[0].State != core.StateApplied || es[0].Got == nil || es[0].Got.KminBytes != 400_000 {
		t.Fatalf("audit %+v", es)
	}
}

func TestE2EReconnectAfterServerRestart(t *testing.T) {
	s, addr := startSim(t, e2eSim(poorECN), gnmipath.OpenConfig, nil)
	g := e2eGuard()
	g.StaleFreeze, g.StaleRevert = 5*time.Second, 20*time.Second
	e := runE2E(t, config.ModeShadow, mustStatic(t, "hpcc"), []config.Target{target0(addr, config.DialectOpenConfig)}, g)
	waitFor(t, 10*time.Second, "telemetry", func() bool { return snapshots(e.a) >= 3 })
	s.StopGRPC()
	waitFor(t, 10*time.Second, "the broken stream reported", func() bool {
		return counterSum(e.a, "ecntune_agent_telemetry_errors_total") >= 1
	})
	before := snapshots(e.a)
	if err := s.RestartGRPC(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "telemetry after the restart", func() bool { return snapshots(e.a) >= before+3 })
	if counterSum(e.a, "ecntune_agent_telemetry_errors_total") < 1 {
		t.Fatal("the broken stream was not reported")
	}
	// No false interval: every valid observation after the restart has a
	// plausible utilisation (a false interval would show a spike or zero).
	recs, _ := e.j.Recommendations("", 0, 0)
	for _, r := range recs {
		if r.Valid && (r.Metrics.Util > 1.0001 || r.Metrics.Util < 0) {
			t.Fatalf("implausible utilisation %g at %d", r.Metrics.Util, r.TimeNs)
		}
	}
}

func TestE2EWatchdogFreezesThenReverts(t *testing.T) {
	s, addr := startSim(t, e2eSim(poorECN), gnmipath.OpenConfig, nil)
	e := runE2E(t, config.ModeClosedLoop, mustStatic(t, "hpcc"), []config.Target{target0(addr, config.DialectOpenConfig)}, e2eGuard())
	hpcc := simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	waitFor(t, 10*time.Second, "hpcc applied", func() bool { return simECN(t, s, "sw0", 0, 3) == hpcc })
	s.SetFaults(simswitch.Faults{MuteTelemetry: true})
	waitFor(t, 5*time.Second, "freeze", func() bool { return counterSum(e.a, "ecntune_agent_target_frozen") == 1 })
	if simECN(t, s, "sw0", 0, 3) != hpcc {
		t.Fatal("setting changed while frozen before stale-revert")
	}
	safe := simenv.ECN{KminBytes: 1_048_576, KmaxBytes: 2_097_152, Pmax: 0.05}
	waitFor(t, 5*time.Second, "revert to the safe preset", func() bool { return simECN(t, s, "sw0", 0, 3) == safe })
	s.SetFaults(simswitch.Faults{})
	waitFor(t, 5*time.Second, "unfreeze", func() bool { return counterSum(e.a, "ecntune_agent_target_frozen") == 0 })
	es, _ := e.j.Entries("", 0)
	reverts := 0
	for _, x := range es {
		if x.Kind == core.KindRevert && x.State == core.StateApplied {
			reverts++
		}
	}
	if reverts != 4 {
		t.Fatalf("%d applied reverts, want one per port (4)", reverts)
	}
}

func TestE2EDegradationRollsBack(t *testing.T) {
	s, addr := startSim(t, e2eSim(poorECN), gnmipath.OpenConfig, nil)
	e := runE2E(t, config.ModeClosedLoop, mustStatic(t, "hpcc"), []config.Target{target0(addr, config.DialectOpenConfig)}, e2eGuard())
	hpcc := simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	// Once the new setting runs, the observer reports drops on port 0.
	e.obs.setAlter(func(o *env.Observation) {
		if o.Key.Port == "Ethernet0" && o.Valid && o.Current.KminBytes == hpcc.KminBytes {
			o.Metrics.DropFrac = 0.01
		}
	})
	waitFor(t, 10*time.Second, "rollback on port 0", func() bool {
		es, _ := e.j.Entries("", 0)
		for _, x := range es {
			if x.Kind == core.KindRollback && x.State == core.StateApplied && x.Key.Port == "Ethernet0" {
				return true
			}
		}
		return false
	})
	e.obs.setAlter(nil)
	if got := simECN(t, s, "sw0", 0, 3); got.KminBytes != poorECN.KminBytes {
		// the policy may re-apply after the hold time; the rollback itself
		// must have restored the last known good setting
		es, _ := e.j.Entries("", 0)
		ok := false
		for _, x := range es {
			if x.Kind == core.KindRollback && x.New.KminBytes == poorECN.KminBytes {
				ok = true
			}
		}
		if !ok {
			t.Fatalf("rollback did not restore %+v: %+v", poorECN, es)
		}
	}
	if counterSum(e.a, "ecntune_agent_rollbacks_total") < 1 {
		t.Fatal("rollback not counted")
	}
}

func TestE2EMalformedTelemetryAndRejectedSets(t *testing.T) {
	s, addr := startSim(t, e2eSim(poorECN), gnmipath.OpenConfig, nil)
	s.SetFaults(simswitch.Faults{Malformed: true, RejectSets: true})
	e := runE2E(t, config.ModeClosedLoop, mustStatic(t, "hpcc"), []config.Target{target0(addr, config.DialectOpenConfig)}, e2eGuard())
	waitFor(t, 10*time.Second, "refused Sets", func() bool {
		es, _ := e.j.Entries("", 0)
		return len(es) >= 3 && es[0].State == core.StateFailed
	})
	if counterSum(e.a, "ecntune_agent_telemetry_errors_total") < 1 {
		t.Fatal("malformed telemetry not reported")
	}
	// the incomplete queue is said to be the switch's refused value, not
	// a value missing (which hid it)
	waitFor(t, 10*time.Second, "the refused value on /targets", func() bool {
		return strings.Contains(get(t, e.a.Handler(), "/targets").Body.String(), "the switch sent a value the agent refused")
	})
	if simECN(t, s, "sw0", 1, 3) != poorECN {
		t.Fatal("setting changed despite refused Sets")
	}
	// Port 0's queue is incomplete (its tx-bytes is garbage): never decided on.
	for _, r := range e.a.Recommendations("") {
		if r.Key.Port == "Ethernet0" {
			t.Fatalf("recommendation for the malformed queue: %+v", r)
		}
	}
	s.SetFaults(simswitch.Faults{})
	hpcc := simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	waitFor(t, 10*time.Second, "hpcc applied once Sets are accepted", func() bool { return simECN(t, s, "sw0", 1, 3) == hpcc })
}

func TestE2EProtoEncoding(t *testing.T) {
	s, addr := startSim(t, e2eSim(poorECN), gnmipath.OpenConfig, nil)
	tc := target0(addr, config.DialectOpenConfig)
	tc.Encoding = "proto"
	e := runE2E(t, config.ModeClosedLoop, mustStatic(t, "hpcc"), []config.Target{tc}, e2eGuard())
	hpcc := simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	waitFor(t, 10*time.Second, "hpcc applied with proto telemetry", func() bool { return simECN(t, s, "sw0", 2, 3) == hpcc })
	e.stop(t)
	recs := e.a.Recommendations("sw0")
	busy := 0 // decoded from proto: valid observations with traffic
	for _, r := range recs {
		if r.Valid && r.Metrics.Util > 0 {
			busy++
		}
	}
	if len(recs) != 4 || busy == 0 {
		t.Fatalf("recommendations %+v", recs)
	}
}

func TestE2ESONiC(t *testing.T) {
	s, addr := startSim(t, e2eSim(poorECN), gnmipath.Sonic, nil)
	tc := target0(addr, config.DialectSONiC)
	tc.Namespace = "sw0"
	e := runE2E(t, config.ModeClosedLoop, mustStatic(t, "hpcc"), []config.Target{tc}, e2eGuard())
	hpcc := simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	waitFor(t, 10*time.Second, "hpcc applied over sonic paths", func() bool {
		for p := 0; p < 4; p++ {
			if simECN(t, s, "sw0", p, 3) != hpcc {
				return false
			}
		}
		return true
	})
	e.stop(t)
	es, _ := e.j.Entries("", 0)
	if len(es) == 0 || es[0].State != core.StateApplied || len(es[0].Paths) == 0 {
		t.Fatalf("audit %+v", es)
	}
}

func TestE2ETLSWithPassword(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeTestCerts(t, dir)
	s, addr := startSim(t, e2eSim(poorECN), gnmipath.OpenConfig, func(c *simswitch.Config) {
		c.TLSCert, c.TLSKey = cert, key
		c.Username, c.Password = "ops", "s3cret"
	})
	tc := target0(addr, config.DialectOpenConfig)
	tc.Insecure = false
	tc.TLSCA = ca
	tc.Username, tc.Password = "ops", "s3cret"
	e := runE2E(t, config.ModeClosedLoop, mustStatic(t, "hpcc"), []config.Target{tc}, e2eGuard())
	hpcc := simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	waitFor(t, 10*time.Second, "hpcc applied over TLS", func() bool { return simECN(t, s, "sw0", 0, 3) == hpcc })
	e.stop(t)

	// A wrong password gets no telemetry and changes nothing.
	s2, addr2 := startSim(t, e2eSim(poorECN), gnmipath.OpenConfig, func(c *simswitch.Config) {
		c.TLSCert, c.TLSKey = cert, key
		c.Username, c.Password = "ops", "s3cret"
	})
	tc2 := tc
	tc2.Address = addr2
	tc2.Password = "wrong"
	e2 := runE2E(t, config.ModeClosedLoop, mustStatic(t, "hpcc"), []config.Target{tc2}, e2eGuard())
	waitFor(t, 10*time.Second, "auth errors", func() bool { return counterSum(e2.a, "ecntune_agent_telemetry_errors_total") >= 1 })
	if snapshots(e2.a) != 0 || simECN(t, s2, "sw0", 0, 3) != poorECN {
		t.Fatal("wrong password got through")
	}
}

// writeTestCerts makes a CA and a server certificate for 127.0.0.1.
func writeTestCerts(t *testing.T, dir string) (caPath, certPath, keyPath string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ecntune test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "simswitch"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", srvDER), write("server.key", "EC PRIVATE KEY", keyDER)
}

// Two agents with their own databases on one switch: each sees the other's
// writes as an external writer and yields instead of fighting.
func TestE2ETwoAgentsDoNotFight(t *testing.T) {
	_, addr := startSim(t, e2eSim(poorECN), gnmipath.OpenConfig, nil)
	g := e2eGuard()
	g.ExternalHold = 10 * time.Second
	a1 := runE2E(t, config.ModeClosedLoop, mustStatic(t, "hpcc"), []config.Target{target0(addr, config.DialectOpenConfig)}, g)
	a2 := runE2E(t, config.ModeClosedLoop, mustStatic(t, "cisco"), []config.Target{target0(addr, config.DialectOpenConfig)}, g)
	waitFor(t, 10*time.Second, "an external-writer alarm", func() bool {
		return counterSum(a1.a, "ecntune_agent_alarms_total")+counterSum(a2.a, "ecntune_agent_alarms_total") >= 1
	})
	// Fifteen more intervals of each (1.5 s at 100 ms) to fight in.
	i1, i2 := counterSum(a1.a, "ecntune_agent_intervals_total"), counterSum(a2.a, "ecntune_agent_intervals_total")
	waitFor(t, 20*time.Second, "15 more intervals of both agents", func() bool {
		return counterSum(a1.a, "ecntune_agent_intervals_total") >= i1+15 && counterSum(a2.a, "ecntune_agent_intervals_total") >= i2+15
	})
	a1.stop(t)
	a2.stop(t)
	perQueue := map[env.QueueKey]int{}
	for _, j := range []*journal.Journal{a1.j, a2.j} {
		es, _ := j.Entries("", 0)
		for _, e := range es {
			if e.State == core.StateApplied {
				perQueue[e.Key]++
			}
		}
	}
	for k, n := range perQueue {
		// Each agent writes a queue at most once, then yields for 10 s.
		if n > 2 {
			t.Fatalf("%s written %d times by the two agents: they fight", k, n)
		}
	}
	if len(perQueue) == 0 {
		t.Fatal("no writes at all")
	}
}

// A switch that comes back as a new process starts its counters and clock
// from zero: the agent sees a reset, never a false interval, and resumes.
func TestE2ESwitchReplacedByNewProcess(t *testing.T) {
	cfg := e2eSim(poorECN)
	ctx1, cancel1 := context.WithCancel(context.Background())
	s1, addr, err := simswitch.Start(ctx1, simswitch.Config{Sim: cfg, Listen: "127.0.0.1:0", Timescale: 200, Step: 2 * time.Millisecond})
	if err != nil {
		cancel1()
		t.Fatal(err)
	}
	g := e2eGuard()
	g.StaleFreeze, g.StaleRevert = 5*time.Second, 20*time.Second
	e := runE2E(t, config.ModeShadow, mustStatic(t, "hpcc"), []config.Target{target0(addr, config.DialectOpenConfig)}, g)
	waitFor(t, 10*time.Second, "telemetry", func() bool { return snapshots(e.a) >= 5 })
	cancel1()
	s1.Close()
	cut := time.Now().UnixNano()
	// Every observation from here on is looked at: the one that sees the
	// reset may be replaced by the next before an interval records it (as
	// a recommendation) when samples bunch up on a slow machine.
	var mu sync.Mutex
	observedResets := 0
	e.obs.setAlter(func(o *env.Observation) {
		if o.Metrics.Reset {
			mu.Lock()
			observedResets++
			mu.Unlock()
		}
	})
	s2, _ := startSim(t, cfg, gnmipath.OpenConfig, func(c *simswitch.Config) { c.Listen = addr })
	_ = s2
	waitFor(t, 10*time.Second, "valid observations from the new process", func() bool {
		recs, _ := e.j.Recommendations("", cut, 0)
		valid := 0
		for _, r := range recs {
			if r.Valid {
				valid++
			}
		}
		return valid >= 8
	})
	recs, _ := e.j.Recommendations("", cut, 0)
	resets := 0
	for _, r := range recs {
		if r.Metrics.Reset {
			resets++
		}
		if r.Valid && (r.Metrics.Util > 1.0001 || r.Metrics.Util < 0 || r.Metrics.IntervalNs <= 0) {
			t.Fatalf("false interval after the restart: %+v", r.Metrics)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if resets == 0 && observedResets == 0 {
		t.Fatal("the counter reset was not seen")
	}
}

// A switch whose queues start outside the invariants (Kmax far above the
// PGs' XOFF): in shadow mode every recommendation for them is the repair,
// marked SAFETY, and nothing is set; in closed loop the repair is applied
// first, journaled as such, and leaves Kmax below XOFF.
func TestE2EUnsafeStartIsRepaired(t *testing.T) {
	s, addr := startSim(t, e2eSim(unsafeECN), gnmipath.OpenConfig, nil)
	e := runE2E(t, config.ModeShadow, mustStatic(t, "hpcc"), []config.Target{target0(addr, config.DialectOpenConfig)}, e2eGuard())
	waitFor(t, 10*time.Second, "a SAFETY recommendation", func() bool {
		recs, _ := e.j.Recommendations("sw0", 0, 0)
		for _, r := range recs {
			if strings.HasPrefix(r.Reason, "SAFETY: ") && r.Guard == string(core.KindRepair) && r.Recommended.KmaxBytes < unsafeECN.KmaxBytes {
				return true
			}
		}
		return false
	})
	e.stop(t)
	if got := simECN(t, s, "sw0", 0, 3); got != unsafeECN {
		t.Fatalf("shadow mode changed the switch: %+v", got)
	}

	s2, addr2 := startSim(t, e2eSim(unsafeECN), gnmipath.OpenConfig, nil)
	e2 := runE2E(t, config.ModeClosedLoop, mustStatic(t, "hpcc"), []config.Target{target0(addr2, config.DialectOpenConfig)}, e2eGuard())
	waitFor(t, 10*time.Second, "repairs applied", func() bool {
		es, _ := e2.j.Entries("sw0", 0)
		n := 0
		for _, x := range es {
			if x.Kind == core.KindRepair && x.State == core.StateApplied {
				n++
			}
		}
		return n >= 4
	})
	e2.stop(t)
	es, _ := e2.j.Entries("sw0", 0)
	if es[0].Kind != core.KindRepair {
		t.Fatalf("the first change must be the repair: %+v", es[0])
	}
	for p := 0; p < 4; p++ {
		if got := simECN(t, s2, "sw0", p, 3); got.KmaxBytes >= unsafeECN.KmaxBytes || got.KminBytes >= got.KmaxBytes {
			t.Fatalf("port %d still outside the invariants: %+v", p, got)
		}
	}
	if counterSum(e2.a, "ecntune_agent_alarms_total") < 1 {
		t.Fatal("no alarm counted for the unsafe start")
	}
}

// A schedule whose entries are policies runs on the switches by the
// telemetry's clock (simulated time here, stamped from midnight UTC; the
// switch's clock on a real one): the first entry's setting is applied,
// then the second's once its offset or time of day has passed, and the
// audit trail says which step asked.
func TestE2EScheduleOfPolicies(t *testing.T) {
	for spec, steps := range map[string][2]string{
		"schedule:static:hpcc,2ms=fixed:100KB/400KB/1%":       {"schedule step 1 (from 0s): ", "schedule step 2 (from 2ms): "},
		"daily:00:00=static:hpcc,00:00:00.002=100KB/400KB/1%": {"daily step 1 (from 00:00 UTC): ", "daily step 2 (from 00:00:00.002 UTC): "},
	} {
		kind, _, _ := strings.Cut(spec, ":")
		t.Run(kind, func(t *testing.T) { e2eTimed(t, spec, steps) })
	}
}

func e2eTimed(t *testing.T, spec string, steps [2]string) {
	s, addr := startSim(t, e2eSim(poorECN), gnmipath.OpenConfig, nil)
	pol, err := policy.Lookup(spec)
	if err != nil {
		t.Fatal(err)
	}
	e := runE2E(t, config.ModeClosedLoop, pol, []config.Target{target0(addr, config.DialectOpenConfig)}, e2eGuard())
	hpcc := simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	late := simenv.ECN{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.01}
	every := func(want simenv.ECN) func() bool {
		return func() bool {
			for p := 0; p < 4; p++ {
				if simECN(t, s, "sw0", p, 3) != want {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, 10*time.Second, "the first entry (hpcc) on every port", every(hpcc))
	waitFor(t, 10*time.Second, "the second entry (100KB/400KB/1%) on every port", every(late))
	e.stop(t)
	es, _ := e.j.Entries("sw0", 0)
	n := [2]int{}
	for _, x := range es {
		for k, p := range steps {
			if x.State == core.StateApplied && strings.Contains(x.Reason, p) {
				n[k]++
			}
		}
	}
	if n[0] < 4 || n[1] < 4 {
		t.Fatalf("applied changes by step %v (audit %+v)", n, es)
	}
}
