package nn

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestSoftmaxMargin(t *testing.T) {
	cases := []struct {
		v    []float32
		temp float64
		want float64
	}{
		{[]float32{1, 1, 0}, 1, 0},
		{[]float32{2, 0}, 1, (1 - math.Exp(-2)) / (1 + math.Exp(-2))},
		{[]float32{2, 0, 0}, 0.5, (1 - math.Exp(-4)) / (1 + 2*math.Exp(-4))},
		{[]float32{5}, 1, 1},
		{nil, 1, 0},
		{[]float32{float32(math.NaN()), 3, 3}, 1, 0},
		{[]float32{float32(math.Inf(1)), 3}, 1, 1},
	}
	for i, c := range cases {
		if got := SoftmaxMargin(c.v, c.temp); math.Abs(got-c.want) > 1e-9 {
			t.Fatalf("case %d %v: margin %v, want %v", i, c.v, got, c.want)
		}
	}
	// Larger Q gaps and lower temperatures give more confidence.
	if !(SoftmaxMargin([]float32{1, 0}, 1) < SoftmaxMargin([]float32{3, 0}, 1)) ||
		!(SoftmaxMargin([]float32{1, 0}, 1) < SoftmaxMargin([]float32{1, 0}, 0.2)) {
		t.Fatal("margin is not monotone in the gap and the temperature")
	}
	n := testNet(t, 5)
	obs := randObs(rand.New(rand.NewPCG(1, 1)), 20, n.InDim())
	acts, conf, err := n.Decide(obs, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	q := must(n.Forward(obs))
	for i := range obs {
		if acts[i] != Argmax(q[i]) || conf[i] != SoftmaxMargin(q[i], 0.1) || conf[i] < 0 || conf[i] > 1 {
			t.Fatalf("row %d: Decide gave action %d conf %v", i, acts[i], conf[i])
		}
	}
	if _, _, err := n.Decide([][]float32{{1, 2}}, 1); err == nil || !strings.Contains(err.Error(), "expects 12") {
		t.Fatalf("short observation: err = %v", err)
	}
}

func TestNetCopyAndSoftUpdateCheckArchitecture(t *testing.T) {
	a := testNet(t, 1)
	b, _ := InitNet(Arch{In: 12, Hidden: []int{16}, Out: 5, Act: Tanh}, rand.New(rand.NewPCG(1, 1)), 1)
	if err := a.CopyFrom(b); err == nil {
		t.Fatal("CopyFrom across architectures: no error")
	}
	if err := a.SoftUpdate(b, 0.5); err == nil {
		t.Fatal("SoftUpdate across architectures: no error")
	}
	c := testNet(t, 2)
	if err := a.SoftUpdate(c, 1.5); err == nil {
		t.Fatal("tau 1.5 accepted")
	}
	if err := a.CopyFrom(c); err != nil || !a.Equal(c) {
		t.Fatalf("CopyFrom: err %v, equal %v", err, a.Equal(c))
	}
}
