package agent

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/fleet"
	"github.com/ecntune/ecntune/env"
)

// joinFleet makes the agent a member of its configuration's fleet: an
// etcd client, and a member whose ownership gates the agent's writes and
// who joins again when its lease is lost (fleet.Keep). The release closes
// both (the member gives its switches up).
func joinFleet(ctx context.Context, cfg *config.Config, setTimeout time.Duration, log *slog.Logger) (*fleet.Membership, func() error, error) {
	f := cfg.Fleet
	tc, err := f.TLS.Config()
	if err != nil {
		return nil, nil, err
	}
	cli, err := fleet.Dial(ctx, f.Endpoints, tc)
	if err != nil {
		return nil, nil, err
	}
	sw := make([]fleet.Switch, len(cfg.Targets))
	for i, t := range cfg.Targets {
		// a switch given up keeps its owner key until a write to it
		// started just before has ended: its own set timeout (60 s for
		// sonic-gnmi), not the agent's
		sw[i] = fleet.Switch{Name: t.Name, Zone: t.Zone, WriteTimeout: t.SetTimeout}
	}
	// a restart waits for its previous run's member key to expire with
	// that run's lease (fleet.Node.register): a ttl more
	ttl := f.TTL
	if ttl <= 0 {
		ttl = 4 * time.Second
	}
	jctx, cancel := context.WithTimeout(ctx, 20*time.Second+3*ttl)
	defer cancel()
	n, err := fleet.Keep(jctx, cli, fleet.Config{Name: f.Name, Member: fleet.Member{ID: f.Member, Zone: f.Zone}, Switches: sw,
		TTL: f.TTL, Takeover: f.Takeover, WriteTimeout: setTimeout, Logger: log})
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	log.Info("fleet: joined", "fleet", f.Name, "member", f.Member, "endpoints", f.Endpoints, "tls", tc != nil)
	return n, func() error { n.Close(); return cli.Close() }, nil
}

// noteOwners sets ecntune_agent_fleet_owner for every target, and the
// fleet's members and leader (noteFleet; a fleet only).
func (a *Agent) noteOwners() {
	if a.o.Gate == nil {
		return
	}
	now := a.o.Clock()
	for _, n := range a.names {
		v := 0.0
		if _, ok := a.o.Gate.Writable(n, now); ok {
			v = 1
		}
		a.o.Instruments.FleetOwner.WithLabelValues(n).Set(v)
	}
	a.noteFleet()
}

// memoryKeeper is a Gate that keeps the guard's memory and the audit
// entries of each switch where the switch's next owner finds them
// (agent/fleet.Node): a failover keeps every hold and probation, and the
// new owner reconciles the changes its predecessor left in flight.
type memoryKeeper interface {
	Record(ctx context.Context, target string, token int64, resolved []core.AuditEntry, mems []core.QueueMemory) error
	States(ctx context.Context, targets []string) (map[string]fleet.State, error)
}

// fleetState is what the agent keeps of the switches' shared state in a
// fleet (Tick's goroutine only).
type fleetState struct {
	adopted  map[string]int64             // targets whose memory and open entries were taken over, by the token they were taken under
	open     map[uint64]core.AuditEntry   // entries written under a fence, by seq, until resolved
	resolved map[string][]core.AuditEntry // entries resolved since the last Record, per target
}

// keeper is the Gate as a memoryKeeper (nil: none).
func (a *Agent) keeper() memoryKeeper {
	mk, _ := a.o.Gate.(memoryKeeper)
	return mk
}

// fenced notes entries written under a fence, to share them resolved.
func (a *Agent) fenced(es []core.AuditEntry) {
	if a.keeper() == nil {
		return
	}
	if a.fleet.open == nil {
		a.fleet.open = map[uint64]core.AuditEntry{}
	}
	for _, e := range es {
		a.fleet.open[e.Seq] = e
	}
}

// resolvedEntry notes an entry's result for the fleet (an entry not
// written under a fence is not the fleet's).
func (a *Agent) resolvedEntry(e core.AuditEntry, state core.AuditState, got *env.Setting, msg string, nowNs int64) {
	if a.keeper() == nil || e.Writer == "" {
		return
	}
	e.State, e.Got, e.Error, e.ResultNs = state, got, msg, nowNs
	if a.fleet.resolved == nil {
		a.fleet.resolved = map[string][]core.AuditEntry{}
	}
	a.fleet.resolved[e.Target] = append(a.fleet.resolved[e.Target], e)
}

// shareMemory writes, for the switches this agent may write, the entries
// resolved and the queues' memories that changed this interval to the
// fleet. What cannot be written (a switch lost) is dropped: its next
// owner reconciles the entry still open.
func (a *Agent) shareMemory(ctx context.Context, mems []core.QueueMemory) {
	mk := a.keeper()
	if mk == nil {
		return
	}
	byMem := map[string][]core.QueueMemory{}
	for _, m := range mems {
		byMem[m.Key.Target] = append(byMem[m.Key.Target], m)
	}
	targets := map[string]bool{}
	for t := range byMem {
		targets[t] = true
	}
	for t := range a.fleet.resolved {
		targets[t] = true
	}
	// One second for the whole round, not one per switch: an etcd that
	// does not answer held the interval loop a second per switch (the
	// telemetry then looked stale), and what a round could not share is
	// shared at the next.
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var unshared []string
	for _, target := range slices.Sorted(maps.Keys(targets)) {
		tok, ok := a.o.Gate.Writable(target, a.o.Clock())
		if !ok {
			delete(a.fleet.resolved, target)
			continue
		}
		if cctx.Err() != nil {
			unshared = append(unshared, target)
			continue
		}
		if err := mk.Record(cctx, target, tok, a.fleet.resolved[target], byMem[target]); err != nil {
			unshared = append(unshared, target)
			a.log.Warn("fleet: guard memory and audit not shared; tried again next interval", "target", target, "err", err)
			continue
		}
		delete(a.fleet.resolved, target)
	}
	for _, t := range unshared {
		if n := len(a.fleet.resolved[t]); n > maxUnshared {
			a.fleet.resolved[t] = a.fleet.resolved[t][n-maxUnshared:]
		}
	}
}

// maxUnshared bounds the resolved audit entries a target keeps for the
// fleet while etcd does not take them (the newest).
const maxUnshared = 1000

// adoptMemory takes over, the first interval this agent may write a
// switch, what its previous owners kept: the guard's memory (holds,
// probations, bars) and the changes left open, which it copies into its
// own audit log and reconciles with the switch's read-back; until then
// the guard holds those queues at the intended setting. A switch lost is
// taken over again when won back: under a new fencing token, even when
// it left and came back between two intervals (another member may have
// changed it meanwhile, or this member joined again after losing its
// lease). The agent writes no switch it has not taken over under the
// token it writes with (writable).
func (a *Agent) adoptMemory(ctx context.Context) {
	mk := a.keeper()
	if mk == nil {
		return
	}
	if a.fleet.adopted == nil {
		a.fleet.adopted = map[string]int64{}
	}
	var todo []string
	tokens := map[string]int64{}
	for _, n := range a.names {
		tok, ok := a.o.Gate.Writable(n, a.o.Clock())
		if !ok {
			delete(a.fleet.adopted, n)
			continue
		}
		if !a.adoptedUnder(n, tok) {
			todo = append(todo, n)
			tokens[n] = tok
		}
	}
	if len(todo) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	states, err := mk.States(cctx, todo) // one round trip for them all
	cancel()
	if err != nil {
		a.log.Warn("fleet: state of switches taken over not read; will retry", "targets", len(todo), "err", err)
		return
	}
	for _, n := range todo {
		if err := a.takeOver(n, states[n]); err != nil {
			a.log.Warn("fleet: state of a switch taken over not restored; will retry", "target", n, "err", err)
			continue
		}
		a.fleet.adopted[n] = tokens[n]
	}
}

// adoptedUnder says whether target was taken over under token.
func (a *Agent) adoptedUnder(target string, token int64) bool {
	t, ok := a.fleet.adopted[target]
	return ok && t == token
}

// takeOver restores one switch's memory and takes its open entries over.
func (a *Agent) takeOver(target string, st fleet.State) error {
	mems := st.Memory
	open, err := a.openToTake(st.Audit)
	if err != nil {
		return err
	}
	for _, m := range mems {
		a.core.Guard().Restore(m)
	}
	if len(open) > 0 {
		if _, err := a.o.Journal.Intent(open); err != nil {
			return err
		}
		a.pending = true // reconciled with the switch's read-back
		nowNs := a.o.Clock().UnixNano()
		for _, e := range open {
			a.core.Guard().Adopt(e.Key, e.Old, e.New, nowNs)
		}
		// a predecessor's confirmed commit may be pending: not written,
		// nor judged, before the switch has settled it
		a.awaitCommits(target, open, nowNs)
	}
	a.log.Info("fleet: switch taken over", "target", target, "queues", len(mems), "open", len(open))
	return nil
}

// openToTake is the newest open entry per queue of a switch's fleet audit
// that this agent's own audit log does not hold open already. Newest is by
// the order etcd recorded the entries in (their Rev), not by their times:
// a predecessor whose clock is behind stamps its change in flight before
// an older, resolved one, which would hide it.
func (a *Agent) openToTake(audit []core.AuditEntry) ([]core.AuditEntry, error) {
	audit = slices.Clone(audit)
	slices.SortStableFunc(audit, func(x, y core.AuditEntry) int { return cmp.Compare(x.Rev, y.Rev) })
	newest := map[env.QueueKey]core.AuditEntry{}
	for _, e := range audit { // oldest first
		newest[e.Key] = e
	}
	mine, err := a.o.Journal.Pending()
	if err != nil {
		return nil, err
	}
	type id struct {
		t int64
		w string
		k env.QueueKey
	}
	have := map[id]bool{}
	for _, e := range mine {
		have[id{e.TimeNs, e.Writer, e.Key}] = true
	}
	var out []core.AuditEntry
	for _, k := range slices.SortedFunc(maps.Keys(newest), env.CompareQueueKeys) {
		e := newest[k]
		if e.Open() && !have[id{e.TimeNs, e.Writer, e.Key}] {
			e.Seq, e.State = 0, core.StateIntent
			out = append(out, e)
		}
	}
	return out, nil
}

// ownedLister is a Gate that lists the switches it owns with the time each
// may first be written (agent/fleet.Node).
type ownedLister interface{ Owned() []fleet.Ownership }

// adoptTimer sets t to fire when the next switch this agent owns but has
// not taken over may be written (its take-over delay's end), so that the
// take-over (adoptMemory) and the first decision it allows need not wait
// for the next interval; stopped when there is none.
func (a *Agent) adoptTimer(t *time.Timer) {
	t.Stop()
	ol, ok := a.o.Gate.(ownedLister)
	if !ok || a.keeper() == nil {
		return
	}
	var next time.Time
	now := time.Now()
	for _, o := range ol.Owned() {
		// one whose delay is over already waits for the interval (a
		// take-over that failed is retried there, not in a spin)
		if !a.adoptedUnder(o.Switch, o.Token) && o.WriteAt.After(now) && (next.IsZero() || o.WriteAt.Before(next)) {
			next = o.WriteAt
		}
	}
	if !next.IsZero() {
		t.Reset(next.Sub(now) + time.Millisecond)
	}
}
