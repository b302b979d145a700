package gnmipath

import (
	"math"
	"strconv"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/simenv"
)

// Epoch is the Unix time (ns) that simulated time 0 is stamped as. simswitch
// stamps every notification with Epoch + simulated ns, so timestamps look
// like Unix times yet advance at simulated speed: a client dividing counter
// deltas by timestamp deltas gets simulated rates, whatever the timescale.
const Epoch int64 = 1_767_225_600_000_000_000 // 2026-01-01T00:00:00Z

// SimTimestamp converts simulated time to a notification timestamp.
func SimTimestamp(t simenv.Time) int64 { return Epoch + t.Ns() }

// Item is one encoded leaf: its database (sonic only), identity, path
// (without sonic namespace) and value.
type Item struct {
	DB   string
	Leaf Leaf
	Path *gnmi.Path
	Val  *gnmi.TypedValue
}

type slot struct {
	db   string
	leaf Leaf
	path *gnmi.Path
}

// Encoder turns one switch's telemetry into state leaves. Paths are built
// once; Encode only makes values.
type Encoder struct {
	d      Dialect
	info   simenv.SwitchInfo
	queues []int
	slots  []slot
}

var queueFields = []Field{TxPkts, TxBytes, DropPkts, DropBytes, MarkedPkts, MarkedBytes, CurQueue, MaxQueue, AvgQueue}

func pfcFields(d Dialect) []Field {
	if d == Sonic {
		return []Field{PFCRxFrames, PFCTxFrames, PFCPaused}
	}
	return []Field{PFCRxFrames, PFCTxFrames, PFCPaused, PFCXoff, PFCMinHeadroom, PFCHeadroomState}
}

// NewEncoder prepares the state leaves of switch info for the given queues
// (the lossless priorities).
func NewEncoder(d Dialect, info simenv.SwitchInfo, queues []int) *Encoder {
	e := &Encoder{d: d, info: info, queues: append([]int(nil), queues...)}
	add := func(l Leaf) {
		db, el := LeafPath(d, l)
		e.slots = append(e.slots, slot{db: db, leaf: l, path: &gnmi.Path{Elem: el}})
	}
	add(Leaf{Field: BufferSize})
	for _, p := range info.Ports {
		add(Leaf{Field: PortSpeed, Port: p.Name})
		for _, q := range queues {
			for _, f := range queueFields {
				add(Leaf{Field: f, Port: p.Name, Index: q})
			}
			for _, f := range pfcFields(d) {
				add(Leaf{Field: f, Port: p.Name, Index: q})
			}
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

// StateVal is the value of a state leaf in a switch's telemetry.
func StateVal(d Dialect, info simenv.SwitchInfo, tel *simenv.SwitchTelemetry, l Leaf) (Val, bool) {
	if l.Field == BufferSize {
		return Val{U: nonNeg(tel.BufferBytes)}, true
	}
	pi := -1
	for i, p := range info.Ports {
		if p.Name == l.Port {
			pi = i
			break
		}
	}
	if pi < 0 || pi >= len(tel.Ports) || l.Index < 0 || l.Index >= simenv.NumQueues {
		return Val{}, false
	}
	return stateVal(d, info.Ports[pi].RateBps, &tel.Ports[pi], l)
}

func stateVal(d Dialect, rate float64, pt *simenv.PortTelemetry, l Leaf) (Val, bool) {
	q := &pt.Queues[l.Index]
	pf := &pt.PFC[l.Index]
	pg := &pt.PG[l.Index]
	switch l.Field {
	case PortSpeed:
		return Val{F: rate}, true
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
		return Val{U: nonNeg(q.CurBytes)}, true
	case MaxQueue:
		return Val{U: nonNeg(q.MaxBytes)}, true
	case AvgQueue:
		a := q.AvgBytes
		if a < 0 || math.IsNaN(a) {
			a = 0
		}
		return Val{F: a}, true
	case PFCRxFrames:
		return Val{U: pf.PauseRx}, true
	case PFCTxFrames:
		return Val{U: pf.PauseTx}, true
	case PFCPaused:
		if d == Sonic {
			return Val{U: pf.PausedNs / 1000}, true
		}
		return Val{U: pf.PausedNs}, true
	case PFCXoff:
		return Val{U: nonNeg(pg.XoffBytes)}, true
	case PFCMinHeadroom:
		return Val{U: nonNeg(pg.MinHeadroomBytes)}, true
	case PFCHeadroomState:
		return Val{U: nonNeg(pg.HeadroomBytes)}, true
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

// Encode appends the state leaves of tel to dst and returns it.
func (e *Encoder) Encode(dst []Item, tel *simenv.SwitchTelemetry) []Item {
	n := len(e.slots)
	a := arena{tv: make([]gnmi.TypedValue, n)}
	if e.d == Sonic {
		a.s = make([]gnmi.TypedValue_StringVal, n)
	} else {
		a.u = make([]gnmi.TypedValue_UintVal, n)
	}
	pi := -1
	var port string
	for _, s := range e.slots {
		var v Val
		if s.leaf.Field == BufferSize {
			v = Val{U: nonNeg(tel.BufferBytes)}
		} else {
			if s.leaf.Port != port {
				port = s.leaf.Port
				pi++
			}
			if pi >= len(tel.Ports) {
				continue
			}
			v, _ = stateVal(e.d, e.info.Ports[pi].RateBps, &tel.Ports[pi], s.leaf)
		}
		dst = append(dst, Item{DB: s.db, Leaf: s.leaf, Path: s.path, Val: a.value(e.d, s.leaf, v)})
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

// ECNProfileName is the name simswitch gives the initial per-queue profile.
func ECNProfileName(port string, q int) string { return "ecn-" + port + "-q" + strconv.Itoa(q) }

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

// InitialConfig builds the configuration tree simswitch starts a switch
// with: one ECN profile per (port, lossless queue) holding the simulator's
// current setting, bound to that queue; per-(port, PG) headroom (openconfig)
// or one BUFFER_PROFILE per (port, PG) bound by BUFFER_PG|<port>|<pg>
// (sonic). xonBytes fills the SONiC xon field.
func InitialConfig(d Dialect, info simenv.SwitchInfo, tel *simenv.SwitchTelemetry, queues []int, xonBytes int64) Tree {
	t := Tree{}
	for pi, p := range info.Ports {
		if pi >= len(tel.Ports) {
			break
		}
		for _, q := range queues {
			e := tel.Ports[pi].Queues[q].ECN
			name := ECNProfileName(p.Name, q)
			t[Leaf{Field: QueueProfile, Port: p.Name, Index: q}] = Val{S: name}
			t[Leaf{Field: WREDMin, Name: name}] = Val{U: nonNeg(e.KminBytes)}
			t[Leaf{Field: WREDMax, Name: name}] = Val{U: nonNeg(e.KmaxBytes)}
			t[Leaf{Field: WREDProb, Name: name}] = Val{F: float64(PercentOf(e.Pmax))}
			pg := tel.Ports[pi].PG[q]
			if d == OpenConfig {
				t[Leaf{Field: WREDEnableECN, Name: name}] = Val{B: true}
				t[Leaf{Field: WREDName, Name: name}] = Val{S: name}
				t[Leaf{Field: PFCHeadroom, Port: p.Name, Index: q}] = Val{U: nonNeg(pg.HeadroomBytes)}
				continue
			}
			t[Leaf{Field: WREDGreenEnable, Name: name}] = Val{B: true}
			t[Leaf{Field: WREDECNMode, Name: name}] = Val{S: "ecn_all"}
			bp := PGProfileName(p.Name, q)
			t[Leaf{Field: PGProfile, Port: p.Name, PGs: strconv.Itoa(q)}] = Val{S: bp}
			t[Leaf{Field: BPPool, Name: bp}] = Val{S: LosslessPool}
			t[Leaf{Field: BPXoff, Name: bp}] = Val{U: nonNeg(pg.HeadroomBytes)}
			t[Leaf{Field: BPXon, Name: bp}] = Val{U: nonNeg(xonBytes)}
			t[Leaf{Field: BPSize, Name: bp}] = Val{U: nonNeg(pg.HeadroomBytes) + nonNeg(xonBytes)}
			th := int64(0)
			if pg.Alpha > 0 {
				th = int64(math.Round(math.Log2(pg.Alpha)))
			}
			t[Leaf{Field: BPDynamicTh, Name: bp}] = Val{I: th}
		}
	}
	return t
}

// Notifications wraps items into notifications as simswitch sends them:
// openconfig, one notification with prefix.target = name; sonic, one per
// database with prefix.target = the database and, when namespace is set,
// the namespace as the prefix's first element. Values are converted to enc.
func Notifications(d Dialect, name, namespace string, items []Item, ts int64, enc gnmi.Encoding) []*gnmi.Notification {
	var out []*gnmi.Notification
	byDB := map[string]*gnmi.Notification{}
	ups := make([]gnmi.Update, len(items))
	for i, it := range items {
		n := byDB[it.DB]
		if n == nil {
			p := &gnmi.Path{Target: name}
			if d == Sonic {
				p.Target = it.DB
				if namespace != "" {
					p.Elem = names(namespace)
				}
			}
			n = &gnmi.Notification{Timestamp: ts, Prefix: p}
			byDB[it.DB] = n
			out = append(out, n)
		}
		u := &ups[i]
		u.Path, u.Val = it.Path, ToEncoding(it.Val, enc)
		n.Update = append(n.Update, u)
	}
	return out
}

// SimTime converts a notification timestamp back to simulated time.
func SimTime(ts int64) simenv.Time { return simenv.Time(ts-Epoch) * simenv.Nanosecond }
