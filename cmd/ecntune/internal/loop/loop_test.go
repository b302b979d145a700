package loop

import (
	"context"
	"fmt"
	"github.com/ecntune/ecntune/env"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/eval"
	"github.com/ecntune/ecntune/internal/simtest"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/scenario"
	"github.com/ecntune/ecntune/simswitch"
)

// lockstepConfig is a closed loop of static:hpcc at 1 ms decisions from
// 1 ms counters (simulated time), built in Go: the configuration file's
// floor of 100 ms is for the wall clock.
func lockstepConfig() *config.Config {
	g := core.DefaultGuardConfig(time.Millisecond)
	return &config.Config{Mode: config.ModeClosedLoop, Policy: "static:hpcc", Interval: time.Millisecond,
		SampleInterval: time.Millisecond, Owner: "loop-test", Guardrails: g}
}

// change is what a run's audit entry says, without the fields that hold
// wall-clock or database facts.
type change struct {
	TimeNs   int64
	Key      string
	Kind     core.ChangeKind
	Old, New any
	State    core.AuditState
}

func changes(es []core.AuditEntry) []change {
	out := make([]change, len(es))
	for i, e := range es {
		out[i] = change{e.TimeNs, e.Key.String(), e.Kind, e.Old, e.New, e.State}
	}
	return out
}

// The deployed loop in lockstep: the agent tunes the fabric over gNMI at
// simulated intervals, and two runs of one seed make the same changes at
// the same simulated times and leave the same flows.
func TestLockstepRunIsDeterministic(t *testing.T) {
	sim := simtest.Star(simenv.ECN{KminBytes: 2_000_000, KmaxBytes: 2_800_000, Pmax: 0.01})
	sim.Duration = 12 * simenv.Millisecond
	sim.BufferBytes = 2_000_000 // the incast reaches XOFF: PFC telemetry that changes every interval
	run := func() Result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		r, err := Run(ctx, Options{Sim: sim, Agent: lockstepConfig()})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := run(), run()
	if a.Intervals != 12 || len(a.Flows) == 0 {
		t.Fatalf("run: %d intervals, %d flows", a.Intervals, len(a.Flows))
	}
	applied := 0
	for _, e := range a.Audit {
		if e.State == core.StateApplied {
			applied++
		}
		if e.TimeNs%int64(time.Millisecond) != 0 {
			t.Errorf("change at %d ns: not on the 1 ms simulated grid", e.TimeNs)
		}
	}
	if applied == 0 {
		t.Fatalf("the agent applied nothing: %+v", a.Audit)
	}
	if ca, cb := changes(a.Audit), changes(b.Audit); !reflect.DeepEqual(ca, cb) {
		t.Fatalf("two runs of one seed changed differently:\n%+v\n%+v", ca, cb)
	}
	// What the agent read each interval, PFC and buffer included (they
	// stream on Subscribes of their own, and were once folded into the
	// snapshot of either this interval or the next, as they came).
	if len(a.Recommendations) == 0 || len(a.Recommendations) != len(b.Recommendations) {
		t.Fatalf("recommendations: %d and %d", len(a.Recommendations), len(b.Recommendations))
	}
	paused := 0
	for i := range a.Recommendations {
		ra, rb := recString(a.Recommendations[i]), recString(b.Recommendations[i])
		if ra != rb {
			t.Fatalf("recommendation %d read differently:\n%s\n%s", i, ra, rb)
		}
		if a.Recommendations[i].Metrics.PauseTxFrac > 0 || a.Recommendations[i].Metrics.PauseRxFrac > 0 {
			paused++
		}
	}
	if paused == 0 {
		t.Errorf("no queue sent PAUSE in any interval: the run does not exercise the PFC telemetry")
	}
	if len(a.Flows) != len(b.Flows) {
		t.Fatalf("flows %d and %d", len(a.Flows), len(b.Flows))
	}
	for i := range a.Flows {
		if a.Flows[i] != b.Flows[i] {
			t.Fatalf("flow %d: %+v and %+v", i, a.Flows[i], b.Flows[i])
		}
	}
	t.Logf("%d intervals, %d audit entries (%d applied), %d flows", a.Intervals, len(a.Audit), applied, len(a.Flows))
}

// recString prints a recommendation with what its pointers point to.
func recString(r core.Recommendation) string {
	allowed, would := r.Allowed, r.Would
	r.Allowed, r.Would = nil, nil
	s := fmt.Sprintf("%+v", r)
	if allowed != nil {
		s += fmt.Sprintf(" allowed %+v", *allowed)
	}
	if would != nil {
		s += fmt.Sprintf(" would %+v", *would)
	}
	return s
}

// eval runs agent:FILE beside a bare policy: the deployed loop gets the
// same flow figures and its own loop figures, the same for the same seed;
// a configuration that cannot load is named.
func TestEvalRunsTheDeployedLoop(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.yaml")
	os.WriteFile(file, []byte("mode: closed-loop\npolicy: static:hpcc\ninterval: 1s\ntargets:\n  t: {address: \"127.0.0.1:1\", insecure: true, queues: [3]}\n"+
		"guardrails:\n  min-hold: 2s\n  max-step-ratio: 100\n  change-budget: 2\n"), 0o644)
	sim := simtest.Star(simenv.ECN{KminBytes: 2_000_000, KmaxBytes: 2_800_000, Pmax: 0.01})
	sim.Name, sim.Duration = "star", 8*simenv.Millisecond
	scs := []eval.Scenario{{Named: scenario.Named{Name: "star", Config: sim}}}
	opt := eval.Options{Seeds: 1, Workers: 1, Interval: simenv.Millisecond, Loops: map[string]eval.LoopRunner{Prefix: EvalRunner(func(string) policy.Resolver { return policy.Resolver{} }, filepath.Join(dir, "audit"), false)}}
	spec := Prefix + file
	sched := "schedule:hpcc,4ms=sonic-default"
	res, err := eval.RunAll(scs, []string{"static:hpcc", sched, spec}, opt)
	if err != nil {
		t.Fatal(err)
	}
	runs := res.RunsOf("star", spec)
	if len(runs) == 0 || runs[0].Loop == nil {
		t.Fatalf("deployed loop runs %+v", runs)
	}
	l := runs[0].Loop
	if l.Intervals != 7 || l.Queues != 4 || l.Changes == 0 || l.ChangesPerQueuePer100 <= 0 || runs[0].Decisions != 7 {
		t.Fatalf("loop figures %+v (decisions %d)", l, runs[0].Decisions)
	}
	// a bare policy's runs count its changes too: a preset runs from the
	// start and changes nothing; a schedule sets each queue at its first
	// decision and again at 4 ms
	if bare := res.RunsOf("star", "static:hpcc"); len(bare) == 0 || bare[0].Loop == nil || bare[0].Loop.Changes != 0 ||
		bare[0].Finished == 0 || runs[0].Finished == 0 {
		t.Fatalf("bare %+v, loop finished %d", bare, runs[0].Finished)
	}
	if s := res.RunsOf("star", sched); len(s) == 0 || s[0].Loop == nil || s[0].Loop.Changes != 8 || s[0].Loop.ChangesAfter != 0 {
		t.Fatalf("schedule's runs %+v", s)
	}
	// the closed loop names its bare policy, and eval sets it beside
	// those runs; the shadow loop below runs no policy's settings
	if l.Bare != "static:hpcc" {
		t.Fatalf("closed loop's bare policy %q, want static:hpcc", l.Bare)
	}
	if c := res.Compare(spec); len(c) != 1 || c[0].Bare != "static:hpcc" {
		t.Fatalf("comparison of the loop %+v: not beside its bare policy", c)
	}
	// --loop-audit: the run's audit log, one applied change per line
	names, _ := filepath.Glob(filepath.Join(dir, "audit", "star_agent_*.jsonl"))
	if len(names) != 1 {
		t.Fatalf("audit files %v, want one", names)
	}
	audit, err := os.ReadFile(names[0])
	if err != nil || strings.Count(string(audit), `"state":"applied"`) != l.Changes {
		t.Fatalf("audit file (%v): %d applied entries, want %d", err, strings.Count(string(audit), `"state":"applied"`), l.Changes)
	}
	again, err := eval.RunAll(scs, []string{spec}, opt)
	if err != nil {
		t.Fatal(err)
	}
	b := again.RunsOf("star", spec)[0]
	if !reflect.DeepEqual(*b.Loop, *l) || b.SmallP99 != runs[0].SmallP99 || b.Finished != runs[0].Finished {
		t.Fatalf("same seed, other figures: %+v %+v / %+v %+v", b.Loop, b.Summary, l, runs[0].Summary)
	}
	if len(l.Rejections) == 0 || l.ChangesAfter > l.Changes {
		t.Fatalf("loop figures %+v: no rejections by rule, or more changes after the warm-up than in all", l)
	}
	// the same loop in shadow mode sets nothing and says what it would
	sh, err := eval.RunAll(scs, []string{spec + ",shadow"}, opt)
	if err != nil {
		t.Fatal(err)
	}
	s := sh.RunsOf("star", spec+",shadow")[0].Loop
	if s.Changes != 0 || s.Intervals != 7 || s.Bare != "" {
		t.Fatalf("shadow loop figures %+v", s)
	}
	// its --loop-audit file: the changes it would have made, one a line
	// (a preset: each queue once, at the first decision)
	names, _ = filepath.Glob(filepath.Join(dir, "audit", "star_agentshadow_*.jsonl"))
	if len(names) != 1 {
		t.Fatalf("shadow audit files %v, want one", names)
	}
	if b, err := os.ReadFile(names[0]); err != nil || strings.Count(string(b), "\n") != s.Queues || !strings.Contains(string(b), `"changes":true`) {
		t.Fatalf("shadow audit file (%v), want %d would-changes:\n%s", err, s.Queues, b)
	}
	if _, err := eval.RunAll(scs, []string{spec + ",closed"}, opt); err == nil || !strings.Contains(err.Error(), `"closed"`) {
		t.Fatalf("an unknown mode after the file: %v", err)
	}
	if _, err := eval.RunAll(scs, []string{Prefix + filepath.Join(dir, "missing.yaml")}, opt); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("a missing configuration: %v", err)
	}
}

// Figures count from the audit log: changes past the warm-up, flaps,
// rollbacks, and repairs, of which those of a setting the loop wrote (a
// tune's, a rollback's, a repair's); from the
// recommendations, what the loop would run and the idle intervals held.
func TestFiguresFromAudit(t *testing.T) {
	k := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	a, b, c := env.Setting{KminBytes: 1, KmaxBytes: 10, Pmax: 0.2}, env.Setting{KminBytes: 1, KmaxBytes: 20, Pmax: 0.2}, env.Setting{KminBytes: 1, KmaxBytes: 5, Pmax: 0.2}
	iv := time.Millisecond
	e := func(i int, kind core.ChangeKind, old, new env.Setting) core.AuditEntry {
		return core.AuditEntry{TimeNs: int64(i) * int64(iv), Target: k.Target, Change: core.Change{Key: k, Kind: kind, Old: old, New: new}, State: core.StateApplied}
	}
	r := Result{Intervals: 40, Queues: 2, Audit: []core.AuditEntry{
		e(1, core.KindRepair, a, c),    // the scenario's setting: not own
		e(12, core.KindTune, c, b),     // after the warm-up
		e(14, core.KindRepair, b, c),   // the tune repaired: own, and back to c: a flap
		e(30, core.KindRollback, c, b), // not a flap: c left 16 intervals ago
		e(32, core.KindRepair, b, c),   // the rollback's setting repaired: own, a flap
		e(34, core.KindRepair, c, a),   // the repair repaired: own (XOFF fell to it)
	}}
	f := Figures(r, iv, 0)
	if f.Changes != 6 || f.ChangesAfter != 5 || f.Flaps != 2 || f.Repairs != 4 || f.RepairsOfOwn != 3 || f.Rollbacks != 1 {
		t.Fatalf("%+v", f)
	}
	if f.ChangesPerQueuePer100After != 5.0/2*100/29 { // 39 decisions count (not the one at the run's end), 29 past the first 10
		t.Fatalf("rate after %g", f.ChangesPerQueuePer100After)
	}
}

// "After" starts past the first SettleIntervals decisions, as a bare
// policy's count does (the loop's k-th decision is at k intervals, the
// bare policy's numbered k-1), and a write that moves only headroom is no
// change of the ECN setting, as neither a bare policy's count nor shadow's
// makes it one (nor a flap when the next write moves headroom further);
// the decision at the run's end, which acts on nothing, is left out.
func TestFiguresCountAsBarePoliciesDo(t *testing.T) {
	k := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	iv := time.Millisecond
	a, b := env.Setting{KminBytes: 1, KmaxBytes: 10, Pmax: 0.2}, env.Setting{KminBytes: 1, KmaxBytes: 20, Pmax: 0.2}
	h := func(s env.Setting, bytes int64) env.Setting { s.HeadroomBytes = bytes; return s }
	e := func(i int, kind core.ChangeKind, old, new env.Setting) core.AuditEntry {
		return core.AuditEntry{TimeNs: int64(i) * int64(iv), Target: k.Target, Change: core.Change{Key: k, Kind: kind, Old: old, New: new}, State: core.StateApplied}
	}
	r := Result{Intervals: 30, Queues: 1, Audit: []core.AuditEntry{
		e(10, core.KindTune, a, b), // the 10th decision: still the warm-up
		e(12, core.KindTune, h(b, 50_000), h(b, 100_000)),
		e(15, core.KindRepair, h(b, 100_000), h(b, 120_000)),
		e(30, core.KindRollback, b, a), // at the run's end: acts on nothing, no bare decision there
	}}
	f := Figures(r, iv, 0)
	if f.Intervals != 29 || f.Changes != 1 || f.ChangesAfter != 0 || f.Flaps != 0 || f.Repairs != 1 || f.Rollbacks != 0 {
		t.Fatalf("%+v", f)
	}
	bare := env.Churn{Window: env.FlapIntervals, From: eval.SettleIntervals}
	ob := func(s env.Setting) []env.Observation { return []env.Observation{{Key: k, Current: s}} }
	bare.Observe(0, ob(a))
	bare.Observe(9, ob(b)) // the 10th decision
	bare.Observe(11, ob(h(b, 100_000)))
	bare.Observe(14, ob(h(b, 120_000)))
	if bare.Changes != f.Changes || bare.After != f.ChangesAfter || bare.Flaps != f.Flaps {
		t.Fatalf("bare %+v, loop %+v", bare, f)
	}
}

// Each switch is told its own fabric ports, as the bare policies are told
// the peers (a template's fabric-ports, written for one switch, were once
// given to every switch; a file without them left every peer unknown,
// and the loop decided from other observations than its bare policy);
// fabric-ports: lldp discovers them, and HidePeer hides them.
func TestAgentConfigTellsEachSwitchItsPeers(t *testing.T) {
	sim := simenv.DefaultConfig()
	sim.Topology = simenv.LeafSpineTopology(2, 2, 2, 100e9, 100e9, simenv.Microsecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, addr, err := simswitch.Start(ctx, simswitch.Config{Sim: sim, Listen: "127.0.0.1:0", Lockstep: true, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	want := map[string]string{}
	for _, sw := range srv.Switches() {
		want[sw.Name] = strings.Join(simswitch.FabricPorts(sw), ",")
	}
	if len(want) != 4 || want["leaf0"] == "" || want["spine0"] == "" || want["leaf0"] == want["spine0"] {
		t.Fatalf("fabric ports %v: not a leaf-spine with ports of both kinds", want)
	}
	tmpl := config.Target{Queues: []int{3}, Dialect: "openconfig", FabricPorts: []string{"Ethernet9"}, PeersKnown: true}
	for _, c := range []struct {
		name       string
		hide, lldp bool
	}{{"told", false, false}, {"lldp", false, true}, {"hidden", true, false}} {
		tm := tmpl
		tm.DiscoverPeers = c.lldp
		o := Options{Sim: sim, Agent: &config.Config{Targets: []config.Target{tm}}, HidePeer: c.hide}
		cfg := o.agentConfig(srv, addr, filepath.Join(t.TempDir(), "a.db"))
		for _, tg := range cfg.Targets {
			got := strings.Join(tg.FabricPorts, ",")
			switch {
			case c.name == "told" && (got != want[tg.Name] || !tg.PeersKnown || tg.DiscoverPeers):
				t.Errorf("%s: %s fabric-ports %q (known %v, lldp %v), want %q", c.name, tg.Name, got, tg.PeersKnown, tg.DiscoverPeers, want[tg.Name])
			case c.name != "told" && (got != "" || tg.PeersKnown || tg.DiscoverPeers != c.lldp):
				t.Errorf("%s: %s fabric-ports %q (known %v, lldp %v)", c.name, tg.Name, got, tg.PeersKnown, tg.DiscoverPeers)
			}
		}
	}
}

// A deployed loop covers what a bare run of the same scenario does: all of
// a duration that is not a whole number of intervals (the loop ran 9 ms of
// 10 at a 3 ms interval, 15 of 75 flows unfinished) and up to the fabric's
// going idle (the loop ran on through idle intervals, counted in its change
// rate, while a bare run stops there); its decisions are counted as a bare
// policy's are.
func TestLoopCoversTheBareRun(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.yaml")
	os.WriteFile(file, []byte("mode: closed-loop\npolicy: static:hpcc\ninterval: 1s\ntargets:\n  t: {address: \"127.0.0.1:1\", insecure: true, queues: [3]}\n"), 0o644)
	spec := Prefix + file
	run := func(sim simenv.Config, iv simenv.Time) (bare, loop eval.Run) {
		t.Helper()
		scs := []eval.Scenario{{Named: scenario.Named{Name: sim.Name, Config: sim}}}
		opt := eval.Options{Seeds: 1, Workers: 1, Interval: iv, Loops: map[string]eval.LoopRunner{Prefix: EvalRunner(func(string) policy.Resolver { return policy.Resolver{} }, "", false)}}
		res, err := eval.RunAll(scs, []string{"static:hpcc", spec}, opt)
		if err != nil {
			t.Fatal(err)
		}
		return res.RunsOf(sim.Name, "static:hpcc")[0], res.RunsOf(sim.Name, spec)[0]
	}
	// 10 ms at 3 ms: three whole intervals and 1 ms more
	sim := simtest.Star(simenv.ECN{KminBytes: 2_000_000, KmaxBytes: 2_800_000, Pmax: 0.01})
	sim.Name, sim.Duration = "star", 10*simenv.Millisecond
	bare, loop := run(sim, 3*simenv.Millisecond)
	if loop.Finished != bare.Finished || loop.Unfinished != bare.Unfinished || loop.SimTimeS != bare.SimTimeS {
		t.Errorf("10 ms at 3 ms: the loop ran %gs, %d flows finished, %d not; the bare run %gs, %d and %d",
			loop.SimTimeS, loop.Finished, loop.Unfinished, bare.SimTimeS, bare.Finished, bare.Unfinished)
	}
	if loop.Decisions != bare.Decisions {
		t.Errorf("10 ms at 3 ms: the loop counts %d decisions, the bare policy %d", loop.Decisions, bare.Decisions)
	}
	// traffic that ends at 3 ms of 10: both stop once the fabric is idle
	sim.Name = "star-ends"
	sim.Workloads[0].End = 3 * simenv.Millisecond
	bare, loop = run(sim, simenv.Millisecond)
	if bare.SimTimeS >= 0.01 {
		t.Fatalf("the bare run did not stop at idle (%gs): the test's scenario no longer ends early", bare.SimTimeS)
	}
	if loop.SimTimeS != bare.SimTimeS || loop.Decisions != bare.Decisions || loop.Finished != bare.Finished {
		t.Errorf("traffic ending at 3 ms: the loop ran %gs with %d decisions, %d flows finished; the bare run %gs, %d, %d",
			loop.SimTimeS, loop.Decisions, loop.Finished, bare.SimTimeS, bare.Decisions, bare.Finished)
	}
}
