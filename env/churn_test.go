package env

import "testing"

// Churn counts changes and flaps (back to a setting left within the
// window), past From too; Observe turns reported settings into changes.
func TestChurn(t *testing.T) {
	k := QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	a := Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	b, c := a, a
	b.Pmax, c.Pmax = 0.1, 0.05
	ch := Churn{Window: FlapIntervals, From: 10}
	obs := func(s Setting) []Observation { return []Observation{{Key: k, Current: s}} }
	ch.Observe(0, obs(a))  // first sight: no change
	ch.Observe(1, obs(b))  // a→b
	ch.Observe(2, obs(b))  // none
	ch.Observe(5, obs(a))  // back to a, left at 1: a flap
	ch.Observe(12, obs(c)) // new, after From
	ch.Observe(30, obs(a)) // back to a, left at 5: outside the window
	ch.Observe(31, []Observation{{Key: k}})
	if ch.Changes != 4 || ch.Flaps != 1 || ch.After != 2 || ch.FlapsAfter != 0 {
		t.Fatalf("%+v", ch)
	}
	if !ch.Change(k, 33, a, c) || ch.FlapsAfter != 1 {
		t.Fatalf("back to c, left at 30: %+v", ch)
	}
}
