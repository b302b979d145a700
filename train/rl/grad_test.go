package rl

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ref64 is a float64 copy of a Net's parameters for reference
// computations in the gradient checks.
type ref64 struct {
	arch Arch
	p    [][]float64 // W0, B0, W1, B1, ...
}

func toRef(n *Net) *ref64 {
	r := &ref64{arch: n.Arch()}
	for _, s := range n.Params() {
		f := make([]float64, len(s))
		for i, v := range s {
			f[i] = float64(v)
		}
		r.p = append(r.p, f)
	}
	return r
}

func (r *ref64) forward(x []float64) []float64 {
	w := append(append([]int{r.arch.In}, r.arch.Hidden...), r.arch.Out)
	cur := x
	for l := 0; l+1 < len(w); l++ {
		in, out := w[l], w[l+1]
		W, B := r.p[2*l], r.p[2*l+1]
		y := make([]float64, out)
		for j := 0; j < out; j++ {
			s := B[j]
			for i := 0; i < in; i++ {
				s += cur[i] * W[i*out+j]
			}
			if l+2 < len(w) {
				if r.arch.Act == ReLU {
					s = math.Max(0, s)
				} else {
					s = math.Tanh(s)
				}
			}
			y[j] = s
		}
		cur = y
	}
	return cur
}

// checkGrads compares graph gradients with central differences of loss
// over every parameter of the given reference nets.
func checkGrads(t *testing.T, nodes G.Nodes, refs []*ref64, loss func() float64) {
	t.Helper()
	var params [][]float64
	for _, r := range refs {
		params = append(params, r.p...)
	}
	if len(params) != len(nodes) {
		t.Fatalf("%d reference parameters, %d graph nodes", len(params), len(nodes))
	}
	const h = 1e-5
	checked, worst := 0, 0.0
	for pi, p := range params {
		gv, err := nodes[pi].Grad()
		if err != nil {
			t.Fatal(err)
		}
		g := gv.Data().([]float32)
		for i := range p {
			orig := p[i]
			p[i] = orig + h
			up := loss()
			p[i] = orig - h
			down := loss()
			p[i] = orig
			fd := (up - down) / (2 * h)
			diff := math.Abs(float64(g[i]) - fd)
			worst = math.Max(worst, diff)
			if diff > 2e-4+1e-3*math.Abs(fd) {
				t.Fatalf("parameter %s[%d]: graph gradient %.6g, finite difference %.6g", nodes[pi].Name(), i, g[i], fd)
			}
			checked++
		}
	}
	t.Logf("%d gradients checked, worst absolute difference %.2g", checked, worst)
}

func TestHuberLossGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	const bs, in, k, delta = 8, 5, 3, 1.0
	n, _ := InitNet(Arch{In: in, Hidden: []int{7}, Out: k, Act: Tanh}, rng, 1)
	g := G.NewGraph()
	gn := newGNet(g, n, "q")
	x := G.NewMatrix(g, tensor.Float32, G.WithShape(bs, in), G.WithName("x"))
	a := G.NewMatrix(g, tensor.Float32, G.WithShape(bs, k), G.WithName("a"))
	y := G.NewVector(g, tensor.Float32, G.WithShape(bs), G.WithName("y"))
	q, err := gn.forward(x)
	if err != nil {
		t.Fatal(err)
	}
	loss, err := huberQLoss(q, a, y, delta)
	if err != nil {
		t.Fatal(err)
	}
	var lv G.Value
	G.Read(loss, &lv)
	if _, err := G.Grad(loss, gn.nodes...); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g, G.BindDualValues(gn.nodes...))
	defer vm.Close()
	xs := make([]float32, bs*in)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64())
	}
	acts := make([]int, bs)
	as := make([]float32, bs*k)
	ys := make([]float32, bs)
	for i := range ys {
		acts[i] = rng.IntN(k)
		as[i*k+acts[i]] = 1
		ys[i] = float32(4*rng.Float64() - 2) // errors on both sides of delta
	}
	G.Let(x, denseOf(xs, bs, in))
	G.Let(a, denseOf(as, bs, k))
	G.Let(y, denseOf(ys, bs))
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	ref := toRef(n)
	linear := 0
	refLoss := func() float64 {
		var s float64
		linear = 0
		for i := 0; i < bs; i++ {
			xi := make([]float64, in)
			for j := range xi {
				xi[j] = float64(xs[i*in+j])
			}
			d := ref.forward(xi)[acts[i]] - float64(ys[i])
			if math.Abs(d) <= delta {
				s += 0.5 * d * d
			} else {
				s += delta * (math.Abs(d) - 0.5*delta)
				linear++
			}
		}
		return s / bs
	}
	if got, want := scalarOf(lv), refLoss(); math.Abs(got-want) > 1e-5 {
		t.Fatalf("graph Huber loss %.7f, reference %.7f", got, want)
	}
	if linear == 0 || linear == bs {
		t.Fatalf("%d of %d TD errors beyond delta: the check must cover both Huber regions", linear, bs)
	}
	checkGrads(t, gn.nodes, []*ref64{ref}, refLoss)
}

func TestPPOLossGradient(t *testing.T) {
	const mb, in, k = 8, 4, 3
	p, err := NewPPO(PPOConfig{Arch: Arch{In: in, Hidden: []int{6}, Out: k, Act: Tanh}, CriticHidden: []int{5},
		MinibatchSize: mb, ClipRange: 0.2, ValueCoef: 0.7, EntropyCoef: 0.05, Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	// Larger actor weights so that the policy is far from uniform.
	for _, s := range p.actor.Params() {
		for i := range s {
			s[i] = float32(rng.NormFloat64())
		}
	}
	p.ga.push()
	actor, critic := toRef(p.actor), toRef(p.critic)
	acts := make([]int, mb)
	xs := make([][]float64, mb)
	for r := 0; r < mb; r++ {
		xs[r] = make([]float64, in)
		for j := range xs[r] {
			v := float32(rng.NormFloat64())
			p.xBuf[r*in+j] = v
			xs[r][j] = float64(v)
		}
		acts[r] = rng.IntN(k)
		p.aBuf[r*k+acts[r]] = 1
		lsm := make([]float64, k)
		logSoftmax(lsm, must(p.actor.Forward([][]float32{p.xBuf[r*in : (r+1)*in]}))[0])
		// Old log-probabilities that put some ratios inside the clip range
		// and some far outside on both sides.
		p.olpBuf[r] = float32(lsm[acts[r]] + []float64{-0.6, -0.05, 0.03, 0.5}[r%4])
		p.advBuf[r] = float32(rng.NormFloat64())
		p.retBuf[r] = float32(rng.NormFloat64())
	}
	refLoss := func() float64 {
		var pl, ent, vl float64
		for r := 0; r < mb; r++ {
			logits := actor.forward(xs[r])
			m := math.Inf(-1)
			for _, l := range logits {
				m = math.Max(m, l)
			}
			var z float64
			for _, l := range logits {
				z += math.Exp(l - m)
			}
			var e float64
			for _, l := range logits {
				lp := l - m - math.Log(z)
				e -= math.Exp(lp) * lp
			}
			ratio := math.Exp(logits[acts[r]] - m - math.Log(z) - float64(p.olpBuf[r]))
			adv := float64(p.advBuf[r])
			cr := math.Min(math.Max(ratio, 0.8), 1.2)
			pl -= math.Min(ratio*adv, cr*adv)
			ent += e
			d := critic.forward(xs[r])[0] - float64(p.retBuf[r])
			vl += d * d
		}
		return pl/mb + 0.7*vl/mb - 0.05*ent/mb
	}
	G.Let(p.x, p.xT)
	G.Let(p.a, p.aT)
	G.Let(p.olp, p.olpT)
	G.Let(p.adv, p.advT)
	G.Let(p.ret, p.retT)
	if err := p.vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	got := scalarOf(p.plV) + 0.7*scalarOf(p.vlV) - 0.05*scalarOf(p.enV)
	if want := refLoss(); math.Abs(got-want) > 1e-5 {
		t.Fatalf("graph PPO loss %.7f, reference %.7f", got, want)
	}
	checkGrads(t, p.params, []*ref64{actor, critic}, refLoss)
	p.vm.Reset()
}
