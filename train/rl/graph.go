package rl

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// gnet is the training form of a Net inside a gorgonia graph: one node per
// weight matrix and bias row, in the order of Net.params.
type gnet struct {
	net   *Net
	nodes G.Nodes
}

// newGNet adds the parameters of n to g, initialised from n's weights.
func newGNet(g *G.ExprGraph, n *Net, name string) *gnet {
	gn := &gnet{net: n}
	for l, ly := range n.Layers {
		w := tensor.New(tensor.WithShape(ly.In, ly.Out), tensor.WithBacking(append([]float32(nil), ly.W...)))
		b := tensor.New(tensor.WithShape(1, ly.Out), tensor.WithBacking(append([]float32(nil), ly.B...)))
		wn := G.NewMatrix(g, tensor.Float32, G.WithShape(ly.In, ly.Out), G.WithName(fmt.Sprintf("%s_w%d", name, l)), G.WithValue(w))
		bn := G.NewMatrix(g, tensor.Float32, G.WithShape(1, ly.Out), G.WithName(fmt.Sprintf("%s_b%d", name, l)), G.WithValue(b))
		gn.nodes = append(gn.nodes, wn, bn)
	}
	return gn
}

// forward builds the MLP on x (rows × In) and returns rows × Out.
func (gn *gnet) forward(x *G.Node) (*G.Node, error) {
	cur := x
	last := len(gn.net.Layers) - 1
	for l := range gn.net.Layers {
		xw, err := G.Mul(cur, gn.nodes[2*l])
		if err != nil {
			return nil, fmt.Errorf("rl: graph layer %d matmul: %w", l, err)
		}
		y, err := G.BroadcastAdd(xw, gn.nodes[2*l+1], nil, []byte{0})
		if err != nil {
			return nil, fmt.Errorf("rl: graph layer %d bias: %w", l, err)
		}
		if l != last {
			switch gn.net.Arch().Act {
			case ReLU:
				y, err = G.Rectify(y)
			case Tanh:
				y, err = G.Tanh(y)
			}
			if err != nil {
				return nil, fmt.Errorf("rl: graph layer %d activation: %w", l, err)
			}
		}
		cur = y
	}
	return cur, nil
}

// pull copies the graph's current weights into the inference net.
func (gn *gnet) pull() {
	p := gn.net.Params()
	for i, nd := range gn.nodes {
		copy(p[i], nd.Value().Data().([]float32))
	}
}

// push copies the inference net's weights into the graph.
func (gn *gnet) push() {
	p := gn.net.Params()
	for i, nd := range gn.nodes {
		copy(nd.Value().Data().([]float32), p[i])
	}
}

// clipGradNorm scales the gradients of nodes so that their global L2 norm
// is at most maxNorm (no-op when maxNorm <= 0). It returns the norm before
// clipping.
func clipGradNorm(nodes G.Nodes, maxNorm float64) (float64, error) {
	grads := make([][]float32, len(nodes))
	var ss float64
	for i, nd := range nodes {
		gv, err := nd.Grad()
		if err != nil {
			return 0, fmt.Errorf("rl: gradient of %s: %w", nd.Name(), err)
		}
		d, ok := gv.Data().([]float32)
		if !ok {
			return 0, fmt.Errorf("rl: gradient of %s is %T, want []float32", nd.Name(), gv.Data())
		}
		grads[i] = d
		for _, v := range d {
			ss += float64(v) * float64(v)
		}
	}
	norm := math.Sqrt(ss)
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return norm, fmt.Errorf("rl: gradient norm is %v: training diverged (lower the learning rate or the reward scale)", norm)
	}
	if maxNorm > 0 && norm > maxNorm {
		s := float32(maxNorm / norm)
		for _, d := range grads {
			for j := range d {
				d[j] *= s
			}
		}
	}
	return norm, nil
}

// scalarOf reads a float32 scalar node value.
func scalarOf(v G.Value) float64 {
	if v == nil {
		return math.NaN()
	}
	switch x := v.Data().(type) {
	case float32:
		return float64(x)
	case float64:
		return x
	case []float32:
		if len(x) == 1 {
			return float64(x[0])
		}
	}
	return math.NaN()
}

// c32 makes a float32 scalar constant.
func c32(v float64) *G.Node { return G.NewConstant(float32(v)) }

// denseOf wraps a reused backing slice as a tensor of the given shape.
func denseOf(data []float32, shape ...int) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
}
