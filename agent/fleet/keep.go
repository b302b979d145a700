package fleet

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Membership is a member that stays one: when its lease is lost (etcd did
// not answer for longer than the ttl, or the process was paused past it)
// it joins again as a new run of the same member, retrying until etcd
// answers, where a bare Node ends (Done). Between the loss and the new
// join it owns and writes nothing, and LeaseProblem says so; the new run
// owns nothing until the leader places switches on it, and takes them
// over as any new owner does (their fencing tokens are new). Its methods
// are those of the Node it runs now.
type Membership struct {
	cli    *clientv3.Client
	cfg    Config
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	node     *Node
	lostAt   time.Time // when the current node's lease was found gone (zero: it lives)
	tries    int       // joins tried since then
	joinErr  error     // the last one's error
	joins    int       // runs joined after the first
	onChange func()
	pause    func(Pause)
}

// Keep joins cli's fleet as Join does and keeps the membership: a lost
// lease is followed by a new Join (after rejoinFirst, then backing off to
// rejoinMax between tries), until Close.
func Keep(ctx context.Context, cli *clientv3.Client, cfg Config) (*Membership, error) {
	n, err := Join(ctx, cli, cfg)
	if err != nil {
		return nil, err
	}
	m := &Membership{cli: cli, cfg: n.cfg, node: n}
	kctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.wg.Add(1)
	go func() { defer m.wg.Done(); m.keep(kctx) }()
	return m, nil
}

// Waits between joins after a lost lease: the first soon (etcd has just
// answered, saying the lease is gone), then doubling (variables for the
// tests).
var (
	rejoinFirst = 500 * time.Millisecond
	rejoinMax   = 30 * time.Second
)

func (m *Membership) keep(ctx context.Context) {
	for {
		n := m.current()
		select {
		case <-ctx.Done():
			return
		case <-n.Done():
		}
		m.mu.Lock()
		m.lostAt, m.tries, m.joinErr = time.Now(), 0, nil
		m.mu.Unlock()
		n.Stop() // its goroutines end with the lease; nothing to revoke
		wait := rejoinFirst
		for {
			if sleep(ctx, wait); ctx.Err() != nil {
				return
			}
			wait = min(2*wait, rejoinMax)
			// a join waits up to two ttls for a member key of the same id
			// still held (register), and etcd may answer slowly after an
			// outage
			jctx, cancel := context.WithTimeout(ctx, 20*time.Second+3*m.cfg.TTL)
			nn, err := Join(jctx, m.cli, m.cfg)
			cancel()
			if ctx.Err() != nil {
				if err == nil {
					_ = nn.Close()
				}
				return
			}
			m.mu.Lock()
			m.tries++
			if err != nil {
				m.joinErr = err
				tries := m.tries
				m.mu.Unlock()
				m.cfg.Logger.Warn("fleet: joining again after the lease was lost failed; trying again", "member", m.cfg.Member.ID,
					"try", tries, "next in", wait, "err", err)
				continue
			}
			lost := m.lostAt
			m.node, m.lostAt, m.joinErr = nn, time.Time{}, nil
			m.joins++
			f, p := m.onChange, m.pause
			m.mu.Unlock()
			if f != nil {
				nn.OnChange(f)
			}
			if p != nil {
				nn.FollowPause(p) // a fleet paused meanwhile holds it at once
			}
			m.cfg.Logger.Warn("fleet: joined again after the lease was lost", "member", m.cfg.Member.ID,
				"without a lease for", time.Since(lost).Round(time.Millisecond))
			if f != nil {
				f()
			}
			break
		}
	}
}

func (m *Membership) current() *Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.node
}

// Rejoins counts the runs this membership joined after losing a lease.
func (m *Membership) Rejoins() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.joins
}

// Close ends the membership: the current run leaves the fleet (Node.Close).
func (m *Membership) Close() error {
	m.cancel()
	m.wg.Wait()
	return m.current().Close()
}

// LeaseProblem is the current run's (Node.LeaseProblem), or, between a
// lost lease and the next join, what keeps the member out.
func (m *Membership) LeaseProblem(now time.Time) string {
	m.mu.Lock()
	lost, tries, err, n := m.lostAt, m.tries, m.joinErr, m.node
	m.mu.Unlock()
	if lost.IsZero() {
		return n.LeaseProblem(now)
	}
	s := fmt.Sprintf("fleet: this member's lease expired %s ago (etcd did not renew it within the ttl %v): it owns and writes no switch while it joins again",
		now.Sub(lost).Round(100*time.Millisecond), m.cfg.TTL)
	if err != nil {
		s += fmt.Sprintf(" (%d tries so far; the last: %v)", tries, err)
	}
	return s
}

// OnChange is Node.OnChange, kept for every later run, which also calls f
// when it starts.
func (m *Membership) OnChange(f func()) {
	m.mu.Lock()
	m.onChange = f
	n := m.node
	m.mu.Unlock()
	n.OnChange(f)
}

// FollowPause is Node.FollowPause, kept for every later run.
func (m *Membership) FollowPause(fn func(Pause)) {
	m.mu.Lock()
	m.pause = fn
	n := m.node
	m.mu.Unlock()
	n.FollowPause(fn)
}

// The rest are the current run's.

func (m *Membership) Writable(sw string, now time.Time) (int64, bool) {
	return m.current().Writable(sw, now)
}
func (m *Membership) Deadline() time.Time { return m.current().Deadline() }
func (m *Membership) Owns(sw string) bool { return m.current().Owns(sw) }
func (m *Membership) Owned() []Ownership  { return m.current().Owned() }
func (m *Membership) Members() int        { return m.current().Members() }
func (m *Membership) Leader() bool        { return m.current().Leader() }

// Unowned is the current run's view (Node.Unowned); none between a lost
// lease and the next join, when this member follows no placement
// (LeaseProblem says so).
func (m *Membership) Unowned(now time.Time) map[string]time.Duration {
	m.mu.Lock()
	lost, n := !m.lostAt.IsZero(), m.node
	m.mu.Unlock()
	if lost {
		return nil
	}
	return n.Unowned(now)
}

func (m *Membership) Fence(ctx context.Context, sw string, token int64, intents []core.AuditEntry) error {
	return m.current().Fence(ctx, sw, token, intents)
}
func (m *Membership) Record(ctx context.Context, sw string, token int64, resolved []core.AuditEntry, mems []core.QueueMemory) error {
	return m.current().Record(ctx, sw, token, resolved, mems)
}
func (m *Membership) States(ctx context.Context, switches []string) (map[string]State, error) {
	return m.current().States(ctx, switches)
}
func (m *Membership) ReadPause(ctx context.Context) (Pause, bool, error) {
	return m.current().ReadPause(ctx)
}
func (m *Membership) SetPause(ctx context.Context, p Pause) error {
	return m.current().SetPause(ctx, p)
}
func (m *Membership) Status(ctx context.Context) (Status, error) { return m.current().Status(ctx) }
func (m *Membership) Drain(ctx context.Context, member string, on bool) error {
	return m.current().Drain(ctx, member, on)
}
func (m *Membership) Rebalance(ctx context.Context) (Result, error) {
	return m.current().Rebalance(ctx)
}
func (m *Membership) Resign(ctx context.Context) (Handoff, error) { return m.current().Resign(ctx) }
