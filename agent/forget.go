package agent

import (
	"time"

	"github.com/ecntune/ecntune/env"
)

// ForgetAfter is how many intervals a queue no switch reports any more is
// kept in the agent's memory (its newest recommendation, the observer's
// counters, the guard's state when no guardrail needs it): a target that
// reports ever new queue names cannot make the agent grow without bound.
// It is checked every ForgetAfter intervals.
const ForgetAfter = 256

// queueForgetter is an Observer that can drop one queue's state
// (env.Observer).
type queueForgetter interface{ ForgetQueue(env.QueueKey) }

// forgetGone drops the queues not observed for ForgetAfter intervals,
// saying how many.
func (a *Agent) forgetGone(now time.Time) {
	if a.ticks%ForgetAfter != 0 {
		return
	}
	cutoff := now.Add(-ForgetAfter * a.cfg.Interval).UnixNano()
	nowNs := now.UnixNano()
	a.mu.Lock()
	var gone []env.QueueKey
	for k, r := range a.recs {
		if r.TimeNs < cutoff {
			gone = append(gone, k)
		}
	}
	a.mu.Unlock()
	forgot := 0
	for _, k := range gone {
		if !a.core.Forget(k, nowNs) {
			continue // a guardrail still needs it: next round
		}
		if f, ok := a.o.Observer.(queueForgetter); ok {
			f.ForgetQueue(k)
		}
		a.mu.Lock()
		delete(a.recs, k)
		a.mu.Unlock()
		forgot++
	}
	if forgot > 0 {
		a.log.Info("forgot queues no longer reported", "queues", forgot, "after_intervals", ForgetAfter)
	}
}
