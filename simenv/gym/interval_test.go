package gym

import (
	"testing"

	"github.com/ecntune/ecntune/simenv"
)

// TestDefaultIntervalFor pins the default Δ: duration/25 up to 500 µs,
// raised towards 200 µs (the interval the built-in model acts at) while 20
// decisions still fit (duration/21: the first observation takes one). Before, a 4 ms scenario decided every 160 µs and
// the built-in model, validated from 200 µs, held every queue: eval
// measured the scenario's starting setting under the model's name.
func TestDefaultIntervalFor(t *testing.T) {
	us := simenv.Microsecond
	for _, c := range []struct{ d, want simenv.Time }{
		{20 * simenv.Millisecond, 500 * us},
		{6 * simenv.Millisecond, 240 * us},
		{5 * simenv.Millisecond, 200 * us},
		{4 * simenv.Millisecond, 4 * simenv.Millisecond / 21},
		{3 * simenv.Millisecond, 3 * simenv.Millisecond / 21},
		{20 * simenv.Second, 500 * us},
		{10, 0},
	} {
		got := DefaultIntervalFor(c.d)
		if got != c.want {
			t.Errorf("DefaultIntervalFor(%v) = %v, want %v", c.d, got, c.want)
		}
		if got > 0 && c.d/got < MinDecisions+1 {
			t.Errorf("DefaultIntervalFor(%v) = %v leaves %d decisions, want >= %d", c.d, got, c.d/got, MinDecisions)
		}
	}
}

func TestIntervalFor(t *testing.T) {
	cfg := simenv.Config{Duration: 20 * simenv.Millisecond}
	if got := IntervalFor(cfg); got != 500*simenv.Microsecond {
		t.Fatalf("IntervalFor without an interval = %v, want the default 500µs", got)
	}
	cfg.Interval = 240 * simenv.Microsecond
	if got := IntervalFor(cfg); got != cfg.Interval {
		t.Fatalf("IntervalFor = %v, want the config's %v", got, cfg.Interval)
	}
}
