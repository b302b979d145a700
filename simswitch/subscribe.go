package simswitch

import (
	"context"
	"errors"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/ecntune/ecntune/gnmipath"
)

// statePoll is how often ON_CHANGE subscriptions look for changed state
// leaves; config changes are sent as soon as a Set commits.
const statePoll = 100 * time.Millisecond

// pattern is one resolved subscription path.
type pattern struct {
	db    string
	elems []*gnmi.PathElem
	key   string // PathString(elems)
}

// has reports whether sel already has the pattern (db, elems).
func (sel *selection) has(db string, elems []*gnmi.PathElem) bool {
	k := gnmipath.PathString(elems)
	for _, p := range sel.pats {
		if p.db == db && p.key == k {
			return true
		}
	}
	return false
}

// selection is what a set of subscriptions selects on one switch.
type selection struct {
	sw     int
	ns     string
	pats   []pattern
	window bool // selects max/avg queue leaves: reads consume the window
	lldp   bool // selects LLDP neighbour leaves
	// seen caches whether a leaf path matches; encoded paths are built once
	// per switch (config paths once per config change), so pointers repeat.
	seen map[*gnmi.Path]bool
	// buffers reused between reads (a selection serves one stream)
	all, out []gnmipath.Item
}

type sendFunc func(*gnmi.SubscribeResponse) error

// selections groups resolved subscriptions by switch (and echoed namespace).
func (v *service) selections(prefix *gnmi.Path, subs []*gnmi.Subscription) ([]*selection, error) {
	var out []*selection
	idx := map[[2]string]*selection{}
	for _, sub := range subs {
		p := sub.GetPath()
		if p == nil {
			p = &gnmi.Path{}
		}
		rt, err := v.route(prefix, p)
		if err != nil {
			return nil, err
		}
		k := [2]string{v.s.r.infos[rt.sw].Name, rt.ns}
		sel := idx[k]
		if sel == nil {
			sel = &selection{sw: rt.sw, ns: rt.ns}
			idx[k] = sel
			out = append(out, sel)
		}
		if !sel.has(rt.db, rt.elems) { // duplicates collapse
			sel.pats = append(sel.pats, pattern{db: rt.db, elems: rt.elems, key: gnmipath.PathString(rt.elems)})
		}
	}
	for _, sel := range out {
		_, its := v.items(sel.sw, false)
		sel.lldp = v.selectsLLDP(sel)
		any := sel.lldp
		for _, it := range v.filter(sel, its) {
			any = true
			if it.Leaf.Field == gnmipath.MaxQueue || it.Leaf.Field == gnmipath.AvgQueue {
				sel.window = true
			}
		}
		if !any {
			return nil, status.Errorf(codes.NotFound, "subscription paths %s match no data on %s", describePats(sel.pats), v.s.r.infos[sel.sw].Name)
		}
	}
	return out, nil
}

// selectsLLDP reports whether sel's patterns select any LLDP leaf.
func (v *service) selectsLLDP(sel *selection) bool {
	for _, it := range v.lldpItems(sel.sw) {
		for _, p := range sel.pats {
			if it.DB == p.db && gnmipath.Match(p.elems, it.Path.GetElem()) {
				return true
			}
		}
	}
	return false
}

func describePats(ps []pattern) string {
	s := ""
	for i, p := range ps {
		if i > 0 {
			s += ", "
		}
		s += p.db + gnmipath.PathString(p.elems)
	}
	return s
}

func (v *service) filter(sel *selection, its []gnmipath.Item) []gnmipath.Item {
	if sel.seen == nil || len(sel.seen) > 4*len(its)+64 {
		sel.seen = make(map[*gnmi.Path]bool, len(its))
	}
	out := sel.out[:0]
	for _, it := range its {
		ok, known := sel.seen[it.Path]
		if !known {
			for _, p := range sel.pats {
				if it.DB == p.db && gnmipath.Match(p.elems, it.Path.GetElem()) {
					ok = true
					break
				}
			}
			sel.seen[it.Path] = ok
		}
		if ok {
			out = append(out, it)
		}
	}
	sel.out = out
	return out
}

// collect reads what sel selects now; consume resets max/avg windows when
// the selection covers them.
func (v *service) collect(sel *selection, consume bool) (int64, []gnmipath.Item) {
	ts, its := v.itemsInto(sel.all[:0], sel.sw, consume && sel.window)
	if sel.lldp {
		its = append(its, v.lldpItems(sel.sw)...)
	}
	sel.all = its
	out := v.filter(sel, its)
	if v.s.getFaults().Malformed && len(v.s.r.lossless) > 0 && len(v.s.r.infos[sel.sw].Ports) > 0 {
		port, q := v.s.r.infos[sel.sw].Ports[0].Name, v.s.r.lossless[0]
		for i := range out {
			l := out[i].Leaf
			if l.Field == gnmipath.TxBytes && l.Port == port && l.Index == q {
				out[i].Val = &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "garbage"}}
				break
			}
		}
	}
	return ts, out
}

func (v *service) notifications(sel *selection, its []gnmipath.Item, ts int64, enc gnmi.Encoding) []*gnmi.Notification {
	return gnmipath.Notifications(v.s.d, v.s.r.infos[sel.sw].Name, sel.ns, its, ts, enc)
}

func sendNotifs(send sendFunc, ns []*gnmi.Notification) error {
	for _, n := range ns {
		if len(n.Update) == 0 && len(n.Delete) == 0 {
			continue
		}
		if err := send(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}}); err != nil {
			return err
		}
	}
	return nil
}

func sendSync(send sendFunc) error {
	return send(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_SyncResponse{SyncResponse: true}})
}

func (v *service) sendAll(send sendFunc, sels []*selection, enc gnmi.Encoding) error {
	for _, sel := range sels {
		ts, its := v.collect(sel, true)
		if err := sendNotifs(send, v.notifications(sel, its, ts, enc)); err != nil {
			return err
		}
	}
	return nil
}

func (v *service) Subscribe(stream gnmi.GNMI_SubscribeServer) error {
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	id := v.s.addStream(cancel)
	defer v.s.removeStream(id)
	defer v.claimPeer(ctx, id)()

	first, err := stream.Recv()
	if err != nil {
		return err
	}
	list := first.GetSubscribe()
	if err := v.checkList(list); err != nil {
		return err
	}
	send := splitSender(stream, v.s.cfg.MaxMsgBytes)
	polls, recvDone := receive(stream)

	if v.s.dev.RealSonic {
		if list.GetMode() == gnmi.SubscriptionList_POLL {
			return status.Error(codes.Unimplemented, "POLL is not supported for sonic-db paths here")
		}
		if err := v.sonicSubscribe(ctx, list, send, recvDone); err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
			return err
		}
		return streamEnd(ctx)
	}
	switch list.GetMode() {
	case gnmi.SubscriptionList_ONCE:
		sels, err := v.selections(list.GetPrefix(), list.GetSubscription())
		if err != nil {
			return err
		}
		if list.GetUpdatesOnly() {
			// updates_only: no current state, only the sync (gNMI 3.5.1.5.1);
			// ONCE then has nothing more to send
			return sendSync(send)
		}
		if err := v.sendAll(send, sels, list.GetEncoding()); err != nil {
			return err
		}
		return sendSync(send)
	case gnmi.SubscriptionList_POLL:
		return v.poll(ctx, list, send, polls, recvDone)
	case gnmi.SubscriptionList_STREAM:
		return v.stream(ctx, list, send, recvDone)
	}
	return status.Errorf(codes.InvalidArgument, "subscription list mode %v is unknown", list.GetMode())
}

// claimPeer makes the stream id its peer's one Subscribe when device sonic
// serves one per connection; the func it returns lets the claim go.
func (v *service) claimPeer(ctx context.Context, id int64) func() {
	if !v.s.dev.RealSonic || v.s.cfg.SonicStreamMultiplexing {
		return func() {}
	}
	pr, ok := peer.FromContext(ctx)
	if !ok || pr.Addr == nil {
		return func() {}
	}
	v.s.claimSonicPeer(pr.Addr.String(), id)
	return func() { v.s.releaseSonicPeer(pr.Addr.String(), id) }
}

// checkList refuses a first SubscribeRequest without a SubscriptionList,
// or one whose encoding or number of subscriptions is not served.
func (v *service) checkList(list *gnmi.SubscriptionList) error {
	if list == nil {
		return status.Error(codes.InvalidArgument, "the first SubscribeRequest must carry a SubscriptionList")
	}
	if err := checkEncoding(list.GetEncoding()); err != nil {
		return err
	}
	if len(list.GetSubscription()) == 0 {
		return status.Error(codes.InvalidArgument, "the SubscriptionList has no subscriptions")
	}
	if n, lim := len(list.GetSubscription()), v.s.cfg.MaxPaths; n > lim {
		return status.Errorf(codes.ResourceExhausted, "the SubscriptionList has %d subscriptions, more than the limit of %d per request", n, lim)
	}
	return nil
}

// splitSender sends on stream, cutting a notification into responses of at
// most limit bytes (splitNotification).
func splitSender(stream gnmi.GNMI_SubscribeServer, limit int) sendFunc {
	return func(r *gnmi.SubscribeResponse) error {
		n := r.GetUpdate()
		if n == nil {
			return stream.Send(r)
		}
		for _, part := range splitNotification(n, limit) {
			if err := stream.Send(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: part}}); err != nil {
				return err
			}
		}
		return nil
	}
}

// receive reads the client's messages after the SubscriptionList: a Poll
// signals polls (coalesced), and the end of the stream or any other
// message is sent on recvDone.
func receive(stream gnmi.GNMI_SubscribeServer) (polls <-chan struct{}, recvDone <-chan error) {
	pc := make(chan struct{}, 1)
	dc := make(chan error, 1)
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				dc <- err
				return
			}
			if m.GetPoll() != nil {
				select {
				case pc <- struct{}{}:
				default:
				}
			} else {
				dc <- status.Error(codes.InvalidArgument, "only Poll messages may follow the SubscriptionList")
				return
			}
		}
	}()
	return pc, dc
}

// streamEnd is the status a Subscribe ends with once ctx is done: dropped
// or disposed by the server, else the context's own.
func streamEnd(ctx context.Context) error {
	switch c := context.Cause(ctx); {
	case errors.Is(c, errDropped):
		return status.Error(codes.Unavailable, errDropped.Error())
	case errors.Is(c, errDisposed):
		return status.Error(codes.InvalidArgument, errDisposed.Error())
	}
	return status.FromContextError(ctx.Err()).Err()
}

// poll serves a POLL subscription: the initial dump (unless updates_only)
// and a sync_response, then the same for every Poll.
func (v *service) poll(ctx context.Context, list *gnmi.SubscriptionList, send sendFunc, polls <-chan struct{}, recvDone <-chan error) error {
	enc := list.GetEncoding()
	sels, err := v.selections(list.GetPrefix(), list.GetSubscription())
	if err != nil {
		return err
	}
	if !list.GetUpdatesOnly() {
		if err := v.sendAll(send, sels, enc); err != nil {
			return err
		}
	}
	if err := sendSync(send); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return streamEnd(ctx)
		case err := <-recvDone:
			if err == io.EOF {
				return nil
			}
			return err
		case <-polls:
			if err := v.sendAll(send, sels, enc); err != nil {
				return err
			}
			if err := sendSync(send); err != nil {
				return err
			}
		}
	}
}

// group is subscriptions that are sent together.
type group struct {
	sels     []*selection
	onChange bool
	// configOnly: an ON_CHANGE group whose leaves are all configuration;
	// those change only when a Set commits, so the state poll skips it.
	configOnly bool
	interval   time.Duration
	suppress   bool
	heartbeat  time.Duration
	next       time.Time
	lastFull   time.Time
	last       map[string]string // leaf -> value last sent
}

func itemKey(sw int, it gnmipath.Item) string {
	return string(rune(sw)) + it.DB + gnmipath.PathString(it.Path.GetElem())
}

// groupKey is what subscriptions sent together share.
type groupKey struct {
	onChange  bool
	interval  time.Duration
	suppress  bool
	heartbeat time.Duration
}

// subscriptionKey is the group subscription sub belongs to, its intervals
// defaulted and raised to the shortest served.
func (v *service) subscriptionKey(sub *gnmi.Subscription) groupKey {
	k := groupKey{heartbeat: time.Duration(sub.GetHeartbeatInterval())}
	switch sub.GetMode() {
	case gnmi.SubscriptionMode_ON_CHANGE:
		k.onChange = true
	default: // SAMPLE, TARGET_DEFINED (sampled)
		k.interval = time.Duration(sub.GetSampleInterval())
		if k.interval == 0 {
			k.interval = v.s.cfg.DefaultSample
		}
		if k.interval < v.s.cfg.MinSampleInterval {
			k.interval = v.s.cfg.MinSampleInterval
		}
		k.suppress = sub.GetSuppressRedundant()
	}
	if k.heartbeat > 0 && k.heartbeat < v.s.cfg.MinSampleInterval {
		k.heartbeat = v.s.cfg.MinSampleInterval
	}
	return k
}

// groups resolves list's subscriptions into groups by groupKey, in the
// order each key first appears.
func (v *service) groups(list *gnmi.SubscriptionList) ([]*group, error) {
	byKey := map[groupKey][]*gnmi.Subscription{}
	var keys []groupKey
	for _, sub := range list.GetSubscription() {
		k := v.subscriptionKey(sub)
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], sub)
	}
	now := v.s.clock()
	var groups []*group
	for _, k := range keys {
		sels, err := v.selections(list.GetPrefix(), byKey[k])
		if err != nil {
			return nil, err
		}
		groups = append(groups, &group{sels: sels, onChange: k.onChange, interval: k.interval, suppress: k.suppress,
			heartbeat: k.heartbeat, next: now.Add(k.interval), lastFull: now, last: map[string]string{}})
	}
	return groups, nil
}

func (v *service) stream(ctx context.Context, list *gnmi.SubscriptionList, send sendFunc, recvDone <-chan error) error {
	groups, err := v.groups(list)
	if err != nil {
		return err
	}
	enc := list.GetEncoding()
	// Take the configuration-change channel before the initial dump: a Set
	// that commits after the dump read the state (even before the
	// sync_response goes out) closes this channel and is sent on change.
	cfgCh := v.s.r.configs.wait()
	// In lockstep every published step wakes the stream (samples and state
	// polls keep to simulated time): armed before the initial dump, so that
	// a step taken as soon as a client has the dump is not missed.
	var stepCh <-chan struct{}
	if v.s.cfg.Lockstep {
		stepCh = v.s.r.steps.wait()
	}
	// Initial dump, then sync_response.
	f := v.s.getFaults()
	if f.SlowOnChange > 0 && slices.ContainsFunc(groups, func(g *group) bool { return g.onChange }) {
		select {
		case <-time.After(f.SlowOnChange):
		case <-ctx.Done():
			return streamEnd(ctx)
		}
	}
	for _, g := range groups {
		if err := v.emit(send, g, enc, true, !list.GetUpdatesOnly()); err != nil {
			return err
		}
	}
	if err := sendSync(send); err != nil {
		return err
	}
	if f.DuplicateSync {
		if err := sendSync(send); err != nil {
			return err
		}
	}
	hasOnChange, pollState := false, false
	for _, g := range groups {
		if g.onChange {
			hasOnChange = true
			g.configOnly = v.configOnly(g)
			pollState = pollState || !g.configOnly
		}
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	poll := time.NewTicker(statePoll)
	defer poll.Stop()
	for {
		var timerC <-chan time.Time
		if stepCh == nil {
			timer.Reset(max(time.Until(nextWake(groups, time.Now())), 0))
			timerC = timer.C
		}
		var configCh <-chan struct{}
		var pollCh <-chan time.Time
		if hasOnChange {
			configCh = cfgCh
		}
		if pollState && stepCh == nil {
			pollCh = poll.C
		}
		configChanged := false
		select {
		case <-ctx.Done():
			return streamEnd(ctx)
		case err := <-recvDone:
			if err == io.EOF {
				return nil
			}
			return err
		case <-configCh:
			configChanged = true
			cfgCh = v.s.r.configs.wait() // re-arm before reading the state
		case <-pollCh:
		case <-timerC:
		case <-stepCh:
			stepCh = v.s.r.steps.wait()
		}
		if err := v.emitDue(send, groups, enc, configChanged); err != nil {
			return err
		}
	}
}

// nextWake is when the first of groups is next due (a sample or a
// heartbeat), at most an hour after now.
func nextWake(groups []*group, now time.Time) time.Time {
	wake := now.Add(time.Hour)
	for _, g := range groups {
		if !g.onChange && g.next.Before(wake) {
			wake = g.next
		}
		if g.heartbeat > 0 && g.lastFull.Add(g.heartbeat).Before(wake) {
			wake = g.lastFull.Add(g.heartbeat)
		}
	}
	return wake
}

// emitDue sends every group that is due now: a sample whose time came, an
// ON_CHANGE group on a state poll or (configOnly ones) a config change, or
// a heartbeat's full update. Nothing is sent while telemetry is muted.
func (v *service) emitDue(send sendFunc, groups []*group, enc gnmi.Encoding, configChanged bool) error {
	now := v.s.clock()
	mute := v.s.getFaults().MuteTelemetry
	for _, g := range groups {
		full := g.heartbeat > 0 && !now.Before(g.lastFull.Add(g.heartbeat))
		due := (g.onChange && (configChanged || !g.configOnly)) || (!g.onChange && !now.Before(g.next))
		if !due && !full {
			continue
		}
		if !g.onChange && !now.Before(g.next) {
			// keep to the grid; skip missed ticks rather than bursting
			for !g.next.After(now) {
				g.next = g.next.Add(g.interval)
			}
		}
		if full {
			g.lastFull = now
		}
		if mute {
			continue
		}
		if err := v.emit(send, g, enc, full || (!g.onChange && !g.suppress), true); err != nil {
			return err
		}
	}
	return nil
}

// configOnly reports whether every leaf a group selects now is configuration.
func (v *service) configOnly(g *group) bool {
	for _, sel := range g.sels {
		_, its := v.collect(sel, false)
		for _, it := range its {
			if !it.Leaf.Field.IsConfig() {
				return false
			}
		}
	}
	return true
}

// emit sends a group's leaves: all of them when all is set, else only those
// whose value changed since last sent (plus deletes of vanished leaves).
// With send=false it only records values.
func (v *service) emit(send sendFunc, g *group, enc gnmi.Encoding, all, doSend bool) error {
	for _, sel := range g.sels {
		ts, its := v.collect(sel, !g.onChange)
		f := v.s.getFaults()
		ts += int64(f.ClockShift)
		seen := make(map[string]bool, len(its))
		var out []gnmipath.Item
		for _, it := range its {
			k := itemKey(sel.sw, it)
			val := it.Val.String()
			seen[k] = true
			if all || g.last[k] != val {
				out = append(out, it)
			}
			g.last[k] = val
		}
		ns := v.notifications(sel, out, ts, enc)
		if f.ShiftOnce != 0 && !g.onChange && doSend {
			// the sample's first notification of queue counters (a port's
			// speed sampled beside them is no counters to the agent)
			if i := slices.IndexFunc(ns, v.carriesCounters); i >= 0 {
				ns[i].Timestamp += int64(v.s.takeShiftOnce())
			}
		}
		// deletes for leaves that went away (e.g. a profile removed by Set)
		var gone []string
		prefix := string(rune(sel.sw))
		for k := range g.last {
			if len(k) >= len(prefix) && k[:len(prefix)] == prefix && !seen[k] {
				gone = append(gone, k)
			}
		}
		if len(gone) > 0 {
			sort.Strings(gone)
			dn := v.deleteNotification(sel, gone, ts)
			for _, k := range gone {
				delete(g.last, k)
			}
			ns = append(ns, dn...)
		}
		if doSend {
			if err := sendNotifs(send, ns); err != nil {
				return err
			}
		}
	}
	return nil
}

// carriesCounters reports whether n carries queue counters, as the agent
// reads it (gnmipath.PeekWire).
func (v *service) carriesCounters(n *gnmi.Notification) bool {
	b, err := proto.Marshal(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}})
	if err != nil {
		return false
	}
	r, err := gnmipath.PeekWire(v.s.d, b)
	return err == nil && r.Counters
}

func (v *service) deleteNotification(sel *selection, keys []string, ts int64) []*gnmi.Notification {
	byDB := map[string]*gnmi.Notification{}
	var out []*gnmi.Notification
	prefix := string(rune(sel.sw))
	for _, k := range keys {
		rest := k[len(prefix):]
		db := ""
		i := 0
		for i < len(rest) && rest[i] != '/' {
			i++
		}
		db, rest = rest[:i], rest[i:]
		_, el, err := gnmipath.ParsePath(rest)
		if err != nil {
			continue
		}
		n := byDB[db]
		if n == nil {
			p := &gnmi.Path{Target: v.s.r.infos[sel.sw].Name}
			if v.s.d == gnmipath.Sonic {
				p.Target = db
				if sel.ns != "" {
					p.Elem = []*gnmi.PathElem{{Name: sel.ns}}
				}
			}
			n = &gnmi.Notification{Timestamp: ts, Prefix: p}
			byDB[db] = n
			out = append(out, n)
		}
		n.Delete = append(n.Delete, &gnmi.Path{Elem: el})
	}
	return out
}
