package gnmiclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmic/pkg/api"
	gtarget "github.com/openconfig/gnmic/pkg/api/target"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// Switch is a Switch reached over gNMI with gnmic's client: a STREAM
// subscription (counters SAMPLE, configuration ON_CHANGE) decoded by
// gnmipath into env.Snapshots, and Set/Get for changes and read-back.
type Switch struct {
	cfg   config.Target
	codec gnmipath.Target
	conn  *gtarget.Target

	mu  sync.Mutex
	dec *gnmipath.Decoder // also the source of profile bindings for Set
	// settle is how long the subscriber waits after the last counter
	// notification of a timestamp before it emits the snapshot.
	settle     time.Duration
	sample     time.Duration
	subscribed bool // Subscribe has been called: the stream owns dec
	// readBound is, for queues whose binding the stream has not given
	// (dec knows none: a session that ended, one not yet synced), the
	// ECN profile the last Read found them bound to ("" none): such a
	// queue is not written (requests), as which other queues share that
	// profile is unknown and a Set would bind it to a new profile of its
	// own.
	readBound map[env.QueueKey]string
	// refusedGroups are the optional subscription groups the switch
	// refused (reported once each).
	refusedGroups map[string]bool
	deviceWhy     string // how gt.Device was chosen, when inferred
	deviceLogged  bool
	// onConnect runs at the start of every subscription session.
	onConnect func(ctx context.Context)
	// endSession ends the current subscription session (Resync).
	endSession context.CancelFunc
	// opts make a connection to the switch: tg's, and for a device that
	// serves one Subscribe per connection, one more per Subscribe.
	opts []api.TargetOption
	// conns counts the gRPC connections open to the switch (tg's and
	// the Subscribes' own).
	conns atomic.Int64
	// commit is the id of the confirmed commit the last Apply started and
	// SettleCommit has not ended ("" none; commit-confirmed only).
	commit       string
	commitPrefix *gnmi.Path
}

// Dial prepares a gNMI client for one target. The connection is
// made lazily (gRPC dials on first use and reconnects by itself).
func Dial(ctx context.Context, t config.Target, sample time.Duration) (*Switch, error) {
	dl, err := gnmipath.ParseDialect(t.Dialect)
	if err != nil {
		return nil, fmt.Errorf("targets.%s.dialect: %v", t.Name, err)
	}
	opts := []api.TargetOption{api.Name(t.Name), api.Address(t.Address), api.Timeout(t.Timeout)}
	if t.Username != "" {
		opts = append(opts, api.Username(t.Username))
	}
	if t.Password != "" {
		opts = append(opts, api.Password(t.Password))
	}
	switch {
	case t.Insecure:
		opts = append(opts, api.Insecure(true))
	default:
		opts = append(opts, api.SkipVerify(t.SkipVerify))
		if t.TLSCA != "" {
			opts = append(opts, api.TLSCA(t.TLSCA))
		}
		if t.TLSCert != "" {
			opts = append(opts, api.TLSCert(t.TLSCert), api.TLSKey(t.TLSKey))
		}
	}
	tg, err := api.NewTarget(opts...)
	if err != nil {
		return nil, fmt.Errorf("target %s: %v", t.Name, err)
	}
	// gnmic's default RetryTimer is 0: a hot reconnect loop.
	tg.Config.RetryTimer = t.RetryTimer
	// Few responses wait per subscription: an agent that falls behind
	// pushes back on the switch (gRPC flow control) instead of holding
	// samples it will never use (at 100 switches x 4 subscriptions x 64
	// responses of ~80 KB that was gigabytes).
	tg.Config.BufferSize = 4
	if err := tg.CreateGNMIClient(ctx, connectBackoff(t.RetryTimer)); err != nil {
		return nil, fmt.Errorf("target %s (%s): %v", t.Name, t.Address, err)
	}
	gt := gnmipath.Target{Name: t.Name, Dialect: dl, Namespace: t.Namespace, ASIC: t.ASIC, QueueNames: t.QueueNames}
	if !t.AllPorts {
		gt.Ports = t.Ports // no state kept for ports the configuration does not list
	}
	gt.MaxPorts = t.MaxPorts
	if t.Device != "" {
		if gt.Device, err = gnmipath.LookupDevice(t.Device); err != nil {
			return nil, fmt.Errorf("targets.%s.device: %v", t.Name, err)
		}
	}
	if sample <= 0 {
		sample = time.Second
	}
	settle := sample / 10
	if settle > 50*time.Millisecond {
		settle = 50 * time.Millisecond
	}
	if settle < 2*time.Millisecond {
		settle = 2 * time.Millisecond
	}
	sw := &Switch{cfg: t, codec: gt, conn: tg, dec: gnmipath.NewDecoder(gt, t.Queues...), settle: settle, sample: sample, opts: opts}
	sw.conns.Store(1)
	return sw, nil
}

// connectBackoff is how often gRPC tries the switch's connection again
// after it failed: at most every retry (gRPC's backoff, 1 s x1.6 with
// jitter, capped at retry), as Subscribe resubscribes. With gRPC's default
// cap of 2 minutes a switch back after an outage waited for the
// connection's next try (20-45 s after a 40-90 s outage) while every
// resubscribe, logged "in 2s", failed on the connection still backing off.
// A try is given gRPC's default 20 s to connect.
func connectBackoff(retry time.Duration) grpc.DialOption {
	b := backoff.DefaultConfig
	if retry > 0 {
		b.MaxDelay = retry
		b.BaseDelay = min(b.BaseDelay, retry)
	}
	return grpc.WithConnectParams(grpc.ConnectParams{Backoff: b, MinConnectTimeout: 20 * time.Second})
}

// Connections is how many gRPC connections are open to the switch: one
// for Get, Set and Capabilities (and every Subscribe, where the device
// multiplexes them), plus one per Subscribe on a device that serves one
// Subscribe per connection (gnmipath.Device.OneSubscribePerConn).
func (s *Switch) Connections() int { return int(s.conns.Load()) }

// Name is the target name.
func (s *Switch) Name() string { return s.cfg.Name }

// Device returns the target's device profile and how it was chosen: named
// in the configuration, inferred from the switch's Capabilities, or (when
// that failed) the dialect's default. It asks the switch at most once
// successfully.
func (s *Switch) Device(ctx context.Context) (*gnmipath.Device, string) {
	s.mu.Lock()
	if s.codec.Device != nil {
		d, why := s.codec.Device, s.deviceWhy
		s.mu.Unlock()
		if why == "" {
			why = "named in the configuration"
		}
		return d, why
	}
	s.mu.Unlock()
	var dev *gnmipath.Device
	var why string
	// bounded by the target's timeout: a switch whose gNMI process hangs
	// (the connection up, no answer) held Subscribe here for ever
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if s.cfg.Timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, s.cfg.Timeout)
	}
	resp, err := s.conn.Capabilities(cctx)
	// the server may end the call at the deadline it was sent before
	// the context's own timer fires
	timedOut := ctx.Err() == nil && (cctx.Err() == context.DeadlineExceeded || status.Code(err) == codes.DeadlineExceeded)
	cancel()
	if err != nil {
		if timedOut {
			err = fmt.Errorf("no answer within the target's timeout %s", s.cfg.Timeout)
		}
		// not remembered: the next connection asks again
		return gnmipath.DefaultDevice(s.codec.Dialect), fmt.Sprintf("Capabilities failed (%v); using the %s dialect's default", err, s.codec.Dialect)
	}
	var models []string
	for _, m := range resp.GetSupportedModels() {
		models = append(models, m.GetName())
	}
	dev, why = gnmipath.InferDevice(models)
	if dev.Dialect != s.codec.Dialect {
		dev, why = gnmipath.DefaultDevice(s.codec.Dialect), fmt.Sprintf("inferred %s (%s) but the target's dialect is %s; using %s", dev.Name, why, s.codec.Dialect, gnmipath.DefaultDevice(s.codec.Dialect).Name)
	}
	why = "inferred from Capabilities: " + why
	s.mu.Lock()
	s.codec.Device, s.deviceWhy = dev, why
	s.dec.SetTarget(s.codec)
	s.mu.Unlock()
	return dev, why
}

// Close stops subscriptions and closes the connection.
func (s *Switch) Close() error { return s.conn.Close() }

// Subscribe implements Switch. The decoder keeps the switch's state across
// notifications; a snapshot is emitted once the counter notifications of
// one timestamp have settled, and never before every subscription has
// sent its initial dump (sync_response). When any stream breaks, all of
// them are restarted after RetryTimer with a fresh decoder, so the full
// re-snapshot rebuilds the whole state (the Observer sees repeated or
// earlier timestamps and counter resets as such, never as a false
// interval).
func (s *Switch) Subscribe(ctx context.Context, out chan<- env.Snapshot, errs chan<- error) {
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	s.mu.Lock()
	s.subscribed = true
	s.dec.Reset()
	s.mu.Unlock()
	for ctx.Err() == nil {
		s.mu.Lock()
		f := s.onConnect
		s.mu.Unlock()
		if f != nil {
			f(ctx)
		}
		if dev, why := s.Device(ctx); !s.deviceLogged {
			s.deviceLogged = true
			report(&DeviceNote{Target: s.cfg.Name, Device: dev.Name, Why: why})
		}
		err := s.session(ctx, out, report)
		if ctx.Err() != nil {
			return
		}
		report(fmt.Errorf("target %s: %v (resubscribing in %s)", s.cfg.Name, err, s.cfg.RetryTimer))
		s.mu.Lock()
		s.dec.Reset()
		s.mu.Unlock()
		t := time.NewTimer(s.cfg.RetryTimer)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Resync ends the current subscription session: Subscribe starts a new one
// after RetryTimer, with a fresh decoder, whose initial dump rebuilds the
// whole state (for telemetry found stale: an ON_CHANGE update lost).
func (s *Switch) Resync() {
	s.mu.Lock()
	end := s.endSession
	s.mu.Unlock()
	if end != nil {
		end()
	}
}

// OnConnect implements LLDPSwitch: f runs on Subscribe's goroutine each
// time Subscribe (re)connects, before the streams of that session open, so
// that every snapshot of the session comes after f returned.
func (s *Switch) OnConnect(f func(ctx context.Context)) {
	s.mu.Lock()
	s.onConnect = f
	s.mu.Unlock()
}

// LLDP implements LLDPSwitch: one Get of the openconfig-lldp neighbour
// state of every interface (gnmipath.LLDPRequest). Never retried.
func (s *Switch) LLDP(ctx context.Context) ([]*gnmi.Notification, error) {
	resp, err := s.conn.Get(ctx, gnmipath.LLDPRequest(s.codec))
	if err != nil {
		return nil, err
	}
	return resp.GetNotification(), nil
}

// session runs one set of subscriptions until the first stream error of
// a required group: one Subscribe per group of the target's device
// (gnmipath.Groups), so that a switch refusing an optional group (PFC
// statistics, buffer state) loses that telemetry alone, and the profiles
// the bindings name, subscribed to by name as they are learned
// (gnmipath.ProfileSubscribeRequest), never a whole profile table.
func (s *Switch) session(pctx context.Context, out chan<- env.Snapshot, report func(error)) error {
	ctx, cancel := context.WithCancel(pctx)
	defer cancel()
	s.mu.Lock()
	s.endSession = cancel
	s.mu.Unlock()
	ss := &session{sw: s, ctx: ctx, out: out, report: report, merged: make(chan subResp, 64), have: map[string]bool{}, absent: "[]",
		inSample: map[uint64]struct{}{}}
	defer ss.wg.Wait()
	defer cancel()
	sample := max(s.sample, s.codec.Dev().MinSample) // the device's floor (sonic-gnmi: 1 s)
	for _, g := range gnmipath.Groups(s.codec) {
		g := g
		gctx, gcancel := context.WithCancel(ctx)
		ss.open(gctx, g.Request(sample), fmt.Sprintf("ecntune-%s-%s", s.cfg.Name, g.Name), &subInfo{group: &g, cancel: gcancel})
		ss.want++ // sync_responses due before the first snapshot
	}
	ss.timer = time.NewTimer(time.Hour)
	ss.timer.Stop()
	defer ss.timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ss.timer.C:
			if ss.waitForWhole() || ss.waitForAligned() {
				continue // the sample's other notifications are on their way
			}
			ss.emit()
		case m := <-ss.merged:
			if err := ss.handle(m); err != nil {
				return err
			}
		}
	}
}

// subResp is one response (its bytes) or error of one subscription of a
// session.
type subResp struct {
	raw []byte
	err error
	sub int // index in session.subs
}

// subInfo is one subscription of a session: a group of the device's
// (group set) or one to WRED/buffer profiles by name (names set); cancel
// is nil once it ended.
type subInfo struct {
	group  *gnmipath.Group
	names  []string
	cancel context.CancelFunc
	synced bool
	// sampledTs is the newest timestamp an optional SAMPLE group sent
	// (config.Target.AlignSamples), sampledN its notifications so far and
	// sampledFull those of a whole sample (the most seen): a sample comes
	// as several notifications.
	sampledTs             int64
	sampledN, sampledFull int
}

// noteSample counts one notification of an optional sampled group.
func (p *subInfo) noteSample(ts int64) {
	if ts > p.sampledTs {
		p.sampledFull = max(p.sampledFull, p.sampledN)
		p.sampledTs, p.sampledN = ts, 0
	}
	if ts == p.sampledTs {
		p.sampledN++
	}
}

// sampledWhole says whether the group has sent all of its sample of time ts.
func (p *subInfo) sampledWhole(ts int64) bool {
	return p.sampledTs > ts || (p.sampledTs == ts && p.sampledN >= p.sampledFull)
}

// optionalSample reports whether p is a sampled group that does not pace
// snapshots (PFC statistics, the shared buffer): one a snapshot waits for
// under config.Target.AlignSamples.
func (p *subInfo) optionalSample() bool {
	return p.group != nil && !p.group.Required && p.group.Sub.Mode == gnmi.SubscriptionMode_SAMPLE && p.cancel != nil
}

// session is one connection's subscriptions to a switch: the base ones
// (counters, bindings), then one per batch of profiles the bindings name,
// all merged into one stream that feeds the decoder; a Snapshot goes out
// once every subscription has synced and a sample has settled.
type session struct {
	sw     *Switch
	ctx    context.Context
	out    chan<- env.Snapshot
	report func(error)
	// absent is the last AbsentQueuesNote's list, as text ("[]" none).
	absent string
	merged chan subResp
	wg     sync.WaitGroup
	subs   []*subInfo
	have   map[string]bool // profiles subscribed to, as "ecn:NAME" and "buffer:NAME"
	want   int             // sync_responses due before the first snapshot

	seenBindings uint64
	learned      bool
	malformed    error // the last notification the decoder refused (emit says it)

	timer           *time.Timer
	dirty           bool
	syncs           int
	lastTs, emitted int64
	// suspectTs is the time of the last counters notification stamped out
	// of line with the stream (clockCheck; 0: none)
	suspectTs int64
	// inSample are the keys (gnmipath.WireResult.Key) of the counter
	// notifications of the pending sample, nAt how many, full those of a
	// whole sample (the most seen); lastTs is the sample's newest stamp,
	// firstAt when its first notification came. A sample is emitted as soon as it is whole, and its
	// settle timer waits for the rest (up to wholeWait) when it is not:
	// a snapshot that mixes a port's old counters into a new time reads
	// as an idle interval, and the next one as a double one.
	inSample  map[uint64]struct{}
	nAt, full int
	firstAt   time.Time
}

// wholeWait bounds how long a sample waits for the counter notifications
// a whole one has, after its first: past it the sample goes out as it is
// and its count becomes the whole one (a port went away).
const wholeWait = time.Second

// waitForWhole says whether the pending sample lacks counter notifications
// a whole one has and may still wait for them (re-arming the timer);
// past wholeWait it learns the smaller count instead.
func (ss *session) waitForWhole() bool {
	if !ss.dirty || ss.full == 0 || ss.nAt >= ss.full {
		return false
	}
	if time.Since(ss.firstAt) < wholeWait {
		ss.timer.Reset(ss.sw.settle)
		return true
	}
	ss.full = ss.nAt
	return false
}

// aligned says whether every optional sampled group has sent its sample
// of the pending counters' time (always, without AlignSamples).
func (ss *session) aligned() bool {
	if !ss.sw.cfg.AlignSamples {
		return true
	}
	for _, p := range ss.subs {
		if p.optionalSample() && p.synced && !p.sampledWhole(ss.lastTs) {
			return false
		}
	}
	return true
}

// waitForAligned says whether the pending sample waits for an optional
// group's sample of its time (AlignSamples), re-arming the timer; past
// wholeWait it goes out without it.
func (ss *session) waitForAligned() bool {
	if !ss.dirty || ss.aligned() || time.Since(ss.firstAt) >= wholeWait {
		return false
	}
	ss.timer.Reset(ss.sw.settle)
	return true
}

// open starts one subscription and forwards what it receives to merged.
func (ss *session) open(sctx context.Context, req *gnmi.SubscribeRequest, name string, p *subInfo) {
	switch ss.sw.cfg.Encoding {
	case "proto":
		req.GetSubscribe().Encoding = gnmi.Encoding_PROTO
	case "json":
		req.GetSubscribe().Encoding = gnmi.Encoding_JSON
	}
	i := len(ss.subs)
	ss.subs = append(ss.subs, p)
	ss.wg.Add(1)
	go func() {
		defer ss.wg.Done()
		send := func(r subResp) bool {
			select {
			case ss.merged <- r:
				return true
			case <-sctx.Done():
				return false
			}
		}
		stream, closeConn, err := ss.sw.rawSubscribe(sctx, req)
		defer closeConn()
		if err != nil {
			if sctx.Err() == nil {
				send(subResp{err: fmt.Errorf("subscribe %s: %w", name, err), sub: i})
			}
			return
		}
		for {
			f := &rawFrame{}
			if err := stream.RecvMsg(f); err != nil {
				if sctx.Err() == nil {
					if err == io.EOF {
						err = fmt.Errorf("subscribe %s: the switch ended the stream", name)
					}
					send(subResp{err: err, sub: i})
				}
				return
			}
			if !send(subResp{raw: f.b, sub: i}) {
				return
			}
		}
	}()
}

// rawSubscribe opens a Subscribe stream on the target's connection whose
// responses arrive as the bytes gRPC received (rawFrame), for the decoder
// to walk in place (gnmipath.Decoder.ApplyWire) rather than as messages
// unmarshalled leaf by leaf, and sends req.
//
// On a device that serves one Subscribe per connection the stream gets a
// connection of its own, closed by the returned func once the stream has
// ended (the func is never nil).
func (s *Switch) rawSubscribe(ctx context.Context, req *gnmi.SubscribeRequest) (grpc.ClientStream, func(), error) {
	if s.cfg.Username != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "username", s.cfg.Username)
	}
	if s.cfg.Password != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "password", s.cfg.Password)
	}
	client, done := s.conn.Client, func() {}
	if s.device().OneSubscribePerConn {
		own, err := api.NewTarget(s.opts...)
		if err == nil {
			err = own.CreateGNMIClient(ctx)
		}
		if err != nil {
			return nil, done, fmt.Errorf("a connection for the subscription: %v", err)
		}
		s.conns.Add(1)
		var once sync.Once
		done = func() {
			once.Do(func() {
				own.Close()
				s.conns.Add(-1)
			})
		}
		client = own.Client
	}
	st, err := client.Subscribe(ctx, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		done()
		return nil, func() {}, err
	}
	if err := st.Send(req); err != nil {
		done()
		return nil, func() {}, err
	}
	return st, done, nil
}

// Skipped implements SkipReporter: the telemetry elements the decoder did
// not understand, by path shape.
func (s *Switch) Skipped() []gnmipath.Skipped {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dec.Skipped()
}

// device is the target's device profile as the subscriptions use it.
func (s *Switch) device() *gnmipath.Device {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.codec.Dev()
}

// rawFrame receives one message's bytes (rawCodec).
type rawFrame struct{ b []byte }

// rawCodec is gRPC's proto codec, except that a rawFrame receives the
// message's bytes as they are.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return encoding.GetCodecV2("proto").Marshal(v)
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if f, ok := v.(*rawFrame); ok {
		f.b = data.Materialize()
		return nil
	}
	return encoding.GetCodecV2("proto").Unmarshal(data, v)
}

func (rawCodec) Name() string { return "proto" }

// subscribe opens one subscription to the profiles names.
func (ss *session) subscribe(names []string) {
	var ecn, buf []string
	for _, n := range names {
		ss.have[n] = true
		if e, ok := strings.CutPrefix(n, "ecn:"); ok {
			ecn = append(ecn, e)
		} else {
			buf = append(buf, strings.TrimPrefix(n, "buffer:"))
		}
	}
	sctx, scancel := context.WithCancel(ss.ctx)
	ss.open(sctx, gnmipath.ProfileSubscribeRequest(ss.sw.codec, ecn, buf), fmt.Sprintf("ecntune-%s-profiles-%d", ss.sw.cfg.Name, len(ss.subs)),
		&subInfo{names: names, cancel: scancel})
	ss.want++
}

// learn subscribes to the profiles the bindings name that no
// subscription of this session covers yet.
func (ss *session) learn() {
	s := ss.sw
	s.mu.Lock()
	v := s.dec.BindingsVersion()
	if ss.learned && v == ss.seenBindings {
		s.mu.Unlock()
		return
	}
	ss.learned, ss.seenBindings = true, v
	ecn, buf := s.dec.Profiles()
	s.mu.Unlock()
	var names []string
	for _, n := range ecn {
		if !ss.have["ecn:"+n] {
			names = append(names, "ecn:"+n)
		}
	}
	for _, n := range buf {
		if !ss.have["buffer:"+n] {
			names = append(names, "buffer:"+n)
		}
	}
	if len(names) > 0 {
		ss.subscribe(names)
	}
}

// emit sends the decoder's Snapshot when a sample is pending and every
// subscription has synced.
func (ss *session) emit() {
	if !ss.dirty || ss.syncs < ss.want {
		return
	}
	ss.dirty = false
	s := ss.sw
	s.mu.Lock()
	if s.dec.CountersTime() == ss.emitted {
		s.mu.Unlock()
		return // this sample went out already
	}
	snap, incomplete := s.dec.Snapshot()
	absent, have := s.dec.AbsentQueues()
	s.mu.Unlock()
	if key := fmt.Sprint(absent); key != ss.absent {
		// said when it changes: a queues: entry the switch has no queue
		// of was never tuned without a word, or (the only one) read as
		// "no telemetry" while the stream ran
		ss.absent = key
		ss.report(&AbsentQueuesNote{Target: s.cfg.Name, Absent: absent, Have: have})
	}
	if len(incomplete) > 0 {
		why := ""
		if ss.malformed != nil {
			// the value the switch sent was refused: said, not only as
			// a value missing (which hid it on /healthz)
			why = fmt.Sprintf(" (the switch sent a value the agent refused: %v)", ss.malformed)
		}
		ss.report(fmt.Errorf("target %s: %d queues incomplete, e.g. %s%s", s.cfg.Name, len(incomplete), incomplete[0], why))
	}
	if len(snap.Queues) == 0 || snap.TimeNs == ss.emitted {
		return
	}
	ss.emitted = snap.TimeNs
	select {
	case ss.out <- snap:
	case <-ss.ctx.Done():
	}
}

// handle takes one response of the merged stream; an error it returns
// ends the session.
func (ss *session) handle(m subResp) error {
	s := ss.sw
	p := ss.subs[m.sub]
	if p.cancel == nil {
		return nil // an ended subscription
	}
	if m.err != nil {
		code := status.Code(m.err)
		switch {
		case p.group != nil && p.group.Required:
			return fmt.Errorf("subscription %s (%s): %v", p.group.Name, describeSub(p.group.Sub), m.err)
		case p.group != nil && refused(code):
			ss.groupMissing(p, m.err)
			return nil
		case p.group != nil:
			return fmt.Errorf("subscription %s: %v", p.group.Name, m.err)
		case code != codes.NotFound:
			return m.err
		}
		ss.profileMissing(p, m.err)
		return nil
	}
	res, err := gnmipath.PeekWire(s.codec.Dialect, m.raw)
	if err != nil {
		return fmt.Errorf("target %s: malformed SubscribeResponse: %v", s.cfg.Name, err)
	}
	if !res.Update {
		if res.Sync {
			if !p.synced {
				// one per subscription: a second sync_response of one
				// (a duplicate) counted toward every group having synced,
				// and the first snapshot came out incomplete
				ss.syncs++
			}
			p.synced = true
			ss.learn()
			ss.emit()
		}
		return nil
	}
	// Only the required group's queue counters pace snapshots: optional
	// groups (PFC, buffer) stream on their own Subscribe and are folded
	// into whatever snapshot comes next.
	counters := p.group != nil && p.group.Required && res.Counters
	offLine, stepped, next := false, false, false
	if counters {
		offLine, stepped = ss.clockCheck(res.Timestamp)
		// A sample is the counter notifications up to the first one of
		// the same leaves again (res.Key), not those of one timestamp: a
		// switch that stamps each port's counters with the time it read
		// them (cache-based servers, sonic-gnmi's per-path stamps) made
		// one snapshot a port, every port idle over 1 ms. A repeat
		// stamped no later than the sample is the same sample re-sent.
		_, again := ss.inSample[res.Key]
		next = stepped || again && (offLine || res.Timestamp > ss.lastTs)
	}
	if next && ss.dirty {
		// A new sample began before the previous one settled.
		ss.emit()
	}
	s.mu.Lock()
	err = s.dec.ApplyPeeked(m.raw, res)
	emptied := s.dec.Emptied()
	switch {
	case offLine:
		// its values stand, its time is not the sample's: one stamp an
		// hour ahead held every later snapshot at that time (dropped as
		// repeats) until the clock caught up
		s.dec.SetCountersTime(ss.lastTs)
	case stepped:
		s.dec.SetCountersTime(res.Timestamp)
		ss.lastTs, ss.nAt, ss.full = 0, 0, 0 // a new clock: counted afresh below
	}
	s.mu.Unlock()
	if err != nil {
		ss.malformed = err
		ss.report(fmt.Errorf("target %s: malformed telemetry: %v", s.cfg.Name, err))
	}
	if len(emptied) > 0 {
		// sonic-gnmi says a field or the whole of these entries was
		// deleted, not which nor what is left: a new session's initial
		// dump says what the switch runs (the queue's setting stood as it
		// was before, unnoticed)
		ss.report(&ConfigDeletedNote{Target: s.cfg.Name, Entries: emptied})
		s.Resync()
	}
	ss.learn()
	if p.optionalSample() {
		p.noteSample(res.Timestamp)
		if ss.dirty && ss.full > 0 && ss.nAt >= ss.full && ss.aligned() {
			ss.timer.Stop()
			ss.emit() // the sample was whole and waited for this group only
			return nil
		}
	}
	if counters {
		if next || ss.nAt == 0 {
			ss.full = max(ss.full, ss.nAt)
			ss.nAt, ss.firstAt = 0, time.Now()
			clear(ss.inSample)
		}
		if _, in := ss.inSample[res.Key]; !in {
			ss.inSample[res.Key] = struct{}{}
			ss.nAt++
		}
		if !offLine && res.Timestamp > ss.lastTs {
			ss.lastTs = res.Timestamp // the sample's time: its newest stamp
		}
		ss.dirty = true
		if ss.full > 0 && ss.nAt >= ss.full && ss.aligned() {
			ss.timer.Stop()
			ss.emit() // whole: no need to wait
			return nil
		}
		ss.timer.Reset(s.settle)
	}
	return nil
}

// clockJump is how far a counters timestamp may be from the stream's
// (the current sample's) before it is out of line: a switch's clock that
// steps, or one notification stamped wrong.
func (ss *session) clockJump() int64 {
	return int64(max(20*ss.sw.sample, 20*ss.sw.codec.Dev().MinSample, 2*time.Second))
}

// clockCheck judges a counters notification's timestamp ts against the
// stream's: in line; out of line (offLine: its time is not taken, the
// first time, as one wrong stamp must not move the stream's clock); or
// the second in a row near the same out-of-line time (stepped: the
// switch's clock moved, taken as the new time, and said once). Both
// directions: a clock stepping back held every snapshot until it caught
// up, as a stamp an hour ahead did.
func (ss *session) clockCheck(ts int64) (offLine, stepped bool) {
	j := ss.clockJump()
	near := func(a, b int64) bool { return a <= b+j && a >= b-j }
	// in line: near the stream's time, or near it plus the time since its
	// sample came (samples further apart than the jump: a switch's own
	// minimum interval, a stall, an idle stream's heartbeat)
	if ss.lastTs == 0 || near(ts, ss.lastTs) || near(ts, ss.lastTs+int64(time.Since(ss.firstAt))) {
		ss.suspectTs = 0
		return false, false
	}
	name := ss.sw.cfg.Name
	if ss.suspectTs != 0 && near(ts, ss.suspectTs) {
		ss.suspectTs = 0
		ss.report(fmt.Errorf("target %s: the switch's clock moved by %v (counters stamped %s, the stream was at %s): taking its new time",
			name, time.Duration(ts-ss.lastTs).Round(time.Millisecond), time.Unix(0, ts).UTC().Format(time.RFC3339Nano),
			time.Unix(0, ss.lastTs).UTC().Format(time.RFC3339Nano)))
		return false, true
	}
	ss.suspectTs = ts
	ss.report(fmt.Errorf("target %s: a counters notification stamped %v off the stream's time (%s against %s): its time not taken",
		name, time.Duration(ts-ss.lastTs).Round(time.Millisecond), time.Unix(0, ts).UTC().Format(time.RFC3339Nano),
		time.Unix(0, ss.lastTs).UTC().Format(time.RFC3339Nano)))
	return true, false
}

// refused reports whether a status code says the switch does not serve
// what a subscription asked for (rather than that something broke).
func refused(c codes.Code) bool {
	return c == codes.Unimplemented || c == codes.NotFound || c == codes.InvalidArgument
}

func describeSub(sb gnmipath.Subscription) string {
	out := make([]string, len(sb.Paths))
	for i, p := range sb.Paths {
		out[i] = gnmipath.Describe(sb.Prefix, p)
	}
	return strings.Join(out, ", ")
}

// groupMissing handles an optional group the switch refused: the session
// goes on without it; the telemetry it carried is reported missing (once
// per target, by the decoder's Missing and the agent's log).
func (ss *session) groupMissing(p *subInfo, err error) {
	p.cancel()
	p.cancel = nil
	if !p.synced {
		ss.want--
	}
	s := ss.sw
	s.mu.Lock()
	first := !s.refusedGroups[p.group.Name]
	if s.refusedGroups == nil {
		s.refusedGroups = map[string]bool{}
	}
	s.refusedGroups[p.group.Name] = true
	s.mu.Unlock()
	if first {
		ss.report(&GroupRefusedError{Target: s.cfg.Name, Group: p.group.Name, Lost: p.group.Provides, Err: err})
	}
	ss.emit()
}

// DeviceNote says which device profile a target runs with and why (not an
// error: the agent logs it once).
type DeviceNote struct{ Target, Device, Why string }

func (n *DeviceNote) Error() string {
	return fmt.Sprintf("target %s: device %s (%s)", n.Target, n.Device, n.Why)
}

// AbsentQueuesNote says which configured queues (queues:) the switch
// reports on none of its ports, and which it does report (Absent empty:
// all are reported now). Not a telemetry error.
type AbsentQueuesNote struct {
	Target       string
	Absent, Have []int
}

func (n *AbsentQueuesNote) Error() string {
	if len(n.Absent) == 0 {
		return fmt.Sprintf("target %s: every configured queue is reported", n.Target)
	}
	return fmt.Sprintf("target %s: configured queues %v are on none of the switch's ports (it reports queues %v): not tuned; check queues: in the configuration",
		n.Target, n.Absent, n.Have)
}

// ConfigDeletedNote reports CONFIG_DB entries sonic-gnmi said were
// emptied by a delete (a field or the whole entry): the session is
// restarted to read what the switch runs. Not a telemetry error.
type ConfigDeletedNote struct {
	Target  string
	Entries []string
}

func (n *ConfigDeletedNote) Error() string {
	return fmt.Sprintf("target %s: CONFIG_DB entries changed by a delete (%s): reading the switch afresh", n.Target, strings.Join(n.Entries, ", "))
}

// GroupRefusedError reports an optional subscription group a switch
// refused; the agent goes on without the telemetry it carried.
type GroupRefusedError struct {
	Target, Group string
	Lost          env.Telemetry
	Err           error
}

func (e *GroupRefusedError) Error() string {
	return fmt.Sprintf("target %s: switch refused the %s subscription (%v); going on without %s", e.Target, e.Group, e.Err, e.Lost)
}

func (e *GroupRefusedError) Unwrap() error { return e.Err }

// profileMissing handles a profile subscription the switch answered
// NotFound: a binding names a profile the switch lacks. The names are
// subscribed to one by one to find which; a profile alone and missing is
// left out (its queue stays incomplete) until a binding changes.
func (ss *session) profileMissing(p *subInfo, err error) {
	p.cancel()
	p.cancel = nil
	if !p.synced {
		ss.want--
	}
	for _, n := range p.names {
		delete(ss.have, n)
	}
	if len(p.names) > 1 {
		for _, n := range p.names {
			ss.subscribe([]string{n})
		}
		return
	}
	ss.report(fmt.Errorf("target %s: profile %s: %v", ss.sw.cfg.Name, p.names[0], err))
	ss.emit()
}

// requests builds the Sets of settings by the target's device rules
// (gnmipath.Sets), from the bindings and settings the subscription decoded.
func (s *Switch) requests(settings map[env.QueueKey]env.Setting) (ecn, hr []*gnmi.SetRequest, notTunable []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var blind []string
	for _, k := range slices.SortedFunc(maps.Keys(settings), env.CompareQueueKeys) {
		if p := s.readBound[k]; p != "" && s.dec.Binding(k.Port, k.Queue).ECNProfile == "" {
			blind = append(blind, fmt.Sprintf("%s (bound to %s)", k, p))
		}
	}
	if len(blind) > 0 {
		return nil, nil, nil, fmt.Errorf("target %s: not written: the telemetry stream has not said which queues share the ECN profiles of %s, and a Set would bind them to new profiles of their own; written once the stream is back",
			s.cfg.Name, strings.Join(blind, ", "))
	}
	return gnmipath.Sets(s.codec, settings, s.queueState)
}

// SetRequests are the Set requests Apply would send for settings, in
// order: the ECN batches, then the headroom Sets.
func (s *Switch) SetRequests(settings map[env.QueueKey]env.Setting) ([]*gnmi.SetRequest, error) {
	ecn, hr, _, err := s.requests(settings)
	return append(ecn, hr...), err
}

// queueState is what the decoder knows of a queue. Callers hold s.mu.
func (s *Switch) queueState(k env.QueueKey) gnmipath.QueueState {
	qs := gnmipath.QueueState{Binding: s.dec.Binding(k.Port, k.Queue)}
	if cur, err := s.dec.Setting(k.Port, k.Queue); err == nil {
		qs.Setting, qs.Known = cur, true
	}
	return qs
}

// SetPaths implements Switch: the paths a change of keys writes
// (gnmipath.WritePaths).
func (s *Switch) SetPaths(keys []env.QueueKey) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return gnmipath.WritePaths(s.codec, keys, s.queueState)
}

// Apply implements Switch: one Set per batch of non-conflicting queue
// ECN updates (usually one per call), then one Set per headroom change
// where the device takes headroom as a leaf of its own. A refused
// headroom Set leaves the ECN change in place and is reported as a
// *gnmipath.HeadroomError. Never retried.
func (s *Switch) Apply(ctx context.Context, settings map[env.QueueKey]env.Setting) error {
	reqs, hr, notTunable, err := s.requests(settings)
	if err != nil {
		return err
	}
	if s.cfg.CommitConfirmed > 0 {
		return s.applyCommitted(ctx, append(reqs, hr...), notTunable)
	}
	for _, r := range reqs {
		if _, err := s.conn.Set(ctx, r); err != nil {
			return setError(err)
		}
	}
	var herr *gnmipath.HeadroomError
	if len(notTunable) > 0 {
		herr = &gnmipath.HeadroomError{Target: s.cfg.Name, Paths: notTunable, Err: errors.New("not tunable on this switch")}
	}
	for _, r := range hr {
		if _, err := s.conn.Set(ctx, r); err != nil {
			if herr == nil {
				// a timeout is no refusal: the Set may still land
				herr = &gnmipath.HeadroomError{Target: s.cfg.Name, Err: setError(err)}
			}
			herr.Paths = append(herr.Paths, gnmipath.Describe(r.Prefix, r.Update[0].Path))
		}
	}
	if herr != nil {
		return herr
	}
	return nil
}

// setError marks a Set's error whose outcome nobody knows (a deadline, a
// cancel, a connection lost on the way: the switch may have taken the
// Set, or take it yet) with core.ErrSetOutcomeUnknown; an answer of the
// switch (InvalidArgument, say) stays as it is.
func setError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %w", core.ErrSetOutcomeUnknown, err)
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unavailable:
			if neverSent(st.Message()) {
				// no connection: the Set never left (a rollback to a
				// switch that was down was judged by value once it came
				// back at its startup setting, and audited as applied)
				return err
			}
			return fmt.Errorf("%w: %w", core.ErrSetOutcomeUnknown, err)
		case codes.DeadlineExceeded, codes.Canceled:
			return fmt.Errorf("%w: %w", core.ErrSetOutcomeUnknown, err)
		}
	}
	return err
}

// neverSent says whether an Unavailable's message is of a connection
// that was never made (the dial failed), not one lost on the way.
func neverSent(msg string) bool {
	return strings.Contains(msg, "Error while dialing") || strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such host")
}

// Read implements Switch: one Get of the bindings of all queues
// (gnmipath.SettingPaths), then one of the profiles they name.
func (s *Switch) Read(ctx context.Context, keys []env.QueueKey) (map[env.QueueKey]env.Setting, error) {
	if len(keys) == 0 {
		return map[env.QueueKey]env.Setting{}, nil
	}
	// The target as the stream decodes it: its queue names (an openconfig
	// switch naming queue 3 AF3 answers queue[name=AF3], unknown to a
	// decoder without them), device and namespace.
	s.mu.Lock()
	t := s.codec
	s.mu.Unlock()
	resp, err := s.conn.Get(ctx, gnmipath.ReadBindings(t, keys))
	if err != nil {
		return nil, err
	}
	// Then the profiles those bindings name, by name.
	if req := gnmipath.ReadProfiles(t, resp.GetNotification(), keys); req != nil {
		ns, err := s.getEach(ctx, req)
		if err != nil {
			return nil, err
		}
		resp.Notification = append(resp.Notification, ns...)
	}
	got, bound, err := gnmipath.ReadSettings(t, resp.GetNotification(), keys)
	// Without a subscription (ecntune agent rollback) the response is the
	// only source of the profile bindings a Set needs. With one, the
	// stream's ON_CHANGE updates are newer than a Get can be: applying a
	// Get answer after them would bring back a stale setting; the
	// bindings the stream has not given are noted (readBound).
	s.mu.Lock()
	if !s.subscribed {
		for _, n := range resp.GetNotification() {
			_ = s.dec.Apply(n)
		}
	} else {
		if s.readBound == nil {
			s.readBound = map[env.QueueKey]string{}
		}
		maps.Copy(s.readBound, bound)
	}
	s.mu.Unlock()
	return got, err
}

// getEach sends req; when a path is NotFound (a binding names a profile
// the switch lacks) it gets the others one by one, and that queue's
// setting stays unknown.
func (s *Switch) getEach(ctx context.Context, req *gnmi.GetRequest) ([]*gnmi.Notification, error) {
	r, err := s.conn.Get(ctx, req)
	if status.Code(err) != codes.NotFound || len(req.Path) <= 1 {
		return r.GetNotification(), err
	}
	var out []*gnmi.Notification
	for _, p := range req.Path {
		r, err := s.conn.Get(ctx, &gnmi.GetRequest{Prefix: req.Prefix, Path: []*gnmi.Path{p}, Encoding: req.Encoding})
		if err != nil && status.Code(err) != codes.NotFound {
			return nil, err
		}
		out = append(out, r.GetNotification()...)
	}
	return out, nil
}

// WithFence makes the Sets made under ctx carry f (gnmipath.FenceMetadata):
// the writer and the fencing token under which a fleet member writes.
func WithFence(ctx context.Context, f gnmipath.Fence) context.Context {
	return metadata.AppendToOutgoingContext(ctx, gnmipath.FenceMetadata, f.String())
}
