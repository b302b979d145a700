package gnmipath

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// refDecoder is the decoder as it was before the fast path: every update
// routed, flattened, parsed and decoded on its own, every leaf in one
// tree. It is the reference the Decoder must equal.
type refDecoder struct {
	t      Target
	prios  map[int]bool
	tree   Tree
	ts     int64
	tsLeaf int64
}

func newRefDecoder(t Target, priorities ...int) *refDecoder {
	d := &refDecoder{t: t, tree: Tree{}}
	if len(priorities) > 0 {
		d.prios = map[int]bool{}
		for _, p := range priorities {
			d.prios[p] = true
		}
	}
	return d
}

func (d *refDecoder) reset() { d.tree = Tree{}; d.ts, d.tsLeaf = 0, 0 }

func (d *refDecoder) route(prefix, p *gnmi.Path) (db string, el []*gnmi.PathElem, err error) {
	el = FullElems(prefix, p)
	target := prefix.GetTarget()
	if p.GetTarget() != "" {
		target = p.GetTarget()
	}
	return Route(d.t.Dialect, d.t.Namespace, d.t.Name, target, originOf(prefix, p), el)
}

func (d *refDecoder) apply(n *gnmi.Notification) error {
	var errs []error
	counters := false
	for _, p := range n.GetDelete() {
		db, el, err := d.route(n.GetPrefix(), p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: delete: %v", d.t.Name, err))
			continue
		}
		deleteMatching(d.t.Dialect, d.tree, db, el)
	}
	for _, u := range n.GetUpdate() {
		db, el, err := d.route(n.GetPrefix(), u.GetPath())
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", d.t.Name, err))
			continue
		}
		leaves, err := flatten(u.GetVal())
		if err != nil {
			if l, perr := ParseLeaf(d.t.Dialect, db, el); perr == nil {
				delete(d.tree, l)
			}
			errs = append(errs, fmt.Errorf("%s %s: %v", d.t.Name, PathString(el), err))
			continue
		}
		for _, fl := range leaves {
			full := el
			if len(fl.rel) > 0 {
				full = join(el, fl.rel)
			}
			l, err := ParseLeaf(d.t.Dialect, db, full)
			if err != nil {
				if !errors.Is(err, ErrUnknownPath) {
					errs = append(errs, fmt.Errorf("%s: %v", d.t.Name, err))
				}
				continue
			}
			v, err := DecodeVal(d.t.Dialect, l, fl.val)
			if err != nil {
				delete(d.tree, l)
				errs = append(errs, fmt.Errorf("%s %s: %v", d.t.Name, PathString(full), err))
				continue
			}
			d.tree[l] = v
			if l.Field >= TxPkts && l.Field <= AvgQueue {
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

// treeQueues lists the queues of a snapshot by scanning the whole tree.
func treeQueues(d *refDecoder, tree Tree) []qid {
	seen := map[qid]bool{}
	for l := range tree {
		if l.Field >= TxPkts && l.Field <= AvgQueue && (d.prios == nil || d.prios[l.Index]) {
			seen[qid{l.Port, l.Index}] = true
		}
	}
	out := make([]qid, 0, len(seen))
	for q := range seen {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].port != out[j].port {
			return env.NaturalCompare(out[i].port, out[j].port) < 0
		}
		return out[i].q < out[j].q
	})
	return out
}

// snapshot is the Snapshot worked out from the whole tree by lookups
// alone, as the decoder did before it kept per-queue state.
func (d *refDecoder) snapshot() (snap env.Snapshot, incomplete []string) {
	snap = env.Snapshot{Target: d.t.Name, TimeNs: d.tsLeaf}
	tree := d.tree
	pgs := pgIndex(tree)
	req := required(d.t.Dialect)
	for _, id := range treeQueues(d, tree) {
		var missing []string
		get := func(f Field) Val {
			v, ok := tree[Leaf{Field: f, Port: id.port, Index: id.q}]
			if !ok {
				for _, r := range req {
					if r == f {
						missing = append(missing, fieldNames[f])
					}
				}
			}
			return v
		}
		s := env.QueueSample{Key: env.QueueKey{Target: d.t.Name, Port: id.port, Queue: id.q}}
		s.TxPkts, s.TxBytes = get(TxPkts).U, get(TxBytes).U
		s.DropPkts, s.DropBytes = get(DropPkts).U, get(DropBytes).U
		s.MarkedPkts, s.MarkedBytes = get(MarkedPkts).U, get(MarkedBytes).U
		s.CurQueueBytes = int64(min(get(CurQueue).U, math.MaxInt64))
		s.MaxQueueBytes = int64(min(get(MaxQueue).U, math.MaxInt64))
		s.AvgQueueBytes = get(AvgQueue).F
		s.PauseRx, s.PauseTx = get(PFCRxFrames).U, get(PFCTxFrames).U
		s.PausedNs = get(PFCPaused).U
		if d.t.Dialect == Sonic {
			s.PausedNs *= 1000
		}
		s.XoffBytes = int64(min(get(PFCXoff).U, math.MaxInt64))
		s.MinHeadroomBytes = int64(min(get(PFCMinHeadroom).U, math.MaxInt64))
		if v, ok := tree[Leaf{Field: PortSpeed, Port: id.port}]; ok {
			s.RateBps = v.F
		} else {
			missing = append(missing, "port speed")
		}
		if v, ok := tree[Leaf{Field: BufferSize}]; ok {
			s.BufferBytes = int64(min(v.U, math.MaxInt64))
		} else {
			s.Missing |= env.TelBuffer
		}
		for _, f := range optionalFields {
			if _, ok := tree[Leaf{Field: f, Port: id.port, Index: id.q}]; !ok {
				s.Missing |= telemetryOf(f)
			}
		}
		var m []string
		s.Setting, m = resolveSetting(d.t.Dialect, tree, pgs, id.port, id.q)
		s.HeadroomReported = headroomReported(d.t.Dialect, tree, pgs, id.port, id.q)
		missing = append(missing, m...)
		if len(missing) > 0 {
			incomplete = append(incomplete, fmt.Sprintf("%s/%s/q%d: missing %s", d.t.Name, id.port, id.q, strings.Join(missing, ", ")))
			continue
		}
		snap.Queues = append(snap.Queues, s)
	}
	return snap, incomplete
}
