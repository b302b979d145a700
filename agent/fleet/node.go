package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc/connectivity"
)

// Config is one agent's membership of a fleet.
type Config struct {
	// Name is the fleet's: its keys are under /ecntune/fleet/NAME/.
	Name   string
	Member Member
	// Switches are every switch of the fleet (the shared configuration).
	Switches []Switch
	// TTL is the member's lease (default 4 s): a member that cannot renew
	// it for TTL loses its switches.
	TTL time.Duration
	// Margin is the least time before its write deadline (Deadline) a
	// member starts a write: one that cannot renew its lease stops writing
	// that long before the lease could expire (self-fencing; default
	// TTL/5).
	Margin time.Duration
	// Takeover is how long a new owner waits before its first write to a
	// switch (default DefaultTakeover, see Safe).
	Takeover time.Duration
	// WriteTimeout is the longest one write of this member takes (the
	// agent's set timeout; default 5 s), where a Switch does not say its
	// own: a switch it gives up (a drain, a rebalance) keeps its owner key
	// that long after the member stopped writing it, so that its successor
	// starts after its last write.
	WriteTimeout time.Duration
	// MaxMoves bounds a rebalance round (default 32 switches); Every is
	// how often the leader re-places (default TTL).
	MaxMoves int
	Every    time.Duration
	Logger   *slog.Logger
}

func (c *Config) defaults() error {
	if c.Name == "" || c.Member.ID == "" {
		return errors.New("fleet: a fleet name and a member id are required")
	}
	if strings.ContainsAny(c.Name+c.Member.ID, "/ \t\n") || dots(c.Name) || dots(c.Member.ID) {
		return fmt.Errorf("fleet: name %q and member id %q must not contain '/' or blanks, nor be . or .. (key names: prefixOf cleans them away)", c.Name, c.Member.ID)
	}
	if c.TTL <= 0 {
		c.TTL = 4 * time.Second
	}
	if c.TTL < 2*time.Second {
		return fmt.Errorf("fleet: ttl %v is below 2 s (etcd leases are whole seconds)", c.TTL)
	}
	if c.TTL%time.Second != 0 {
		// etcd would grant the whole seconds below it, while Deadline
		// and Writable count the TTL: writes past the lease's end
		return fmt.Errorf("fleet: ttl %v is not a whole number of seconds (etcd leases are whole seconds)", c.TTL)
	}
	if c.Margin <= 0 {
		c.Margin = c.TTL / 5
	}
	if c.Takeover <= 0 {
		c.Takeover = DefaultTakeover
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 5 * time.Second
	}
	if c.MaxMoves <= 0 {
		c.MaxMoves = 32
	}
	if c.Every <= 0 {
		c.Every = c.TTL
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c.Safe()
}

// dots says whether s is . or .., which a key path's cleaning removes.
func dots(s string) bool { return s == "." || s == ".." }

// DefaultTakeover is a new owner's wait before its first write: room for
// a switch to apply a Set its previous owner sent just before its
// deadline.
const DefaultTakeover = 250 * time.Millisecond

// Safe checks the timing that makes one writer per switch hold without
// trusting clocks to agree, only to run at the same rate within 1%. An
// owner that last renewed its lease at r (the request's send time, before
// the server renewed it) writes under a deadline d = r + TTL − 1% of TTL
// (Deadline: the agent's write contexts end there, so none of its writes
// lands after d) and starts none after d − Margin; the lease expires at
// the server no earlier than r + TTL > d; a new owner gets the switch
// after that and writes Takeover later. So writes never overlap for any
// Takeover ≥ 0; the takeover delay covers a switch that applies a Set
// received just before d a little after it. A switch given up on purpose
// (drain, rebalance) is written no more at once and its key deleted
// WriteTimeout later, after the member's last write to it has landed.
// Margin leaves a write time to finish: it must be positive and below half
// the TTL (renewals come every TTL/3).
func (c *Config) Safe() error {
	if c.Margin <= 0 || c.Margin >= c.TTL/2 {
		return fmt.Errorf("fleet: margin %v must be above 0 and below half the ttl %v", c.Margin, c.TTL)
	}
	if c.Takeover < 0 {
		return fmt.Errorf("fleet: takeover %v is negative", c.Takeover)
	}
	return nil
}

// Ownership is a switch this member owns: its fencing token (the owner
// key's create revision) and when it may write first.
type Ownership struct {
	Switch  string
	Token   int64
	Since   time.Time
	WriteAt time.Time
}

// Node is one agent's membership: its lease, its member key, its campaign
// for leadership (the leader places the switches), and the switches it
// owns, each by a lease-bound owner key whose create revision fences every
// write.
type Node struct {
	cfg    Config
	cli    *clientv3.Client
	lease  clientv3.LeaseID
	sess   *concurrency.Session
	prefix string
	cancel context.CancelFunc
	wg     sync.WaitGroup

	done     chan struct{} // closed when the lease is lost (Done)
	endc     chan struct{} // closed when the node stops or its lease is lost (ended)
	doneOnce sync.Once

	mu        sync.Mutex
	lastRenew time.Time // send time of the newest renewal that succeeded
	renewErr  error     // the last renewal's error (nil once one succeeds)
	lapseSaid bool      // a ttl has passed since lastRenew, and noteLapse has said so
	owned     map[string]Ownership
	releasing map[string]time.Time // switches given up → when their owner key may go (releaseDue)
	auditN    map[string]int       // audit entries per switch in etcd, as far as counted (countAudit)
	leader    bool
	onChange  func()

	// placing is what the leader keeps between its placement rounds (the
	// campaign's goroutine only): the members it read last (members).
	placing struct {
		members []Member
		sig     string
	}

	unplaced     map[string]unplaced // switches of the configuration without an assignment (follow writes it, under mu)
	notRunWarned map[string]bool     // switches placed here that the configuration does not list, warned of (under mu)
}

// Keys of a fleet.
func (n *Node) memberKey(id string) string  { return n.prefix + "members/" + id }
func (n *Node) assignKey(sw string) string  { return n.prefix + "assign/" + sw }
func (n *Node) ownerKey(sw string) string   { return n.prefix + "owner/" + sw }
func (n *Node) drainedKey(id string) string { return n.prefix + "drained/" + id }

// writeTimeout is the longest one write of this member to sw takes.
func (n *Node) writeTimeout(sw string) time.Duration {
	for _, s := range n.cfg.Switches {
		if s.Name == sw && s.WriteTimeout > 0 {
			return max(s.WriteTimeout, n.cfg.WriteTimeout)
		}
	}
	return n.cfg.WriteTimeout
}

// Join makes a node of cli's cluster: it grants the lease, registers the
// member and starts renewing, campaigning and following the placement.
func Join(ctx context.Context, cli *clientv3.Client, cfg Config) (*Node, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	// the leader places on this member only the switches it runs
	cfg.Member.Switches = make([]string, len(cfg.Switches))
	for i, s := range cfg.Switches {
		cfg.Member.Switches[i] = s.Name
	}
	n := &Node{cfg: cfg, cli: cli, prefix: prefixOf(cfg.Name), owned: map[string]Ownership{}, releasing: map[string]time.Time{}, auditN: map[string]int{}, unplaced: map[string]unplaced{},
		notRunWarned: map[string]bool{}, done: make(chan struct{})}
	sent := time.Now()
	g, err := cli.Grant(ctx, int64(cfg.TTL/time.Second))
	if err != nil {
		return nil, fmt.Errorf("fleet %s: lease: %w", cfg.Name, unanswered(cli, err))
	}
	if time.Duration(g.TTL)*time.Second < cfg.TTL {
		// a lease shorter than the TTL the deadlines count on would let
		// this member write after another may own the switch
		_, _ = cli.Revoke(context.WithoutCancel(ctx), g.ID)
		return nil, fmt.Errorf("fleet %s: etcd granted a lease of %d s for a ttl of %v", cfg.Name, g.TTL, cfg.TTL)
	}
	n.lease, n.lastRenew = g.ID, sent
	// The election's session shares the lease but does not keep it alive:
	// renew does, once per TTL/3, on one stream (a session's own
	// keepalives would double the requests).
	sctx, scancel := context.WithCancel(context.Background())
	n.sess, err = concurrency.NewSession(cli, concurrency.WithLease(g.ID), concurrency.WithContext(sctx))
	scancel()
	if err != nil {
		return nil, fmt.Errorf("fleet %s: session: %w", cfg.Name, err)
	}
	if err := n.register(ctx); err != nil {
		_, _ = cli.Revoke(context.WithoutCancel(ctx), g.ID)
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.endc = make(chan struct{})
	n.wg.Add(4)
	go func() {
		defer n.wg.Done()
		select {
		case <-rctx.Done():
		case <-n.done:
		}
		close(n.endc)
	}()
	go func() { defer n.wg.Done(); n.renew(rctx) }()
	go func() { defer n.wg.Done(); n.campaign(rctx) }()
	go func() { defer n.wg.Done(); n.follow(rctx) }()
	return n, nil
}

// register writes the member key, under the member's lease, only where no
// live member holds that id: a second agent given the same id (two hosts
// of one name) would take the first one's key, and its exit would delete
// it, the first running on unseen, owning nothing. A key left by this
// member's previous run goes with that run's lease, within a TTL: register
// waits that long for it, and fails if it is still held after. A member an
// operator drained (Drain) joins draining.
func (n *Node) register(ctx context.Context) error {
	k := n.memberKey(n.cfg.Member.ID)
	if r, err := n.cli.Get(ctx, n.drainedKey(n.cfg.Member.ID)); err == nil && len(r.Kvs) > 0 && !n.cfg.Member.Draining {
		n.cfg.Member.Draining = true
		n.cfg.Logger.Warn("fleet: joins draining, as an operator drained it: it takes no switch until ecntune fleet drain "+n.cfg.Member.ID+" --undo",
			"member", n.cfg.Member.ID)
	}
	b, _ := json.Marshal(n.cfg.Member)
	// A stopped run's key goes with its lease, within the ttl it was
	// granted (etcd expires leases in sweeps, and a change of etcd leader
	// gives every lease a full ttl again): a key still held twice that
	// long after it was first seen is a live member's, its lease renewed.
	var until time.Time
	for {
		t, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, string(b), clientv3.WithLease(n.lease))).
			Else(clientv3.OpGet(k)).Commit()
		if err != nil {
			return fmt.Errorf("fleet %s: member key: %w", n.cfg.Name, unanswered(n.cli, err))
		}
		if t.Succeeded {
			return nil
		}
		var held clientv3.LeaseID
		if kvs := t.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
			held = clientv3.LeaseID(kvs[0].Lease)
		}
		if until.IsZero() {
			granted := n.cfg.TTL
			if r, err := n.cli.TimeToLive(ctx, held); err == nil && r.GrantedTTL > 0 {
				granted = time.Duration(r.GrantedTTL) * time.Second
			}
			until = time.Now().Add(2*granted + 2*time.Second)
		}
		if time.Now().After(until) {
			return fmt.Errorf("fleet %s: member id %q is held by a live member (lease %x, renewed for over twice its ttl): give each agent its own fleet.member (it defaults to the host name)",
				n.cfg.Name, n.cfg.Member.ID, int64(held))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fleet %s: member id %q is held by another lease, and %w while waiting for it to expire", n.cfg.Name, n.cfg.Member.ID, ctx.Err())
		case <-time.After(n.cfg.TTL / 8):
		}
		// this member's own lease lives on while it waits (renew starts
		// after Join)
		sent := time.Now()
		if _, err := n.cli.KeepAliveOnce(ctx, n.lease); err != nil {
			return fmt.Errorf("fleet %s: lease: %w", n.cfg.Name, unanswered(n.cli, err))
		}
		n.mu.Lock()
		n.lastRenew = sent
		n.mu.Unlock()
	}
}

// unanswered says which etcd did not answer, for an error of a request
// that timed out or could not connect. A request that ran out of time on
// a connection that is up is not said to be etcd's absence: etcd slow or
// busy, or a read too large for the time given, are as likely.
func unanswered(cli *clientv3.Client, err error) error {
	late := errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "DeadlineExceeded") || strings.Contains(err.Error(), "context deadline exceeded")
	if late && connected(cli) {
		return fmt.Errorf("etcd at %s did not answer in time, though connected to it (etcd slow or busy, a request too large for the time given, or a network that drops packets): %w",
			strings.Join(cli.Endpoints(), ", "), err)
	}
	if late || strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "code = Unavailable") {
		return fmt.Errorf("etcd at %s did not answer (is it running there, and the endpoints right?): %w", strings.Join(cli.Endpoints(), ", "), err)
	}
	return err
}

// connected says whether cli's connection to etcd is up.
func connected(cli *clientv3.Client) bool {
	cc := cli.ActiveConnection()
	return cc != nil && cc.GetState() == connectivity.Ready
}

// OnChange calls f (on a goroutine of the node's) whenever the switches
// owned change.
func (n *Node) OnChange(f func()) { n.mu.Lock(); n.onChange = f; n.mu.Unlock() }

// Close leaves the fleet: it stops, gives its switches up and revokes its
// lease (a crash does none of this: the lease expires after TTL).
func (n *Node) Close() error {
	n.cancel()
	n.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := n.cli.Revoke(ctx, n.lease)
	return err
}

// Stop stops the node's goroutines without revoking anything, as a crash
// or a pause does (tests).
func (n *Node) Stop() { n.cancel(); n.wg.Wait() }

// renew keeps the lease alive, every TTL/3, on one keepalive stream, and
// notes the send time of each renewal that succeeds (Writable and
// Deadline read it). A stream that fails or does not answer within TTL/3
// is dropped and a new one opened at the next round.
//
// A ttl after the newest renewal etcd confirmed, the lease may have expired
// at etcd and another member may own this member's switches and lead:
// from then on it neither leads (Leader) nor owns anything (Owns, Owned)
// until a renewal succeeds again, and OnChange's f is called then
// (noteLapse) and again when a renewal finds the lease alive.
func (n *Node) renew(ctx context.Context) {
	t := time.NewTicker(n.cfg.TTL / 3)
	defer t.Stop()
	n.mu.Lock()
	lapse := time.AfterFunc(time.Until(n.lastRenew.Add(n.cfg.TTL)), n.noteLapse)
	n.mu.Unlock()
	defer lapse.Stop()
	var ks *keepStream
	defer func() { ks.close() }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ks == nil {
			ks = openKeepStream(ctx, n.cli)
		}
		sent := time.Now()
		ttl, err := ks.once(n.lease, n.cfg.TTL/3)
		if err != nil {
			ks.close()
			ks = nil
			if ctx.Err() != nil {
				return // the member is closing: nothing went wrong
			}
			err = unanswered(n.cli, err)
			n.mu.Lock()
			n.renewErr = err
			n.mu.Unlock()
			n.cfg.Logger.Warn("fleet: lease not renewed", "member", n.cfg.Member.ID, "err", err)
			// gRPC's reconnect backoff grows to minutes: an etcd back
			// within the lease must be reached within it
			if cc := n.cli.ActiveConnection(); cc != nil {
				cc.ResetConnectBackoff()
			}
			continue
		}
		if ttl <= 0 {
			n.expired() // etcd knows the lease no more
			return
		}
		n.mu.Lock()
		n.lastRenew, n.renewErr = sent, nil
		back, f := n.lapseSaid, n.onChange
		n.lapseSaid = false
		n.mu.Unlock()
		lapse.Reset(time.Until(sent.Add(n.cfg.TTL)))
		if back {
			// etcd kept the lease: the switches and the lead are still
			// this member's (nobody else could take their keys)
			n.cfg.Logger.Warn("fleet: lease renewed again after a ttl without etcd: it was still alive; the switches it holds are this member's again",
				"member", n.cfg.Member.ID)
			if f != nil {
				f()
			}
		}
	}
}

// lapsed says whether a ttl has passed at now since the newest renewal
// etcd confirmed (under mu): etcd may have expired the lease, and another
// member may own this member's switches and lead.
func (n *Node) lapsed(now time.Time) bool { return !now.Before(n.lastRenew.Add(n.cfg.TTL)) }

// noteLapse says, once, that the lease has lapsed (renew's timer calls it
// a ttl after the newest renewal): the switches and the lead are no longer
// claimed, and OnChange's f is called.
func (n *Node) noteLapse() {
	n.mu.Lock()
	if n.lapseSaid || !n.lapsed(time.Now()) {
		n.mu.Unlock()
		return // said already, or a renewal came meanwhile
	}
	n.lapseSaid = true
	had := len(n.owned) > 0 || n.leader
	f := n.onChange
	owned := len(n.owned)
	n.mu.Unlock()
	n.cfg.Logger.Warn("fleet: lease not renewed for a ttl: etcd may have expired it; this member no longer claims its switches or the lead until etcd answers",
		"member", n.cfg.Member.ID, "switches", owned)
	if had && f != nil {
		f()
	}
}

// LeaseProblem says what keeps this member from writing as a whole, for
// its health: its lease gone, or not renewed for more than two renewal
// rounds (etcd not answering: past the ttl, its switches and the lead are
// lost); "" when neither.
func (n *Node) LeaseProblem(now time.Time) string {
	select {
	case <-n.done:
		return "fleet: this member's lease expired: it owns and writes no switch (restart it to join again)"
	default:
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if age := now.Sub(n.lastRenew); age > 2*n.cfg.TTL/3 {
		why := ""
		if n.renewErr != nil {
			why = ": " + n.renewErr.Error()
		}
		if age >= n.cfg.TTL {
			return fmt.Sprintf("fleet: lease not renewed for %s (ttl %v): etcd may have expired it, so this member has lost its switches and the lead to the others: it writes nothing until etcd answers again%s",
				age.Round(100*time.Millisecond), n.cfg.TTL, why)
		}
		return fmt.Sprintf("fleet: lease not renewed for %s (ttl %v): this member writes no switch past its deadline, and loses them all at the ttl%s",
			age.Round(100*time.Millisecond), n.cfg.TTL, why)
	}
	return ""
}

// ended is closed when the node stops or its lease is lost.
func (n *Node) ended() <-chan struct{} { return n.endc }

// keepStream is one LeaseKeepAlive stream, used one request at a time so
// that each answer's request send time is known.
type keepStream struct {
	s      pb.Lease_LeaseKeepAliveClient
	err    error
	cancel context.CancelFunc
}

func openKeepStream(ctx context.Context, cli *clientv3.Client) *keepStream {
	sctx, cancel := context.WithCancel(ctx)
	s, err := pb.NewLeaseClient(cli.ActiveConnection()).LeaseKeepAlive(sctx)
	return &keepStream{s: s, err: err, cancel: cancel}
}

// once renews id and returns the TTL etcd granted (≤ 0: no such lease);
// an answer later than timeout ends the stream.
func (k *keepStream) once(id clientv3.LeaseID, timeout time.Duration) (int64, error) {
	if k.err != nil {
		return 0, k.err
	}
	var late atomic.Bool
	stop := time.AfterFunc(timeout, func() { late.Store(true); k.cancel() })
	defer stop.Stop()
	err := k.s.Send(&pb.LeaseKeepAliveRequest{ID: int64(id)})
	var r *pb.LeaseKeepAliveResponse
	if err == nil {
		r, err = k.s.Recv()
	}
	if err != nil {
		if late.Load() {
			// the stream was ended here, for want of an answer: say so,
			// not "context canceled"
			return 0, fmt.Errorf("no answer to a lease renewal within %v: %w", timeout, context.DeadlineExceeded)
		}
		return 0, err
	}
	return r.TTL, nil
}

func (k *keepStream) close() {
	if k != nil {
		k.cancel()
	}
}

// Done is closed when the member's lease is gone (it could not renew it in
// time, e.g. after a pause): it owns nothing any more and must Join again
// as a new member.
func (n *Node) Done() <-chan struct{} { return n.done }

// expired gives every switch up: the lease that held them is gone.
func (n *Node) expired() {
	n.doneOnce.Do(func() {
		n.cfg.Logger.Warn("fleet: lease expired: this member owns nothing until it joins again", "member", n.cfg.Member.ID)
		n.mu.Lock()
		had := len(n.owned) > 0
		clear(n.owned)
		f := n.onChange
		n.mu.Unlock()
		close(n.done)
		if had && f != nil {
			f()
		}
	})
}

// Writable says whether this member may start a write to sw now: it owns
// sw, its takeover delay is over, and at least Margin is left before its
// Deadline (self-fencing). It returns the fencing token.
func (n *Node) Writable(sw string, now time.Time) (int64, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	o, ok := n.owned[sw]
	if !ok || now.Before(o.WriteAt) {
		return 0, false
	}
	if !now.Before(n.deadline().Add(-n.cfg.Margin)) {
		return 0, false
	}
	return o.Token, true
}

// Deadline is when this member's writes must have landed: before its
// lease can have expired at the server (the newest renewal's send time +
// TTL, less 1% for clocks that run at different rates). The agent ends
// every write's context there (Safe).
func (n *Node) Deadline() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.deadline()
}

func (n *Node) deadline() time.Time { return n.lastRenew.Add(n.cfg.TTL - n.cfg.TTL/100) }

// Owns says whether this member holds sw's owner key (in its take-over
// delay too): the agent serves it, subscribing to its telemetry. A member
// whose lease has lapsed (renew) owns nothing.
func (n *Node) Owns(sw string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.owned[sw]
	return ok && !n.lapsed(time.Now())
}

// Owned lists the switches this member owns, by name (none while its
// lease has lapsed, as Owns).
func (n *Node) Owned() []Ownership {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lapsed(time.Now()) {
		return []Ownership{}
	}
	out := make([]Ownership, 0, len(n.owned))
	for _, o := range n.owned {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Switch < out[j].Switch })
	return out
}

// ErrFenced: the write's condition failed, another member owns the switch
// now (or this member's lease is gone).
var ErrFenced = errors.New("fleet: fenced: this member no longer owns the switch")

// Fenced runs ops in one etcd transaction that succeeds only while this
// member holds sw's owner key with the token it was given: a deposed
// owner cannot record (and so cannot start) a change.
func (n *Node) Fenced(ctx context.Context, sw string, token int64, ops ...clientv3.Op) (*clientv3.TxnResponse, error) {
	k := n.ownerKey(sw)
	r, err := n.cli.Txn(ctx).If(
		clientv3.Compare(clientv3.CreateRevision(k), "=", token),
		clientv3.Compare(clientv3.LeaseValue(k), "=", n.lease),
	).Then(ops...).Commit()
	if err != nil {
		return nil, err
	}
	if !r.Succeeded {
		n.lost(sw)
		return r, fmt.Errorf("%w %s (token %d)", ErrFenced, sw, token)
	}
	return r, nil
}

func (n *Node) lost(sw string) {
	n.mu.Lock()
	_, had := n.owned[sw]
	delete(n.owned, sw)
	f := n.onChange
	n.mu.Unlock()
	if had && f != nil {
		f()
	}
}
