package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/policy"
)

// fakeSwitch keeps settings in memory and can refuse Sets, lie on read-back
// or be unreachable.
type fakeSwitch struct {
	name string
	mu   sync.Mutex
	set  map[env.QueueKey]env.Setting
	// faults
	setErr  error
	readErr error
	// readErrAfterSet: reads fail once a Set came (read before write
	// works; the read-back is lost)
	readErrAfterSet bool
	ignore          bool // accept Sets but keep the old settings
	partial         bool // accept Sets but apply only Kmin
	// lateSets: Sets fail with setErr but are kept, and land()
	// applies them (a switch that takes a Set after the agent's deadline)
	lateSets []map[env.QueueKey]env.Setting
	late     bool
	sets     int
	snaps    chan env.Snapshot
	subs     map[string]int // Subscribes under way, by agent (recordingSwitch)
}

func newFakeSwitch(name string, keys ...env.QueueKey) *fakeSwitch {
	f := &fakeSwitch{name: name, set: map[env.QueueKey]env.Setting{}, snaps: make(chan env.Snapshot, 16)}
	for _, k := range keys {
		f.set[k] = cur
	}
	return f
}

func (f *fakeSwitch) Name() string { return f.name }
func (f *fakeSwitch) Subscribe(ctx context.Context, out chan<- env.Snapshot, errs chan<- error) {
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-f.snaps:
			select {
			case out <- s:
			case <-ctx.Done():
				return
			}
		}
	}
}
func (f *fakeSwitch) SetPaths(keys []env.QueueKey) []string {
	var p []string
	for _, k := range keys {
		p = append(p, "/fake/"+k.String())
	}
	return p
}
func (f *fakeSwitch) Apply(ctx context.Context, s map[env.QueueKey]env.Setting) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sets++
	if f.late {
		f.lateSets = append(f.lateSets, maps.Clone(s))
	}
	if f.setErr != nil {
		return f.setErr
	}
	if f.ignore {
		return nil
	}
	for k, v := range s {
		if f.partial {
			old := f.set[k]
			old.KminBytes = v.KminBytes
			v = old
		}
		f.set[k] = v
	}
	return nil
}

// land applies the Sets kept since late was set, as a switch that takes
// them late does.
func (f *fakeSwitch) land() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.lateSets {
		maps.Copy(f.set, s)
	}
	f.lateSets = nil
}

func (f *fakeSwitch) Read(ctx context.Context, keys []env.QueueKey) (map[env.QueueKey]env.Setting, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readErr != nil && (!f.readErrAfterSet || f.sets > 0) {
		return nil, f.readErr
	}
	out := map[env.QueueKey]env.Setting{}
	for _, k := range keys {
		if s, ok := f.set[k]; ok {
			out[k] = s
		}
	}
	return out, nil
}
func (f *fakeSwitch) Close() error { return nil }
func (f *fakeSwitch) get(k env.QueueKey) env.Setting {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.set[k]
}
func (f *fakeSwitch) setCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sets
}

// snapshot builds what the switch exports now.
func (f *fakeSwitch) snapshot(timeNs int64) env.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := env.Snapshot{Target: f.name, TimeNs: timeNs}
	for k, v := range f.set {
		s.Queues = append(s.Queues, env.QueueSample{Key: k, RateBps: 100e9, Setting: v})
	}
	return s
}

// fakeObserver turns each queue sample into a valid observation whose
// metrics come from a table the test controls.
type fakeObserver struct {
	metrics map[env.QueueKey]env.Metrics
	invalid bool
}

func (o *fakeObserver) Observe(s env.Snapshot) []env.Observation {
	out := make([]env.Observation, len(s.Queues))
	for i, q := range s.Queues {
		m := o.metrics[q.Key]
		if m.IntervalNs == 0 {
			// the queue marks: a change is in play, and its probation
			// passes in rollback.window clean intervals
			m = env.Metrics{IntervalNs: sec, Util: 0.5, MarkFrac: 0.05}
		}
		out[i] = env.Observation{Key: q.Key, RateBps: q.RateBps, Peer: q.Peer, Current: q.Setting, Metrics: m, Valid: !o.invalid,
			XoffBytes: q.XoffBytes, MinHeadroomBytes: q.MinHeadroomBytes}
	}
	return out
}
func (o *fakeObserver) Forget(string) {}

// fixedPolicy recommends the same setting for every queue.
type fixedPolicy struct {
	s    env.Setting
	conf float64
}

func (p *fixedPolicy) Name() string { return "fixed" }
func (p *fixedPolicy) Decide(obs []env.Observation) []policy.Decision {
	d := make([]policy.Decision, len(obs))
	for i, o := range obs {
		d[i] = policy.Decision{Key: o.Key, Setting: p.s, Action: -1, Confidence: p.conf, Reason: "fixed test policy"}
	}
	return d
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type rig struct {
	a   *Agent
	j   *journal.Journal
	sw  *fakeSwitch
	obs *fakeObserver
	pol *fixedPolicy
	clk *fakeClock
	db  string
	tns int64
}

var target = env.Setting{KminBytes: 500_000, KmaxBytes: 2_000_000, Pmax: 0.2, HeadroomBytes: 100_000}

func testConfig(mode config.Mode) *config.Config {
	return &config.Config{Mode: mode, Policy: "static:test", Interval: time.Second, SampleInterval: time.Second,
		Owner: "test-agent", Targets: []config.Target{{Name: "leaf0", Address: "127.0.0.1:1", AllPorts: true, Queues: []int{3, 4}}},
		Guardrails: testGuardConfig()}
}

func newRig(t *testing.T, mode config.Mode, dry bool, db string, sw *fakeSwitch) *rig {
	t.Helper()
	return newRigWith(t, mode, dry, db, sw, nil)
}

// newRigWith is newRig with the configuration changed by edit first.
func newRigWith(t *testing.T, mode config.Mode, dry bool, db string, sw *fakeSwitch, edit func(*config.Config)) *rig {
	t.Helper()
	return newRigOpts(t, mode, dry, db, sw, edit, nil)
}

// newRigOpts is newRigWith with the agent's Options changed by opts too.
func newRigOpts(t *testing.T, mode config.Mode, dry bool, db string, sw *fakeSwitch, edit func(*config.Config), opts func(*Options)) *rig {
	t.Helper()
	if db == "" {
		db = filepath.Join(t.TempDir(), "agent.db")
	}
	if sw == nil {
		sw = newFakeSwitch("leaf0", kA, kB)
	}
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	r := &rig{j: j, sw: sw, obs: &fakeObserver{metrics: map[env.QueueKey]env.Metrics{}},
		pol: &fixedPolicy{s: target, conf: 0.9}, clk: &fakeClock{t: time.Unix(1_700_000_000, 0)}, db: db}
	cfg := testConfig(mode)
	cfg.Guardrails.Reward = func(m env.Metrics) float64 { return m.Util - m.PauseRxFrac }
	if edit != nil {
		edit(cfg)
	}
	o := Options{Config: cfg, Policy: r.pol, Model: "fixed@1", Observer: r.obs, Journal: j,
		Switches: []Switch{sw}, Clock: r.clk.Now, DryRun: dry,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if opts != nil {
		opts(&o)
	}
	r.a, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// interval advances the clock by one second, feeds one snapshot and ticks.
func (r *rig) interval(t *testing.T) {
	t.Helper()
	r.clk.Add(time.Second)
	r.tns += sec
	r.a.Ingest(r.sw.snapshot(r.tns))
	if err := r.a.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// peerPolicy records the peers it is shown.
type peerPolicy struct {
	fixedPolicy
	mu    sync.Mutex
	peers map[env.QueueKey]env.Peer
}

func (p *peerPolicy) Decide(obs []env.Observation) []policy.Decision {
	p.mu.Lock()
	for _, o := range obs {
		p.peers[o.Key] = o.Peer
	}
	p.mu.Unlock()
	return p.fixedPolicy.Decide(obs)
}

// The target's fabric-ports reach the policy as each queue's Peer; without
// them the peer stays unknown.
func TestAgentTellsPolicyThePeer(t *testing.T) {
	for _, c := range []struct {
		known  bool
		fabric []string
		a, b   env.Peer
	}{{false, nil, env.PeerUnknown, env.PeerUnknown}, {true, []string{kB.Port}, env.PeerHost, env.PeerSwitch},
		{true, nil, env.PeerHost, env.PeerHost}} {
		r := newRig(t, config.ModeShadow, false, "", nil)
		pol := &peerPolicy{fixedPolicy: fixedPolicy{s: target, conf: 0.9}, peers: map[env.QueueKey]env.Peer{}}
		r.a.o.Policy = pol
		r.a.targets["leaf0"] = config.Target{Name: "leaf0", AllPorts: true, Queues: []int{3, 4}, PeersKnown: c.known, FabricPorts: c.fabric}
		r.interval(t)
		if pol.peers[kA] != c.a || pol.peers[kB] != c.b {
			t.Errorf("fabric-ports %v (known %v): peers %q, %q; want %q, %q", c.fabric, c.known, pol.peers[kA], pol.peers[kB], c.a, c.b)
		}
	}
}

func TestAgentShadowRecordsAndNeverSets(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	for i := 0; i < 3; i++ {
		r.interval(t)
	}
	if n := r.sw.setCount(); n != 0 {
		t.Fatalf("shadow mode sent %d Sets", n)
	}
	recs, err := r.j.Recommendations("", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 6 {
		t.Fatalf("stored %d recommendations, want 2 queues x 3 intervals", len(recs))
	}
	if recs[0].Current != cur || recs[0].Recommended != target || recs[0].Confidence != 0.9 || recs[0].Policy != "fixed" {
		t.Fatalf("recommendation %+v", recs[0])
	}
	if recs[0].Reward != 0.5 || !recs[0].Valid || recs[0].Metrics.Util != 0.5 {
		t.Fatalf("observation behind the recommendation %+v", recs[0])
	}
	// The guard's verdict rides along, judged from what the loop would
	// run: the change let through at the first interval (Would), which
	// the same advice does not change again.
	if recs[0].Guard != "" || recs[5].Guard != "" || recs[5].Would == nil || *recs[5].Would != target {
		t.Fatalf("guard verdicts %q %q, would %+v, want allowed, would run %+v", recs[0].Guard, recs[5].Guard, recs[5].Would, target)
	}
	// Other advice waits out min-hold from that virtual change, then is
	// clamped from it.
	r.pol.s = env.Setting{KminBytes: 400_000, KmaxBytes: 9_000_000, Pmax: 0.2}
	var verdicts []string
	for i := 0; i < 8 && !slices.Contains(verdicts, "clamped:max-step"); i++ {
		r.interval(t)
		recs, _ = r.j.Recommendations("", 0, 0)
		verdicts = append(verdicts, recs[len(recs)-1].Guard)
	}
	if verdicts[0] != core.RuleHold || !slices.Contains(verdicts, "clamped:max-step") {
		t.Fatalf("guard verdicts %q, want min-hold, then clamped:max-step", verdicts)
	}
	r.pol.s = target
	srv := httptest.NewServer(r.a.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/recommendations?target=leaf0")
	if err != nil {
		t.Fatal(err)
	}
	var got []core.Recommendation
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(got) != 2 || got[0].Key != kA || got[1].Key != kB || got[0].Recommended.KmaxBytes != 9_000_000 || got[0].Guard != "clamped:max-step" {
		t.Fatalf("/recommendations %+v", got)
	}
	resp, err = http.Get(srv.URL + "/recommendations?since=1h")
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if len(got) != 2*(3+len(verdicts)) {
		t.Fatalf("/recommendations?since=1h gave %d, want %d", len(got), 2*(3+len(verdicts)))
	}
	resp, err = http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`ecntune_queue_recommended_kmax_bytes{port="Ethernet0",queue="3",target="leaf0"} 9e+06`,
		`ecntune_queue_applied_kmin_bytes{port="Ethernet0",queue="3",target="leaf0"} 400000`,
		`ecntune_queue_reward{port="Ethernet1",queue="3",target="leaf0"} 0.5`,
		fmt.Sprintf("ecntune_agent_decisions_total %d", 2*(3+len(verdicts))),
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestAgentClosedLoopAppliesWithAudit(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	r.interval(t)
	if got := r.sw.get(kA); got != target {
		t.Fatalf("switch runs %+v, want %+v", got, target)
	}
	es, err := r.j.Entries("leaf0", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 {
		t.Fatalf("%d audit entries, want 2", len(es))
	}
	e := es[0]
	if e.State != core.StateApplied || e.Old != cur || e.New != target || e.Model != "fixed@1" || e.Owner != "test-agent" ||
		e.Got == nil || *e.Got != target || len(e.Paths) != 1 || e.ResultNs < e.TimeNs || e.Kind != core.KindTune {
		t.Fatalf("audit entry %+v", e)
	}
	// Nothing more to do: no new entries on the next intervals.
	r.interval(t)
	r.interval(t)
	if es, _ = r.j.Entries("", 0); len(es) != 2 {
		t.Fatalf("%d audit entries after idle intervals", len(es))
	}
}

func TestAgentDryRun(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, true, "", nil)
	r.interval(t)
	if r.sw.setCount() != 0 {
		t.Fatal("dry run sent a Set")
	}
	es, _ := r.j.Entries("", 0)
	if len(es) != 2 || es[0].State != core.StateDryRun || es[0].New != target {
		t.Fatalf("dry-run audit %+v", es)
	}
}

func TestAgentSetRefused(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA)
	sw.setErr = errors.New("rpc error: code = InvalidArgument desc = no")
	r := newRig(t, config.ModeClosedLoop, false, "", sw)
	r.interval(t)
	es, _ := r.j.Entries("", 0)
	if len(es) != 1 || es[0].State != core.StateFailed || !strings.Contains(es[0].Error, "InvalidArgument") {
		t.Fatalf("audit %+v", es)
	}
	if sw.get(kA) != cur {
		t.Fatal("setting changed despite refusal")
	}
	// Hold time applies after a failure: no new attempt for 5 s.
	for i := 0; i < 4; i++ {
		r.interval(t)
	}
	if n := sw.setCount(); n != 1 {
		t.Fatalf("%d Set attempts within the hold time", n)
	}
	r.interval(t)
	if n := sw.setCount(); n != 2 {
		t.Fatalf("%d Set attempts after the hold time, want 2", n)
	}
}

func TestAgentReadBackMismatchRollsBack(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA)
	r := newRig(t, config.ModeClosedLoop, false, "", sw)
	// The switch accepts the Set but applies only kmin.
	sw.partial = true
	r.interval(t)
	// Set with mismatch, then the read-back rollback: two Sets.
	if n := sw.setCount(); n != 2 {
		t.Fatalf("%d Sets, want the change and its rollback", n)
	}
	es, _ := r.j.Entries("", 0)
	if len(es) != 2 || es[0].State != core.StateMismatch || es[0].Got.KmaxBytes != 1_600_000 ||
		es[1].Kind != core.KindReadBack || es[1].New != cur || es[1].State != core.StateApplied {
		t.Fatalf("audit %+v", es)
	}
	if sw.get(kA) != cur {
		t.Fatalf("switch runs %+v after the read-back rollback", sw.get(kA))
	}
	if v := testutilCounter(t, r.a, "ecntune_agent_alarms_total", `rule="read-back"`); v != 1 {
		t.Fatalf("read-back alarms %g", v)
	}
	// The same mismatch when the switch already runs last good: no loop.
	sw2 := newFakeSwitch("leaf0", kA)
	sw2.ignore = true
	r2 := newRig(t, config.ModeClosedLoop, false, "", sw2)
	r2.interval(t)
	if n := sw2.setCount(); n != 1 {
		t.Fatalf("%d Sets when the switch ignores them, want 1", n)
	}
}

func TestAgentRollbackOnDegradation(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", newFakeSwitch("leaf0", kA))
	r.interval(t) // applies target
	if r.sw.get(kA) != target {
		t.Fatal("not applied")
	}
	// drops in every interval of the window, none before the change
	r.obs.metrics[kA] = env.Metrics{IntervalNs: sec, Util: 0.5, DropFrac: 0.001}
	for range testGuardConfig().RollbackWindow {
		r.interval(t)
	}
	if got := r.sw.get(kA); got != cur {
		t.Fatalf("after drops the switch runs %+v, want last good %+v", got, cur)
	}
	es, _ := r.j.Entries("", 0)
	if len(es) != 2 || es[1].Kind != core.KindRollback || es[1].State != core.StateApplied || !strings.Contains(es[1].Reason, "drop") {
		t.Fatalf("audit %+v", es)
	}
}

func TestAgentWatchdogFreezesThenReverts(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", newFakeSwitch("leaf0", kA))
	r.interval(t)
	sets := r.sw.setCount()
	// Telemetry stops: ticks without snapshots.
	for i := 0; i < 29; i++ {
		r.clk.Add(time.Second)
		if err := r.a.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if r.sw.setCount() != sets {
		t.Fatal("changes while frozen, before stale-revert")
	}
	r.clk.Add(2 * time.Second)
	r.a.Tick(context.Background())
	safe := env.Setting{KminBytes: 1_048_576, KmaxBytes: 2_097_152, Pmax: 0.05, HeadroomBytes: 100_000}
	if got := r.sw.get(kA); got != safe {
		t.Fatalf("after stale-revert the switch runs %+v, want %+v", got, safe)
	}
	es, _ := r.j.Entries("", 0)
	if es[len(es)-1].Kind != core.KindRevert {
		t.Fatalf("last audit %+v", es[len(es)-1])
	}
}

// A crash between the write-ahead intent and the Set (or between the Set
// and the result) is resolved when the agent restarts.
func TestAgentReconcileAfterCrash(t *testing.T) {
	half := env.Setting{KminBytes: 500_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 100_000}
	cases := []struct {
		name      string
		switchRun env.Setting
		readErr   error
		state     core.AuditState
		final     env.Setting
	}{
		{name: "set never sent", switchRun: cur, state: core.StateAbandoned, final: cur},
		{name: "set applied, result lost", switchRun: target, state: core.StateReconciled, final: target},
		// Neither old nor new: the switch restarted (startup config) or
		// another writer, or only part of the change (the ECN Set, not
		// the headroom Set) went through. Old is stale then: what the
		// switch runs is the new baseline, and nothing is written.
		{name: "neither old nor new", switchRun: half, state: core.StateAbandoned, final: half},
		{name: "switch unreachable", switchRun: cur, readErr: errors.New("connection refused"), state: core.StateUnreachable, final: cur},
		// The switch answers, without the queue (a port renamed): the
		// change is given up, not retried as unreachable for ever (which
		// held every write to the switch).
		{name: "queue not reported", switchRun: cur, readErr: fmt.Errorf("%w: missing queue profile binding", gnmipath.ErrNotReported), state: core.StateAbandoned, final: cur},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "agent.db")
			j, err := journal.OpenJournal(db, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.Intent([]core.AuditEntry{{TimeNs: 1, Target: "leaf0", Change: core.Change{Key: kA, Kind: core.KindTune, Old: cur, New: target, Reason: "before crash"}}}); err != nil {
				t.Fatal(err)
			}
			j.Close() // the crash
			sw := newFakeSwitch("leaf0", kA)
			sw.set[kA] = c.switchRun
			sw.readErr = c.readErr
			r := newRig(t, config.ModeClosedLoop, false, db, sw)
			if err := r.a.Reconcile(context.Background()); err != nil {
				t.Fatal(err)
			}
			es, _ := r.j.Entries("", 0)
			if es[0].State != c.state {
				t.Fatalf("state %s, want %s", es[0].State, c.state)
			}
			if sw.get(kA) != c.final {
				t.Fatalf("switch runs %+v, want %+v", sw.get(kA), c.final)
			}
			if len(es) != 1 {
				t.Fatalf("reconcile wrote changes: %+v", es)
			}
			if c.state == core.StateReconciled {
				// Back on probation: drops in every interval of its
				// window (none measured before it) roll it back to Old.
				r.obs.metrics[kA] = env.Metrics{IntervalNs: sec, Util: 0.5, DropFrac: 0.01}
				for range testGuardConfig().RollbackWindow {
					r.interval(t)
				}
				if sw.get(kA) != cur {
					t.Fatalf("reconciled change not on probation: switch runs %+v", sw.get(kA))
				}
			}
			if c.state == core.StateUnreachable {
				p, _ := r.j.Pending()
				if len(p) != 1 {
					t.Fatalf("pending %d, want 1", len(p))
				}
				sw.mu.Lock()
				sw.readErr = nil
				sw.mu.Unlock()
				r.pol.s = cur // the policy wants nothing
				r.interval(t)
				if p, _ = r.j.Pending(); len(p) != 0 {
					t.Fatalf("still pending after the switch came back: %+v", p)
				}
			}
		})
	}
}

func TestJournalLockTimeout(t *testing.T) {
	db := filepath.Join(t.TempDir(), "agent.db")
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	_, err = journal.OpenJournal(db, 50*time.Millisecond)
	if !errors.Is(err, journal.ErrJournalLocked) || !strings.Contains(err.Error(), db) {
		t.Fatalf("second open: %v", err)
	}
}

func TestJournalPrune(t *testing.T) {
	j := tempJournal(t)
	var recs []core.Recommendation
	for i := int64(1); i <= 10; i++ {
		recs = append(recs, core.Recommendation{TimeNs: i * sec, Key: kA})
	}
	if err := j.PutRecommendations(recs); err != nil {
		t.Fatal(err)
	}
	n, err := j.PruneRecommendations(4 * sec)
	if err != nil || n != 3 {
		t.Fatalf("pruned %d (%v), want 3", n, err)
	}
	left, _ := j.Recommendations("", 0, 0)
	if len(left) != 7 || left[0].TimeNs != 4*sec {
		t.Fatalf("left %d, first %d", len(left), left[0].TimeNs)
	}
	last, _ := j.Recommendations("leaf0", 8*sec, 2)
	if len(last) != 2 || last[1].TimeNs != 10*sec {
		t.Fatalf("limit: %+v", last)
	}
}

func TestAgentRunLoop(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", newFakeSwitch("leaf0", kA))
	r.a.cfg.Interval = 20 * time.Millisecond
	r.a.o.Clock = time.Now
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.a.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for i := int64(1); time.Now().Before(deadline) && r.sw.get(kA) != target; i++ {
		r.sw.snaps <- r.sw.snapshot(i * sec)
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r.sw.get(kA) != target {
		t.Fatalf("Run did not apply: %+v", r.sw.get(kA))
	}
}

// testutilCounter reads one series from the agent's /metrics.
func testutilCounter(t *testing.T, a *Agent, name, label string) float64 {
	t.Helper()
	mfs, err := a.Instruments().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			s := ""
			for _, lp := range m.GetLabel() {
				s += lp.GetName() + "=\"" + lp.GetValue() + "\","
			}
			if label == "" || strings.Contains(s, label) {
				if m.Counter != nil {
					return m.Counter.GetValue()
				}
				return m.Gauge.GetValue()
			}
		}
	}
	return 0
}

// A Set whose answer is lost and whose read-back fails leaves the intent
// open; the next interval reconciles it from the switch.
func TestAgentUnknownOutcomeReconciled(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA)
	r := newRig(t, config.ModeClosedLoop, false, "", sw)
	sw.setErr = errors.New("rpc error: code = DeadlineExceeded")
	sw.readErr, sw.readErrAfterSet = errors.New("connection reset"), true
	r.interval(t)
	es, _ := r.j.Entries("", 0)
	if len(es) != 1 || es[0].State != core.StateIntent {
		t.Fatalf("audit %+v", es)
	}
	// The Set had in fact landed.
	sw.mu.Lock()
	sw.setErr, sw.readErr = nil, nil
	sw.set[kA] = target
	sw.mu.Unlock()
	r.interval(t)
	es, _ = r.j.Entries("", 0)
	if es[0].State != core.StateReconciled {
		t.Fatalf("audit %+v", es)
	}
	if lg, _ := r.a.Guard().LastGood(kA); lg != cur {
		t.Fatalf("last good %+v: the reconciled change must be on probation from %+v", lg, cur)
	}
}

type panicPolicy struct{}

func (panicPolicy) Name() string { return "panics" }
func (panicPolicy) Decide([]env.Observation) []policy.Decision {
	var m map[string]int
	m["x"] = 1
	return nil
}

func TestAgentSurvivesPolicyPanic(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	r.a.o.Policy = panicPolicy{}
	r.clk.Add(time.Second)
	r.a.Ingest(r.sw.snapshot(sec))
	err := r.a.Tick(context.Background())
	if err == nil || !strings.Contains(err.Error(), "policy panics panicked") {
		t.Fatalf("got %v", err)
	}
	if r.sw.setCount() != 0 {
		t.Fatal("Set after a policy panic")
	}
	// The watchdog keeps running while the policy fails.
	r.clk.Add(40 * time.Second)
	r.a.Tick(context.Background())
	if r.sw.get(kA) == cur {
		t.Fatal("no stale-revert while the policy panics")
	}
}
