package simenv

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

// event is one scheduled action, 16 bytes so that a 4-ary heap node's
// children share one cache line. The kind sits in the top bits of ka. Events
// at the same instant come out in an order fixed by the heap's (deterministic)
// operations, so runs are reproducible.
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

func (e *event) before(o *event) bool { return e.t < o.t }

// eventQueue is a 4-ary min-heap of events, by value: no allocation per event
// once it has grown to the run's working set.
type eventQueue struct {
	h []event
}

func (q *eventQueue) Len() int { return len(q.h) }

func (q *eventQueue) push(t Time, kind uint8, a int32, b uint32) {
	e := event{t: t, ka: uint32(kind)<<kindShift | uint32(a), b: b}
	q.h = append(q.h, e)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !e.before(&q.h[p]) {
			break
		}
		q.h[i] = q.h[p]
		i = p
	}
	q.h[i] = e
}

func (q *eventQueue) peekTime() Time { return q.h[0].t }

func (q *eventQueue) pop() event {
	top := q.h[0]
	n := len(q.h) - 1
	last := q.h[n]
	q.h = q.h[:n]
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		end := c + 4
		if end > n {
			end = n
		}
		for j := c + 1; j < end; j++ {
			if q.h[j].before(&q.h[m]) {
				m = j
			}
		}
		if !q.h[m].before(&last) {
			break
		}
		q.h[i] = q.h[m]
		i = m
	}
	q.h[i] = last
	return top
}
