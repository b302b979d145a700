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

// event is one scheduled action. Ties in time are broken by seq, the order
// of scheduling, which makes runs deterministic.
type event struct {
	t    Time
	seq  uint64
	kind uint8
	a    int32
	b    uint32
}

func (e *event) before(o *event) bool {
	return e.t < o.t || (e.t == o.t && e.seq < o.seq)
}

// eventQueue is a 4-ary min-heap of events, by value: no allocation per event
// once it has grown to the run's working set.
type eventQueue struct {
	h   []event
	seq uint64
}

func (q *eventQueue) Len() int { return len(q.h) }

func (q *eventQueue) push(t Time, kind uint8, a int32, b uint32) {
	q.seq++
	e := event{t: t, seq: q.seq, kind: kind, a: a, b: b}
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
