package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// Switch is the I/O face of one switch: a telemetry stream in, settings out.
// The gNMI implementation is GNMISwitch; tests use fakes.
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
	Config   *Config
	Policy   policy.Policy
	Model    string // model / policy version recorded in the audit log
	Observer Observer
	Journal  *Journal
	Switches []Switch
	// Instruments are the agent's Prometheus series (default: NewInstruments()).
	Instruments *Instruments
	Logger      *slog.Logger
	Clock       func() time.Time
	DryRun      bool
	// SetTimeout bounds one Set plus its read-back (default: 5 s).
	SetTimeout time.Duration
	// History is how many control intervals the dashboard keeps per queue
	// (0: DefaultHistory; below 0: none, and the dashboard draws nothing).
	History int
}

// Agent is the runtime loop.
type Agent struct {
	o        Options
	cfg      *Config
	guard    *Guard
	log      *slog.Logger
	switches map[string]Switch
	targets  map[string]TargetConfig
	names    []string
	// reward scores an interval (Config.Guardrails.Reward; nil: none).
	reward func(env.Metrics) float64
	// retention of shadow recommendations in the db (Config.Retention,
	// else 1 h).
	retention time.Duration
	// release closes what Open opened (nil for an agent from New).
	release func() error

	mu       sync.Mutex
	latest   map[env.QueueKey]env.Observation // newest observation per queue since the last interval
	lastSeen map[string]time.Time
	heard    map[string]bool                 // targets that have sent a snapshot (health)
	tinfo    map[string]*TargetInfo          // guarded by mu
	recs     map[env.QueueKey]Recommendation // newest recommendation per queue (HTTP)
	lastPlan []Change
	pending  bool // audit entries left unresolved by a crash
	ticks    int

	// peers discovered by LLDP, per target (fabric-ports: lldp): written
	// by the switches' Subscribe goroutines on (re)connect, read by
	// Ingest. Each map is replaced whole, never changed in place.
	peerMu sync.RWMutex
	peers  map[string]map[string]env.Peer

	hist *history // the dashboard's per-queue intervals (nil: off)

	intervalWarned bool // warnInterval logged (Tick's goroutine only)
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
		o.Instruments = NewInstruments()
	}
	o.Instruments.SetPerQueue(o.Config.MetricsQueues)
	if o.SetTimeout <= 0 {
		o.SetTimeout = 5 * time.Second
	}
	g, err := NewGuard(o.Config.Guardrails)
	if err != nil {
		return nil, err
	}
	if o.Journal != nil && o.Config.Mode == ModeClosedLoop {
		// Every guardrail survives a restart: hold times, probations,
		// last-known-good settings, another writer's hold.
		mems, err := o.Journal.GuardMemory()
		if err != nil {
			return nil, err
		}
		for _, m := range mems {
			g.Restore(m)
		}
		g.Memories() // what was just restored is already stored
	}
	retention := o.Config.Retention
	if retention <= 0 {
		retention = time.Hour
	}
	a := &Agent{o: o, cfg: o.Config, guard: g, log: o.Logger, reward: o.Config.Guardrails.Reward, retention: retention,
		switches: map[string]Switch{}, targets: map[string]TargetConfig{},
		latest: map[env.QueueKey]env.Observation{}, lastSeen: map[string]time.Time{}, tinfo: map[string]*TargetInfo{},
		recs: map[env.QueueKey]Recommendation{}, peers: map[string]map[string]env.Peer{}}
	switch {
	case o.History == 0:
		a.hist = newHistory(DefaultHistory)
	case o.History > 0:
		a.hist = newHistory(o.History)
	}
	for _, t := range o.Config.Targets {
		a.targets[t.Name] = t
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
		g.AddTarget(n, start.UnixNano())
		a.lastSeen[n] = start // staleness counts from the start until data comes
	}
	return a, nil
}

// Guard exposes the guard (for tests and the HTTP endpoint).
func (a *Agent) Guard() *Guard { return a.guard }

// Instruments returns the agent's Prometheus series.
func (a *Agent) Instruments() *Instruments { return a.o.Instruments }

// Run subscribes to every switch and runs a control interval every
// Config.Interval until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	if a.cfg.Mode == ModeClosedLoop && !a.o.DryRun {
		if err := a.Reconcile(ctx); err != nil {
			return err
		}
	}
	_ = a.o.Journal.SetMeta("owner", a.cfg.Owner)
	snaps := make(chan env.Snapshot, 64)
	type tErr struct {
		target string
		err    error
	}
	errs := make(chan tErr, 64)
	var wg sync.WaitGroup
	sctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); wg.Wait() }()
	for _, n := range a.names {
		t := a.targets[n]
		if !t.DiscoverPeers {
			continue
		}
		ls, ok := a.switches[n].(LLDPSwitch)
		if !ok {
			a.log.Warn("fabric-ports: lldp, but this switch cannot read LLDP neighbours: every port's peer stays unknown", "target", n)
			continue
		}
		ls.OnConnect(func(ctx context.Context) { a.discoverPeers(ctx, t, ls) })
	}
	for _, n := range a.names {
		sw := a.switches[n]
		e := make(chan error, 16)
		wg.Add(2)
		go func() { defer wg.Done(); sw.Subscribe(sctx, snaps, e) }()
		go func() {
			defer wg.Done()
			for {
				select {
				case <-sctx.Done():
					return
				case err := <-e:
					select {
					case errs <- tErr{sw.Name(), err}:
					default:
					}
				}
			}
		}()
	}
	a.log.Info("agent started", "mode", a.cfg.Mode, "policy", a.o.Policy.Name(), "targets", len(a.names),
		"interval", a.cfg.Interval, "dry_run", a.o.DryRun)
	tick := time.NewTicker(a.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			a.log.Info("agent stopped")
			return nil
		case s := <-snaps:
			a.Ingest(s)
		case e := <-errs:
			a.targetEvent(e.target, e.err)
		case <-tick.C:
			a.pollTargets()
			if err := a.Tick(ctx); err != nil {
				a.log.Error("interval", "err", err)
			}
		}
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
	var found map[string]env.Peer
	if t.DiscoverPeers {
		found = a.discovered(s.Target)
	}
	kept := s.Queues[:0:0]
	for _, q := range s.Queues {
		if q.Key.Target == s.Target && t.WantsPort(q.Key.Port) && t.WantsQueue(q.Key.Queue) {
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
	a.o.Instruments.snapshot(&s)
	now := a.o.Clock()
	obs := a.o.Observer.Observe(s)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lastSeen[s.Target] = now
	if a.heard == nil {
		a.heard = map[string]bool{}
	}
	a.heard[s.Target] = true
	a.noteMissing(s)
	a.guard.Seen(s.Target, now.UnixNano())
	a.o.Instruments.Snapshots.WithLabelValues(s.Target).Inc()
	for _, o := range obs {
		a.latest[o.Key] = o
	}
}

// Tick runs one control interval: decide on the newest observations, then
// record (shadow) or guard and apply (closed loop).
func (a *Agent) Tick(ctx context.Context) error {
	start := time.Now() // for the decision latency, whatever Options.Clock says
	now := a.o.Clock()
	a.mu.Lock()
	obs := make([]env.Observation, 0, len(a.latest))
	for _, o := range a.latest {
		obs = append(obs, o)
	}
	clear(a.latest)
	for _, n := range a.names {
		if t, ok := a.lastSeen[n]; ok {
			a.o.Instruments.Staleness.WithLabelValues(n).Set(now.Sub(t).Seconds())
		}
	}
	a.ticks++
	a.mu.Unlock()
	sort.Slice(obs, func(i, j int) bool { return env.QueueKeyLess(obs[i].Key, obs[j].Key) })
	a.o.Instruments.Ticks.Inc()

	// A failing policy costs its decisions, not the interval: the guard
	// still runs its rollback rules and the watchdog.
	var decs []policy.Decision
	var perr error
	if len(obs) > 0 {
		decs, perr = a.decide(obs)
		if perr == nil && len(decs) != len(obs) {
			perr = fmt.Errorf("policy %s returned %d decisions for %d observations", a.o.Policy.Name(), len(decs), len(obs))
		}
		if perr != nil {
			decs = nil
		} else {
			a.o.Instruments.Decisions.Add(float64(len(decs)))
			holdUndecidable(obs, decs)
			a.warnInterval(decs)
		}
	}
	recs := a.recommend(now, obs, decs)
	if a.cfg.Mode == ModeShadow {
		// The guard's verdict goes with each recommendation; nothing is set.
		plan, err := a.guard.Step(StepInput{NowNs: now.UnixNano(), Observations: obs, Decisions: decs})
		if err != nil {
			return err
		}
		a.decided(start, len(obs))
		a.account(plan) // alarms are logged and counted in shadow mode too
		verdict := map[env.QueueKey]string{}
		repairs := map[env.QueueKey]Change{}
		for _, r := range plan.Rejections {
			verdict[r.Key] = r.Rule
		}
		for _, c := range plan.Changes {
			if len(c.Clamped) > 0 {
				verdict[c.Key] = "clamped:" + strings.Join(c.Clamped, ",")
			}
			if c.Kind == KindRepair {
				repairs[c.Key] = c
			}
			a.guard.Discard(c)
		}
		for i := range recs {
			recs[i].Guard = verdict[recs[i].Key]
			if c, ok := repairs[recs[i].Key]; ok {
				// A queue outside the invariants: the repair is the
				// recommendation, and it says so loudly.
				recs[i].Recommended, recs[i].Reason, recs[i].Guard = c.New, "SAFETY: "+c.Reason, string(KindRepair)
			}
		}
		a.mu.Lock()
		for _, r := range recs {
			a.recs[r.Key] = r
		}
		a.mu.Unlock()
		a.hist.record(now.UnixNano(), obs, recs)
		a.logInterval(len(obs), recs, plan)
		if err := a.store(now, recs); err != nil {
			return err
		}
		return perr
	}
	a.hist.record(now.UnixNano(), obs, recs)
	if a.pending && !a.o.DryRun {
		if err := a.Reconcile(ctx); err != nil {
			a.log.Warn("reconcile", "err", err)
		}
	}
	plan, err := a.guard.Step(StepInput{NowNs: now.UnixNano(), Observations: obs, Decisions: decs})
	if err != nil {
		return err
	}
	a.decided(start, len(obs))
	a.account(plan)
	a.logInterval(len(obs), recs, plan)
	a.apply(ctx, plan.Changes, true)
	if err := a.o.Journal.PutGuardMemory(a.guard.Memories()); err != nil {
		a.log.Error("guard memory", "err", err)
	}
	// A closed loop keeps its recommendations too, for agent report and
	// agent recommendations, after its Sets so that they wait for no
	// disk; failing to store them costs no tuning.
	if err := a.store(now, recs); err != nil {
		a.log.Warn("storing recommendations", "err", err)
	}
	return perr
}

// logInterval writes one info line per interval: how many queues were
// decided, how many recommendations differ from what the switch runs,
// what the guard made of them (changes by kind, rejections by rule), the
// three most frequent moves (which knobs, which way) and how many queues
// the policy could not decide ("hold: ..." reasons). 10,000 queues cost
// 50-90 µs on this shared machine and no allocation per queue (BenchmarkIntervalMoves10k).
func (a *Agent) logInterval(queues int, recs []Recommendation, plan Plan) {
	if !a.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	// Recommendations are counted by the knobs they move and which way
	// (243 classes in an array: no map, no string per queue), and holds by
	// whether the policy could decide at all.
	var moves [moveClasses]int
	differ, undecided := 0, 0
	for i := range recs {
		r := &recs[i]
		if r.Recommended != r.Current {
			differ++
			moves[moveClass(r.Current, r.Recommended)]++
		} else if r.Held != policy.HoldNone {
			undecided++
		}
	}
	kinds := map[ChangeKind]int{}
	for _, c := range plan.Changes {
		kinds[c.Kind]++
	}
	rules := map[string]int{}
	for _, r := range plan.Rejections {
		rules[r.Rule]++
	}
	verb := "changes"
	if a.cfg.Mode == ModeShadow {
		verb = "would_apply"
	}
	a.log.Info("interval", "queues", queues, "recommend_change", differ, verb, countText(kinds), "rejected", countText(rules),
		"top_moves", topMoves(&moves, 3), "undecided", undecided)
}

// moveClasses is the number of ways a recommendation can move Kmin,
// Kmax, Pmax, headroom and alpha: each stays, goes up or goes down.
const moveClasses = 243

// moveClass numbers the way to moves from from: a base-3 digit per knob
// (0 same, 1 up, 2 down); 0 is no move. Alpha counts as the same unless
// both sides know it (0: unknown / not managed).
func moveClass(from, to env.Setting) int {
	c := 0
	dir := func(a, b float64) int {
		switch {
		case b > a:
			return 1
		case b < a:
			return 2
		}
		return 0
	}
	c = c*3 + dir(float64(from.KminBytes), float64(to.KminBytes))
	c = c*3 + dir(float64(from.KmaxBytes), float64(to.KmaxBytes))
	c = c*3 + dir(from.Pmax, to.Pmax)
	c = c*3 + dir(float64(from.HeadroomBytes), float64(to.HeadroomBytes))
	if from.Alpha > 0 && to.Alpha > 0 {
		c = c*3 + dir(from.Alpha, to.Alpha)
	} else {
		c *= 3
	}
	return c
}

// moveText names a moveClass, e.g. "kmin↑ kmax↑ pmax↓" or "alpha↑".
func moveText(c int) string {
	names := [5]string{"kmin", "kmax", "pmax", "headroom", "alpha"}
	var d [5]int
	for i := len(d) - 1; i >= 0; i-- {
		d[i], c = c%3, c/3
	}
	var b strings.Builder
	for i, n := range names {
		if d[i] == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(n)
		b.WriteString([3]string{"", "↑", "↓"}[d[i]])
	}
	return b.String()
}

// topMoves renders the n most frequent move classes, most frequent
// first: "kmin↑ kmax↑ 40, pmax↓ 12".
func topMoves(m *[moveClasses]int, n int) string {
	var top []int
	for c := 1; c < moveClasses; c++ {
		if m[c] > 0 {
			top = append(top, c)
		}
	}
	if len(top) == 0 {
		return "none"
	}
	sort.Slice(top, func(i, j int) bool { return m[top[i]] > m[top[j]] || m[top[i]] == m[top[j]] && top[i] < top[j] })
	var b strings.Builder
	for i, c := range top[:min(n, len(top))] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(moveText(c))
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(m[c]))
	}
	return b.String()
}

// countText renders counts by name, largest first: "tune 12, rollback 2".
func countText[K ~string](m map[K]int) string {
	if len(m) == 0 {
		return "none"
	}
	type kv struct {
		k K
		n int
	}
	l := make([]kv, 0, len(m))
	for k, n := range m {
		l = append(l, kv{k, n})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].n > l[j].n || l[i].n == l[j].n && l[i].k < l[j].k })
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", e.k, e.n)
	}
	return b.String()
}

// store keeps the interval's recommendations in the db (when the config
// says so: Config.StoreRecommendations), pruning those older than the
// retention every 100 intervals.
func (a *Agent) store(now time.Time, recs []Recommendation) error {
	if !a.cfg.StoresRecommendations() {
		return nil
	}
	if err := a.o.Journal.PutRecommendations(recs); err != nil {
		return err
	}
	if a.ticks%100 == 0 {
		if _, err := a.o.Journal.PruneRecommendations(now.Add(-a.retention).UnixNano()); err != nil {
			a.log.Warn("pruning recommendations", "err", err)
		}
	}
	return nil
}

// decided records the decision latency of an interval that had
// observations.
func (a *Agent) decided(start time.Time, observations int) {
	if observations > 0 {
		a.o.Instruments.DecisionLatency.Observe(time.Since(start).Seconds())
	}
}

// decide calls the policy; a policy that panics costs one interval (the
// guard then sees no decisions), not the agent.
func (a *Agent) decide(obs []env.Observation) (decs []policy.Decision, err error) {
	defer func() {
		if r := recover(); r != nil {
			decs, err = nil, fmt.Errorf("policy %s panicked: %v", a.o.Policy.Name(), r)
		}
	}()
	return a.o.Policy.Decide(obs), nil
}

// warnInterval logs once per run when the policy held queues because the
// switches' counters span an interval outside the one it was validated
// for (see policy.Learned.WithValidInterval).
func (a *Agent) warnInterval(decs []policy.Decision) {
	if a.intervalWarned {
		return
	}
	for _, d := range decs {
		if d.Held == policy.HoldInterval {
			a.intervalWarned = true
			a.log.Warn("the policy holds queues: "+policy.HoldText(d.Reason)+
				"; change interval/sample-interval or use a model validated for it", "policy", a.o.Policy.Name(), "queue", d.Key.String())
			return
		}
	}
}

// holdUndecidable makes every queue whose switch exports no congestion
// signal at all (no ECN marks, no queue length, no PFC frames: see
// env.Decidable) hold its setting, saying why: a policy cannot tell such a
// queue busy from idle.
func holdUndecidable(obs []env.Observation, decs []policy.Decision) {
	for i := range obs {
		if env.Decidable(obs[i].Missing) {
			continue
		}
		decs[i].Setting, decs[i].Action, decs[i].Confidence, decs[i].Held = obs[i].Current, env.ActionHold, 0, policy.HoldUndecided
		decs[i].Reason = "hold: too little telemetry to decide (the switch exports no ECN marks, no queue length and no PFC frames)"
	}
}

func (a *Agent) recommend(now time.Time, obs []env.Observation, decs []policy.Decision) []Recommendation {
	recs := make([]Recommendation, len(decs))
	for i := range decs {
		o, d := &obs[i], &decs[i]
		r := Recommendation{TimeNs: now.UnixNano(), Key: o.Key, Policy: a.o.Policy.Name(), Current: o.Current,
			Recommended: d.Setting, Action: d.Action, Confidence: d.Confidence, Reason: d.Reason, Held: d.Held,
			Valid: o.Valid, Metrics: o.Metrics, RateBps: o.RateBps, Missing: o.Missing}
		if m := a.missingOf(o.Key.Target); m != 0 {
			r.Reason += " [without " + m.String() + "]"
		}
		if f := env.HeadroomFloor(o.MinHeadroomBytes, o.FloorEstimated, o.Current.HeadroomBytes); f > 0 && r.Recommended.HeadroomBytes > 0 && r.Recommended.HeadroomBytes < f {
			r.Recommended.HeadroomBytes = f // never below the lossless floor
		}
		if a.reward != nil && o.Valid {
			r.Reward = a.reward(o.Metrics)
		}
		recs[i] = r
	}
	if len(obs) > 0 {
		a.o.Instruments.interval(obs, recs, a.reward != nil)
	}
	a.mu.Lock()
	for _, r := range recs {
		a.recs[r.Key] = r
	}
	a.mu.Unlock()
	return recs
}

func (a *Agent) account(p Plan) {
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

type setResult struct {
	c       Change
	seq     uint64
	out     Outcome
	got     env.Setting
	err     error
	unknown bool // outcome unknown: the intent stays open for Reconcile
}

// apply journals, sets and reads back a batch of changes, one Set per
// target (targets in parallel), then reports to the guard. Rollbacks the
// guard orders after a read-back mismatch are applied in a second round.
func (a *Agent) apply(ctx context.Context, changes []Change, allowRollback bool) {
	changes = a.confirmRollbacks(ctx, changes)
	if len(changes) == 0 {
		return
	}
	results := a.setAll(ctx, changes)
	var second []Change
	nowNs := a.o.Clock().UnixNano()
	for _, r := range results {
		if rb := a.settle(r, nowNs); rb != nil {
			if allowRollback {
				second = append(second, *rb)
			} else {
				a.guard.Result(*rb, NotApplied, env.Setting{}, nowNs)
			}
		}
	}
	a.mu.Lock()
	a.lastPlan = append(a.lastPlan[:0], changes...)
	a.mu.Unlock()
	if len(second) > 0 {
		a.apply(ctx, second, false)
	}
}

// confirmRollbacks reads, before a probation rollback is written, whether
// the switch still runs the setting being rolled back from. A switch that
// restarted since the last telemetry (back at its startup configuration)
// or was written by someone else does not: rolling it "back" would write a
// setting of its previous life. Such a queue takes what the switch runs as
// its new baseline instead, like any switch restart; a queue that cannot be
// read keeps its rollback for a later interval.
func (a *Agent) confirmRollbacks(ctx context.Context, changes []Change) []Change {
	byTarget := map[string][]int{}
	for i, c := range changes {
		if c.Kind == KindRollback && !a.o.DryRun {
			byTarget[c.Key.Target] = append(byTarget[c.Key.Target], i)
		}
	}
	if len(byTarget) == 0 {
		return changes
	}
	drop := map[int]bool{}
	nowNs := a.o.Clock().UnixNano()
	for target, idx := range byTarget {
		sw := a.switches[target]
		if sw == nil {
			continue
		}
		keys := make([]env.QueueKey, len(idx))
		for j, i := range idx {
			keys[j] = changes[i].Key
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.o.SetTimeout)
		got, err := sw.Read(rctx, keys)
		cancel()
		for _, i := range idx {
			c := changes[i]
			cur, ok := got[c.Key]
			switch {
			case err != nil || !ok:
				drop[i] = true
				a.guard.Result(c, NotApplied, env.Setting{}, nowNs)
				a.log.Warn("rollback deferred: cannot read the switch's current setting", "queue", c.Key.String(), "err", err)
			case !a.guard.ReadBackOK(c.Old, cur):
				drop[i] = true
				a.guard.Result(c, NotApplied, env.Setting{}, nowNs)
				a.guard.Adopt(c.Key, cur, cur, nowNs)
				a.log.Warn("rollback skipped: the switch no longer runs the setting being rolled back from (restarted or written by another); its current setting is the new baseline",
					"queue", c.Key.String(), "expected", c.Old.Describe(), "runs", cur.Describe(), "differs", settingDiff(c.Old, cur))
			}
		}
	}
	if len(drop) == 0 {
		return changes
	}
	out := changes[:0:0]
	for i, c := range changes {
		if !drop[i] {
			out = append(out, c)
		}
	}
	return out
}

// setAll journals the intent of each target's changes and sets them, one
// goroutine per target; the results come back in key order. Without a
// write-ahead record there is no Set; in a dry run, or for a target
// without a switch, the changes are journaled but not set.
func (a *Agent) setAll(ctx context.Context, changes []Change) []setResult {
	byTarget := map[string][]Change{}
	for _, c := range changes {
		byTarget[c.Key.Target] = append(byTarget[c.Key.Target], c)
	}
	// Results come from this loop and from the per-target goroutines it
	// starts: every append takes mu.
	var mu sync.Mutex
	var results []setResult
	add := func(rs ...setResult) {
		mu.Lock()
		results = append(results, rs...)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for target, cs := range byTarget {
		sw := a.switches[target]
		written, err := a.intend(target, sw, cs)
		if err != nil {
			a.log.Error("audit log", "target", target, "err", err)
			for _, c := range cs {
				add(setResult{c: c, out: NotApplied, err: err})
			}
			continue
		}
		if a.o.DryRun || sw == nil {
			for i, c := range cs {
				a.log.Info("dry run: would set", "queue", c.Key.String(), "kind", c.Kind, "old", c.Old, "new", c.New, "reason", c.Reason)
				add(setResult{c: c, seq: written[i].Seq, out: NotApplied})
			}
			continue
		}
		keys := make([]env.QueueKey, len(cs))
		for i, c := range cs {
			keys[i] = c.Key
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			add(a.setAndReadBack(ctx, sw, cs, written, keys)...)
		}()
	}
	wg.Wait()
	sort.Slice(results, func(i, j int) bool { return env.QueueKeyLess(results[i].c.Key, results[j].c.Key) })
	return results
}

// intend writes the audit entries of one target's changes ahead of the
// Set (sw nil: a target without a switch, no paths).
func (a *Agent) intend(target string, sw Switch, cs []Change) ([]AuditEntry, error) {
	entries := make([]AuditEntry, len(cs))
	nowNs := a.o.Clock().UnixNano()
	for i, c := range cs {
		var paths []string
		if sw != nil {
			paths = sw.SetPaths([]env.QueueKey{c.Key})
		}
		entries[i] = AuditEntry{TimeNs: nowNs, Target: target, Key: c.Key, Paths: paths, Kind: c.Kind,
			Old: c.Old, New: c.New, Wanted: c.Wanted, Reason: auditReason(c), Model: a.o.Model, Owner: a.cfg.Owner}
		if a.o.DryRun {
			entries[i].State = StateDryRun
		}
	}
	return a.o.Journal.Intent(entries)
}

// auditReason is a change's reason led by every knob it changes: the
// policy's own reason names what it recommended, which the guard may have
// clamped, and a rollback's names none.
func auditReason(c Change) string {
	d := env.DescribeChange(c.Old, c.New)
	if strings.HasPrefix(c.Reason, d+":") || c.Reason == d {
		return c.Reason
	}
	if c.Reason == "" {
		return d
	}
	return d + "; " + c.Reason
}

// settle accounts for one result: counters and log, then the journal
// (whoever sees the entry resolved in the audit log also sees it counted;
// an unknown outcome stays open for Reconcile), then the guard, whose
// rollback order it returns.
func (a *Agent) settle(r setResult, nowNs int64) *Change {
	switch r.out {
	case Applied:
		a.o.Instruments.applied(r.c.Key, r.c.New)
		if r.c.Kind != KindTune && r.c.Kind != KindFallback {
			a.o.Instruments.Rollbacks.WithLabelValues(string(r.c.Kind)).Inc()
		}
		a.log.Info("applied", "queue", r.c.Key.String(), "kind", r.c.Kind, "kmin", r.c.New.KminBytes,
			"kmax", r.c.New.KmaxBytes, "pmax", r.c.New.Pmax, "reason", r.c.Reason)
	case NotApplied:
		if r.err != nil {
			a.log.Warn("set failed", "queue", r.c.Key.String(), "kind", r.c.Kind, "err", r.err)
		}
	}
	var rb *Change
	var alarm *Alarm
	resulted := false
	if r.unknown {
		a.pending = true
		a.log.Warn("set outcome unknown, left for reconcile", "queue", r.c.Key.String(), "err", r.err)
	} else if r.seq != 0 {
		resulted = true
		st, msg := StateApplied, ""
		var got *env.Setting
		switch {
		case a.o.DryRun:
			st = StateDryRun
		case r.out == NotApplied:
			st = StateFailed
			if r.err != nil {
				msg = r.err.Error()
			}
		case r.out == Mismatch:
			st, got = StateMismatch, &r.got
		default:
			got = &r.got
		}
		rb, alarm = a.guard.Result(r.c, r.out, r.got, nowNs)
		// The guard's memory of the queue goes with the audit entry.
		if err := a.o.Journal.Resolve(r.seq, st, got, msg, nowNs, a.guard.Memory(r.c.Key)); err != nil {
			a.log.Error("audit log", "err", err)
		}
	}
	if !resulted {
		rb, alarm = a.guard.Result(r.c, r.out, r.got, nowNs)
	}
	if alarm != nil {
		a.o.Instruments.Alarms.WithLabelValues(alarm.Rule).Inc()
		a.log.Warn(alarm.Msg, "target", alarm.Target, "rule", alarm.Rule, "queue", r.c.Key.String())
	}
	return rb
}

func (a *Agent) setAndReadBack(ctx context.Context, sw Switch, cs []Change, written []AuditEntry, keys []env.QueueKey) []setResult {
	out := make([]setResult, len(cs))
	for i, c := range cs {
		out[i] = setResult{c: c, seq: written[i].Seq, out: NotApplied}
	}
	settings := make(map[env.QueueKey]env.Setting, len(cs))
	for _, c := range cs {
		settings[c.Key] = c.New
	}
	// A Set once sent is seen through even when the agent is stopping:
	// cancelling it would leave its outcome unknown.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.o.SetTimeout)
	defer cancel()
	start := time.Now()
	setErr := sw.Apply(cctx, settings)
	var herr *HeadroomError
	if errors.As(setErr, &herr) {
		// The ECN changes went through; the switch refused the headroom.
		// Judge the ECN change on its own, and say so loudly.
		a.o.Instruments.Alarms.WithLabelValues("headroom-refused").Inc()
		a.log.Warn("headroom Set refused; ECN change applied without it", "target", sw.Name(), "err", herr)
		for i := range cs {
			cs[i].New.HeadroomBytes, cs[i].New.Alpha = 0, 0
		}
		setErr = nil
	}
	if setErr != nil {
		a.o.Instruments.Sets.WithLabelValues("error").Inc()
	}
	// Read back in any case: after a failed Set the switch says whether
	// it took the change after all (a timeout may hide a success).
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), a.o.SetTimeout)
	defer rcancel()
	got, err := sw.Read(rctx, keys)
	if setErr == nil {
		a.o.Instruments.SetLatency.Observe(time.Since(start).Seconds())
	}
	if err != nil {
		for i := range out {
			if setErr != nil {
				// Outcome unknown: leave the intent unresolved for the
				// reconciler, tell the guard nothing was applied.
				out[i].unknown = true
				out[i].err = fmt.Errorf("set on %s: %v; read-back: %v", sw.Name(), setErr, err)
				continue
			}
			// Set answered but read-back failed: a mismatch against an
			// unknown setting, so the guard restores last known good.
			out[i].out = Mismatch
			out[i].err = fmt.Errorf("read-back on %s: %w", sw.Name(), err)
		}
		if setErr == nil {
			a.o.Instruments.Sets.WithLabelValues("readback-error").Inc()
		}
		return out
	}
	if setErr == nil {
		a.o.Instruments.Sets.WithLabelValues("ok").Inc()
	}
	for i, c := range cs {
		g, ok := got[c.Key]
		out[i].got = g
		switch {
		case ok && a.guard.ReadBackOK(c.New, g):
			out[i].out = Applied
		case setErr != nil:
			out[i].out = NotApplied
			out[i].err = fmt.Errorf("set on %s: %w", sw.Name(), setErr)
		default:
			out[i].out = Mismatch
		}
	}
	return out
}

// Reconcile resolves audit entries a crash left without a result: it reads
// the switch and records the change applied (and puts it on probation
// again), abandoned (the switch still runs Old), or rolls the queue back to
// Old when the switch runs neither.
func (a *Agent) Reconcile(ctx context.Context) error {
	pend, err := a.o.Journal.Pending()
	if err != nil {
		return err
	}
	a.pending = false
	if len(pend) == 0 {
		return nil
	}
	byTarget := map[string][]AuditEntry{}
	for _, e := range pend {
		byTarget[e.Target] = append(byTarget[e.Target], e)
	}
	targets := make([]string, 0, len(byTarget))
	for t := range byTarget {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	for _, t := range targets {
		es := byTarget[t]
		sw := a.switches[t]
		nowNs := a.o.Clock().UnixNano()
		if sw == nil {
			a.log.Warn("reconcile: audit entries for a target not in the configuration left pending", "target", t, "entries", len(es))
			continue
		}
		keys := make([]env.QueueKey, len(es))
		for i, e := range es {
			keys[i] = e.Key
		}
		cctx, cancel := context.WithTimeout(ctx, a.o.SetTimeout)
		got, err := sw.Read(cctx, keys)
		cancel()
		if err != nil {
			a.pending = true
			a.log.Warn("reconcile: cannot read switch, will retry", "target", t, "err", err)
			for _, e := range es {
				if e.State != StateUnreachable {
					_ = a.o.Journal.Resolve(e.Seq, StateUnreachable, nil, err.Error(), nowNs)
				}
			}
			continue
		}
		// Entries of the same queue: only the newest decides.
		newest := map[env.QueueKey]AuditEntry{}
		for _, e := range es {
			newest[e.Key] = e
		}
		for _, e := range es {
			g, ok := got[e.Key]
			gp := &g
			if !ok {
				gp = nil
			}
			switch {
			case newest[e.Key].Seq != e.Seq:
				_ = a.o.Journal.Resolve(e.Seq, StateAbandoned, gp, "superseded by a later intent", nowNs)
			case ok && a.guard.ReadBackOK(e.New, g):
				_ = a.o.Journal.Resolve(e.Seq, StateReconciled, gp, "", nowNs)
				from := e.Old
				if e.Kind != KindTune && e.Kind != KindFallback {
					from = e.New
				}
				// The change took effect at some time up to now: its hold
				// counts from now, not from the intent.
				a.guard.Adopt(e.Key, from, e.New, nowNs)
				a.log.Info("reconcile: change found applied", "queue", e.Key.String(), "seq", e.Seq)
			case ok && a.guard.ReadBackOK(e.Old, g):
				_ = a.o.Journal.Resolve(e.Seq, StateAbandoned, gp, "switch still runs the old setting", nowNs)
				a.guard.Adopt(e.Key, e.Old, e.Old, nowNs)
				a.log.Info("reconcile: change found not applied", "queue", e.Key.String(), "seq", e.Seq)
			case ok:
				// The switch runs neither: it restarted (back at its
				// startup configuration) or someone else wrote it. Old is
				// stale then; what it runs now is the new baseline, and
				// the guard's invariants (floor, Kmax below XOFF) judge it
				// on the next interval like any queue.
				_ = a.o.Journal.Resolve(e.Seq, StateAbandoned, gp, "switch runs neither old nor new (restarted or written by another): its current setting is the new baseline", nowNs)
				a.guard.Adopt(e.Key, g, g, nowNs)
				a.log.Warn("reconcile: switch runs neither the old nor the new setting; taking it as the new baseline", "queue", e.Key.String(), "seq", e.Seq)
			default:
				a.pending = true
				_ = a.o.Journal.Resolve(e.Seq, StateUnreachable, nil, "the switch did not report this queue's setting", nowNs)
				a.log.Warn("reconcile: queue not reported, will retry", "queue", e.Key.String(), "seq", e.Seq)
			}
		}
	}
	return nil
}

// Recommendations returns the newest recommendation per queue, in key order.
func (a *Agent) Recommendations(target string) []Recommendation {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Recommendation, 0, len(a.recs))
	for _, r := range a.recs {
		if target == "" || r.Key.Target == target {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return env.QueueKeyLess(out[i].Key, out[j].Key) })
	return out
}
