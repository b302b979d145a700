package rl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	_ "go4.org/unsafe/assume-no-moving-gc"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

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

// A batch goes through the network column-wise in tiles of up to 256
// observations, and a small one (or the rest of a batch under 64) row-wise:
// every way gives the same bits as deciding one observation at a time.
func TestForwardTilesAgree(t *testing.T) {
	for _, act := range []Activation{ReLU, Tanh} {
		rng := rand.New(rand.NewPCG(3, 4))
		arch := Arch{In: 48, Hidden: []int{64, 64}, Out: 94, Act: act}
		n := must(InitNet(arch, rng, 1))
		obs := randObs(rng, 600, arch.In) // two full tiles, then 88 rows
		for _, rows := range []int{1, 63, 64, 257, 600} {
			batch := must(n.Forward(obs[:rows]))
			for i := range rows {
				one := must(n.Forward(obs[i : i+1]))[0]
				for j := range one {
					if batch[i][j] != one[j] {
						t.Fatalf("%v, batch of %d: row %d output %d: %v in the batch, %v alone", act, rows, i, j, batch[i][j], one[j])
					}
				}
			}
		}
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

// TestForwardConcurrent: one Net serves many goroutines (each with its own
// batch) and every result equals the sequential one.
func TestForwardConcurrent(t *testing.T) {
	n, _ := InitNet(Arch{In: 20, Hidden: []int{32, 32}, Out: 7, Act: ReLU}, rand.New(rand.NewPCG(9, 9)), 1)
	batches := make([][][]float32, 8)
	want := make([][][]float32, len(batches))
	for i := range batches {
		batches[i] = randObs(rand.New(rand.NewPCG(uint64(i), 3)), 70+i, 20)
		want[i] = must(n.Forward(batches[i]))
	}
	errs := make(chan string, len(batches))
	var wg sync.WaitGroup
	for i := range batches {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for rep := 0; rep < 20; rep++ {
				got, err := n.Forward(batches[i])
				if err != nil {
					errs <- err.Error()
					return
				}
				for r := range got {
					for j := range got[r] {
						if got[r][j] != want[i][r][j] {
							errs <- fmt.Sprintf("batch %d row %d output %d: %v, sequential %v", i, r, j, got[r][j], want[i][r][j])
							return
						}
					}
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
