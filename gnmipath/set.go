package gnmipath

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// ValidateSetting checks a setting before it is sent anywhere.
func ValidateSetting(key env.QueueKey, s env.Setting) error {
	switch {
	case s.KminBytes < 0:
		return fmt.Errorf("%s: kmin %d B is negative", key, s.KminBytes)
	case s.KmaxBytes < s.KminBytes:
		return fmt.Errorf("%s: kmin %d B is above kmax %d B (need kmin <= kmax)", key, s.KminBytes, s.KmaxBytes)
	case !(s.Pmax > 0 && s.Pmax <= 1):
		return fmt.Errorf("%s: pmax %g is outside (0, 1]", key, s.Pmax)
	case s.HeadroomBytes < 0:
		return fmt.Errorf("%s: headroom %d B is negative", key, s.HeadroomBytes)
	}
	return nil
}

func jsonIETF(v any) *gnmi.TypedValue {
	b, _ := json.Marshal(v)
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: b}}
}

func u64s(v int64) string { return strconv.FormatInt(v, 10) }

// SetRequest builds the one transaction that applies setting s to queue key
// of target t, given the queue's current binding b (Decoder.Binding). When
// the queue's ECN profile is shared with other queues (or unknown), a new
// profile OwnProfileName(port, q) is written and the queue rebound to it in
// the same request, so other queues keep their setting. Headroom is written
// only when s.HeadroomBytes > 0. Pmax is sent as a whole percent.
func SetRequest(t Target, key env.QueueKey, s env.Setting, b Binding) (*gnmi.SetRequest, error) {
	if err := ValidateSetting(key, s); err != nil {
		return nil, err
	}
	if key.Queue < 0 || key.Queue > 7 || key.Port == "" {
		return nil, fmt.Errorf("%s: need a port name and a queue 0..7", key)
	}
	profile := b.ECNProfile
	rebind := profile == "" || b.ECNShared
	if rebind {
		profile = OwnProfileName(key.Port, key.Queue)
	}
	if t.Dialect != Sonic {
		return ocSetRequest(t, key, s, profile, rebind), nil // headroom: HeadroomRequest, a Set of its own
	}
	return sonicSetRequest(t, key, s, b, profile, rebind)
}

// setBuilder appends the updates of a Set request.
type setBuilder struct{ req *gnmi.SetRequest }

// update appends an update of the leaf at el to v.
func (sb setBuilder) update(el []*gnmi.PathElem, v *gnmi.TypedValue) {
	sb.req.Update = append(sb.req.Update, &gnmi.Update{Path: &gnmi.Path{Elem: el}, Val: v})
}

// fields appends one update per field of CONFIG_DB entry table|key, in
// field name order: for an entry that exists (sonic-gnmi's config updater
// applies each as a JSON patch "add" of the field, which needs the entry).
func (sb setBuilder) fields(table, key string, fields map[string]string) {
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		sb.update(names(table, key, f), jsonIETF(fields[f]))
	}
}

// entry appends one update writing CONFIG_DB entry table|key whole, for an
// entry the agent creates or owns: the JSON patch "add" of the entry
// creates it (a field's "add" under an entry not there fails) or replaces
// it with exactly these fields.
func (sb setBuilder) entry(table, key string, fields map[string]string) {
	sb.update(names(table, key), jsonIETF(fields))
}

// ocSetRequest is SetRequest's ECN profile write for the openconfig
// dialect: the WRED leaves of profile, and its name and the queue's binding
// to it when rebind.
func ocSetRequest(t Target, key env.QueueKey, s env.Setting, profile string, rebind bool) *gnmi.SetRequest {
	req := &gnmi.SetRequest{Prefix: &gnmi.Path{Target: key.Target, Origin: t.Dev().Origin}}
	sb := setBuilder{req}
	wred := func(f Field) []*gnmi.PathElem { return ocLeafPath(Leaf{Field: f, Name: profile}) }
	sb.update(wred(WREDMin), jsonIETF(u64s(s.KminBytes)))
	sb.update(wred(WREDMax), jsonIETF(u64s(s.KmaxBytes)))
	sb.update(wred(WREDProb), jsonIETF(PercentOf(s.Pmax)))
	sb.update(wred(WREDEnableECN), jsonIETF(true))
	if rebind {
		sb.update(ocLeafPath(Leaf{Field: WREDName, Name: profile}), jsonIETF(profile))
		sb.update(ocLeafPath(Leaf{Field: QueueProfile, Port: key.Port, Index: key.Queue}), jsonIETF(profile))
	}
	for _, u := range req.Update {
		t.QueueNamed(u.Path)
	}
	return req
}

// sonicSetRequest is SetRequest for the sonic dialect: the WRED_PROFILE
// (and QUEUE binding when rebind), then the PG's buffer profile when
// headroom or alpha is set.
func sonicSetRequest(t Target, key env.QueueKey, s env.Setting, b Binding, profile string, rebind bool) (*gnmi.SetRequest, error) {
	// SONiC: origin sonic-db, /CONFIG_DB/<namespace>/TABLE/KEY[/FIELD]
	// (sonic-gnmi ignores prefix.target for writes). Its config updater
	// applies a Set as a JSON patch of "add" operations: adding a whole
	// entry creates it or replaces it, dropping the fields not given (a
	// QUEUE's scheduler, a BUFFER_PROFILE's mandatory pool), and adding a
	// field needs its entry to exist. So an entry that exists and others
	// share is written field by field, and one the agent creates (its own
	// profiles, a split BUFFER_PG range) whole.
	ns := t.Namespace
	if ns == "" {
		ns = "localhost"
	}
	req := &gnmi.SetRequest{Prefix: &gnmi.Path{Origin: "sonic-db", Elem: names(ConfigDB, ns)}}
	sb := setBuilder{req}
	wred := map[string]string{
		"green_min_threshold": u64s(s.KminBytes), "green_max_threshold": u64s(s.KmaxBytes),
		"green_drop_probability": strconv.FormatUint(PercentOf(s.Pmax), 10), "wred_green_enable": "true", "ecn": "ecn_all"}
	if rebind {
		sb.entry("WRED_PROFILE", profile, wred) // the queue's own, perhaps new
	} else {
		sb.fields("WRED_PROFILE", profile, wred) // in place: other fields kept
	}
	if rebind {
		sb.fields("QUEUE", key.Port+"|"+strconv.Itoa(key.Queue), map[string]string{"wred_profile": profile})
	}
	// The PG's buffer profile: headroom (xoff, and size where it is
	// xon + xoff) when s.HeadroomBytes > 0, alpha (dynamic_th) when
	// s.Alpha > 0.
	var th int64
	if s.Alpha > 0 {
		var err error
		if th, err = DynamicThOf(s.Alpha); err != nil {
			return nil, fmt.Errorf("%s: %v", key, err)
		}
	}
	if s.HeadroomBytes <= 0 && s.Alpha <= 0 {
		return req, nil
	}
	if b.BufferProfile == "" {
		return nil, notTunable(key, fmt.Sprintf("no BUFFER_PG entry binds PG %d of %s to a buffer profile in CONFIG_DB "+
			"(under SONiC's dynamic buffer model buffermgrd computes lossless profiles from cable length and port speed)", key.Queue, key.Port))
	}
	fields, change := bufferProfileFields(t, b, s, th)
	if !b.BufferShared {
		sb.fields("BUFFER_PROFILE", b.BufferProfile, change)
		return req, nil
	}
	if err := sb.ownBufferProfile(key, b, fields); err != nil {
		return nil, err
	}
	return req, nil
}

// bufferProfileFields works out the PG's buffer profile fields for s
// (dynamic_th th): fields, the profile's current fields with the change on
// top (what a profile of its own gets); change, the fields written in
// place.
func bufferProfileFields(t Target, b Binding, s env.Setting, th int64) (fields, change map[string]string) {
	fields = map[string]string{}
	var xon uint64
	for l, v := range b.BufferFields {
		switch l.Field {
		case BPXon:
			xon = v.U
			fields["xon"] = strconv.FormatUint(v.U, 10)
		case BPPool:
			fields["pool"] = v.S
		case BPDynamicTh:
			fields["dynamic_th"] = strconv.FormatInt(v.I, 10)
		case BPXoff:
			fields["xoff"] = strconv.FormatUint(v.U, 10)
		case BPSize:
			fields["size"] = strconv.FormatUint(v.U, 10)
		}
	}
	change = map[string]string{}
	if s.HeadroomBytes > 0 {
		fields["xoff"] = u64s(s.HeadroomBytes)
		change["xoff"] = fields["xoff"]
		// broadcom: size is the PG's guaranteed minimum there, not xon +
		// xoff, and stays as it is
		if t.ASIC != "broadcom" {
			fields["size"] = strconv.FormatUint(xon+uint64(s.HeadroomBytes), 10)
			change["size"] = fields["size"]
		}
	}
	if s.Alpha > 0 {
		fields["dynamic_th"] = strconv.FormatInt(th, 10)
		change["dynamic_th"] = fields["dynamic_th"]
	}
	return fields, change
}

// ownBufferProfile writes fields as the PG's own buffer profile, splits a
// BUFFER_PG range entry that covers the PG (the other PGs keep the shared
// profile) and binds the PG to its own profile.
func (sb setBuilder) ownBufferProfile(key env.QueueKey, b Binding, fields map[string]string) error {
	if fields["pool"] == "" {
		return notTunable(key, fmt.Sprintf("buffer profile %s has no pool to copy into a profile of its own", b.BufferProfile))
	}
	own := OwnBufferProfileName(key.Port, key.Queue)
	sb.entry("BUFFER_PROFILE", own, fields) // every field of the shared one, the change on top
	lo, hi, err := pgRange(b.PGKey)
	if err != nil {
		return fmt.Errorf("%s: BUFFER_PG key %s|%s: %v", key, key.Port, b.PGKey, err)
	}
	if hi > lo {
		sb.req.Delete = append(sb.req.Delete, &gnmi.Path{Elem: names("BUFFER_PG", key.Port+"|"+b.PGKey)})
		for p := lo; p <= hi; p++ {
			if p != key.Queue {
				sb.entry("BUFFER_PG", key.Port+"|"+strconv.Itoa(p), map[string]string{"profile": b.BufferProfile})
			}
		}
		sb.entry("BUFFER_PG", key.Port+"|"+strconv.Itoa(key.Queue), map[string]string{"profile": own})
		return nil
	}
	sb.fields("BUFFER_PG", key.Port+"|"+strconv.Itoa(key.Queue), map[string]string{"profile": own})
	return nil
}

// HeadroomRequest builds the Set of a PG's headroom on an openconfig-family
// device whose headroom is a settable leaf (ecntune's extension), kept
// apart from the ECN Set so that a switch refusing it never costs the ECN
// change. It returns nil when the device has no such leaf (sonic writes
// headroom in its BUFFER_PROFILE with SetRequest).
func HeadroomRequest(t Target, key env.QueueKey, bytes int64) *gnmi.SetRequest {
	d := t.Dev()
	if d.Dialect == Sonic || d.Headroom != HeadroomLeaf || bytes <= 0 {
		return nil
	}
	return &gnmi.SetRequest{Prefix: &gnmi.Path{Target: key.Target, Origin: d.Origin}, Update: []*gnmi.Update{{
		Path: &gnmi.Path{Elem: ocLeafPath(Leaf{Field: PFCHeadroom, Port: key.Port, Index: key.Queue})},
		Val:  jsonIETF(u64s(bytes))}}}
}

// HeadroomError says that the headroom (and alpha: on SONiC both live in
// the PG's buffer profile) of a change was not applied while its ECN part
// was or can be: the switch cannot take it (Paths names the queue, Err
// why: SetRequest's error), or refused its Set (the client that applied
// the change fills Target and the paths refused).
type HeadroomError struct {
	Target string
	Paths  []string
	Err    error
}

func (e *HeadroomError) Error() string {
	if e.Target == "" {
		return strings.Join(e.Paths, ", ") + ": " + e.Err.Error()
	}
	return fmt.Sprintf("target %s: headroom not applied (%s): %v; the ECN change stands", e.Target, strings.Join(e.Paths, ", "), e.Err)
}

func (e *HeadroomError) Unwrap() error { return e.Err }

// notTunable is the HeadroomError of a queue whose headroom and alpha
// cannot be set, and why.
func notTunable(key env.QueueKey, why string) *HeadroomError {
	return &HeadroomError{Paths: []string{key.String()}, Err: errors.New("headroom and alpha not tunable: " + why)}
}

// SettingPaths are the paths a Get needs to read back a queue's bindings:
// the ECN profile its queue is bound to and its headroom (openconfig), or
// its QUEUE entry and the BUFFER_PG table (sonic). The values of the
// profiles they name come from a second Get, of ProfileSubscription of the
// names Decoder.ProfilesOf finds in the first answer: a switch's profile
// tables can be large (any client can fill them), so a client reads only
// the entries it uses. ParseSetting takes both answers' notifications.
func SettingPaths(t Target, key env.QueueKey) (prefix *gnmi.Path, paths []*gnmi.Path) {
	if t.Dialect != Sonic {
		prefix = &gnmi.Path{Target: key.Target, Origin: t.Dev().Origin}
		paths = []*gnmi.Path{{Elem: ocLeafPath(Leaf{Field: QueueProfile, Port: key.Port, Index: key.Queue})}}
		if t.Dev().Headroom == HeadroomLeaf {
			paths = append(paths, &gnmi.Path{Elem: ocLeafPath(Leaf{Field: PFCHeadroom, Port: key.Port, Index: key.Queue})})
		}
		t.QueueNamed(paths...)
		return prefix, paths
	}
	return configPrefix(t), []*gnmi.Path{
		{Elem: names("QUEUE", key.Port+"|"+strconv.Itoa(key.Queue))},
		{Elem: names("BUFFER_PG")},
	}
}

// configPrefix is the sonic CONFIG_DB prefix of t (with its namespace).
func configPrefix(t Target) *gnmi.Path {
	if t.Dev().RealSonic {
		return &gnmi.Path{Target: sonicTarget(t, ConfigDB)}
	}
	p := &gnmi.Path{Target: ConfigDB}
	if t.Namespace != "" {
		p.Elem = names(t.Namespace)
	}
	return p
}

// ProfileSubscription is the ON_CHANGE subscription to the named profile
// entries, and the paths of a Get of them: openconfig
// queue-management-profile[name=P] for each ECN profile (openconfig has no
// buffer profiles); sonic WRED_PROFILE/P and BUFFER_PROFILE/B. Paths is
// empty when no names are given.
func ProfileSubscription(t Target, ecn, buffer []string) Subscription {
	s := Subscription{Mode: gnmi.SubscriptionMode_ON_CHANGE}
	if t.Dialect != Sonic {
		s.Prefix = &gnmi.Path{Target: t.Name, Origin: t.Dev().Origin}
		for _, n := range ecn {
			s.Paths = append(s.Paths, &gnmi.Path{Elem: ocProfileBase(n)})
		}
		return s
	}
	s.Prefix = configPrefix(t)
	for _, n := range ecn {
		s.Paths = append(s.Paths, &gnmi.Path{Elem: names("WRED_PROFILE", n)})
	}
	for _, n := range buffer {
		s.Paths = append(s.Paths, &gnmi.Path{Elem: names("BUFFER_PROFILE", n)})
	}
	return s
}

// ParseSetting reads a queue's setting back from a Get response (of
// SettingPaths or anything wider).
func ParseSetting(t Target, key env.QueueKey, resp *gnmi.GetResponse) (env.Setting, error) {
	d := NewDecoder(Target{Name: key.Target, Dialect: t.Dialect, Namespace: t.Namespace})
	var errs []error
	for _, n := range resp.GetNotification() {
		if err := d.Apply(n); err != nil {
			errs = append(errs, err)
		}
	}
	s, err := d.Setting(key.Port, key.Queue)
	if err != nil {
		return s, errors.Join(append([]error{err}, errs...)...)
	}
	return s, nil
}

// Subscription is one subscribe request's worth of paths.
type Subscription struct {
	Prefix *gnmi.Path
	Paths  []*gnmi.Path
	Mode   gnmi.SubscriptionMode // SAMPLE for counters, ON_CHANGE for config
}

func parsePaths(ss ...string) []*gnmi.Path {
	out := make([]*gnmi.Path, len(ss))
	for i, s := range ss {
		out[i] = mustPath(s)
	}
	return out
}

// Subscriptions returns the counter (SAMPLE) and config (ON_CHANGE) path
// lists of a target. For openconfig both share prefix.target = switch name;
// for sonic the counters live in COUNTERS_DB and the config in CONFIG_DB
// (two requests), plus PORT speed, which is config but needed for rates.
// The config covers the queue (and sonic PG) bindings but not the profile
// tables, which any client can fill: subscribe to the profiles the
// bindings name with ProfileSubscription (Decoder.Profiles lists them).
func Subscriptions(t Target) (counters, config Subscription) {
	if t.Dialect != Sonic {
		p := &gnmi.Path{Target: t.Name}
		counters = Subscription{Prefix: p, Mode: gnmi.SubscriptionMode_SAMPLE, Paths: parsePaths(
			"/qos/interfaces/interface[interface-id=*]/output/queues/queue[name=*]/state",
			"/interfaces/interface[name=*]/ethernet/pfc/priorities/priority[index=*]/state",
			"/interfaces/interface[name=*]/ethernet/state/port-speed",
			"/qos/state/shared-buffer-size")}
		config = Subscription{Prefix: p, Mode: gnmi.SubscriptionMode_ON_CHANGE, Paths: parsePaths(
			"/qos/interfaces/interface[interface-id=*]/output/queues/queue[name=*]/config",
			"/interfaces/interface[name=*]/ethernet/pfc/priorities/priority[index=*]/config")}
		return counters, config
	}
	ns := func(db string) *gnmi.Path {
		p := &gnmi.Path{Target: db}
		if t.Namespace != "" {
			p.Elem = names(t.Namespace)
		}
		return p
	}
	counters = Subscription{Prefix: ns(CountersDB), Mode: gnmi.SubscriptionMode_SAMPLE, Paths: parsePaths("/COUNTERS")}
	config = Subscription{Prefix: ns(ConfigDB), Mode: gnmi.SubscriptionMode_ON_CHANGE, Paths: parsePaths(
		"/QUEUE", "/BUFFER_PG", "/PORT", "/BUFFER_POOL")}
	return counters, config
}

// streamRequest is the STREAM request of subscriptions sharing the first
// one's prefix, SAMPLE ones sampled every sample.
func streamRequest(sample time.Duration, ss ...Subscription) *gnmi.SubscribeRequest {
	l := &gnmi.SubscriptionList{Prefix: ss[0].Prefix, Mode: gnmi.SubscriptionList_STREAM, Encoding: gnmi.Encoding_JSON_IETF}
	for _, s := range ss {
		for _, p := range s.Paths {
			sub := &gnmi.Subscription{Path: p, Mode: s.Mode}
			if s.Mode == gnmi.SubscriptionMode_SAMPLE {
				sub.SampleInterval = uint64(sample.Nanoseconds())
			}
			l.Subscription = append(l.Subscription, sub)
		}
	}
	return &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: l}}
}

// SubscribeRequests builds the STREAM requests a client sends: counters
// sampled every sample, config on change. openconfig gives one request,
// sonic two (one per database). The profiles come on top, with
// ProfileSubscribeRequest.
func SubscribeRequests(t Target, sample time.Duration) []*gnmi.SubscribeRequest {
	c, g := Subscriptions(t)
	if t.Dialect != Sonic {
		return []*gnmi.SubscribeRequest{streamRequest(sample, c, g)}
	}
	return []*gnmi.SubscribeRequest{streamRequest(sample, c), streamRequest(sample, g)}
}

// ProfileSubscribeRequest builds the STREAM request of
// ProfileSubscription(t, ecn, buffer), or nil when it has no paths.
func ProfileSubscribeRequest(t Target, ecn, buffer []string) *gnmi.SubscribeRequest {
	s := ProfileSubscription(t, ecn, buffer)
	if len(s.Paths) == 0 {
		return nil
	}
	return streamRequest(0, s)
}

// SetOp is one operation of a SetRequest after addressing is resolved.
type SetOp struct {
	Op    string // "delete", "replace" or "update"
	DB    string // sonic database; "" for openconfig
	Elems []*gnmi.PathElem
	Val   *gnmi.TypedValue // nil for delete
}

// SetError is a rejected Set operation: the path and why. Unknown reports
// a path that is not a known leaf (NotFound); otherwise the value or the
// target of the write is invalid (InvalidArgument).
type SetError struct {
	Path    string
	Reason  string
	Unknown bool
}

func (e *SetError) Error() string { return e.Path + ": " + e.Reason }

var tableRoots = map[string]bool{"WRED_PROFILE": true, "QUEUE": true, "BUFFER_PROFILE": true, "BUFFER_PG": true}

// ApplySet applies operations to a configuration tree in gNMI order
// (deletes, then replaces, then updates). Only configuration leaves may be
// written. On error the tree may be partly changed: apply to a Clone and
// keep it only on success.
func ApplySet(d Dialect, t Tree, ops []SetOp) error {
	order := map[string]int{"delete": 0, "replace": 1, "update": 2}
	sorted := append([]SetOp(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return order[sorted[i].Op] < order[sorted[j].Op] })
	for _, op := range sorted {
		ps := PathString(op.Elems)
		if op.DB != "" {
			ps = op.DB + ps
		}
		if _, ok := order[op.Op]; !ok {
			return &SetError{Path: ps, Reason: "operation " + op.Op + " is not delete, replace or update"}
		}
		if op.Op == "delete" || op.Op == "replace" {
			n := deleteMatching(d, t, op.DB, op.Elems)
			if n == 0 && op.Op == "delete" && !knownRoot(d, op.Elems) {
				return &SetError{Path: ps, Reason: "not a path of this switch's configuration", Unknown: true}
			}
			if op.Op == "delete" {
				continue
			}
		}
		leaves, err := flatten(op.Val)
		if err != nil {
			return &SetError{Path: ps, Reason: err.Error()}
		}
		for _, fl := range leaves {
			full := join(op.Elems, fl.rel)
			fs := PathString(full)
			l, err := ParseLeaf(d, op.DB, full)
			if err != nil {
				return &SetError{Path: fs, Reason: strings.TrimPrefix(err.Error(), ErrUnknownPath.Error()+" "+fs+": "), Unknown: errors.Is(err, ErrUnknownPath)}
			}
			if !l.Field.IsConfig() {
				return &SetError{Path: fs, Reason: "is read-only state, not configuration"}
			}
			v, err := DecodeVal(d, l, fl.val)
			if err != nil {
				return &SetError{Path: fs, Reason: err.Error()}
			}
			t[l] = v
		}
	}
	return nil
}

func knownRoot(d Dialect, el []*gnmi.PathElem) bool {
	if len(el) == 0 {
		return false
	}
	n := stripModule(el[0].GetName())
	if d == Sonic {
		return tableRoots[n]
	}
	return n == "qos" || n == "interfaces"
}

// Resolve returns the effective setting of (port, q) in a config tree, and
// what is missing for it to be complete.
func Resolve(d Dialect, t Tree, port string, q int) (env.Setting, []string) {
	return resolveSetting(d, t, pgIndex(t), port, q)
}

// ECNEnabled reports whether the profile bound to (port, q) has ECN marking
// on (openconfig enable-ecn; sonic wred_green_enable and an ecn mode other
// than ecn_none). Absent flags count as on.
func ECNEnabled(d Dialect, t Tree, port string, q int) bool {
	b, ok := t[Leaf{Field: QueueProfile, Port: port, Index: q}]
	if !ok {
		return false
	}
	if d != Sonic {
		v, ok := t[Leaf{Field: WREDEnableECN, Name: b.S}]
		return !ok || v.B
	}
	if v, ok := t[Leaf{Field: WREDGreenEnable, Name: b.S}]; ok && !v.B {
		return false
	}
	if v, ok := t[Leaf{Field: WREDECNMode, Name: b.S}]; ok && v.S == "ecn_none" {
		return false
	}
	return true
}

// LeavesOf lists the leaves a Set operation writes (its value flattened
// under its path).
func LeavesOf(d Dialect, op SetOp) ([]Leaf, error) {
	leaves, err := flatten(op.Val)
	if err != nil {
		return nil, err
	}
	out := make([]Leaf, 0, len(leaves))
	for _, fl := range leaves {
		l, err := ParseLeaf(d, op.DB, join(op.Elems, fl.rel))
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}
