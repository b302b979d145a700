package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fastTanh32 is within one float32 step of float32(math.Tanh) everywhere,
// exactly equal on nearly every input, and keeps sign, ±1, zero and NaN.
func TestFastTanh32(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	differ := 0
	const n = 2_000_000
	for i := 0; i < n; i++ {
		v := float32((rng.Float64()*2 - 1) * math.Pow(10, rng.Float64()*4-3)) // |v| from 1e-3 to 10
		want, got := float32(math.Tanh(float64(v))), fastTanh32(v)
		if want == got {
			continue
		}
		differ++
		if ulp := math.Abs(float64(got-want)) / float64(math.Nextafter32(abs32(want), 2)-abs32(want)); ulp > 1 {
			t.Fatalf("tanh(%v): %v, want %v (%.1f float32 steps)", v, got, want, ulp)
		}
	}
	if differ > n/1000 {
		t.Fatalf("%d of %d results differ from float32(math.Tanh) in the last bit, want at most 0.1%%", differ, n)
	}
	for _, c := range []struct{ in, want float32 }{{0, 0}, {20, 1}, {-20, -1}, {1e-30, 1e-30}, {float32(math.Inf(1)), 1}, {float32(math.Inf(-1)), -1}} {
		if got := fastTanh32(c.in); got != c.want {
			t.Errorf("tanh(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if nan := float32(math.NaN()); !math.IsNaN(float64(fastTanh32(nan))) {
		t.Error("tanh(NaN) is not NaN")
	}
}

// fastTanh32 is tanhInPlace on one value.
func fastTanh32(v float32) float32 {
	y := [1]float32{v}
	tanhInPlace(y[:])
	return y[0]
}

func abs32(v float32) float32 { return float32(math.Abs(float64(v))) }

func BenchmarkTanhMath(b *testing.B) {
	var s float32
	for i := 0; b.Loop(); i++ {
		s += float32(math.Tanh(float64(i%200-100) * 0.03))
	}
	_ = s
}

func BenchmarkTanhFast(b *testing.B) {
	var s float32
	for i := 0; b.Loop(); i++ {
		s += fastTanh32(float32(i%200-100) * 0.03)
	}
	_ = s
}

// referenceForward is the network with math.Tanh, one observation at a
// time, in the same order of additions as Net.
func referenceForward(n *Net, x []float32) []float32 {
	cur := x
	for l, ly := range n.Layers {
		y := append([]float32(nil), ly.B...)
		for i, v := range cur {
			for j := range y {
				y[j] += v * ly.W[i*ly.Out+j]
			}
		}
		if l != len(n.Layers)-1 {
			for j, v := range y {
				y[j] = float32(math.Tanh(float64(v)))
			}
		}
		cur = y
	}
	return cur
}

// The rational tanh does not change what a tanh network decides: over
// 20,000 observations its best action is the math.Tanh network's
// wherever that one's lead is above 1e-5, and the outputs agree to 1e-5.
func TestFastTanhKeepsDecisions(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	n := must(InitNet(Arch{In: 48, Hidden: []int{64, 64}, Out: 94, Act: Tanh}, rng, 1))
	obs := randObs(rng, 20000, 48)
	got := must(n.Forward(obs))
	worst, ties := 0.0, 0
	for i, o := range obs {
		want := referenceForward(n, o)
		for j := range want {
			worst = math.Max(worst, math.Abs(float64(got[i][j]-want[j])))
		}
		a, b := Argmax(got[i]), Argmax(want)
		if a == b {
			continue
		}
		if math.Abs(float64(want[a]-want[b])) > 1e-5 {
			t.Fatalf("observation %d: action %d, math.Tanh's %d leads it by %g", i, a, b, want[b]-want[a])
		}
		ties++
	}
	t.Logf("worst |fast - math.Tanh| output %.2g; %d near-ties decided the other way", worst, ties)
	if worst > 1e-5 {
		t.Fatalf("outputs differ by up to %g, want <= 1e-5", worst)
	}
}
