package nn

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	_ "go4.org/unsafe/assume-no-moving-gc"
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
