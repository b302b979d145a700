package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/fleet"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/agent/metrics"
	"github.com/ecntune/ecntune/agent/web"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/policy"
)

// Switch is the I/O face of one switch: a telemetry stream in, settings out.
// The gNMI implementation is gnmiclient.Switch; tests use fakes.
type Switch interface {
	// Name is the target name (as in the configuration and QueueKey.Target).
	Name() string
	// Subscribe delivers decoded snapshots on out until ctx ends,
	// reconnecting by itself. Stream and decode errors go to errs (never
	// blocking: an error is dropped when errs is full).
	Subscribe(ctx context.Context, out chan<- env.Snapshot, errs chan<- error)
	// SetPaths are the paths a Set of these queues writes (for the audit).
	SetPaths(keys []env.QueueKey) []string
	// Apply writes the settings in one Set request. It is never retried.
	Apply(ctx context.Context, settings map[env.QueueKey]env.Setting) error
	// Read returns the settings the switch reports for the queues (a Get).
	Read(ctx context.Context, keys []env.QueueKey) (map[env.QueueKey]env.Setting, error)
	// Close releases the connection.
	Close() error
}

// Observer is what the agent needs of env.Observer.
type Observer interface {
	Observe(s env.Snapshot) []env.Observation
	Forget(target string)
}

// Options wire an agent from parts already built (Open builds them from a
// Config). What the agent does is the Config's: its guardrails (presets
// resolved, Guardrails.Reward the reward that scores intervals, nil for
// none), mode, interval and retention; the options are the parts and the
// hooks around them.
type Options struct {
	Config   *config.Config
	Policy   policy.Policy
	Model    string // model / policy version recorded in the audit log
	Observer Observer
	Journal  *journal.Journal
	Switches []Switch
	// Instruments are the agent's Prometheus series (default: NewInstruments()).
	Instruments *metrics.Instruments
	Logger      *slog.Logger
	Clock       func() time.Time
	DryRun      bool
	// Restarted are targets whose switches restarted at their startup
	// settings since the agent db was written (the caller knows: the demo
	// starts a fresh simulator beside a kept db): what the guard remembers
	// expecting on their queues, their last known good setting and a
	// change on probation are gone with the restart, as when telemetry
	// shows a restart (counters back to 0); the setting they report is the
	// new baseline, not another writer's change. Hold times stay.
	Restarted []string
	// SetTimeout bounds one Set plus its read-back (default: 5 s).
	SetTimeout time.Duration
	// Gate, when set, limits writes to the switches it allows and fences
	// each (a fleet member's ownership, agent/fleet).
	Gate Gate
	// IOWait is how long Run's interval waits for its Sets before it goes
	// on (0: half the interval, at most SetTimeout); the rest land as they
	// return. Tick called directly (lockstep, tests) waits for all.
	IOWait time.Duration
	// History is how many control intervals the dashboard keeps per queue
	// (0: DefaultHistory; below 0: none, and the dashboard draws nothing).
	History int
}

// Agent is the runtime loop.
type Agent struct {
	o        Options
	cfg      *config.Config
	core     *core.Core
	log      *slog.Logger
	switches map[string]Switch
	targets  map[string]config.Target
	names    []string
	// reward scores an interval (Config.Guardrails.Reward; nil: none).
	reward func(env.Metrics) float64
	// retention of shadow recommendations in the db (Config.Retention,
	// else 1 h).
	retention time.Duration
	// release closes what Open opened (nil for an agent from New).
	release func() error
	// lastFleet is the last fleet status GET /fleet read, served marked
	// stale while etcd does not answer (fleet_http.go)
	lastFleet lastFleetStatus

	mu     sync.Mutex
	latest map[env.QueueKey]env.Observation // newest observation per queue since the last interval
	// counters: the cumulative counters of each queue's last sample,
	// kept in the agent db (saveCounters) to seed the observer of the
	// next run (seedObserver)
	counters map[env.QueueKey]env.QueueCounters
	lastSeen map[string]time.Time
	heard    map[string]bool                      // targets that have sent a snapshot (health)
	wallGap  map[string]time.Duration             // wall time between a target's last two snapshots (warnInterval)
	unserved map[string]bool                      // targets this agent does not serve now (serve.go)
	silent   map[string]bool                      // targets whose interval series were dropped as stale (forgetSilent)
	tinfo    map[string]*targetState              // guarded by mu
	recs     map[env.QueueKey]core.Recommendation // newest recommendation per queue (HTTP)
	lastPlan []core.Change
	toVerify map[string][]env.QueueKey // queues alarmed as another writer's, to read (verifyExternal; Tick's goroutine)
	landRead map[uint64]int64          // open entries whose Set may still land → when to read them next (awaitLanding)
	pending  bool                      // audit entries left unresolved by a crash
	ticks    int
	dbFails  int  // the agent db's failed writes counted on /metrics (noteDB)
	pause    bool // an operator paused the closed loop (the core follows each Tick)
	// pauseMu: one pause or resume at a time, so that the journal and
	// pause end the same (two at once could journal one and keep the other).
	pauseMu sync.Mutex
	// approvals are approve mode's pending changes and approvals
	// (guarded by mu).
	approvals core.Approvals
	// savedApprovals are the approvals the journal holds (saveApprovals)
	savedApprovals []core.Approved
	checks         []func() []string // AddHealthCheck

	// peers discovered by LLDP, per target (fabric-ports: lldp): written
	// by the switches' Subscribe goroutines on (re)connect, read by
	// Ingest. Each map is replaced whole, never changed in place.
	peerMu sync.RWMutex
	peers  map[string]map[string]env.Peer
	// The fabric records (fabric.go), under peerMu: LLDP's neighbours
	// per target and port, the targets whose record is to be rewritten,
	// and the last record written of each.
	neighbors   map[string]map[string]env.Neighbor
	fabricStale map[string]bool
	fabric      map[string]env.FabricRecord
	fabricFail  map[string]bool // targets whose record could not be written

	hist *web.History // the dashboard's per-queue intervals (nil: off)

	intervalWarned bool // warnInterval logged (Tick's goroutine only)
	// dropped: the changes of the guard's plans not written (held or
	// skipped at apply, by rule) since the interval was last logged
	// (logInterval)
	dropped []droppedChange

	// The switch I/O under way (apply.go), all on Tick's goroutine but
	// ioc: one flight per target at a time.
	busy     map[string]bool
	inFlight int
	ioc      chan ioDone
	ioWait   time.Duration    // how long apply waits for flights (0: all)
	stopping bool             // Run is ending: no new Set
	tokens   map[string]int64 // the Gate's fencing token per target, as of the interval
	fleet    fleetState       // what moves with a switch in a fleet (fleet_open.go)
	// commitWait: per target, until when (unix ns) an open audit entry's
	// confirmed commit may be pending on the switch (awaitCommits): no
	// write before.
	commitWait map[string]int64
	// setFails: per target, the Sets in a row the switch answered with an
	// error (a config updater down, a refusal it repeats): writes back off
	// (setBackoff).
	setFails map[string]*setFailures
}

// New checks the options and builds an agent.
func New(o Options) (*Agent, error) {
	if o.Config == nil || o.Policy == nil || o.Observer == nil || o.Journal == nil {
		return nil, errors.New("agent: config, policy, observer and journal are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Instruments == nil {
		o.Instruments = metrics.NewInstruments()
	}
	o.Instruments.SetPerQueue(o.Config.MetricsQueues)
	if o.SetTimeout <= 0 {
		o.SetTimeout = 5 * time.Second
	}
	if err := checkCommitConfirmed(o.Config, o.SetTimeout, o.Logger); err != nil {
		return nil, err
	}
	var mems []core.QueueMemory
	if o.Journal != nil && o.Config.Mode == config.ModeClosedLoop {
		// Every guardrail survives a restart: hold times, probations,
		// last-known-good settings, another writer's hold.
		var err error
		if mems, err = o.Journal.GuardMemory(); err != nil {
			return nil, err
		}
		for _, r := range o.Journal.GuardMemoryRepairs() {
			o.Logger.Warn("agent db: "+r, "db", o.Journal.Path())
		}
		if n := restartedMemory(mems, o.Restarted); n > 0 {
			o.Logger.Info("switches restarted at their startup settings: the guard takes what they report as the baseline, not as another writer's",
				"targets", o.Restarted, "queues", n)
		}
		seedObserver(o)
	}
	gc := o.Config.Guardrails
	gc.LeastRepairs = gc.LeastRepairs || o.Config.Approve // a repair never carries an unapproved setting
	c, err := core.New(core.Options{Guard: gc, Shadow: o.Config.Mode == config.ModeShadow,
		Policy: o.Policy.Name(), Reward: o.Config.Guardrails.Reward, Memory: mems})
	if err != nil {
		return nil, err
	}
	pause := restorePause(o, c)
	retention := o.Config.Retention
	if retention <= 0 {
		retention = time.Hour
	}
	a := &Agent{o: o, cfg: o.Config, core: c, pause: pause, log: o.Logger, reward: o.Config.Guardrails.Reward, retention: retention,
		switches: map[string]Switch{}, targets: map[string]config.Target{},
		latest: map[env.QueueKey]env.Observation{}, lastSeen: map[string]time.Time{}, tinfo: map[string]*targetState{},
		recs: map[env.QueueKey]core.Recommendation{}, peers: map[string]map[string]env.Peer{},
		neighbors: map[string]map[string]env.Neighbor{}, fabricStale: map[string]bool{}, fabric: map[string]env.FabricRecord{}, fabricFail: map[string]bool{},
		busy: map[string]bool{}, ioc: make(chan ioDone, len(o.Switches)+1)}
	switch {
	case o.History == 0:
		a.hist = web.NewHistory(web.DefaultHistory)
	case o.History > 0:
		a.hist = web.NewHistory(o.History)
	}
	for _, t := range o.Config.Targets {
		a.targets[t.Name] = t
	}
	if o.Config.Approve && o.Config.Mode == config.ModeClosedLoop {
		// approvals given before a restart wait on, as they would have
		as, err := o.Journal.Approvals()
		if err != nil {
			o.Logger.Error("approvals record: the approvals given before the restart are not taken; approve again", "err", err)
		}
		a.approvals.Restore(as)
		a.savedApprovals = as
		if len(as) > 0 {
			o.Logger.Info("approvals given before the restart wait for their changes", "approved", len(as))
		}
	}
	// targets the configuration no longer lists whose queues the agent
	// changed: they keep its settings, which a restart passed over in
	// silence (agent rollback names them too)
	left := map[string]int{}
	for _, m := range mems {
		if _, ok := a.targets[m.Key.Target]; !ok && m.Changed {
			left[m.Key.Target]++
		}
	}
	for _, t := range slices.Sorted(maps.Keys(left)) {
		o.Logger.Warn("agent db: a target the configuration no longer lists keeps the agent's settings on its queues; add it back and run ecntune agent rollback --target to undo them",
			"target", t, "queues", left[t])
	}
	for _, s := range o.Switches {
		if _, ok := a.targets[s.Name()]; !ok {
			return nil, fmt.Errorf("agent: switch %q is not among the configured targets", s.Name())
		}
		if _, dup := a.switches[s.Name()]; dup {
			return nil, fmt.Errorf("agent: switch %q given twice", s.Name())
		}
		a.switches[s.Name()] = s
		a.names = append(a.names, s.Name())
	}
	sort.Strings(a.names)
	start := o.Clock()
	for _, n := range a.names {
		c.AddTarget(n, start.UnixNano())
		a.lastSeen[n] = start // staleness counts from the start until data comes
		// counters at 0 from the start: one that first appears at 1 has
		// increase() and rate() 0, and an alert on a target's first error
		// (or the dashboard's rollback annotation) saw nothing
		o.Instruments.TelemetryErr.WithLabelValues(n).Add(0)
		o.Instruments.Snapshots.WithLabelValues(n).Add(0)
	}
	for _, k := range []core.ChangeKind{core.KindRollback, core.KindRevert, core.KindReadBack, core.KindRepair} {
		o.Instruments.Rollbacks.WithLabelValues(string(k)).Add(0)
	}
	return a, nil
}

// Guard exposes the core's guard (for tests and the HTTP endpoint).
func (a *Agent) Guard() *core.Guard { return a.core.Guard() }

// Model is the name of the policy the agent runs, its registry models
// pinned to the versions they named at start (model:NAME@V).
func (a *Agent) Model() string { return a.o.Model }

// Instruments returns the agent's Prometheus series.
func (a *Agent) Instruments() *metrics.Instruments { return a.o.Instruments }

// Run subscribes to every switch and runs a control interval every
// Config.Interval until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	if a.cfg.Mode == config.ModeClosedLoop && !a.o.DryRun {
		if err := a.Reconcile(ctx); err != nil {
			return err
		}
	}
	_ = a.o.Journal.SetMeta("owner", a.cfg.Owner)
	sctx, cancel := context.WithCancel(ctx)
	subs := a.newSubscriptions(sctx)
	defer func() { cancel(); subs.stop() }()
	a.watchPeers()
	subs.sync()
	nudge := make(chan struct{}, 1)
	adopt := time.NewTimer(time.Hour) // adoptTimer sets it
	adopt.Stop()
	defer adopt.Stop()
	if og, ok := a.o.Gate.(ownerGate); ok {
		og.OnChange(func() {
			select {
			case nudge <- struct{}{}:
			default:
			}
		})
		defer og.OnChange(nil)
	}
	a.log.Info("agent started", "mode", a.cfg.Mode, "policy", a.o.Policy.Name(), "targets", len(a.names),
		"interval", a.cfg.Interval, "dry_run", a.o.DryRun)
	tick := time.NewTicker(a.cfg.Interval)
	defer tick.Stop()
	a.ioWait = a.o.IOWait
	if a.ioWait <= 0 {
		a.ioWait = min(a.cfg.Interval/2, a.o.SetTimeout)
	}
	defer func() { a.ioWait = 0 }()
	for {
		select {
		case <-ctx.Done():
			a.finishIO(ctx)
			if a.cfg.Mode == config.ModeClosedLoop {
				a.saveCounters()
			}
			a.log.Info("agent stopped")
			return nil
		case d := <-a.ioc:
			a.land(ctx, d)
		case s := <-subs.snaps:
			a.Ingest(s)
		case e := <-subs.errs:
			a.targetEvent(e.target, e.err)
		case <-nudge:
			subs.sync()
			a.adoptTimer(adopt)
		case <-adopt.C:
			if a.cfg.Mode == config.ModeClosedLoop {
				a.adoptMemory(ctx) // at the take-over delay's end, not the next interval
			}
			a.adoptTimer(adopt)
		case <-tick.C:
			subs.sync()
			a.pollTargets()
			if err := a.Tick(ctx); err != nil {
				a.log.Error("interval", "err", err)
			}
		}
	}
}

// watchPeers reads the LLDP neighbours of every target whose fabric ports
// come from LLDP, each time its switch (re)connects, and has every
// target's fabric record written anew after a reconnect.
func (a *Agent) watchPeers() {
	for _, n := range a.names {
		t := a.targets[n]
		ls, ok := a.switches[n].(LLDPSwitch)
		switch {
		case !ok && t.DiscoverPeers:
			a.log.Warn("fabric-ports: lldp, but this switch cannot read LLDP neighbours: every port's peer stays unknown", "target", n)
			continue
		case !ok:
			continue
		}
		ls.OnConnect(func(ctx context.Context) {
			a.staleFabric(t.Name)
			if t.DiscoverPeers {
				a.discoverPeers(ctx, t, ls)
			}
		})
	}
}

// Ingest takes one decoded snapshot: it keeps only the queues under control,
// runs the observer and keeps the newest observation per queue.
func (a *Agent) Ingest(s env.Snapshot) {
	t, ok := a.targets[s.Target]
	if !ok {
		a.log.Warn("snapshot for an unknown target dropped", "target", s.Target)
		return
	}
	a.mu.Lock()
	gone := a.unserved[s.Target]
	a.mu.Unlock()
	if gone {
		return // a snapshot on its way as the switch was given up
	}
	var found map[string]env.Peer
	if t.DiscoverPeers {
		found = a.discovered(s.Target)
	}
	kept := s.Queues[:0:0]
	implausible := ""
	for _, q := range s.Queues {
		if q.Key.Target == s.Target && t.WantsPort(q.Key.Port) && t.WantsQueue(q.Key.Queue) {
			if q.BufferBytes > 0 && q.MinHeadroomBytes > q.BufferBytes {
				// A floor above the switch's whole buffer is no floor:
				// repairing to it would write nonsense on every PG.
				implausible = fmt.Sprintf("%s reports a lossless floor of %s, more than its whole buffer of %s",
					q.Key, units.FormatBytes(q.MinHeadroomBytes), units.FormatBytes(q.BufferBytes))
				q.MinHeadroomBytes, q.FloorEstimated = 0, false
				q.Missing |= env.TelHeadroom
			}
			if q.Peer == env.PeerUnknown {
				q.Peer = t.PeerFrom(found, q.Key.Port)
			}
			if q.MinHeadroomBytes == 0 && q.Setting.HeadroomBytes > 0 && t.CableMeters > 0 {
				// The switch shows its headroom but no floor (nor, on
				// SONiC, a cable length of its own): the operator's
				// cable length gives it.
				if q.MinHeadroomBytes = env.LosslessFloor(q.RateBps, t.CableMeters, t.FrameBytes); q.MinHeadroomBytes > 0 {
					q.Missing &^= env.TelHeadroom
					q.FloorEstimated = true
				}
			}
			kept = append(kept, q)
		}
	}
	s.Queues = kept
	a.noteImplausibleFloor(s.Target, implausible)
	a.noteFabric(t, s)
	a.o.Instruments.Snapshot(&s)
	now := a.o.Clock()
	obs := a.o.Observer.Observe(s)
	a.noteMalformedCounters(s.Target, obs)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.heard[s.Target] {
		if a.wallGap == nil {
			a.wallGap = map[string]time.Duration{}
		}
		a.wallGap[s.Target] = now.Sub(a.lastSeen[s.Target])
	}
	a.lastSeen[s.Target] = now
	if a.heard == nil {
		a.heard = map[string]bool{}
	}
	a.heard[s.Target] = true
	a.telemetryGood(s.Target)
	a.noteMissing(s)
	a.noteAbsentPorts(s)
	a.core.Seen(s.Target, now.UnixNano())
	a.o.Instruments.Snapshots.WithLabelValues(s.Target).Inc()
	for _, o := range obs {
		if prev, ok := a.latest[o.Key]; ok && prev.Metrics.Reset && !o.Metrics.Reset {
			// the counters went back within this interval: the guard
			// sees it (a restart's new baseline), and the interval is
			// not measured, as the one of the reset is not
			o.Metrics, o.Valid, o.Problem = prev.Metrics, false, prev.Problem
		}
		a.latest[o.Key] = o
	}
	if a.counters == nil {
		a.counters = map[env.QueueKey]env.QueueCounters{}
	}
	for i := range s.Queues {
		a.counters[s.Queues[i].Key] = s.Queues[i].Counters()
	}
}

// counterSeeder is an Observer that can be told the counters a previous
// run saw last (env.Observer.Seed).
type counterSeeder interface {
	Seed(k env.QueueKey, c env.QueueCounters)
}

// seedObserver gives the observer the counters of each queue's last sample
// the agent db holds: a switch that restarted while the agent was down
// shows its counters went back at the first sample (a counter reset the
// guard takes with the setting it runs as the new baseline), where
// without them the first sample is only a first sample, and the setting
// the switch starts with reads as another writer's.
func seedObserver(o Options) {
	sd, ok := o.Observer.(counterSeeder)
	if !ok {
		return
	}
	cs, damaged, err := o.Journal.Counters()
	if err != nil {
		o.Logger.Warn("agent db: the counters of the last run are not read: a switch that restarted while the agent was down may read as another writer", "db", o.Journal.Path(), "err", err)
		return
	}
	if len(damaged) > 0 {
		o.Logger.Warn("agent db: the counters of the last run of some queues failed their seal and are left out: a restart of their switch while the agent was down may read as another writer",
			"db", o.Journal.Path(), "queues", damaged)
	}
	for k, c := range cs {
		sd.Seed(k, c)
	}
}

// lastCounters is a copy of the counters of each queue's last sample.
func (a *Agent) lastCounters() map[env.QueueKey]env.QueueCounters {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.counters)
}

// saveCounters stores the counters of each queue's last sample (for the
// next run's seedObserver). Failing costs only that.
func (a *Agent) saveCounters() {
	if err := a.o.Journal.PutCounters(a.lastCounters()); err != nil {
		a.log.Warn("the queues' counters are not stored: after a restart, a switch that restarted meanwhile may read as another writer", "err", err)
	}
}

// logBaselines says, once per target and interval, which switches
// restarted with the agent's settings gone, the setting they run taken as
// the new baseline.
func (a *Agent) logBaselines(bs []core.Baseline) {
	for i := 0; i < len(bs); {
		t := bs[i].Key.Target
		n := 0
		for n < len(bs)-i && bs[i+n].Key.Target == t {
			n++
		}
		b := bs[i]
		when, why := "", b.Why
		if r, ok := strings.CutPrefix(b.Why, env.ResetSinceLastRun+": "); ok {
			when, why = " while the agent was down", "its "+r
		} else if r, ok := strings.CutPrefix(b.Why, "counter reset: "); ok {
			why = "its " + r
		}
		a.log.Info(fmt.Sprintf("the switch restarted%s (%s): its running setting is the new baseline", when, why),
			"target", t, "queues", n, "example", b.Key.String()+": agent's "+b.Was.Describe()+" → switch runs "+b.Now.Describe())
		i += n
	}
}

// noteMalformedCounters logs once per change of state that a target's
// counters say more was sent than its links can carry (env.MaxUtil): the
// intervals are left out and the queues held, which an operator would
// otherwise see only as undecided queues.
func (a *Agent) noteMalformedCounters(target string, obs []env.Observation) {
	why, n := "", 0
	for i := range obs {
		if p := obs[i].Problem; strings.HasPrefix(p, env.MalformedCounters) {
			if n == 0 {
				why = obs[i].Key.String() + ": " + p
			}
			n++
		}
	}
	a.mu.Lock()
	ti := a.info(target)
	was := ti.countersMalformed
	ti.countersMalformed = n > 0
	a.mu.Unlock()
	switch {
	case n > 0 && !was:
		a.o.Instruments.Alarms.WithLabelValues("malformed-counters").Inc()
		a.log.Warn("counters beyond what the links carry: those queues are held (logged again when they are plausible)", "target", target, "queues", n, "example", why)
	case n == 0 && was:
		a.log.Info("counters plausible again", "target", target)
	}
}

// noteImplausibleFloor logs once per change of state that a target reports
// floors the agent does not trust (why: one example; "" none).
func (a *Agent) noteImplausibleFloor(target, why string) {
	a.mu.Lock()
	ti := a.info(target)
	was := ti.floorDistrusted
	ti.floorDistrusted = why != ""
	a.mu.Unlock()
	switch {
	case why != "" && !was:
		a.o.Instruments.Alarms.WithLabelValues("implausible-floor").Inc()
		a.log.Warn("lossless floors ignored: "+why+"; headroom is neither repaired nor set on such queues until the switch reports a plausible floor", "target", target)
	case why == "" && was:
		a.log.Info("lossless floors plausible again", "target", target)
	}
}

// Tick runs one control interval: take the newest observation of each
// queue, ask the policy, then hand both to the core and do what its Ready
// says: record (shadow), or write ahead, set and read back (closed loop).
func (a *Agent) Tick(ctx context.Context) error {
	start := time.Now() // for the decision latency, whatever Options.Clock says
	now := a.o.Clock()
	defer a.noteDB()
	obs, missing := a.take(now)
	a.o.Instruments.Ticks.Inc()

	// A failing policy costs its decisions, not the interval: the guard
	// still runs its rollback rules and the watchdog.
	decs, perr := a.decide(obs)
	if a.cfg.Mode != config.ModeShadow && a.pending && !a.o.DryRun {
		if err := a.reconcileAsync(ctx); err != nil {
			a.log.Warn("reconcile", "err", err)
		}
	}
	if a.cfg.Mode == config.ModeClosedLoop {
		a.adoptMemory(ctx)
	}
	paused := a.paused()
	a.core.SetPaused(paused)
	in := core.Interval{NowNs: now.UnixNano(), Observations: obs, Decisions: decs, Missing: missing}
	if a.cfg.Approve && a.cfg.Mode == config.ModeClosedLoop && !paused {
		// the tunes waiting for an operator spend no change budget: an
		// approved one is never refused for the budget the held ones took
		a.mu.Lock()
		a.approvals.TTL = int64(ApprovalIntervals * a.cfg.Interval)
		a.mu.Unlock()
		in.Held = func(c core.Change) bool {
			a.mu.Lock()
			defer a.mu.Unlock()
			return a.approvals.Holds(c, in.NowNs)
		}
	}
	rd, err := a.core.Tick(in)
	a.logBaselines(rd.Baselines)
	a.publish(obs, rd.Recommendations)
	a.forgetSilent(now)
	a.hist.Record(now.UnixNano(), obs, rd.Recommendations)
	if err != nil {
		return err
	}
	a.warnInterval(obs, decs)
	a.forgetGone(now)
	if len(obs) > 0 {
		a.o.Instruments.DecisionLatency.Observe(time.Since(start).Seconds())
	}
	a.account(rd.Plan)
	if a.cfg.Mode == config.ModeShadow || paused {
		a.logInterval(len(obs), rd, paused)
		if paused && a.cfg.Mode == config.ModeClosedLoop {
			if a.cfg.Approve {
				// nothing waits for approval while paused: the plan of
				// before the pause (its gnmic export too) is not offered
				a.mu.Lock()
				a.approvals.Withdraw(now.UnixNano())
				a.mu.Unlock()
			}
			// nothing is set: "changed in the last interval" is none, and
			// the churn window goes on ageing (both kept the last batch
			// before the pause for as long as it lasted)
			a.mu.Lock()
			a.lastPlan = a.lastPlan[:0]
			a.mu.Unlock()
			if a.ticks%10 == 0 {
				a.churn(now)
			}
		}
		if err := a.store(now, rd.Recommendations); err != nil {
			return err
		}
		return perr
	}
	a.apply(ctx, a.gate(now.UnixNano(), rd.Changes), true)
	// after apply: the changes it held or skipped are not written, and
	// the line says so by rule, as the audit log and the rejections metric
	a.logInterval(len(obs), rd, paused)
	a.verifyExternal(ctx, rd.Alarms)
	mems := a.core.Memories()
	var cs map[env.QueueKey]env.QueueCounters
	if len(mems) > 0 || a.ticks%10 == 0 {
		cs = a.lastCounters() // beside the memory, in its transaction
	}
	if err := a.o.Journal.PutMemoryAndCounters(mems, cs); err != nil {
		a.log.Error("guard memory", "err", err)
	}
	a.shareMemory(ctx, mems)
	if len(rd.Changes) > 0 || a.ticks%10 == 0 {
		// Only a change, or one ageing out of the window, moves the churn:
		// not a read of the audit window every interval.
		a.churn(now)
	}
	// A closed loop keeps its recommendations too, for agent report and
	// agent recommendations, after its Sets so that they wait for no
	// disk; failing to store them costs no tuning.
	if err := a.store(now, rd.Recommendations); err != nil {
		a.log.Warn("storing recommendations", "err", err)
	}
	return perr
}

// take empties the newest observations (in key order) and says which
// telemetry each target lacks.
func (a *Agent) take(now time.Time) ([]env.Observation, map[string]env.Telemetry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	obs := make([]env.Observation, 0, len(a.latest))
	for _, o := range a.latest {
		obs = append(obs, o)
	}
	clear(a.latest)
	missing := map[string]env.Telemetry{}
	for _, n := range a.names {
		if t, ok := a.lastSeen[n]; ok {
			a.o.Instruments.Staleness.WithLabelValues(n).Set(now.Sub(t).Seconds())
		}
		if ti := a.tinfo[n]; ti != nil && ti.missing != 0 {
			missing[n] = ti.missing
		}
	}
	a.ticks++
	sort.Slice(obs, func(i, j int) bool { return env.QueueKeyLess(obs[i].Key, obs[j].Key) })
	return obs, missing
}

// publish counts the interval's recommendations and keeps the newest of
// each queue for the HTTP endpoint.
func (a *Agent) publish(obs []env.Observation, recs []core.Recommendation) {
	if len(obs) > 0 {
		a.o.Instruments.Interval(obs, recs, a.reward != nil)
	}
	a.mu.Lock()
	for _, r := range recs {
		a.recs[r.Key] = r
	}
	a.mu.Unlock()
}

// forgetSilent drops the interval series of the targets whose telemetry
// is stale as /healthz counts it (config.HealthStaleIntervals intervals):
// their last values stood on /metrics as if current for as long as the
// switch was silent. Once per silence.
func (a *Agent) forgetSilent(now time.Time) {
	limit := config.HealthStaleIntervals * a.cfg.Interval
	var forget []string
	a.mu.Lock()
	if a.silent == nil {
		a.silent = map[string]bool{}
	}
	for _, n := range a.names {
		stale := a.heard[n] && now.Sub(a.lastSeen[n]) > limit
		if stale && !a.silent[n] {
			forget = append(forget, n)
		}
		a.silent[n] = stale
	}
	a.mu.Unlock()
	for _, n := range forget {
		a.o.Instruments.ForgetTarget(n)
	}
}

// logInterval writes one info line per interval (core.Summarize): the
// changes planned are "would_apply" where none is written (shadow mode, a
// pause) and "proposed" where each waits for an operator (approve mode).
func (a *Agent) logInterval(queues int, rd core.Ready, paused bool) {
	dropped := a.dropped
	a.dropped = nil
	if !a.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	plan := rd.Plan
	var earlier []string // dropped changes not of this plan (a rollback round, or an earlier batch whose read landed late)
	if len(dropped) > 0 {
		plan.Changes = slices.Clone(plan.Changes)
		plan.Rejections = slices.Clone(plan.Rejections)
		for _, d := range dropped {
			i := slices.IndexFunc(plan.Changes, func(c core.Change) bool {
				return c.Key == d.change.Key && c.Kind == d.change.Kind && c.New == d.change.New
			})
			if i < 0 {
				earlier = append(earlier, d.change.Key.String()+" "+d.rule)
				continue
			}
			plan.Changes = slices.Delete(plan.Changes, i, i+1)
			plan.Rejections = append(plan.Rejections, core.Rejection{Key: d.change.Key, Rule: d.rule, Wanted: d.change.New, Reason: d.change.Reason})
		}
	}
	s := core.Summarize(rd.Recommendations, plan)
	verb := "changes"
	switch {
	case a.cfg.Mode == config.ModeShadow || paused:
		verb = "would_apply"
	case a.cfg.Approve:
		verb = "proposed"
	}
	args := []any{"queues", queues, "recommend_change", s.Differ, verb, s.Changes, "rejected", s.Rejected,
		"top_moves", s.TopMoves, "undecided", s.Undecided, "idle", s.Idle}
	if len(earlier) > 0 {
		args = append(args, "other_not_written", strings.Join(earlier, ", "))
	}
	a.log.Info("interval", args...)
}

// droppedChange is a change of the guard's plan that apply did not write,
// and the rule that held or skipped it.
type droppedChange struct {
	change core.Change
	rule   string
}

// drop notes changes apply does not write (Tick's goroutine only): the
// interval's log line counts them by rule, not as changes.
func (a *Agent) drop(rule string, cs ...core.Change) {
	for _, c := range cs {
		a.dropped = append(a.dropped, droppedChange{c, rule})
	}
}

// store keeps the interval's recommendations in the db (when the config
// says so: Config.StoreRecommendations), pruning those older than the
// retention every 100 intervals.
func (a *Agent) store(now time.Time, recs []core.Recommendation) error {
	if !a.cfg.StoresRecommendations() {
		return nil
	}
	prune := func() {
		if _, err := a.o.Journal.PruneRecommendations(now.Add(-a.retention).UnixNano()); err != nil {
			a.log.Warn("pruning recommendations", "err", err)
		}
	}
	if a.ticks%100 == 0 {
		prune()
	}
	if err := a.o.Journal.PutRecommendations(recs); err != nil {
		// a full disk: what the retention lets go makes room (it was
		// never pruned once a store had failed, and nothing was stored
		// again)
		prune()
		if err2 := a.o.Journal.PutRecommendations(recs); err2 != nil {
			return err
		}
	}
	return nil
}

// noteDB counts the agent db's failed writes on /metrics.
func (a *Agent) noteDB() {
	if a.o.Journal == nil {
		return
	}
	_, _, _, total := a.o.Journal.WriteFailure()
	if d := total - a.dbFails; d > 0 {
		a.o.Instruments.DBWriteFailures.Add(float64(d))
	}
	a.dbFails = total
}

// decide calls the policy; a policy that panics, or answers for other
// queues than it was asked about, costs one interval (the guard then sees
// no decisions), not the agent.
func (a *Agent) decide(obs []env.Observation) (decs []policy.Decision, err error) {
	if len(obs) == 0 {
		return nil, nil
	}
	defer func() {
		if r := recover(); r != nil {
			decs, err = nil, fmt.Errorf("policy %s panicked: %v", a.o.Policy.Name(), r)
		}
	}()
	decs = a.o.Policy.Decide(obs)
	if len(decs) != len(obs) {
		return nil, fmt.Errorf("policy %s returned %d decisions for %d observations", a.o.Policy.Name(), len(decs), len(obs))
	}
	a.o.Instruments.Decisions.Add(float64(len(decs)))
	return decs, nil
}

// warnInterval logs once per run when the policy held queues because the
// switches' counters span an interval outside the one it was validated
// for (see policy.Learned.WithValidInterval); obs are the observations
// decs decide. When the counters' span is far from the wall time between
// the switch's samples, the switch's clock is at fault, not the agent's
// intervals, and the warning says so.
func (a *Agent) warnInterval(obs []env.Observation, decs []policy.Decision) {
	if a.intervalWarned {
		return
	}
	for i, d := range decs {
		if d.Held != policy.HoldInterval {
			continue
		}
		a.intervalWarned = true
		remedy := "; change interval/sample-interval or use a model validated for it"
		if i < len(obs) {
			a.mu.Lock()
			wall, ok := a.wallGap[d.Key.Target]
			a.mu.Unlock()
			if !ok {
				wall = a.cfg.SampleInterval // not measured yet: what was asked
			}
			if why := clockPace(obs[i].Metrics.IntervalNs, wall); why != "" {
				remedy = "; " + why
			}
		}
		a.log.Warn("the policy holds queues: "+policy.HoldText(d.Reason)+remedy, "policy", a.o.Policy.Name(), "queue", d.Key.String())
		return
	}
}

// clockPace says why counters spanning spanNs of the switch's clock,
// received wall apart, do not measure the interval the agent asked for:
// the switch's clock ran at less than half or more than twice the wall
// clock's pace ("" when it kept pace, or either is unknown).
func clockPace(spanNs int64, wall time.Duration) string {
	span := time.Duration(spanNs)
	if span <= 0 || wall <= 0 || (2*span >= wall && span <= 2*wall) {
		return ""
	}
	pace := "less"
	if span > wall {
		pace = "more"
	}
	return fmt.Sprintf("the switch's clock (its counters' timestamps) advanced %v between samples received %v apart, %s than the wall clock: "+
		"a simulated switch behind real time (or run at a timescale), or a switch stamping its counters wrongly, not the agent's interval/sample-interval; "+
		"check the switch (a simulator: give it CPU, or a larger --timescale) rather than the configuration",
		span, wall.Round(time.Millisecond), pace)
}

func (a *Agent) account(p core.Plan) {
	m := a.o.Instruments
	for _, r := range p.Rejections {
		m.Rejections.WithLabelValues(r.Rule).Inc()
	}
	for _, c := range p.Changes {
		for _, r := range c.Clamped {
			m.Clamps.WithLabelValues(r).Inc()
		}
	}
	for _, al := range p.Alarms {
		m.Alarms.WithLabelValues(al.Rule).Inc()
		args := []any{"target", al.Target, "rule", al.Rule}
		if al.Key != nil {
			args = append(args, "queue", al.Key.String())
		}
		a.log.Warn(al.Msg, args...)
	}
	frozen := map[string]bool{}
	for _, t := range p.Frozen {
		frozen[t] = true
	}
	for _, n := range a.names {
		v := 0.0
		if frozen[n] {
			v = 1
		}
		m.Frozen.WithLabelValues(n).Set(v)
	}
}

// Recommendations returns the newest recommendation per queue, in key order.
func (a *Agent) Recommendations(target string) []core.Recommendation {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]core.Recommendation, 0, len(a.recs))
	for _, r := range a.recs {
		if target == "" || r.Key.Target == target {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return env.QueueKeyLess(out[i].Key, out[j].Key) })
	return out
}

// LastChanges is the last batch of changes the guard let through.
func (a *Agent) LastChanges() []core.Change {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.lastPlan)
}

// Heard says which targets have sent telemetry.
func (a *Agent) Heard() map[string]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.heard)
}

// restartedMemory forgets, in mems, what the guard expected on the queues
// of the restarted targets (Options.Restarted), and returns how many
// queues it touched.
func restartedMemory(mems []core.QueueMemory, restarted []string) int {
	n := 0
	for i := range mems {
		if !slices.Contains(restarted, mems[i].Key.Target) {
			continue
		}
		mems[i].Expect, mems[i].LastGood, mems[i].Probation = nil, env.Setting{}, nil
		n++
	}
	return n
}

// TargetNames are the configured targets with a switch, sorted.
func (a *Agent) TargetNames() []string { return a.names }

// Handler serves the agent's HTTP endpoint (web.Handler): /metrics,
// /recommendations, /changes, /targets, /healthz and the dashboard.
func (a *Agent) Handler() http.Handler {
	h := web.Handler(web.Options{Source: a, Journal: a.o.Journal, Instruments: a.o.Instruments, History: a.hist,
		Clock: a.o.Clock, Mode: string(a.cfg.Mode), Policy: a.o.Policy.Name(), Interval: a.cfg.Interval,
		Approve: a.cfg.Approve && a.cfg.Mode == config.ModeClosedLoop})
	return a.withFleet(h)
}

// ChurnIntervals is the window of the churn series: changes and flaps
// over the last 100 control intervals.
const ChurnIntervals = 100

// churn publishes each target's changes and flaps over the last
// ChurnIntervals intervals, read from the audit log (its window only).
func (a *Agent) churn(now time.Time) {
	es, err := a.o.Journal.Recent(now.Add(-ChurnIntervals * a.cfg.Interval).UnixNano())
	if err != nil {
		a.log.Warn("churn", "err", err)
		return
	}
	changes := map[string]int{}
	for _, e := range es {
		if e.Took() {
			changes[e.Target]++
		}
	}
	flaps := core.Flaps(es, int64(core.FlapIntervals*a.cfg.Interval))
	for _, n := range a.names {
		a.o.Instruments.ChurnChanges.WithLabelValues(n).Set(float64(changes[n]))
		a.o.Instruments.ChurnFlaps.WithLabelValues(n).Set(float64(flaps[n]))
	}
}

// restorePause gives the core the operator's pause from the journal: it
// survives restarts, and an unreadable record keeps the loop paused
// (Journal.Pause).
func restorePause(o Options, c *core.Core) bool {
	if o.Config.Mode != config.ModeClosedLoop {
		if p, err := o.Journal.Pause(); err == nil && p.Paused {
			o.Logger.Info("the db holds a pause of the closed loop; shadow mode writes nothing anyway, and a closed loop on this db starts paused",
				"by", p.By, "reason", p.Reason)
		}
		return false
	}
	p, err := o.Journal.Pause()
	if err != nil {
		o.Logger.Error("pause record", "err", err)
	}
	c.SetPaused(p.Paused)
	if p.Paused {
		o.Logger.Warn("closed loop paused: recording, writing nothing (resume with POST /resume or ecntune agent resume)", "by", p.By, "reason", p.Reason)
	}
	o.Instruments.Paused.Set(boolGauge(p.Paused))
	return p.Paused
}

// ErrNotClosedLoop is the answer to a pause or resume of an agent in
// shadow mode, which writes nothing anyway.
var ErrNotClosedLoop = errors.New("the agent runs in shadow mode: there is no closed loop to pause or resume")

// Pause pauses the closed loop fabric-wide, as an operator does in an
// incident: from the next interval the agent decides and records as in
// shadow mode and writes nothing. The pause is journaled first, so that it
// survives a restart.
func (a *Agent) Pause(by, reason string) error { return a.setPause(true, by, reason) }

// Resume ends a pause: the next interval applies again.
func (a *Agent) Resume(by string) error { return a.setPause(false, by, "") }

// PauseState is the closed loop's pause as journaled; none in shadow
// mode, which has no closed loop to pause (a pause journaled by a closed
// loop on the same db applies when one runs on it again: /healthz, the
// dashboard and /metrics said "paused" there while /resume was refused).
func (a *Agent) PauseState() (journal.Pause, error) {
	if a.cfg.Mode != config.ModeClosedLoop {
		return journal.Pause{}, nil
	}
	return a.o.Journal.Pause()
}

func (a *Agent) setPause(paused bool, by, reason string) error {
	if a.cfg.Mode != config.ModeClosedLoop {
		return ErrNotClosedLoop
	}
	a.pauseMu.Lock()
	defer a.pauseMu.Unlock()
	p := journal.Pause{Paused: paused, By: by, Reason: reason, SinceNs: a.o.Clock().UnixNano()}
	if fp, ok := a.o.Gate.(fleetPauser); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cur, changed, err := ChangeFleetPause(ctx, a.o.Journal, fp.ReadPause, fp.SetPause, p)
		if changed {
			a.applyPause(cur, " fleet-wide")
			if err != nil && !errors.Is(err, journal.ErrPauseUnchanged) {
				a.log.Error("pause record", "err", err) // the fleet has it: followed all the same
				return nil
			}
		}
		return err
	}
	if err := a.o.Journal.ChangePause(p); err != nil {
		return err
	}
	a.applyPause(p, "")
	return nil
}

// ChangeFleetPause makes p the pause of a fleet (read and write its
// record) and of the journal j, the fleet's first: it is the record every
// member follows (fleetPause), and a pause journaled here but not in etcd
// could not be retried ("already paused") and was undone at the next
// start. A fleet already in p's state keeps its record (who, why, since):
// the journal takes that one, and the answer is the journal's
// ErrPauseUnchanged saying whose. It returns the pause j holds after, and
// whether j changed; an error reading or writing the fleet changes
// nothing. For a running agent (POST /pause) and a stopped one's database
// (ecntune agent pause --config) alike.
func ChangeFleetPause(ctx context.Context, j *journal.Journal, read func(context.Context) (fleet.Pause, bool, error),
	write func(context.Context, fleet.Pause) error, p journal.Pause) (journal.Pause, bool, error) {
	cur, ok, err := read(ctx)
	if err != nil {
		return p, false, fmt.Errorf("the fleet's pause could not be read (%w): nothing changed; try again", err)
	}
	if ok && cur.Paused == p.Paused {
		held := journal.Pause{Paused: cur.Paused, By: cur.By, Reason: cur.Reason, SinceNs: cur.SinceNs}
		changed, _ := journalPause(j, held) // a failed write: ChangePause below says so
		return held, changed, j.ChangePause(p)
	}
	if err := write(ctx, fleet.Pause{Paused: p.Paused, By: p.By, Reason: p.Reason, SinceNs: p.SinceNs}); err != nil {
		return p, false, fmt.Errorf("the fleet's pause could not be written (%w): nothing changed; try again", err)
	}
	changed, err := journalPause(j, p)
	return p, changed, err
}

// journalPause journals p unless the journal holds that state already,
// and says whether the state changed: a failed write counts as a change
// (the state is followed all the same, as the fleet's), its error
// returned for the log.
func journalPause(j *journal.Journal, p journal.Pause) (bool, error) {
	err := j.ChangePause(p)
	if errors.Is(err, journal.ErrPauseUnchanged) {
		return false, nil
	}
	return true, err
}

// takePause journals p (unless the journal says so already) and follows
// it. Callers hold pauseMu.
func (a *Agent) takePause(p journal.Pause) {
	changed, err := journalPause(a.o.Journal, p)
	if err != nil {
		a.log.Error("pause record", "err", err) // followed all the same
	}
	if changed {
		a.applyPause(p, " fleet-wide")
	}
}

// applyPause makes p the closed loop's state (the core follows at the
// next interval) and says so.
func (a *Agent) applyPause(p journal.Pause, scope string) {
	a.mu.Lock()
	a.pause = p.Paused
	a.mu.Unlock()
	a.o.Instruments.Paused.Set(boolGauge(p.Paused))
	if p.Paused {
		a.log.Warn("closed loop paused"+scope+": recording, writing nothing", "by", p.By, "reason", p.Reason)
	} else {
		a.log.Warn("closed loop resumed"+scope, "by", p.By)
	}
}

// fleetPauser is a Gate whose fleet shares the operator's pause
// (fleet.Node).
type fleetPauser interface {
	ReadPause(ctx context.Context) (fleet.Pause, bool, error)
	SetPause(ctx context.Context, p fleet.Pause) error
	FollowPause(fn func(fleet.Pause))
}

// fleetPause takes the fleet's pause, written by an operator through any
// member (or fleet.SetPause): journaled, as the agent's own pause is, so
// that it survives a restart outside the fleet too.
func (a *Agent) fleetPause(p fleet.Pause) {
	if a.cfg.Mode != config.ModeClosedLoop {
		return
	}
	a.pauseMu.Lock()
	defer a.pauseMu.Unlock()
	a.takePause(journal.Pause{Paused: p.Paused, By: p.By, Reason: p.Reason, SinceNs: p.SinceNs})
}

// paused says whether an operator has paused the closed loop.
func (a *Agent) paused() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pause
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
