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

// A setting left is the whole setting, headroom and alpha too: steps of
// alpha alone (1/8 -> 1/2 -> 2, as SONiC's 1/8 goes to 2 at a step of 4
// at most) or of headroom alone never set the queue back to a setting it
// left (the ECN each left, unchanged, was taken for one); going back in
// alpha, or to ECN and headroom both, is a flap.
func TestChurnKeysTheWholeSetting(t *testing.T) {
	k := QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	s := Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 52_376, Alpha: 0.125}
	with := func(alpha float64, headroom int64) Setting {
		x := s
		x.Alpha, x.HeadroomBytes = alpha, headroom
		return x
	}
	ch := Churn{Window: FlapIntervals}
	for i, c := range []struct {
		old, new Setting
		flap     bool
	}{
		{with(0.125, 52_376), with(0.5, 52_376), false},
		{with(0.5, 52_376), with(2, 52_376), false}, // alpha only, never back
		{with(2, 52_376), with(2, 60_000), false},   // headroom only
		{with(2, 60_000), with(2, 70_000), false},
		{with(2, 70_000), with(2, 60_000), true}, // headroom back
		{with(2, 60_000), with(0.5, 60_000), false},
		{with(0.5, 60_000), with(2, 60_000), true}, // alpha back
	} {
		if got := ch.Change(k, int64(i+1), c.old, c.new); got != c.flap {
			t.Errorf("change %d %+v -> %+v: flap %v, want %v", i+1, c.old, c.new, got, c.flap)
		}
	}
	if ch.Changes != 7 || ch.Flaps != 2 {
		t.Fatalf("%+v", ch)
	}
}

// Observe (a bare policy's figures) judges flaps on the ECN setting alone,
// as eval's loop figures do: going back to an ECN setting is a flap even
// where the headroom moved between (the whole setting's key hid it).
func TestObserveFlapsOnTheECNSetting(t *testing.T) {
	k := QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
	a := Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 52_376}
	b := Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.01, HeadroomBytes: 52_376}
	a2 := a
	a2.HeadroomBytes = 60_000
	ch := Churn{Window: FlapIntervals}
	for i, s := range []Setting{a, b, a2} {
		ch.Observe(int64(i), []Observation{{Key: k, Current: s}})
	}
	if ch.Changes != 2 || ch.Flaps != 1 {
		t.Fatalf("a -> b -> a (another headroom): %d changes, %d flaps; want 2 and 1", ch.Changes, ch.Flaps)
	}
}
