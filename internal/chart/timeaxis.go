package chart

import (
	"math"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
)

// Time axes have one style: wall-clock time as a 24-hour UTC clock
// ("15:04:05", tenths or finer only when the spacing needs them) with the
// date and zone in the axis label, simulated time as plain numbers in one
// unit per axis, the unit in the axis label ("simulated time (ms)").

// clockSteps are the spacings a clock axis is labelled at, in seconds.
var clockSteps = []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120,
	300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400}

// clockDecimals is how many decimals (0 to 3) a label needs for instants
// step apart (in the labels' unit): exact multiples of the step come out
// exact (0.025 needs 3), a step near a power of ten (an interval of
// 1.0003 s, with jitter) that power's.
func clockDecimals(step float64) int {
	for d := 0; d < 3; d++ {
		v := step * math.Pow(10, float64(d))
		if v >= 0.9 && (v >= 9.5 || math.Abs(v-math.Round(v)) < 0.06*v) {
			return d
		}
	}
	return 3
}

// ClockLabel renders Unix time ns as a UTC clock with d decimals of a
// second (0 to 3).
func ClockLabel(ns int64, d int) string {
	t := time.Unix(0, ns).UTC()
	switch d {
	case 0:
		return t.Format("15:04:05")
	case 1:
		return t.Format("15:04:05.0")
	case 2:
		return t.Format("15:04:05.00")
	}
	return t.Format("15:04:05.000")
}

// ClockAxisLabel is a clock axis's label: "time (UTC, 2006-01-02)" for the
// day of ns (and the last day's when the axis ends on another).
func ClockAxisLabel(fromNs, toNs int64) string {
	a, b := time.Unix(0, fromNs).UTC().Format("2006-01-02"), time.Unix(0, toNs).UTC().Format("2006-01-02")
	if a != b {
		return "time (UTC, " + a + " to " + b + ")"
	}
	return "time (UTC, " + a + ")"
}

// ClockLabels labels instants (Unix ns, ascending) as a clock with as
// many decimals as their typical (median) spacing needs: control
// intervals a second apart, one of them late, are labelled in seconds.
func ClockLabels(ns []int64) []string {
	var gaps []float64
	for i := 1; i < len(ns); i++ {
		if g := float64(ns[i]-ns[i-1]) / 1e9; g > 0 {
			gaps = append(gaps, g)
		}
	}
	gap := math.Inf(1)
	if len(gaps) > 0 {
		slices.Sort(gaps)
		gap = gaps[len(gaps)/2]
	}
	d := clockDecimals(gap)
	out := make([]string, len(ns))
	for i, t := range ns {
		out[i] = ClockLabel(t, d)
	}
	return out
}

// ClockTicks labels an axis of Unix seconds as a UTC clock, 2 to 6 labels
// at round spacings (1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10, 15, 30 min, ...).
type ClockTicks struct{}

func (ClockTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	step := clockSteps[len(clockSteps)-1]
	for _, s := range clockSteps {
		if (hi-lo)/s <= 5 {
			step = s
			break
		}
	}
	d := clockDecimals(step)
	var out []plot.Tick
	for v := math.Ceil(lo/step-1e-9) * step; v <= hi+step*1e-9; v += step {
		out = append(out, plot.Tick{Value: v, Label: ClockLabel(int64(math.Round(v*1e9)), d)})
	}
	return out
}

// SimTimeLabels labels instants of simulated time (ns from the start,
// ascending) in one unit for all, µs or ms, with the decimals their
// spacing needs; the unit is returned for the axis label.
func SimTimeLabels(ns []int64) (labels []string, unit string) {
	unit, div := "µs", 1e3
	if len(ns) > 0 && ns[len(ns)-1] >= 1e6 {
		unit, div = "ms", 1e6
	}
	gap := math.Inf(1)
	for i := 1; i < len(ns); i++ {
		if g := float64(ns[i]-ns[i-1]) / div; g > 0 {
			gap = math.Min(gap, g)
		}
	}
	d := clockDecimals(gap)
	for _, t := range ns {
		labels = append(labels, strconv.FormatFloat(float64(t)/div, 'f', d, 64))
	}
	return labels, unit
}
