package gnmipath

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ecntune/ecntune/env"
)

// treeQueues lists the queues of a snapshot by scanning the whole tree.
func treeQueues(d *Decoder) []qid {
	seen := map[qid]bool{}
	for l := range d.tree {
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
			return portLess(out[i].port, out[j].port)
		}
		return out[i].q < out[j].q
	})
	return out
}

// treeSnapshot is the Snapshot of a decoder worked out from its whole tree
// by lookups alone, as the decoder did before it kept mirrors: the
// reference the incremental Snapshot must equal.
func treeSnapshot(d *Decoder) (snap env.Snapshot, incomplete []string) {
	snap = env.Snapshot{Target: d.t.Name, TimeNs: d.tsLeaf}
	pgs := pgIndex(d.tree)
	req := required(d.t.Dialect)
	for _, id := range treeQueues(d) {
		var missing []string
		get := func(f Field) Val {
			v, ok := d.tree[Leaf{Field: f, Port: id.port, Index: id.q}]
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
		if v, ok := d.tree[Leaf{Field: PortSpeed, Port: id.port}]; ok {
			s.RateBps = v.F
		} else {
			missing = append(missing, "port speed")
		}
		if v, ok := d.tree[Leaf{Field: BufferSize}]; ok {
			s.BufferBytes = int64(min(v.U, math.MaxInt64))
		}
		var m []string
		s.Setting, m = resolveSetting(d.t.Dialect, d.tree, pgs, id.port, id.q)
		missing = append(missing, m...)
		if len(missing) > 0 {
			incomplete = append(incomplete, fmt.Sprintf("%s/%s/q%d: missing %s", d.t.Name, id.port, id.q, strings.Join(missing, ", ")))
			continue
		}
		snap.Queues = append(snap.Queues, s)
	}
	return snap, incomplete
}
