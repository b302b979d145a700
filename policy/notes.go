package policy

import "strings"

// notes appends notes to the reasons of a batch of decisions with one
// buffer for the batch: a wrapper that adds "; headroom ..." or "; alpha
// ..." to every queue's reason would otherwise make one string per queue
// every interval. add(i, note) queues note for ds[i] (a decision's notes
// one after the other: a note for an earlier decision after another's is
// lost); done writes the reasons.
type notes struct {
	ds   []Decision
	buf  []byte
	idx  []int
	ends []int
}

func newNotes(ds []Decision) *notes { return &notes{ds: ds} }

func (n *notes) add(i int, note string) {
	if len(n.idx) > 0 && n.idx[len(n.idx)-1] == i {
		n.buf = append(n.buf, note...) // a second note for the same decision
		n.ends[len(n.ends)-1] = len(n.buf)
		return
	}
	if n.buf == nil {
		n.buf = make([]byte, 0, len(n.ds)*(len(n.ds[i].Reason)+len(note)))
	}
	n.buf = append(n.buf, n.ds[i].Reason...)
	n.buf = append(n.buf, note...)
	n.idx = append(n.idx, i)
	n.ends = append(n.ends, len(n.buf))
}

func (n *notes) done() {
	all := string(n.buf)
	start := 0
	for k, i := range n.idx {
		n.ds[i].Reason = all[start:n.ends[k]]
		start = n.ends[k]
	}
}

// prefixReasons puts prefix before every reason of ds, with one buffer for
// the batch.
func prefixReasons(ds []Decision, prefix string) {
	n := 0
	for i := range ds {
		n += len(prefix) + len(ds[i].Reason)
	}
	buf := make([]byte, 0, n)
	for i := range ds {
		buf = append(buf, prefix...)
		buf = append(buf, ds[i].Reason...)
	}
	all := string(buf)
	start := 0
	for i := range ds {
		end := start + len(prefix) + len(ds[i].Reason)
		ds[i].Reason = all[start:end]
		start = end
	}
}

// HoldText is the part of a held decision's reason that says why, past the
// prefixes a wrapper puts before an inner policy's reason ("schedule step
// 2 (from 3ms): hold: WHY" gives WHY), for logs and tables. What the hold is
// comes from Decision.Held, never from the text.
func HoldText(reason string) string {
	if i := strings.LastIndex(reason, "hold: "); i >= 0 {
		return reason[i+len("hold: "):]
	}
	return reason
}

// heldIntervalWhy starts the reason of a hold outside the validated
// decision intervals (outsideSpan).
const heldIntervalWhy = "counters over "
