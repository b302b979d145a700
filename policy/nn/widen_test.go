package nn

import (
	"math/rand/v2"
	"testing"
)

// TestWithInputs: the widened network gives the original's outputs bit
// for bit whatever the added inputs hold, and refuses to narrow.
func TestWithInputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n, err := InitNet(Arch{In: 44, Hidden: []int{64, 64}, Out: 83, Act: Tanh}, rng, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n.Layers[0].B {
		n.Layers[0].B[i] = float32(rng.Float64() - 0.5)
	}
	w, err := n.WithInputs(57)
	if err != nil {
		t.Fatal(err)
	}
	if w.InDim() != 57 || w.OutDim() != 83 || w.Kind != n.Kind {
		t.Fatalf("widened: in %d out %d kind %v", w.InDim(), w.OutDim(), w.Kind)
	}
	for r := 0; r < 20; r++ {
		x := make([]float32, 57)
		for i := range x {
			x[i] = float32(2*rng.Float64() - 1)
		}
		a, _ := n.Forward([][]float32{x[:44]})
		b, _ := w.Forward([][]float32{x})
		for j := range a[0] {
			if a[0][j] != b[0][j] {
				t.Fatalf("row %d output %d: %v widened, %v original", r, j, b[0][j], a[0][j])
			}
		}
	}
	if _, err := n.WithInputs(43); err == nil {
		t.Fatal("narrowed a network")
	}
}
