package gnmipath

import (
	"math"
	"strconv"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// Item is one encoded leaf: its database (sonic only), identity, path
// (without sonic namespace) and value.
type Item struct {
	DB     string
	Origin string // the origin the leaf is served under ("" for sonic and ecntune's default)
	Leaf   Leaf
	Path   *gnmi.Path
	Val    *gnmi.TypedValue
	// Parent and Rel, when set, split Path into its container and the
	// leaf's last element: Notifications then sends consecutive items of
	// one container as one notification whose prefix is the container,
	// each update a one-element path (as servers commonly do; it is far
	// cheaper to send and decode than full paths).
	Parent, Rel *gnmi.Path
}

type slot struct {
	db          string
	origin      string
	leaf        Leaf
	path        *gnmi.Path
	parent, rel *gnmi.Path // path split at its last element (shared by a container's slots)
	qi          int        // the sample the value comes from (-1: the snapshot's first)
}

// Encoder turns one switch's Snapshots into state leaves, the inverse of
// the Decoder: the switch-wide buffer size, then per port its speed and,
// per queue sample, the queue counters and PFC leaves the dialect carries.
// Paths are built once from a layout Snapshot; Encode only makes values,
// for Snapshots with the same queues in the same order.
type Encoder struct {
	d     Dialect
	slots []slot
}

var queueFields = []Field{TxPkts, TxBytes, DropPkts, DropBytes, MarkedPkts, MarkedBytes, CurQueue, MaxQueue, AvgQueue}

func pfcFields(d Dialect) []Field {
	if d == Sonic {
		return []Field{PFCRxFrames, PFCTxFrames, PFCPaused}
	}
	return []Field{PFCRxFrames, PFCTxFrames, PFCPaused, PFCXoff, PFCMinHeadroom, PFCHeadroomState}
}

// NewEncoder prepares the state leaves of the queues in layout (grouped
// by port, as a switch lists them), every leaf the dialect has.
func NewEncoder(d Dialect, layout *env.Snapshot) *Encoder {
	fields := append(append([]Field(nil), queueFields...), pfcFields(d)...)
	return newEncoder(d, layout, true, fields, func(l Leaf) (string, []*gnmi.PathElem, string) {
		db, el := LeafPath(d, l)
		return db, el, ""
	}, false)
}

// NewDeviceEncoder is NewEncoder for what one kind of switch serves: only
// the leaves dev serves, at dev's paths and origins, each leaf split from
// its container (Item.Parent, Rel) so that Notifications sends a
// container's leaves under one prefix.
func NewDeviceEncoder(dev *Device, layout *env.Snapshot) *Encoder {
	if dev.Dialect == Sonic {
		return NewEncoder(Sonic, layout)
	}
	return newEncoder(dev.Dialect, layout, dev.Serves(BufferSize), dev.StateFields(), dev.LeafPath, true)
}

// newEncoder lays out the slots: the buffer size (when buffer), then per
// port its speed and per queue fields, at the paths path gives (nil: not
// served).
func newEncoder(d Dialect, layout *env.Snapshot, buffer bool, fields []Field,
	path func(Leaf) (db string, el []*gnmi.PathElem, origin string), split bool) *Encoder {
	e := &Encoder{d: d}
	add := func(l Leaf, qi int) {
		db, el, origin := path(l)
		if el == nil {
			return
		}
		sl := slot{db: db, origin: origin, leaf: l, path: &gnmi.Path{Elem: el}, qi: qi}
		if split && len(el) > 1 {
			sl.rel = &gnmi.Path{Elem: el[len(el)-1:]}
			if n := len(e.slots); n > 0 && e.slots[n-1].parent != nil && e.slots[n-1].db == db &&
				PathString(e.slots[n-1].parent.Elem) == PathString(el[:len(el)-1]) {
				sl.parent = e.slots[n-1].parent
			} else {
				sl.parent = &gnmi.Path{Elem: el[:len(el)-1]}
			}
		}
		e.slots = append(e.slots, sl)
	}
	if buffer {
		add(Leaf{Field: BufferSize}, -1)
	}
	port := ""
	for i := range layout.Queues {
		k := layout.Queues[i].Key
		if i == 0 || k.Port != port {
			port = k.Port
			add(Leaf{Field: PortSpeed, Port: port}, i)
		}
		for _, f := range fields {
			add(Leaf{Field: f, Port: port, Index: k.Queue}, i)
		}
	}
	return e
}

// Len is the number of leaves Encode produces.
func (e *Encoder) Len() int { return len(e.slots) }

func nonNeg(x int64) uint64 {
	if x < 0 {
		return 0
	}
	return uint64(x)
}

// stateVal is the value of state leaf l in queue sample q.
func stateVal(d Dialect, q *env.QueueSample, l Leaf) (Val, bool) {
	switch l.Field {
	case BufferSize:
		return Val{U: nonNeg(q.BufferBytes)}, true
	case PortSpeed:
		return Val{F: q.RateBps}, true
	case TxPkts:
		return Val{U: q.TxPkts}, true
	case TxBytes:
		return Val{U: q.TxBytes}, true
	case DropPkts:
		return Val{U: q.DropPkts}, true
	case DropBytes:
		return Val{U: q.DropBytes}, true
	case MarkedPkts:
		return Val{U: q.MarkedPkts}, true
	case MarkedBytes:
		return Val{U: q.MarkedBytes}, true
	case CurQueue:
		return Val{U: nonNeg(q.CurQueueBytes)}, true
	case MaxQueue:
		return Val{U: nonNeg(q.MaxQueueBytes)}, true
	case AvgQueue:
		a := q.AvgQueueBytes
		if a < 0 || math.IsNaN(a) {
			a = 0
		}
		return Val{F: a}, true
	case PFCRxFrames:
		return Val{U: q.PauseRx}, true
	case PFCTxFrames:
		return Val{U: q.PauseTx}, true
	case PFCPaused:
		if d == Sonic {
			return Val{U: q.PausedNs / 1000}, true
		}
		return Val{U: q.PausedNs}, true
	case PFCXoff:
		return Val{U: nonNeg(q.XoffBytes)}, true
	case PFCMinHeadroom:
		return Val{U: nonNeg(q.MinHeadroomBytes)}, true
	case PFCHeadroomState:
		return Val{U: nonNeg(q.Setting.HeadroomBytes)}, true
	}
	return Val{}, false
}

// arena hands out TypedValues allocated in blocks, to keep encoding a
// large fabric from making two small allocations per leaf.
type arena struct {
	tv []gnmi.TypedValue
	u  []gnmi.TypedValue_UintVal
	s  []gnmi.TypedValue_StringVal
}

func (a *arena) value(d Dialect, l Leaf, v Val) *gnmi.TypedValue {
	k := kindOf(d, l.Field)
	if len(a.tv) == 0 {
		return EncodeVal(d, l, v)
	}
	var tv *gnmi.TypedValue
	switch {
	case d == OpenConfig && k == kUint && len(a.u) > 0:
		w := &a.u[0]
		a.u = a.u[1:]
		w.UintVal = v.U
		tv = &a.tv[0]
		tv.Value = w
	case d == Sonic && k == kUint && len(a.s) > 0:
		w := &a.s[0]
		a.s = a.s[1:]
		w.StringVal = strconv.FormatUint(v.U, 10)
		tv = &a.tv[0]
		tv.Value = w
	default:
		return EncodeVal(d, l, v)
	}
	a.tv = a.tv[1:]
	return tv
}

// Encode appends the state leaves of s to dst and returns it. Leaves of
// queues s does not have are left out.
func (e *Encoder) Encode(dst []Item, s *env.Snapshot) []Item {
	n := len(e.slots)
	a := arena{tv: make([]gnmi.TypedValue, n)}
	if e.d == Sonic {
		a.s = make([]gnmi.TypedValue_StringVal, n)
	} else {
		a.u = make([]gnmi.TypedValue_UintVal, n)
	}
	for _, sl := range e.slots {
		qi := max(sl.qi, 0)
		if qi >= len(s.Queues) {
			continue
		}
		v, _ := stateVal(e.d, &s.Queues[qi], sl.leaf)
		dst = append(dst, Item{DB: sl.db, Origin: sl.origin, Leaf: sl.leaf, Path: sl.path, Parent: sl.parent, Rel: sl.rel,
			Val: a.value(e.d, sl.leaf, v)})
	}
	return dst
}

// ConfigItems renders a config tree as items, in a stable order.
func ConfigItems(d Dialect, t Tree) []Item {
	out := make([]Item, 0, len(t))
	for l, v := range t {
		db, el := LeafPath(d, l)
		if el == nil {
			continue
		}
		out = append(out, Item{DB: db, Leaf: l, Path: &gnmi.Path{Elem: el}, Val: EncodeVal(d, l, v)})
	}
	sortItems(out)
	return out
}

// ConfigItemsFor is ConfigItems of what device dev serves: the leaves it
// has (no headroom leaf where headroom is not a settable leaf), under its
// origin.
func ConfigItemsFor(dev *Device, t Tree) []Item {
	if dev.Dialect == Sonic {
		return ConfigItems(Sonic, t)
	}
	out := make([]Item, 0, len(t))
	for l, v := range t {
		_, el, origin := dev.LeafPath(l)
		if el == nil {
			continue
		}
		out = append(out, Item{Origin: origin, Leaf: l, Path: &gnmi.Path{Elem: el}, Val: EncodeVal(dev.Dialect, l, v)})
	}
	sortItems(out)
	return out
}

// ECNProfileName is the name simswitch gives the initial per-queue profile.
func ECNProfileName(port string, q int) string { return "ecn-" + port + "-q" + strconv.Itoa(q) }

// SonicSharedProfile is the WRED profile SONiC's QoS templates bind every
// lossless queue to, which simswitch's sonic switches start with.
const SonicSharedProfile = "AZURE_LOSSLESS"

// OwnProfileName is the profile a per-queue Set creates when the queue's
// current profile is shared.
func OwnProfileName(port string, q int) string { return "ecntune-" + port + "-q" + strconv.Itoa(q) }

// OwnBufferProfileName is the SONiC buffer profile a per-PG headroom Set
// creates when the PG's current profile is shared.
func OwnBufferProfileName(port string, pg int) string {
	return "ecntune-" + port + "-pg" + strconv.Itoa(pg)
}

// PGProfileName is the buffer profile simswitch starts each lossless PG with.
func PGProfileName(port string, pg int) string { return "pg_lossless_" + port + "_" + strconv.Itoa(pg) }

// InitialConfig builds the configuration tree a switch with the queues
// of s starts with: one ECN profile per queue holding its current setting,
// bound to that queue; per-(port, PG) headroom (openconfig) or one
// BUFFER_PROFILE per (port, PG) bound by BUFFER_PG|<port>|<pg> (sonic),
// whose xon field is xonBytes and whose dynamic_th is log2 of alpha(key)
// (nil alpha, or alpha ≤ 0: 0).
//
// Under sonic, queues that start with the same ECN setting share one WRED
// profile, as SONiC's QoS templates bind every lossless queue to
// AZURE_LOSSLESS (SonicSharedProfile, then _2, _3, ... for other
// settings), so a per-queue change first creates the queue's own profile.
func InitialConfig(d Dialect, s *env.Snapshot, xonBytes int64, alpha func(env.QueueKey) float64) Tree {
	t := Tree{}
	shared := map[[3]uint64]string{}
	for i := range s.Queues {
		qs := &s.Queues[i]
		port, q := qs.Key.Port, qs.Key.Queue
		name := ECNProfileName(port, q)
		if d == Sonic {
			k := [3]uint64{nonNeg(qs.Setting.KminBytes), nonNeg(qs.Setting.KmaxBytes), PercentOf(qs.Setting.Pmax)}
			if shared[k] == "" {
				shared[k] = SonicSharedProfile
				if n := len(shared); n > 1 {
					shared[k] += "_" + strconv.Itoa(n)
				}
			}
			name = shared[k]
		}
		t[Leaf{Field: QueueProfile, Port: port, Index: q}] = Val{S: name}
		t[Leaf{Field: WREDMin, Name: name}] = Val{U: nonNeg(qs.Setting.KminBytes)}
		t[Leaf{Field: WREDMax, Name: name}] = Val{U: nonNeg(qs.Setting.KmaxBytes)}
		t[Leaf{Field: WREDProb, Name: name}] = Val{F: float64(PercentOf(qs.Setting.Pmax))}
		headroom := nonNeg(qs.Setting.HeadroomBytes)
		if d == OpenConfig {
			t[Leaf{Field: WREDEnableECN, Name: name}] = Val{B: true}
			t[Leaf{Field: WREDName, Name: name}] = Val{S: name}
			t[Leaf{Field: PFCHeadroom, Port: port, Index: q}] = Val{U: headroom}
			continue
		}
		t[Leaf{Field: WREDGreenEnable, Name: name}] = Val{B: true}
		t[Leaf{Field: WREDECNMode, Name: name}] = Val{S: "ecn_all"}
		bp := PGProfileName(port, q)
		t[Leaf{Field: PGProfile, Port: port, PGs: strconv.Itoa(q)}] = Val{S: bp}
		t[Leaf{Field: BPPool, Name: bp}] = Val{S: LosslessPool}
		t[Leaf{Field: BPXoff, Name: bp}] = Val{U: headroom}
		t[Leaf{Field: BPXon, Name: bp}] = Val{U: nonNeg(xonBytes)}
		t[Leaf{Field: BPSize, Name: bp}] = Val{U: headroom + nonNeg(xonBytes)}
		th := int64(0)
		if alpha != nil {
			if a := alpha(qs.Key); a > 0 {
				// the nearest dynamic_th SONiC can hold
				th = min(max(int64(math.Round(math.Log2(a))), MinDynamicTh), MaxDynamicTh)
			}
		}
		t[Leaf{Field: BPDynamicTh, Name: bp}] = Val{I: th}
	}
	return t
}

// Notifications wraps items into notifications as simswitch sends them:
// openconfig, one notification with prefix.target = name; sonic, one per
// database with prefix.target = the database and, when namespace is set,
// the namespace as the prefix's first element. Values are converted to enc.
func Notifications(d Dialect, name, namespace string, items []Item, ts int64, enc gnmi.Encoding) []*gnmi.Notification {
	var out []*gnmi.Notification
	type nkey struct{ db, origin string }
	byDB := map[nkey]*gnmi.Notification{}
	ups := make([]gnmi.Update, len(items))
	var cur *gnmi.Notification // the container notification being filled
	var curParent *gnmi.Path
	for i, it := range items {
		u := &ups[i]
		u.Path, u.Val = it.Path, ToEncoding(it.Val, enc)
		if it.Leaf.Field == WREDProb && d != Sonic {
			u.Val = smallUint(it.Val, enc) // uint8: a JSON number even in JSON_IETF
		}
		if it.Parent != nil && d != Sonic {
			if cur == nil || curParent != it.Parent || cur.Prefix.GetOrigin() != it.Origin {
				cur = &gnmi.Notification{Timestamp: ts, Prefix: &gnmi.Path{Target: name, Origin: it.Origin, Elem: it.Parent.Elem}}
				curParent = it.Parent
				out = append(out, cur)
			}
			u.Path = it.Rel
			cur.Update = append(cur.Update, u)
			continue
		}
		k := nkey{it.DB, it.Origin}
		n := byDB[k]
		if n == nil {
			p := &gnmi.Path{Target: name, Origin: it.Origin}
			if d == Sonic {
				p.Target = it.DB
				if namespace != "" {
					p.Elem = names(namespace)
				}
			}
			n = &gnmi.Notification{Timestamp: ts, Prefix: p}
			byDB[k] = n
			out = append(out, n)
		}
		n.Update = append(n.Update, u)
	}
	return out
}
