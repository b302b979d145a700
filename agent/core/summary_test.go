package core

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
)

// Moves are counted by knob and direction, most frequent first.
func TestTopMoves(t *testing.T) {
	base := env.Setting{KminBytes: 100_000, KmaxBytes: 1_000_000, Pmax: 0.1, HeadroomBytes: 50_000}
	var m [moveClasses]int
	add := func(to env.Setting, n int) {
		for range n {
			m[moveClass(base, to)]++
		}
	}
	up := base
	up.KminBytes, up.KmaxBytes = 200_000, 2_000_000
	add(up, 5)
	down := base
	down.Pmax, down.HeadroomBytes = 0.05, 60_000
	add(down, 7)
	kmin := base
	kmin.KminBytes = 90_000
	add(kmin, 1)
	add(base, 3) // no move: not counted as one
	m[0] = 0
	if got, want := topMoves(&m, 2), "pmax↓ headroom↑ 7, kmin↑ kmax↑ 5"; got != want {
		t.Errorf("topMoves: %q, want %q", got, want)
	}
	if got := topMoves(&m, 3); !strings.HasSuffix(got, ", kmin↓ 1") {
		t.Errorf("topMoves(3): %q", got)
	}

	// alpha moves when both sides know it; an unknown side is no move
	known := base
	known.Alpha = 0.125
	m = [moveClasses]int{}
	for _, c := range []struct {
		from, to env.Setting
		n        int
	}{
		{known, env.Setting{KminBytes: 100_000, KmaxBytes: 1_000_000, Pmax: 0.1, HeadroomBytes: 50_000, Alpha: 0.5}, 4},
		{known, env.Setting{KminBytes: 200_000, KmaxBytes: 1_000_000, Pmax: 0.1, HeadroomBytes: 50_000, Alpha: 1.0 / 16}, 2},
		{base, env.Setting{KminBytes: 100_000, KmaxBytes: 1_000_000, Pmax: 0.1, HeadroomBytes: 50_000, Alpha: 0.5}, 9}, // alpha unknown
	} {
		for range c.n {
			m[moveClass(c.from, c.to)]++
		}
	}
	m[0] = 0
	if got, want := topMoves(&m, 3), "alpha↑ 4, kmin↑ alpha↓ 2"; got != want {
		t.Errorf("topMoves with alpha: %q, want %q", got, want)
	}
	if got := topMoves(new([moveClasses]int), 3); got != "none" {
		t.Errorf("no moves: %q", got)
	}
}

// Counting the moves of 10,000 queues allocates nothing per queue.
func BenchmarkIntervalMoves10k(b *testing.B) {
	recs := make([]Recommendation, 10_000)
	for i := range recs {
		recs[i].Current = env.Setting{KminBytes: 100_000, KmaxBytes: 1_000_000, Pmax: 0.1}
		recs[i].Recommended = recs[i].Current
		recs[i].Recommended.KminBytes += int64(i%3) * 10_000
	}
	b.ReportAllocs()
	for b.Loop() {
		var m [moveClasses]int
		for i := range recs {
			if recs[i].Recommended != recs[i].Current {
				m[moveClass(recs[i].Current, recs[i].Recommended)]++
			}
		}
		_ = topMoves(&m, 3)
	}
}
