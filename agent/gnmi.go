package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmic/pkg/api"
	gtarget "github.com/openconfig/gnmic/pkg/api/target"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ecntune/ecntune/agent/gnmipath"
	"github.com/ecntune/ecntune/env"
)

// GNMISwitch is a Switch reached over gNMI with gnmic's client: a STREAM
// subscription (counters SAMPLE, configuration ON_CHANGE) decoded by
// gnmipath into env.Snapshots, and Set/Get for changes and read-back.
type GNMISwitch struct {
	cfg TargetConfig
	gt  gnmipath.Target
	tg  *gtarget.Target

	mu  sync.Mutex
	dec *gnmipath.Decoder // also the source of profile bindings for Set
	// settle is how long the subscriber waits after the last counter
	// notification of a timestamp before it emits the snapshot.
	settle     time.Duration
	sample     time.Duration
	subscribed bool // Subscribe has been called: the stream owns dec
	// onConnect runs at the start of every subscription session.
	onConnect func(ctx context.Context)
}

// DialSwitch prepares a gNMI client for one target. The connection is
// made lazily (gRPC dials on first use and reconnects by itself).
func DialSwitch(ctx context.Context, t TargetConfig, sample time.Duration) (*GNMISwitch, error) {
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
	tg.Config.BufferSize = 64
	if err := tg.CreateGNMIClient(ctx); err != nil {
		return nil, fmt.Errorf("target %s (%s): %v", t.Name, t.Address, err)
	}
	gt := gnmipath.Target{Name: t.Name, Dialect: dl, Namespace: t.Namespace}
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
	return &GNMISwitch{cfg: t, gt: gt, tg: tg, dec: gnmipath.NewDecoder(gt, t.Queues...), settle: settle, sample: sample}, nil
}

// Name is the target name.
func (s *GNMISwitch) Name() string { return s.cfg.Name }

// Close stops subscriptions and closes the connection.
func (s *GNMISwitch) Close() error { return s.tg.Close() }

// Subscribe implements Switch. The decoder keeps the switch's state across
// notifications; a snapshot is emitted once the counter notifications of
// one timestamp have settled, and never before every subscription has
// sent its initial dump (sync_response). When any stream breaks, all of
// them are restarted after RetryTimer with a fresh decoder, so the full
// re-snapshot rebuilds the whole state (the Observer sees repeated or
// earlier timestamps and counter resets as such, never as a false
// interval).
func (s *GNMISwitch) Subscribe(ctx context.Context, out chan<- env.Snapshot, errs chan<- error) {
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

// OnConnect implements LLDPSwitch: f runs on Subscribe's goroutine each
// time Subscribe (re)connects, before the streams of that session open, so
// that every snapshot of the session comes after f returned.
func (s *GNMISwitch) OnConnect(f func(ctx context.Context)) {
	s.mu.Lock()
	s.onConnect = f
	s.mu.Unlock()
}

// LLDP implements LLDPSwitch: one Get of the openconfig-lldp neighbour
// state of every interface (gnmipath.LLDPRequest). Never retried.
func (s *GNMISwitch) LLDP(ctx context.Context) ([]*gnmi.Notification, error) {
	resp, err := s.tg.Get(ctx, gnmipath.LLDPRequest(s.gt))
	if err != nil {
		return nil, err
	}
	return resp.GetNotification(), nil
}

// session runs one set of subscriptions until the first stream error:
// counters and bindings (gnmipath.SubscribeRequests), and the profiles the
// bindings name, subscribed to by name as they are learned
// (gnmipath.ProfileSubscribeRequest), never a whole profile table.
func (s *GNMISwitch) session(pctx context.Context, out chan<- env.Snapshot, report func(error)) error {
	ctx, cancel := context.WithCancel(pctx)
	defer cancel()
	ss := &session{sw: s, ctx: ctx, out: out, report: report, merged: make(chan subResp, 64), have: map[string]bool{}}
	defer ss.wg.Wait()
	defer cancel()
	reqs := gnmipath.SubscribeRequests(s.gt, s.sample)
	for i, req := range reqs {
		ss.open(ctx, req, fmt.Sprintf("ecntune-%s-%d", s.cfg.Name, i), nil)
	}
	ss.want = len(reqs) // sync_responses due before the first snapshot
	ss.timer = time.NewTimer(time.Hour)
	ss.timer.Stop()
	defer ss.timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ss.timer.C:
			ss.emit()
		case m := <-ss.merged:
			if err := ss.handle(m); err != nil {
				return err
			}
		}
	}
}

// subResp is one response (or error) of one subscription of a session.
type subResp struct {
	r   *gtarget.SubscribeResponse
	err *gtarget.TargetError
	sub int // index in session.subs
}

// profileSub is a subscription to WRED/buffer profiles by name; cancel is
// nil once it ended.
type profileSub struct {
	names  []string
	cancel context.CancelFunc
	synced bool
}

// session is one connection's subscriptions to a switch: the base ones
// (counters, bindings), then one per batch of profiles the bindings name,
// all merged into one stream that feeds the decoder; a Snapshot goes out
// once every subscription has synced and a sample has settled.
type session struct {
	sw     *GNMISwitch
	ctx    context.Context
	out    chan<- env.Snapshot
	report func(error)
	merged chan subResp
	wg     sync.WaitGroup
	subs   []*profileSub   // nil entries: the base subscriptions
	have   map[string]bool // profiles subscribed to, as "ecn:NAME" and "buffer:NAME"
	want   int             // sync_responses due before the first snapshot

	seenBindings uint64
	learned      bool

	timer           *time.Timer
	dirty           bool
	syncs           int
	lastTs, emitted int64
}

// open starts one subscription and forwards what it receives to merged.
func (ss *session) open(sctx context.Context, req *gnmi.SubscribeRequest, name string, p *profileSub) {
	switch ss.sw.cfg.Encoding {
	case "proto":
		req.GetSubscribe().Encoding = gnmi.Encoding_PROTO
	case "json":
		req.GetSubscribe().Encoding = gnmi.Encoding_JSON
	}
	i := len(ss.subs)
	ss.subs = append(ss.subs, p)
	rc, ec := ss.sw.tg.SubscribeChan(sctx, req, name)
	ss.wg.Add(1)
	go func() {
		defer ss.wg.Done()
		for rc != nil || ec != nil {
			select {
			case r, ok := <-rc:
				if !ok {
					rc = nil
					continue
				}
				select {
				case ss.merged <- subResp{r: r, sub: i}:
				case <-sctx.Done():
					return
				}
			case e, ok := <-ec:
				if !ok {
					ec = nil
					continue
				}
				select {
				case ss.merged <- subResp{err: e, sub: i}:
				case <-sctx.Done():
					return
				}
			}
		}
	}()
}

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
	ss.open(sctx, gnmipath.ProfileSubscribeRequest(ss.sw.gt, ecn, buf), fmt.Sprintf("ecntune-%s-profiles-%d", ss.sw.cfg.Name, len(ss.subs)),
		&profileSub{names: names, cancel: scancel})
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
	snap, incomplete := s.dec.Snapshot()
	s.mu.Unlock()
	if len(incomplete) > 0 {
		ss.report(fmt.Errorf("target %s: %d queues incomplete, e.g. %s", s.cfg.Name, len(incomplete), incomplete[0]))
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
	if p != nil && p.cancel == nil {
		return nil // an ended profile subscription
	}
	if m.err != nil {
		if p == nil || status.Code(m.err.Err) != codes.NotFound {
			return m.err.Err
		}
		ss.profileMissing(p, m.err.Err)
		return nil
	}
	n := m.r.Response.GetUpdate()
	if n == nil {
		if m.r.Response.GetSyncResponse() {
			ss.syncs++
			if p != nil {
				p.synced = true
			}
			ss.learn()
			ss.emit()
		}
		return nil
	}
	counters := carriesCounters(s.gt.Dialect, n)
	if counters && ss.dirty && n.GetTimestamp() > ss.lastTs {
		// A new sample began before the previous one settled.
		ss.emit()
	}
	s.mu.Lock()
	err := s.dec.Apply(n)
	s.mu.Unlock()
	if err != nil {
		ss.report(fmt.Errorf("target %s: malformed telemetry: %v", s.cfg.Name, err))
	}
	ss.learn()
	if counters {
		if n.GetTimestamp() > ss.lastTs {
			ss.lastTs = n.GetTimestamp()
		}
		ss.dirty = true
		ss.timer.Reset(s.settle)
	}
	return nil
}

// profileMissing handles a profile subscription the switch answered
// NotFound: a binding names a profile the switch lacks. The names are
// subscribed to one by one to find which; a profile alone and missing is
// left out (its queue stays incomplete) until a binding changes.
func (ss *session) profileMissing(p *profileSub, err error) {
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

// carriesCounters reports whether a notification carries queue counters.
func carriesCounters(d gnmipath.Dialect, n *gnmi.Notification) bool {
	if d == gnmipath.Sonic {
		return n.GetPrefix().GetTarget() == gnmipath.CountersDB
	}
	for _, u := range n.GetUpdate() {
		for _, e := range gnmipath.FullElems(n.GetPrefix(), u.GetPath()) {
			if e.GetName() == "state" {
				return true
			}
		}
	}
	return false
}

func (s *GNMISwitch) requests(settings map[env.QueueKey]env.Setting) ([]*gnmi.SetRequest, error) {
	keys := make([]env.QueueKey, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keyLess(keys[i], keys[j]) })
	// Merge the per-queue requests into as few as possible without two
	// operations on the same path in one request.
	type batch struct {
		req   *gnmi.SetRequest
		paths map[string]bool
	}
	var batches []*batch
	for _, k := range keys {
		st := settings[k]
		s.mu.Lock()
		b := s.dec.Binding(k.Port, k.Queue)
		if curS, err := s.dec.Setting(k.Port, k.Queue); err == nil && curS.HeadroomBytes == st.HeadroomBytes {
			st.HeadroomBytes = 0 // unchanged: leave the buffer profile alone
		}
		s.mu.Unlock()
		req, err := gnmipath.SetRequest(s.gt, k, st, b)
		if err != nil {
			return nil, err
		}
		var ps []string
		for _, d := range req.Delete {
			ps = append(ps, gnmipath.Describe(req.Prefix, d))
		}
		for _, u := range req.Update {
			ps = append(ps, gnmipath.Describe(req.Prefix, u.Path))
		}
		var into *batch
		for _, bt := range batches {
			clash := false
			for _, p := range ps {
				if bt.paths[p] {
					clash = true
					break
				}
			}
			if !clash && samePrefix(bt.req.Prefix, req.Prefix) {
				into = bt
				break
			}
		}
		if into == nil {
			into = &batch{req: &gnmi.SetRequest{Prefix: req.Prefix}, paths: map[string]bool{}}
			batches = append(batches, into)
		}
		into.req.Delete = append(into.req.Delete, req.Delete...)
		into.req.Update = append(into.req.Update, req.Update...)
		for _, p := range ps {
			into.paths[p] = true
		}
	}
	out := make([]*gnmi.SetRequest, len(batches))
	for i, b := range batches {
		out[i] = b.req
	}
	return out, nil
}

func samePrefix(a, b *gnmi.Path) bool {
	return gnmipath.Describe(a, &gnmi.Path{}) == gnmipath.Describe(b, &gnmi.Path{}) && a.GetTarget() == b.GetTarget()
}

// SetPaths implements Switch.
func (s *GNMISwitch) SetPaths(keys []env.QueueKey) []string {
	settings := map[env.QueueKey]env.Setting{}
	for _, k := range keys {
		settings[k] = env.Setting{KminBytes: 1, KmaxBytes: 2, Pmax: 0.01}
	}
	reqs, err := s.requests(settings)
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range reqs {
		for _, d := range r.Delete {
			out = append(out, "delete "+gnmipath.Describe(r.Prefix, d))
		}
		for _, u := range r.Update {
			out = append(out, gnmipath.Describe(r.Prefix, u.Path))
		}
	}
	return out
}

// Apply implements Switch: one Set per batch of non-conflicting queue
// updates (usually one per call). Never retried.
func (s *GNMISwitch) Apply(ctx context.Context, settings map[env.QueueKey]env.Setting) error {
	reqs, err := s.requests(settings)
	if err != nil {
		return err
	}
	for _, r := range reqs {
		if _, err := s.tg.Set(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// Read implements Switch: one Get of the bindings of all queues
// (gnmipath.SettingPaths), then one of the profiles they name.
func (s *GNMISwitch) Read(ctx context.Context, keys []env.QueueKey) (map[env.QueueKey]env.Setting, error) {
	if len(keys) == 0 {
		return map[env.QueueKey]env.Setting{}, nil
	}
	var prefix *gnmi.Path
	seen := map[string]bool{}
	var paths []*gnmi.Path
	for _, k := range keys {
		p, ps := gnmipath.SettingPaths(s.gt, k)
		prefix = p
		for _, x := range ps {
			d := gnmipath.Describe(nil, x)
			if !seen[d] {
				seen[d] = true
				paths = append(paths, x)
			}
		}
	}
	resp, err := s.tg.Get(ctx, &gnmi.GetRequest{Prefix: prefix, Path: paths, Encoding: gnmi.Encoding_JSON_IETF})
	if err != nil {
		return nil, err
	}
	// Then the profiles those bindings name, by name.
	bound := gnmipath.NewDecoder(s.gt)
	for _, n := range resp.GetNotification() {
		_ = bound.Apply(n)
	}
	var ecn, buf []string
	named := map[string]bool{}
	for _, k := range keys {
		e, b := bound.ProfilesOf(k.Port, k.Queue)
		if e != "" && !named["ecn:"+e] {
			named["ecn:"+e], ecn = true, append(ecn, e)
		}
		if b != "" && !named["buffer:"+b] {
			named["buffer:"+b], buf = true, append(buf, b)
		}
	}
	if ps := gnmipath.ProfileSubscription(s.gt, ecn, buf); len(ps.Paths) > 0 {
		r2, err := s.tg.Get(ctx, &gnmi.GetRequest{Prefix: ps.Prefix, Path: ps.Paths, Encoding: gnmi.Encoding_JSON_IETF})
		if status.Code(err) == codes.NotFound && len(ps.Paths) > 1 {
			// A binding names a profile the switch lacks: get the
			// others one by one (that queue's setting stays unknown).
			r2, err = &gnmi.GetResponse{}, nil
			for _, p := range ps.Paths {
				r, perr := s.tg.Get(ctx, &gnmi.GetRequest{Prefix: ps.Prefix, Path: []*gnmi.Path{p}, Encoding: gnmi.Encoding_JSON_IETF})
				if perr != nil && status.Code(perr) != codes.NotFound {
					return nil, perr
				}
				r2.Notification = append(r2.Notification, r.GetNotification()...)
			}
		}
		if err != nil {
			return nil, err
		}
		resp.Notification = append(resp.Notification, r2.GetNotification()...)
	}
	// Without a subscription (ecntune agent rollback) the response is the
	// only source of the profile bindings a Set needs. With one, the
	// stream's ON_CHANGE updates are newer than a Get can be: applying a
	// Get answer after them would bring back a stale setting.
	s.mu.Lock()
	if !s.subscribed {
		for _, n := range resp.GetNotification() {
			_ = s.dec.Apply(n)
		}
	}
	s.mu.Unlock()
	out := make(map[env.QueueKey]env.Setting, len(keys))
	var errs []error
	for _, k := range keys {
		st, err := gnmipath.ParseSetting(s.gt, k, resp)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[k] = st
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
