package env

import "math"

// FlapIntervals is how recent a setting a queue left must be for a change
// back to it to count as a flap: 10 control intervals.
const FlapIntervals = 10

// Churn counts how often queues' settings change and the flaps among the
// changes: a change that sets a queue back to a setting (Kmin, Kmax, Pmax
// at 0.01%, headroom and alpha: the whole setting) it left within Window.
// A step of headroom or alpha alone leaves the ECN setting it runs, so
// that a key of ECN alone took the next such step for a return to it. Times are in any one unit (control
// intervals, nanoseconds) and must not go back per queue. Changes at or
// after From also count in After and FlapsAfter (the figures past a
// warm-up).
type Churn struct {
	Window, From      int64
	Changes, Flaps    int
	After, FlapsAfter int
	left              map[QueueKey][]leftAt
	now               map[QueueKey]Setting // Observe's last settings
}

type leftAt struct {
	s [5]int64
	t int64
}

// settingKey is s as Churn compares settings: Pmax at 0.01%, alpha at
// 1e-6 (its powers of two from 1/64 apart).
func settingKey(s Setting) [5]int64 {
	return [5]int64{s.KminBytes, s.KmaxBytes, int64(math.Round(s.Pmax * 1e4)), s.HeadroomBytes, int64(math.Round(s.Alpha * 1e6))}
}

// Change records that queue k went from old to new at t, and reports
// whether that is a flap.
func (c *Churn) Change(k QueueKey, t int64, old, new Setting) bool {
	if c.left == nil {
		c.left = map[QueueKey][]leftAt{}
	}
	ls := c.left[k]
	kept := ls[:0]
	flap := false
	for _, l := range ls {
		if t-l.t <= c.Window {
			kept = append(kept, l)
			flap = flap || l.s == settingKey(new)
		}
	}
	c.left[k] = append(kept, leftAt{settingKey(old), t})
	c.Changes++
	after := t >= c.From
	if after {
		c.After++
	}
	if flap {
		c.Flaps++
		if after {
			c.FlapsAfter++
		}
	}
	return flap
}

// Observe records the settings queues report at t, compared with those of
// the previous call: a change for each queue whose ECN setting differs (a
// queue seen for the first time, or reporting none, is no change), its
// flaps judged on the ECN setting alone (a headroom that moved between
// leaving an ECN setting and going back to it hid the flap).
func (c *Churn) Observe(t int64, obs []Observation) {
	if c.now == nil {
		c.now = map[QueueKey]Setting{}
	}
	for i := range obs {
		o := &obs[i]
		if o.Current.KmaxBytes <= 0 {
			continue
		}
		if p, ok := c.now[o.Key]; ok && !p.SameECN(o.Current) {
			c.Change(o.Key, t, p.ECN(), o.Current.ECN())
		}
		c.now[o.Key] = o.Current
	}
}
