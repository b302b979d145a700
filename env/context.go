package env

import "math"

// switchContext is what a snapshot shows about its switch as a whole: the
// fabric features of obs-v5 (its ports' capacity by what they face, its
// buffer per port) and this interval's context over its measured queues.
type switchContext struct {
	ports               int     // distinct ports among the snapshot's queues
	hostBps, fabricBps  float64 // capacity of the ports facing hosts, switches
	peersKnown          bool    // every port's peer is known
	measured            int     // queues whose interval was measured
	util, mark, pauseTx float64 // sums over the measured queues
	maxQueue            float32 // largest max_queue feature of them
	bufferBytes         int64   // the switch's shared buffer (0: unknown)
}

// switchContextOf sums what the queues of one snapshot show together; st
// holds their observer states, in the same order.
func switchContextOf(qs []QueueSample, st []*queueState) switchContext {
	c := switchContext{peersKnown: len(qs) > 0}
	seen := make(map[string]bool, len(qs))
	for i := range qs {
		q := &qs[i]
		if q.BufferBytes > 0 {
			c.bufferBytes = max(c.bufferBytes, q.BufferBytes)
		}
		if q.Peer == PeerUnknown {
			c.peersKnown = false
		}
		if !seen[q.Key.Port] {
			seen[q.Key.Port] = true
			c.ports++
			if KnownRate(q.RateBps) {
				switch q.Peer {
				case PeerHost:
					c.hostBps += q.RateBps
				case PeerSwitch:
					c.fabricBps += q.RateBps
				}
			}
		}
		if s := st[i]; s.valid && s.nhist > 0 {
			b := &s.hist[s.head%HistoryLen]
			c.measured++
			c.util += float64(b[FeatUtil])
			c.mark += float64(b[FeatMark])
			c.pauseTx += float64(b[FeatPauseTx])
			c.maxQueue = max(c.maxQueue, b[FeatMaxQueue])
		}
	}
	return c
}

// fill writes the obs-v5 fabric and context features of queue q into f.
func (c *switchContext) fill(f []float32, q *QueueSample, refSec float64) {
	if len(f) < NumFeatures {
		return
	}
	if KnownRate(q.RateBps) {
		f[FeatRate] = float32(clip(math.Log2(q.RateBps/12.5e9)/6, 0, 1))
		if c.bufferBytes > 0 && c.ports > 0 {
			ref := q.RateBps / 8 * refSec
			f[FeatBufPort] = float32(clip(math.Log2(float64(c.bufferBytes)/float64(c.ports)/ref)/6, -1, 1))
		}
	}
	if c.bufferBytes > 0 {
		f[FeatBufKnown] = 1
	}
	if c.peersKnown {
		f[FeatOversubKnown] = 1
		if c.hostBps > 0 && c.fabricBps > 0 {
			f[FeatOversub] = float32(clip(math.Log2(c.hostBps/c.fabricBps)/2, -1, 1))
		}
	}
	if c.measured > 0 {
		n := float64(c.measured)
		f[FeatSwUtil] = float32(clip(c.util/n, 0, 1))
		f[FeatSwMark] = float32(clip(c.mark/n, 0, 1))
		f[FeatSwMaxQueue] = c.maxQueue
		f[FeatSwPauseTx] = float32(clip(c.pauseTx/n, 0, 1))
	}
}
