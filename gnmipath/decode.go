package gnmipath

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// Target says how to address one switch.
type Target struct {
	Name    string  // switch name, used in QueueKeys and (openconfig) as prefix.target
	Dialect Dialect // openconfig or sonic
	// Namespace (sonic only) is the path element after the database name
	// that selects the switch, as sonic-gnmi's multi-namespace paths do
	// ("localhost", "asic0"); simswitch accepts a switch name there. Empty:
	// no namespace element (one switch per address).
	Namespace string
	// Device is the kind of switch (what it serves and accepts); nil: the
	// dialect's DefaultDevice.
	Device *Device
	// ASIC (sonic) says how a lossless BUFFER_PROFILE's size relates to
	// its headroom: "mellanox" (default) size = xon + xoff, so a headroom
	// change writes both; "broadcom" size is the PG's guaranteed minimum,
	// independent of xoff, so only xoff is written.
	ASIC string
	// QueueNames (openconfig) is the name the switch gives each queue
	// index it does not name by the index (queue[name=AF3] for queue 3).
	// The decoder reads such a queue as its index and paths written to the
	// switch name it so; a queue named otherwise and not listed is skipped
	// (ErrUnknownKey).
	QueueNames map[int]string
	// Ports, when given, are the only ports whose leaves the decoder keeps
	// (the configuration's ports); MaxPorts bounds how many it keeps
	// (0: DefaultMaxPorts).
	Ports    []string
	MaxPorts int
}

// queueNamed rewrites, in a copy of el where needed, an openconfig queue
// element keyed by a name of t.QueueNames to its index (toIndex) or the
// other way round.
func (t Target) queueNamed(el []*gnmi.PathElem, toIndex bool) []*gnmi.PathElem {
	if len(t.QueueNames) == 0 || t.Dialect == Sonic {
		return el
	}
	for i, e := range el {
		if stripModule(e.GetName()) != "queue" || e.GetKey()["name"] == "" {
			continue
		}
		name := e.GetKey()["name"]
		repl := ""
		for q, n := range t.QueueNames {
			switch {
			case toIndex && n == name:
				repl = strconv.Itoa(q)
			case !toIndex && strconv.Itoa(q) == name:
				repl = n
			}
		}
		if repl == "" {
			continue
		}
		out := append([]*gnmi.PathElem(nil), el...)
		k := maps.Clone(e.GetKey())
		k["name"] = repl
		out[i] = &gnmi.PathElem{Name: e.GetName(), Key: k}
		return out
	}
	return el
}

// QueueNamed gives the paths of req the switch's queue names where
// t.QueueNames has them (paths built with queue indices).
func (t Target) QueueNamed(paths ...*gnmi.Path) {
	for _, p := range paths {
		if p != nil {
			p.Elem = t.queueNamed(p.Elem, false)
		}
	}
}

// Dev returns t's device (DefaultDevice of its dialect when none is set).
func (t Target) Dev() *Device {
	if t.Device != nil {
		return t.Device
	}
	return DefaultDevice(t.Dialect)
}

// sortItems orders items by database, then path string. Each item's key
// is rendered once: "\x00" sorts below any byte, so DB + "\x00" + path
// orders as comparing the DB first would.
func sortItems(it []Item) {
	keys := make([]string, len(it))
	for i := range it {
		keys[i] = it[i].DB + "\x00" + PathString(it[i].Path.GetElem())
	}
	sort.Sort(itemsByKey{it, keys})
}

type itemsByKey struct {
	it   []Item
	keys []string
}

func (s itemsByKey) Len() int           { return len(s.it) }
func (s itemsByKey) Less(i, j int) bool { return s.keys[i] < s.keys[j] }
func (s itemsByKey) Swap(i, j int) {
	s.it[i], s.it[j] = s.it[j], s.it[i]
	s.keys[i], s.keys[j] = s.keys[j], s.keys[i]
}

// Decoder rebuilds the state of one switch from notifications as a
// subscription delivers them (initial dump, updates, deletes, full
// re-snapshots after reconnects) and produces env.Snapshots from it.
// It is not safe for concurrent use.
//
// A sample interval repeats the same few thousand paths with new values,
// so the decoder remembers which leaf each full path (target, origin,
// elements) names (and where its value goes), reads scalar values without
// encoding/json, keeps each queue's state leaves in a struct of its own
// that Snapshot reads directly, and keeps the list of queues and the
// SONiC PG bindings between snapshots, rebuilding them only after leaves
// appear or go.
type Decoder struct {
	// emptied are the CONFIG_DB entries reported emptied (Emptied).
	emptied []string
	t       Target
	prios   map[int]bool
	tree    Tree // every leaf but those kept in qs and ports (see mirrored)
	ts      int64
	tsLeaf  int64 // newest timestamp of a notification carrying queue counters

	paths  map[string]int32 // full path key (see pathKey) → index in seq
	seq    []seqEnt         // known paths in the order first seen
	next   int              // index in seq of the path expected next
	kbuf   []byte           // pathKey scratch
	pbuf   []byte           // the current notification's prefix key (prefixKey)
	pcache bool             // the prefix key is cacheable
	wire   []wireUpd        // ApplyWire scratch
	// aliases maps SONiC port aliases to names (CONFIG_DB PORT|* alias),
	// for sonic-gnmi's virtual paths, which key ports by alias.
	aliases map[string]string
	// wireWalks counts notifications ApplyWire took without unmarshalling.
	wireWalks int
	sc        scal // value scratch

	qs      map[qid]*qstate    // per-(port, index) state leaves (not in tree)
	ports   map[string]*pstate // port speeds (not in tree)
	qlist   []*qstate          // queues of the snapshot, sorted; stale when qdirty
	qdirty  bool
	pgs     map[string]*[8]pgBind // pgIndex(tree); stale when pgdirty
	pgdirty bool
	// cables is each port's cable length (CONFIG_DB CABLE_LENGTH; the
	// longest where entries differ) and largest frame (its mtu); stale
	// when cdirty.
	cables  map[string]portCable
	cdirty  bool
	bindGen uint64          // see BindingsVersion
	req     [numFields]bool // fields a queue sample cannot do without

	// skips are the elements not understood (ErrUnknownKey), by shape;
	// never reset, so that their counts are cumulative per target.
	skips    map[string]int32 // shape to its index in skipList, plus one
	skipList []*Skipped

	general bool // tests: always take Apply's general path

	// known are the ports the decoder keeps (admitPort), wanted the
	// target's Ports (nil: any); gen counts snapshots (forgetStale).
	known  map[string]struct{}
	wanted map[string]bool
	gen    uint64
}

// Skipped is one shape of path whose elements the decoder did not
// understand and skipped (ErrUnknownKey): how many it skipped, the first
// such path in full and why. The rest of each notification is used.
type Skipped struct {
	Shape   string `json:"shape"`
	Example string `json:"example"`
	Why     string `json:"why"`
	Count   uint64 `json:"count"`
}

// maxSkipShapes bounds the shapes a decoder keeps; further ones are
// counted under OtherShape.
const maxSkipShapes = 64

// OtherShape counts the skipped elements beyond maxSkipShapes shapes.
const OtherShape = "(other shapes)"

// skipFor returns the record of an element not understood (err wraps
// ErrUnknownKey), made at its first sight; callers count it.
func (d *Decoder) skipFor(err error) *Skipped { return d.skipList[d.skipIndex(err)-1] }

// skipIndex is skipFor's record as a pathEnt.skip: its index in
// d.skipList, plus one.
func (d *Decoder) skipIndex(err error) int32 {
	var ke *KeyError
	var pl errPortLimit
	shape, example, why := OtherShape, err.Error(), err.Error()
	switch {
	case errors.As(err, &ke):
		shape, example, why = ke.Shape(), PathString(ke.Path), ke.Why
	case errors.As(err, &pl):
		return d.portLimitIndex(pl)
	}
	if d.skips == nil {
		d.skips = map[string]int32{}
	}
	if i, ok := d.skips[shape]; ok {
		return i
	}
	if len(d.skips) >= maxSkipShapes {
		shape = OtherShape
		if i, ok := d.skips[shape]; ok {
			return i
		}
	}
	d.skipList = append(d.skipList, &Skipped{Shape: shape, Example: example, Why: why})
	d.skips[shape] = int32(len(d.skipList))
	return d.skips[shape]
}

// Skipped returns the elements skipped so far, by shape (sorted), with
// their cumulative counts.
func (d *Decoder) Skipped() []Skipped {
	out := make([]Skipped, 0, len(d.skipList))
	for _, sk := range d.skipList {
		out = append(out, *sk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Shape < out[j].Shape })
	return out
}

// seqEnt is a known path. Samples repeat their paths in the same order,
// so the entry after the last one used is tried before the map.
type seqEnt struct {
	key string
	ent pathEnt
}

// forgetPaths empties the path cache.
func (d *Decoder) forgetPaths() {
	clear(d.paths)
	clear(d.seq)
	d.seq, d.next = d.seq[:0], 0
}

// lookupPath finds a path key in the cache.
func (d *Decoder) lookupPath(key []byte) (pathEnt, bool) {
	if d.next < len(d.seq) && d.seq[d.next].key == string(key) {
		d.next++
		return d.seq[d.next-1].ent, true
	}
	i, ok := d.paths[string(key)]
	if !ok {
		return pathEnt{}, false
	}
	d.next = int(i) + 1
	return d.seq[i].ent, true
}

// addPath caches what a path key names.
func (d *Decoder) addPath(key []byte, ent pathEnt) {
	if len(d.seq) >= maxPaths {
		d.forgetPaths()
	}
	k := string(key)
	d.paths[k] = int32(len(d.seq))
	d.seq = append(d.seq, seqEnt{key: k, ent: ent})
	d.next = len(d.seq)
}

// pathEnt is what a full path names: a leaf, or nothing ecntune reads,
// and where a snapshot reads that leaf's value (q or p, when it does).
type pathEnt struct {
	leaf  Leaf
	known bool
	// skip, when not 0, is an element not understood (ErrUnknownKey):
	// d.skipList[skip-1] counts it. An index, not a pointer, so that it
	// fits beside known: a decoder holds an entry per path of every queue.
	skip int32
	q    *qstate
	p    *pstate
}

// snapField reports whether a field is one of a queue's state leaves that
// Snapshot reads from its qstate (TxPkts through PFCMinHeadroom).
func snapField(f Field) bool { return f >= TxPkts && f <= PFCMinHeadroom }

// queueFieldMask has the bits of the fields that make (port, index) a
// queue of the snapshot.
const queueFieldMask = 1<<(AvgQueue+1) - 1<<TxPkts

// qstate holds the per-(port, index) state leaves Snapshot reads, so that
// it reads them without map lookups (they are not in the tree).
type qstate struct {
	id   qid
	port *pstate
	have uint32 // bit f: leaf of field f present
	u    [PFCMinHeadroom + 1]uint64
	avg  float64 // AvgQueue
}

// pstate holds a port's speed leaf (not in the tree), and the snapshot
// in which its queue counters last came (0: never).
type pstate struct {
	speed float64
	has   bool
	seen  uint64
}

func (d *Decoder) qstateFor(port string, idx int) *qstate {
	id := qid{port, idx}
	q := d.qs[id]
	if q == nil {
		q = &qstate{id: id, port: d.pstateFor(port)}
		d.qs[id] = q
	}
	return q
}

func (d *Decoder) pstateFor(port string) *pstate {
	p := d.ports[port]
	if p == nil {
		p = &pstate{}
		d.ports[port] = p
	}
	return p
}

// mirror stores the value of a mirrored leaf in its qstate or pstate (q,
// p: the cached ones, if known).
func (d *Decoder) mirror(l Leaf, v Val, q *qstate, p *pstate) {
	switch {
	case snapField(l.Field):
		if q == nil {
			q = d.qstateFor(l.Port, l.Index)
		}
		q.port.seen = d.gen + 1
		if l.Field == AvgQueue {
			q.avg = v.F
		} else {
			q.u[l.Field] = v.U
		}
		bit := uint32(1) << l.Field
		if q.have&bit == 0 {
			q.have |= bit
			if bit&queueFieldMask != 0 {
				d.qdirty = true
			}
		}
	case l.Field == PortSpeed:
		if p == nil {
			p = d.pstateFor(l.Port)
		}
		p.speed, p.has = v.F, true
	}
}

// unmirror removes a mirrored leaf.
func (d *Decoder) unmirror(l Leaf) {
	switch {
	case snapField(l.Field):
		if q := d.qs[qid{l.Port, l.Index}]; q != nil {
			bit := uint32(1) << l.Field
			if q.have&bit != 0 && bit&queueFieldMask != 0 {
				d.qdirty = true
			}
			q.have &^= bit
		}
	case l.Field == PortSpeed:
		if p := d.ports[l.Port]; p != nil {
			p.has = false
		}
	}
}

// prune forgets queues and ports left with no leaves (after deletes). The
// path cache, which points at them, is cleared when any are forgotten.
func (d *Decoder) prune() {
	pruned := false
	used := map[*pstate]bool{}
	for id, q := range d.qs {
		if q.have == 0 {
			delete(d.qs, id)
			pruned = true
		} else {
			used[q.port] = true
		}
	}
	for name, p := range d.ports {
		if !p.has && !used[p] {
			delete(d.ports, name)
			pruned = true
		}
	}
	if pruned {
		d.forgetPaths()
	}
	d.qdirty = true
}

// mirrored reports whether a field's leaves are kept in a qstate or
// pstate instead of the tree: the state leaves that change every sample
// and that Snapshot reads for every queue.
func mirrored(f Field) bool { return snapField(f) || f == PortSpeed }

// leaf returns the value of a leaf wherever it is kept.
func (d *Decoder) leaf(l Leaf) (Val, bool) {
	switch {
	case snapField(l.Field):
		q := d.qs[qid{l.Port, l.Index}]
		if q == nil || q.have&(1<<l.Field) == 0 || l.PGs != "" || l.Name != "" {
			return Val{}, false
		}
		if l.Field == AvgQueue {
			return Val{F: q.avg}, true
		}
		return Val{U: q.u[l.Field]}, true
	case l.Field == PortSpeed:
		p := d.ports[l.Port]
		if p == nil || !p.has || l.Index != 0 || l.PGs != "" || l.Name != "" {
			return Val{}, false
		}
		return Val{F: p.speed}, true
	}
	v, ok := d.tree[l]
	return v, ok
}

// leaves returns every leaf the decoder holds, as one tree.
func (d *Decoder) leaves() Tree {
	t := d.tree.Clone()
	for _, q := range d.qs {
		for f := TxPkts; f <= PFCMinHeadroom; f++ {
			l := Leaf{Field: f, Port: q.id.port, Index: q.id.q}
			if v, ok := d.leaf(l); ok {
				t[l] = v
			}
		}
	}
	for name := range d.ports {
		l := Leaf{Field: PortSpeed, Port: name}
		if v, ok := d.leaf(l); ok {
			t[l] = v
		}
	}
	return t
}

// deletePath removes every leaf the delete path selects, from the tree and
// the mirrors, and returns how many went.
func (d *Decoder) deletePath(db string, el []*gnmi.PathElem) int {
	n := deleteMatching(d.t.Dialect, d.tree, db, el)
	for _, q := range d.qs {
		for f := TxPkts; f <= PFCMinHeadroom; f++ {
			if q.have&(1<<f) == 0 {
				continue
			}
			l := Leaf{Field: f, Port: q.id.port, Index: q.id.q}
			if ldb, lel := LeafPath(d.t.Dialect, l); ldb == db && Match(el, lel) {
				d.unmirror(l)
				n++
			}
		}
	}
	for name, p := range d.ports {
		if !p.has {
			continue
		}
		l := Leaf{Field: PortSpeed, Port: name}
		if ldb, lel := LeafPath(d.t.Dialect, l); ldb == db && Match(el, lel) {
			d.unmirror(l)
			n++
		}
	}
	return n
}

// maxPaths bounds the path cache; a switch has a few thousand leaves. A
// client fed more distinct paths than that starts over.
const maxPaths = 1 << 16

// NewDecoder makes a decoder for target t. priorities, when given, limits
// snapshots to those queues (the lossless ones).
func NewDecoder(t Target, priorities ...int) *Decoder {
	d := &Decoder{t: t, tree: Tree{}, paths: map[string]int32{}, qs: map[qid]*qstate{}, ports: map[string]*pstate{},
		qdirty: true, pgdirty: true}
	if t.Ports != nil {
		d.wanted = map[string]bool{}
		for _, p := range t.Ports {
			d.wanted[p] = true
		}
	}
	if len(priorities) > 0 {
		d.prios = map[int]bool{}
		for _, p := range priorities {
			d.prios[p] = true
		}
	}
	for _, f := range required(t.Dialect) {
		d.req[f] = true
	}
	return d
}

// Reset forgets everything (for a client that wants a clean slate on
// reconnect; a full re-snapshot also simply overwrites).
func (d *Decoder) Reset() {
	d.tree = Tree{}
	d.ts, d.tsLeaf = 0, 0
	clear(d.qs)
	clear(d.ports)
	clear(d.known)
	d.forgetPaths()
	d.qlist, d.qdirty = nil, true
	d.pgs, d.pgdirty = nil, true
	d.aliases = nil
	d.cables, d.cdirty = nil, true
	d.bindGen++
}

// isQueueField reports whether a field makes its (port, index) a queue of
// the snapshot.
func isQueueField(f Field) bool { return f >= TxPkts && f <= AvgQueue }

// parseLeaf is ParseLeaf for this decoder's dialect, with a SONiC port
// alias mapped to the port's name.
func (d *Decoder) parseLeaf(db string, el []*gnmi.PathElem) (Leaf, error) {
	l, err := ParseLeaf(d.t.Dialect, db, d.t.queueNamed(el, true))
	if err == nil && len(d.aliases) > 0 && l.Port != "" && l.Field != PortAlias && l.Field != PortSpeed && l.Field != PortCable && l.Field != PortMTU {
		if name, ok := d.aliases[l.Port]; ok {
			l.Port = name
		}
	}
	if err == nil && l.Port != "" {
		if perr := d.admitPort(l.Port); perr != nil {
			return Leaf{}, perr
		}
	}
	return l, err
}

// aliasesChanged rebuilds the alias map from the tree; state decoded under
// an alias before the alias was known is dropped (the next sample brings it
// under the port's name) and cached paths, which hold mapped leaves, go.
func (d *Decoder) aliasesChanged() {
	m := map[string]string{}
	for l, v := range d.tree {
		if l.Field == PortAlias && v.S != "" && v.S != l.Port {
			m[v.S] = l.Port
		}
	}
	d.aliases = m
	for id := range d.qs {
		if _, ok := m[id.port]; ok {
			delete(d.qs, id)
		}
	}
	for alias := range m { // an alias is no port of its own: not one to forget later
		delete(d.ports, alias)
		delete(d.known, alias)
	}
	d.forgetPaths()
	d.qdirty = true
}

// set stores a leaf in the tree or its qstate/pstate, keeping the queue
// list and PG bindings in step (q, p: the leaf's qstate/pstate if known).
func (d *Decoder) set(l Leaf, v Val, q *qstate, p *pstate) {
	if mirrored(l.Field) {
		d.mirror(l, v, q, p)
		return
	}
	if l.Field == PGProfile || l.Field == QueueProfile {
		if old, ok := d.tree[l]; !ok || old != v {
			d.pgdirty = d.pgdirty || l.Field == PGProfile
			d.bindGen++
		}
	}
	if l.Field == PortAlias {
		if old, ok := d.tree[l]; !ok || old != v {
			d.tree[l] = v
			d.aliasesChanged()
			return
		}
	}
	d.cdirty = d.cdirty || l.Field == PortCable || l.Field == PortMTU
	d.tree[l] = v
}

// drop removes a leaf, keeping the queue list and PG bindings in step.
func (d *Decoder) drop(l Leaf) {
	if mirrored(l.Field) {
		d.unmirror(l)
		return
	}
	if _, ok := d.tree[l]; !ok {
		return
	}
	delete(d.tree, l)
	d.cdirty = d.cdirty || l.Field == PortCable || l.Field == PortMTU
	if l.Field == PortAlias {
		d.aliasesChanged()
	}
	if l.Field == PGProfile || l.Field == QueueProfile {
		d.pgdirty = d.pgdirty || l.Field == PGProfile
		d.bindGen++
	}
}

// resolve splits a full path into database and leaf elements for this
// target, checking target and namespace. ok=false means "not for us".
func (d *Decoder) route(prefix, p *gnmi.Path) (db string, el []*gnmi.PathElem, err error) {
	el = FullElems(prefix, p)
	target := prefix.GetTarget()
	if p.GetTarget() != "" {
		target = p.GetTarget()
	}
	return Route(d.t.Dialect, d.t.Namespace, d.t.Name, target, originOf(prefix, p), el)
}

func originOf(prefix, p *gnmi.Path) string {
	if p.GetOrigin() != "" {
		return p.GetOrigin()
	}
	return prefix.GetOrigin()
}

// Route interprets the addressing of a path for a switch called name: for
// openconfig the target must be empty or name; for sonic the database is
// the target (or, with origin "sonic-db", the first element) and a
// namespace element follows when namespace is set. It returns the
// database and the remaining elements.
func Route(dl Dialect, namespace, name, target, origin string, el []*gnmi.PathElem) (string, []*gnmi.PathElem, error) {
	if dl != Sonic {
		if target != "" && target != name {
			return "", nil, fmt.Errorf("target %q is not %q", target, name)
		}
		return "", el, nil
	}
	db := target
	if i := strings.IndexByte(db, '/'); i > 0 {
		// sonic-gnmi's multi-namespace form: prefix.target "COUNTERS_DB/asic0"
		ns := db[i+1:]
		db = db[:i]
		if namespace != "" && ns != namespace {
			return "", nil, fmt.Errorf("target %q names namespace %q, not %q", target, ns, namespace)
		}
		namespace = "" // no namespace element follows then
	}
	if origin == "sonic-db" || db == "" {
		if len(el) == 0 {
			return "", nil, fmt.Errorf("sonic path %s names no database (want prefix.target %s or %s)", PathString(el), ConfigDB, CountersDB)
		}
		db, el = el[0].GetName(), el[1:]
	}
	if db != ConfigDB && db != CountersDB {
		return "", nil, fmt.Errorf("database %q is not %s or %s", db, ConfigDB, CountersDB)
	}
	switch {
	case namespace != "":
		if len(el) == 0 || el[0].GetName() != namespace {
			return "", nil, fmt.Errorf("sonic path %s lacks namespace element %q", PathString(el), namespace)
		}
		el = el[1:]
	case origin == "sonic-db" && len(el) > 0 && el[0].GetName() == "localhost":
		// sonic-gnmi's write form /CONFIG_DB/localhost/TABLE/KEY/FIELD
		el = el[1:]
	}
	return db, el, nil
}

// Apply folds one notification into the decoder's state. Malformed values
// (bad type, negative, unparsable) are skipped and reported; the leaf they
// would have set is dropped so that the queue it belongs to is incomplete
// rather than wrong. Leaves this package does not know are ignored.
func (d *Decoder) Apply(n *gnmi.Notification) error {
	var errs []error
	counters := false
	for _, p := range n.GetDelete() {
		db, el, err := d.route(n.GetPrefix(), p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: delete: %v", d.t.Name, err))
			continue
		}
		d.deleteAndRebind(db, d.t.queueNamed(el, true))
	}
	d.prefixKey(n.GetPrefix())
	for _, u := range n.GetUpdate() {
		if !d.general {
			if l, ok, err := d.applyScalar(n.GetPrefix(), u); ok {
				if err != nil {
					errs = append(errs, err)
				} else if isQueueField(l.Field) {
					counters = true
				}
				continue
			}
		}
		db, el, err := d.route(n.GetPrefix(), u.GetPath())
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", d.t.Name, err))
			continue
		}
		if d.t.Dialect == Sonic && db == ConfigDB {
			d.emptyEntries(el, u.GetVal())
		}
		leaves, err := flatten(u.GetVal())
		if err != nil {
			if l, perr := d.parseLeaf(db, el); perr == nil {
				d.drop(l)
			}
			errs = append(errs, fmt.Errorf("%s %s: %v", d.t.Name, PathString(el), err))
			continue
		}
		for _, fl := range leaves {
			full := el
			if len(fl.rel) > 0 {
				full = join(el, fl.rel)
			}
			l, err := d.parseLeaf(db, full)
			if err != nil {
				switch {
				case errors.Is(err, ErrUnknownKey):
					d.skipFor(err).Count++
				case !errors.Is(err, ErrUnknownPath):
					errs = append(errs, fmt.Errorf("%s: %v", d.t.Name, err))
				}
				continue
			}
			v, err := DecodeVal(d.t.Dialect, l, fl.val)
			if err != nil {
				d.drop(l)
				errs = append(errs, fmt.Errorf("%s %s: %v", d.t.Name, PathString(full), err))
				continue
			}
			d.set(l, v, nil, nil)
			if isQueueField(l.Field) {
				counters = true
			}
		}
	}
	if n.GetTimestamp() > d.ts {
		d.ts = n.GetTimestamp()
	}
	if counters && n.GetTimestamp() > d.tsLeaf {
		d.tsLeaf = n.GetTimestamp()
	}
	return errors.Join(errs...)
}

// emptyEntries takes the empty objects sonic-gnmi sends for a CONFIG_DB
// entry a field or the whole of which was deleted ({"Ethernet0|3": {}} on
// /QUEUE, or {} on /QUEUE/Ethernet0|3; it never says which, nor sends the
// fields left): the entry's leaves are dropped, as unknown, and the entry
// is noted for Emptied, whose caller reads the switch afresh.
func (d *Decoder) emptyEntries(el []*gnmi.PathElem, tv *gnmi.TypedValue) {
	b := tv.GetJsonIetfVal()
	if len(b) == 0 {
		b = tv.GetJsonVal()
	}
	if len(b) == 0 || len(el) < 1 || len(el) > 2 {
		return
	}
	var entries []*gnmi.PathElem
	if len(el) == 2 {
		if isEmptyObject(b) {
			entries = append(entries, el[1])
		}
	} else {
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if isEmptyObject(m[k]) {
				entries = append(entries, &gnmi.PathElem{Name: k})
			}
		}
	}
	for _, k := range entries {
		p := []*gnmi.PathElem{el[0], k}
		d.deleteAndRebind(ConfigDB, p)
		d.emptied = append(d.emptied, PathString(p))
	}
}

// deleteAndRebind deletes the leaves under el of db and, when there were
// any, works out the bindings (aliases, PGs, profiles) afresh.
func (d *Decoder) deleteAndRebind(db string, el []*gnmi.PathElem) {
	if d.deletePath(db, el) > 0 {
		if len(d.aliases) > 0 {
			d.aliasesChanged()
		}
		d.prune()
		d.pgdirty, d.cdirty = true, true
		d.bindGen++
	}
}

// isEmptyObject says whether b is the JSON object {}.
func isEmptyObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) >= 2 && b[0] == '{' && len(bytes.TrimSpace(b[1:len(b)-1])) == 0 && b[len(b)-1] == '}'
}

// Emptied returns and forgets the CONFIG_DB entries sonic-gnmi reported
// emptied (a field or the entry deleted) since the last call: their
// leaves are dropped, and what is left of them is known only by reading
// the switch again (a new session's initial dump).
func (d *Decoder) Emptied() []string {
	e := d.emptied
	d.emptied = nil
	return e
}

// applyScalar is Apply's fast path for an update carrying one scalar (a
// typed scalar or a plain JSON token) on a path whose routing and leaf
// parse without error: it gives the same result and error as the general
// path without re-parsing the path or decoding JSON. ok=false hands the
// update to the general path; l is the leaf set (Field 0 if none).
func (d *Decoder) applyScalar(prefix *gnmi.Path, u *gnmi.Update) (l Leaf, ok bool, err error) {
	tv := u.GetVal()
	switch v := tv.GetValue().(type) {
	case *gnmi.TypedValue_JsonIetfVal:
		if !fastJSON(v.JsonIetfVal, &d.sc) {
			return Leaf{}, false, nil
		}
	case *gnmi.TypedValue_JsonVal:
		if !fastJSON(v.JsonVal, &d.sc) {
			return Leaf{}, false, nil
		}
	default:
		if scalarOf(tv, &d.sc) != nil {
			return Leaf{}, false, nil
		}
	}
	key, cacheable := d.pathKey(u.GetPath())
	ent, hit := d.lookupPath(key)
	if !hit {
		db, el, rerr := d.route(prefix, u.GetPath())
		if rerr != nil {
			return Leaf{}, false, nil
		}
		pl, perr := d.parseLeaf(db, el)
		switch {
		case perr == nil:
			ent = pathEnt{leaf: internLeaf(pl), known: true}
			switch {
			case snapField(pl.Field):
				ent.q = d.qstateFor(ent.leaf.Port, ent.leaf.Index)
			case pl.Field == PortSpeed:
				ent.p = d.pstateFor(ent.leaf.Port)
			}
		case errors.Is(perr, ErrUnknownPath):
			ent = pathEnt{}
		case errors.Is(perr, ErrUnknownKey):
			ent = pathEnt{skip: d.skipIndex(perr)} // counted below, as on a cache hit
		default:
			return Leaf{}, false, nil
		}
		if cacheable {
			d.addPath(key, ent)
		}
	}
	if !ent.known {
		if ent.skip != 0 {
			d.skipList[ent.skip-1].Count++
		}
		return Leaf{}, true, nil
	}
	v, err := decodeScal(d.t.Dialect, ent.leaf, &d.sc)
	d.sc = scal{} // keep no reference to the notification
	if err != nil {
		d.drop(ent.leaf)
		_, el, _ := d.route(prefix, u.GetPath())
		return Leaf{}, true, fmt.Errorf("%s %s: %v", d.t.Name, PathString(el), err)
	}
	d.set(ent.leaf, v, ent.q, ent.p)
	return ent.leaf, true, nil
}

// internLeaf copies a leaf's strings so that a cached leaf (and the tree
// keys made from it) keep no notification alive.
func internLeaf(l Leaf) Leaf {
	l.Port, l.PGs, l.Name = strings.Clone(l.Port), strings.Clone(l.PGs), strings.Clone(l.Name)
	return l
}

// pathKey encodes everything routing and leaf parsing look at into
// d.kbuf: the prefix's part (target, origin and elements, made once per
// notification by prefixKey into d.pbuf) followed by the update path's
// own target, origin and elements, each string length-prefixed. Elements
// with more than one key give cacheable=false (their key order is not
// fixed); ecntune's paths have at most one.
func (d *Decoder) pathKey(p *gnmi.Path) (key []byte, cacheable bool) {
	b := append(d.kbuf[:0], d.pbuf...)
	b = appendLP(b, p.GetTarget())
	b = appendLP(b, p.GetOrigin())
	b, cacheable = appendElemsKey(b, p.GetElem())
	d.kbuf = b
	return b, cacheable && d.pcache
}

// prefixKey encodes a notification's prefix into d.pbuf for pathKey.
func (d *Decoder) prefixKey(prefix *gnmi.Path) {
	b := appendLP(d.pbuf[:0], prefix.GetTarget())
	b = appendLP(b, prefix.GetOrigin())
	b, d.pcache = appendElemsKey(b, prefix.GetElem())
	d.pbuf = b
}

func appendElemsKey(b []byte, els []*gnmi.PathElem) ([]byte, bool) {
	cacheable := true
	for _, e := range els {
		b = appendLP(b, e.GetName())
		k := e.GetKey()
		if len(k) > 1 {
			cacheable = false
		}
		b = binary.AppendUvarint(b, uint64(len(k)))
		if len(k) == 1 {
			// Looking the usual key names up is cheaper than ranging.
			if kn, kv, ok := commonKey(k); ok {
				b = appendLP(b, kn)
				b = appendLP(b, kv)
				continue
			}
		}
		for kn, kv := range k {
			b = appendLP(b, kn)
			b = appendLP(b, kv)
		}
	}
	return b, cacheable
}

// commonKey finds the key of a one-key element among the list keys
// ecntune's paths use.
func commonKey(k map[string]string) (name, val string, ok bool) {
	for _, n := range [...]string{"name", "interface-id", "index"} {
		if v, ok := k[n]; ok {
			return n, v, true
		}
	}
	return "", "", false
}

func appendLP(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// deleteMatching removes every leaf of t whose path the delete path selects.
func deleteMatching(dl Dialect, t Tree, db string, el []*gnmi.PathElem) int {
	n := 0
	for l := range t {
		ldb, lel := LeafPath(dl, l)
		if ldb == db && Match(el, lel) {
			delete(t, l)
			n++
		}
	}
	return n
}

// required lists the queue fields a sample cannot do without: the basic
// queue counters every profile serves. Everything else is optional and
// reported in QueueSample.Missing.
func required(Dialect) []Field {
	return []Field{TxPkts, TxBytes, DropPkts, DropBytes}
}

// optionalFields are the per-queue state fields whose absence a sample
// reports in Missing rather than leaving the queue out.
var optionalFields = []Field{MarkedPkts, MarkedBytes, CurQueue, MaxQueue, AvgQueue, PFCRxFrames, PFCTxFrames, PFCPaused, PFCXoff, PFCMinHeadroom}

var fieldNames = map[Field]string{TxPkts: "tx packets", TxBytes: "tx bytes", DropPkts: "dropped packets",
	DropBytes: "dropped bytes", MarkedPkts: "ECN-marked packets", MarkedBytes: "ECN-marked bytes",
	MaxQueue: "max queue length", AvgQueue: "avg queue length", PFCRxFrames: "PFC rx frames", PFCTxFrames: "PFC tx frames"}

type qid struct {
	port string
	q    int
}

// queueList returns the queues of the snapshot in order: every (port,
// index) with a queue counter or length, limited to the decoder's
// priorities, sorted by port (naturally) and index.
func (d *Decoder) queueList() []*qstate {
	out := d.qlist[:0]
	for _, q := range d.qs {
		if q.have&queueFieldMask != 0 && (d.prios == nil || d.prios[q.id.q]) {
			out = append(out, q)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].id.port != out[j].id.port {
			return env.NaturalCompare(out[i].id.port, out[j].id.port) < 0
		}
		return out[i].id.q < out[j].id.q
	})
	return out
}

// AbsentQueues lists the queue indices the decoder is limited to
// (NewDecoder's priorities) that no port reports, while the switch reports
// queues of other indices (have): a queues: list naming a queue the switch
// does not have. Both nil when every priority is reported, or no queue is.
func (d *Decoder) AbsentQueues() (absent, have []int) {
	if d.prios == nil {
		return nil, nil
	}
	seen := map[int]bool{}
	for _, q := range d.qs {
		if q.have&queueFieldMask != 0 && (d.wanted == nil || d.wanted[q.id.port]) {
			seen[q.id.q] = true
		}
	}
	if len(seen) == 0 {
		return nil, nil
	}
	for p := range d.prios {
		if !seen[p] {
			absent = append(absent, p)
		}
	}
	if len(absent) == 0 {
		return nil, nil
	}
	for q := range seen {
		have = append(have, q)
	}
	sort.Ints(absent)
	sort.Ints(have)
	return absent, have
}

// Snapshot returns the switch's current state for every queue whose data is
// complete, stamped with the newest timestamp of a notification that carried
// queue counters. Incomplete lists the queues left out and why.
func (d *Decoder) Snapshot() (snap env.Snapshot, incomplete []string) {
	snap = env.Snapshot{Target: d.t.Name, TimeNs: d.tsLeaf}
	d.forgetStale()
	if d.qdirty {
		d.qlist, d.qdirty = d.queueList(), false
	}
	if d.pgdirty {
		d.pgs, d.pgdirty = pgIndex(d.tree), false
	}
	buf, hasBuf := d.tree[Leaf{Field: BufferSize}]
	var reqMask uint32
	for f := TxPkts; f <= PFCMinHeadroom; f++ {
		if d.req[f] {
			reqMask |= 1 << f
		}
	}
	snap.Queues = make([]env.QueueSample, 0, len(d.qlist))
	var missing []string
	for _, q := range d.qlist {
		missing = missing[:0]
		if m := reqMask &^ q.have; m != 0 {
			for f := TxPkts; f <= PFCMinHeadroom; f++ {
				if m&(1<<f) != 0 {
					missing = append(missing, fieldNames[f])
				}
			}
		}
		// q.u of an absent field may hold an old value: read through
		// have: an absent leaf reads as zero.
		u := func(f Field) uint64 {
			if q.have&(1<<f) == 0 {
				return 0
			}
			return q.u[f]
		}
		s := env.QueueSample{Key: env.QueueKey{Target: d.t.Name, Port: q.id.port, Queue: q.id.q}}
		s.TxPkts, s.TxBytes = u(TxPkts), u(TxBytes)
		s.DropPkts, s.DropBytes = u(DropPkts), u(DropBytes)
		s.MarkedPkts, s.MarkedBytes = u(MarkedPkts), u(MarkedBytes)
		s.CurQueueBytes = int64(min(u(CurQueue), math.MaxInt64))
		s.MaxQueueBytes = int64(min(u(MaxQueue), math.MaxInt64))
		if q.have&(1<<AvgQueue) != 0 {
			s.AvgQueueBytes = q.avg
		}
		s.PauseRx, s.PauseTx = u(PFCRxFrames), u(PFCTxFrames)
		s.PausedNs = u(PFCPaused)
		if d.t.Dialect == Sonic {
			s.PausedNs *= 1000
		}
		s.XoffBytes = int64(min(u(PFCXoff), math.MaxInt64))
		s.MinHeadroomBytes = int64(min(u(PFCMinHeadroom), math.MaxInt64))
		if q.port.has {
			s.RateBps = q.port.speed
		} else {
			missing = append(missing, "port speed")
		}
		if hasBuf {
			s.BufferBytes = int64(min(buf.U, math.MaxInt64))
		}
		s.Missing = d.missingOf(q, hasBuf)
		var m []string
		s.Setting, m = resolveSetting(d.t.Dialect, d.tree, d.pgs, q.id.port, q.id.q)
		missing = append(missing, m...)
		d.headroomOf(&s)
		if len(missing) > 0 {
			incomplete = append(incomplete, fmt.Sprintf("%s/%s/q%d: missing %s", d.t.Name, q.id.port, q.id.q, strings.Join(missing, ", ")))
			continue
		}
		if err := settingFault(s.Setting); err != nil {
			incomplete = append(incomplete, fmt.Sprintf("%s/%s/q%d: %v", d.t.Name, q.id.port, q.id.q, err))
			continue
		}
		snap.Queues = append(snap.Queues, s)
	}
	if len(snap.Queues) == 0 {
		snap.Queues = nil
	}
	return snap, incomplete
}

// DefaultMTU is the port MTU a lossless floor is computed for where a
// port's mtu is not known: SONiC's default. A port's MTU is its largest IP
// packet; EthernetOverhead (MAC header and FCS) makes it the largest frame.
const (
	DefaultMTU       = 9100
	EthernetOverhead = 18
)

// floorFromCable is the lossless floor of a PG of port at rateBps from the
// cable length the switch's CONFIG_DB states for the port (CABLE_LENGTH,
// what SONiC's buffer manager sizes the headroom for) and the port's mtu
// (DefaultMTU if unknown): env.LosslessFloor. 0 when the switch states no
// cable length for the port. SONiC exports a PG's headroom (its profile's
// xoff) but not this floor. Frames are the mtu and EthernetOverhead.
func (d *Decoder) floorFromCable(port string, rateBps float64) int64 {
	if d.cdirty {
		d.cables, d.cdirty = nil, false
		for l, v := range d.tree {
			if l.Field != PortCable {
				continue
			}
			if d.cables == nil {
				d.cables = map[string]portCable{}
			}
			if c, ok := d.cables[l.Port]; !ok || v.F > c.meters {
				frame := DefaultMTU + EthernetOverhead
				if m, ok := d.tree[Leaf{Field: PortMTU, Port: l.Port}]; ok {
					frame = int(m.U) + EthernetOverhead
				}
				d.cables[l.Port] = portCable{meters: v.F, frame: frame}
			}
		}
	}
	c, ok := d.cables[port]
	if !ok {
		return 0
	}
	return env.LosslessFloor(rateBps, c.meters, c.frame)
}

// portCable is what a port's lossless floor is estimated from.
type portCable struct {
	meters float64
	frame  int
}

// headroomOf completes s's headroom: whether the switch reports it, and,
// where the switch shows a headroom but no floor, the floor estimated from
// its cable length.
func (d *Decoder) headroomOf(s *env.QueueSample) {
	s.HeadroomReported = headroomReported(d.t.Dialect, d.tree, d.pgs, s.Key.Port, s.Key.Queue)
	if s.MinHeadroomBytes == 0 && s.Setting.HeadroomBytes > 0 && s.RateBps > 0 {
		s.MinHeadroomBytes = d.floorFromCable(s.Key.Port, s.RateBps)
		if s.MinHeadroomBytes > 0 {
			s.Missing &^= env.TelHeadroom
			s.FloorEstimated = true
		}
	}
}

// missingOf is the optional telemetry queue q lacks: what did not arrive
// (what its device does not serve, a subscription group the switch
// refused, a leaf it left out). What arrives counts, whatever the device
// profile says.
func (d *Decoder) missingOf(q *qstate, hasBuf bool) env.Telemetry {
	var m env.Telemetry
	for _, f := range optionalFields {
		if q.have&(1<<f) == 0 {
			m |= telemetryOf(f)
		}
	}
	if !hasBuf {
		m |= env.TelBuffer
	}
	return m
}

// Setting returns the current setting of a queue as the decoder knows it.
func (d *Decoder) Setting(port string, q int) (env.Setting, error) {
	s, missing := resolveSetting(d.t.Dialect, d.tree, pgIndex(d.tree), port, q)
	if len(missing) > 0 {
		return s, fmt.Errorf("%s/%s/q%d: setting unknown: missing %s", d.t.Name, port, q, strings.Join(missing, ", "))
	}
	if err := settingFault(s); err != nil {
		return s, fmt.Errorf("%s/%s/q%d: %w", d.t.Name, port, q, err)
	}
	return s, nil
}

// settingFault says why a queue's setting as the switch reports it cannot
// be what it runs: ECN thresholds out of order (a garbled value, or a
// switch that reports one threshold in other units). Every leaf may be
// well-formed on its own; together they are malformed telemetry, and the
// queue is left out of the snapshot, so that nothing is decided, planned
// or restored from it, until the switch reports a consistent setting.
func settingFault(s env.Setting) error {
	if s.KminBytes > s.KmaxBytes {
		return fmt.Errorf("malformed setting: ECN min threshold %d B above max threshold %d B (the queue is held until the switch reports them in order)", s.KminBytes, s.KmaxBytes)
	}
	return nil
}

// Binding returns how a queue's ECN profile (and SONiC buffer profile) is
// bound, for SetRequest.
func (d *Decoder) Binding(port string, q int) Binding {
	return bindingOf(d.t.Dialect, d.tree, port, q)
}

// Tree returns a copy of the decoded leaves.
func (d *Decoder) Tree() Tree { return d.leaves() }

// ProfilesOf returns the names of the profiles (port, q) is bound to: its
// queue's ECN profile and (sonic) the buffer profile of its PG; "" for
// none.
func (d *Decoder) ProfilesOf(port string, q int) (ecn, buffer string) {
	if v, ok := d.tree[Leaf{Field: QueueProfile, Port: port, Index: q}]; ok {
		ecn = v.S
	}
	if d.t.Dialect == Sonic && q >= 0 && q < 8 {
		if d.pgdirty {
			d.pgs, d.pgdirty = pgIndex(d.tree), false
		}
		if a := d.pgs[port]; a != nil {
			buffer = a[q].profile
		}
	}
	return ecn, buffer
}

// Profiles returns the profiles bound to the decoder's queues (those of
// its priorities on every port, or every queue when it has none), each
// once and sorted: what to subscribe to with ProfileSubscription.
func (d *Decoder) Profiles() (ecn, buffer []string) {
	want := func(q int) bool { return d.prios == nil || d.prios[q] }
	es, bs := map[string]bool{}, map[string]bool{}
	for l, v := range d.tree {
		if l.Field == QueueProfile && want(l.Index) && v.S != "" {
			es[v.S] = true
		}
	}
	if d.t.Dialect == Sonic {
		if d.pgdirty {
			d.pgs, d.pgdirty = pgIndex(d.tree), false
		}
		for _, a := range d.pgs {
			for q := range a {
				if want(q) && a[q].profile != "" {
					bs[a[q].profile] = true
				}
			}
		}
	}
	return sortedKeys(es), sortedKeys(bs)
}

func sortedKeys(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// BindingsVersion changes whenever a queue's profile binding or a sonic
// PG's buffer-profile binding is set to a new value or removed (and on
// Reset): a client compares it to know when to look at Profiles again.
func (d *Decoder) BindingsVersion() uint64 { return d.bindGen }

// SetTarget changes the decoder's target description (its device, once
// inferred); the decoded state is kept.
func (d *Decoder) SetTarget(t Target) { d.t = t }

// CountersTime is the timestamp Snapshot stamps: the newest of a
// notification that carried queue counters.
func (d *Decoder) CountersTime() int64 { return d.tsLeaf }

// SetCountersTime sets the timestamp Snapshot stamps, for a client that
// judges the switch's timestamps (one stamped far from the others is not
// the sample's time; a clock that stepped back is taken as it is now).
func (d *Decoder) SetCountersTime(ts int64) { d.tsLeaf = ts }
