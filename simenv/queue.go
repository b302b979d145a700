package simenv

import "math/bits"

// event kinds
const (
	evTxDone uint8 = iota
	evArrive
	evFlowStart  // a: flow id
	evHostWake   // a: port id
	evRateDec    // a: flow id, b: generation
	evRateInc    // a: flow id, b: generation
	evRTO        // a: flow id, b: generation
	evGenerator  // a: workload index
	evCollective // a: workload index, b: iteration
)

// event is one scheduled action in 16 bytes, so the queue's buckets stay
// compact. The kind sits in the top bits of ka. Events at the same instant
// come out in an order fixed by the queue's (deterministic) operations, so
// runs are reproducible.
type event struct {
	t  Time
	ka uint32 // kind<<kindShift | a
	b  uint32
}

const (
	kindShift = 28
	aMask     = 1<<kindShift - 1
)

func (e *event) kind() uint8 { return uint8(e.ka >> kindShift) }
func (e *event) a() int32    { return int32(e.ka & aMask) }

// eventQueue is a radix heap: event times only grow (an event is never
// scheduled before the last one taken), so an event can be filed by the
// highest bit in which its time differs from the last time taken. Bucket 0
// holds events at exactly that time; when it runs dry, the lowest non-empty
// bucket's minimum becomes the new reference and that bucket's events are
// refiled into lower buckets. Each event is refiled a few times at most, so
// scheduling and taking cost O(1) amortised, with no per-event allocation once
// the buckets have grown. Events at the same instant leave in a fixed order
// (the last filed first), so runs are reproducible.
type eventQueue struct {
	last    Time
	n       int
	buckets [65][]event
}

// Len is the number of pending events.
func (q *eventQueue) Len() int { return q.n }

func (q *eventQueue) push(t Time, kind uint8, a int32, b uint32) {
	if t < q.last {
		// Only after a peek moved the reference past now and the caller
		// then scheduled something earlier (between RunUntil calls).
		q.rebase(t)
	}
	e := event{t: t, ka: uint32(kind)<<kindShift | uint32(a), b: b}
	i := bits.Len64(uint64(t ^ q.last))
	q.buckets[i] = append(q.buckets[i], e)
	q.n++
}

// rebase lowers the reference time to t and refiles every pending event.
func (q *eventQueue) rebase(t Time) {
	var all []event
	for i := range q.buckets {
		all = append(all, q.buckets[i]...)
		q.buckets[i] = q.buckets[i][:0]
	}
	q.last = t
	for _, e := range all {
		j := bits.Len64(uint64(e.t ^ t))
		q.buckets[j] = append(q.buckets[j], e)
	}
}

// refill makes bucket 0 non-empty (when any event is pending).
func (q *eventQueue) refill() {
	if len(q.buckets[0]) > 0 {
		return
	}
	i := 1
	for len(q.buckets[i]) == 0 {
		i++
	}
	b := q.buckets[i]
	m := b[0].t
	for _, e := range b[1:] {
		if e.t < m {
			m = e.t
		}
	}
	q.last = m
	for _, e := range b {
		j := bits.Len64(uint64(e.t ^ m))
		q.buckets[j] = append(q.buckets[j], e)
	}
	q.buckets[i] = b[:0]
}

func (q *eventQueue) peekTime() Time {
	q.refill()
	return q.last
}

func (q *eventQueue) pop() event {
	q.refill()
	b := q.buckets[0]
	e := b[len(b)-1]
	q.buckets[0] = b[:len(b)-1]
	q.n--
	return e
}
