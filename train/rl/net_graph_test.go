package rl

import (
	"math"
	"math/rand/v2"
	"testing"

	_ "go4.org/unsafe/assume-no-moving-gc"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestGraphMatchesInference checks that the gorgonia training graph and the
// plain-Go inference path compute the same function from the same weights.
func TestGraphMatchesInference(t *testing.T) {
	for _, act := range []Activation{ReLU, Tanh} {
		rng := rand.New(rand.NewPCG(1, 2))
		arch := Arch{In: 37, Hidden: []int{64, 48}, Out: 19, Act: act}
		n, err := InitNet(arch, rng, 1)
		if err != nil {
			t.Fatal(err)
		}
		for l := range n.Layers {
			for i := range n.Layers[l].B {
				n.Layers[l].B[i] = float32(rng.NormFloat64() * 0.1)
			}
		}
		const rows = 150 // one column-wise tile
		obs := randObs(rng, rows, arch.In)
		flat := make([]float32, 0, rows*arch.In)
		for _, o := range obs {
			flat = append(flat, o...)
		}
		g := G.NewGraph()
		gn := newGNet(g, n, "q")
		x := G.NewMatrix(g, tensor.Float32, G.WithShape(rows, arch.In), G.WithName("x"))
		y, err := gn.forward(x)
		if err != nil {
			t.Fatal(err)
		}
		var yv G.Value
		G.Read(y, &yv)
		vm := G.NewTapeMachine(g)
		if err := G.Let(x, denseOf(flat, rows, arch.In)); err != nil {
			t.Fatal(err)
		}
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		got := yv.Data().([]float32)
		want := must(n.Forward(obs))
		worst := 0.0
		for i := range want {
			for j := range want[i] {
				worst = math.Max(worst, math.Abs(float64(got[i*arch.Out+j]-want[i][j])))
			}
		}
		t.Logf("%v: worst |graph - inference| = %.2g over %d outputs", act, worst, rows*arch.Out)
		if worst > 1e-5 {
			t.Fatalf("%v: graph and inference differ by %g (> 1e-5)", act, worst)
		}
		flatOut := make([]float32, rows*arch.Out)
		if err := n.ForwardFlat(flatOut, flat, rows); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			for j := range want[i] {
				if flatOut[i*arch.Out+j] != want[i][j] {
					t.Fatalf("ForwardFlat and Forward differ at %d,%d", i, j)
				}
			}
		}
		vm.Close()
	}
}

// must unwraps a result in tests; an error fails the test by panicking
// (the runner reports it with the stack).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// randObs is n observations of d standard normal features.
func randObs(rng *rand.Rand, n, d int) [][]float32 {
	o := make([][]float32, n)
	for i := range o {
		o[i] = make([]float32, d)
		for j := range o[i] {
			o[i][j] = float32(rng.NormFloat64())
		}
	}
	return o
}
