package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Activation is the non-linearity between hidden layers.
type Activation uint8

const (
	// ReLU is max(0, x).
	ReLU Activation = 1
	// Tanh is the hyperbolic tangent.
	Tanh Activation = 2
)

// String names the activation as it is written in configs.
func (a Activation) String() string {
	switch a {
	case ReLU:
		return "relu"
	case Tanh:
		return "tanh"
	}
	return fmt.Sprintf("activation(%d)", uint8(a))
}

// MarshalText writes "relu" or "tanh" (configs and checkpoints).
func (a Activation) MarshalText() ([]byte, error) {
	if a != ReLU && a != Tanh {
		return nil, fmt.Errorf("nn: activation %d: allowed relu, tanh", uint8(a))
	}
	return []byte(a.String()), nil
}

// UnmarshalText reads "relu" or "tanh".
func (a *Activation) UnmarshalText(b []byte) error {
	v, err := ParseActivation(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// ParseActivation reads "relu" or "tanh".
func ParseActivation(s string) (Activation, error) {
	switch s {
	case "relu", "ReLU", "RELU":
		return ReLU, nil
	case "tanh", "Tanh", "TANH":
		return Tanh, nil
	}
	return 0, fmt.Errorf("nn: activation %q: allowed values are relu, tanh", s)
}

// Limits on architectures, so that a corrupt or hostile header cannot make
// a decoder allocate without bound.
const (
	MaxLayerWidth = 1 << 14
	MaxLayers     = 16
	maxParams     = 1 << 26
)

// Arch is the shape of a fully connected network: In inputs, hidden layers
// of the given widths with activation Act, and a linear output layer of
// Out units.
type Arch struct {
	In     int        `json:"in" yaml:"in"`
	Hidden []int      `json:"hidden" yaml:"hidden"`
	Out    int        `json:"out" yaml:"out"`
	Act    Activation `json:"act" yaml:"act"`
}

// Validate reports whether the architecture is usable, naming the field at
// fault.
func (a Arch) Validate() error {
	if a.In < 1 || a.In > MaxLayerWidth {
		return fmt.Errorf("nn: arch.in = %d: allowed 1..%d", a.In, MaxLayerWidth)
	}
	if a.Out < 1 || a.Out > MaxLayerWidth {
		return fmt.Errorf("nn: arch.out = %d: allowed 1..%d", a.Out, MaxLayerWidth)
	}
	if len(a.Hidden) > MaxLayers-1 {
		return fmt.Errorf("nn: arch.hidden has %d layers: allowed at most %d", len(a.Hidden), MaxLayers-1)
	}
	for i, h := range a.Hidden {
		if h < 1 || h > MaxLayerWidth {
			return fmt.Errorf("nn: arch.hidden[%d] = %d: allowed 1..%d", i, h, MaxLayerWidth)
		}
	}
	if a.Act != ReLU && a.Act != Tanh {
		return fmt.Errorf("nn: arch.act = %d: allowed relu (1) or tanh (2)", uint8(a.Act))
	}
	if n := a.numParams(); n > maxParams {
		return fmt.Errorf("nn: arch has %d parameters: allowed at most %d", n, maxParams)
	}
	return nil
}

// widths lists the widths of every layer, input first, output last.
func (a Arch) widths() []int {
	w := make([]int, 0, len(a.Hidden)+2)
	w = append(w, a.In)
	w = append(w, a.Hidden...)
	return append(w, a.Out)
}

func (a Arch) numParams() int {
	w := a.widths()
	n := 0
	for l := 0; l+1 < len(w); l++ {
		n += w[l]*w[l+1] + w[l+1]
	}
	return n
}

func (a Arch) Clone() Arch {
	c := a
	c.Hidden = append([]int(nil), a.Hidden...)
	return c
}

func (a Arch) Equal(b Arch) bool {
	if a.In != b.In || a.Out != b.Out || a.Act != b.Act || len(a.Hidden) != len(b.Hidden) {
		return false
	}
	for i := range a.Hidden {
		if a.Hidden[i] != b.Hidden[i] {
			return false
		}
	}
	return true
}

// Layer is one affine map y = x·W + B. W is row-major with shape
// [In][Out] (W[i*Out+j] connects input i to output j), the layout of the
// gorgonia training graph.
type Layer struct {
	In, Out int
	W       []float32
	B       []float32
}

// Net is the inference form of an MLP: plain float32 slices, no gorgonia.
// It is safe for concurrent use by many goroutines as long as nobody
// writes its weights at the same time.
type Net struct {
	// Kind says what the outputs mean; it travels with the serialised
	// policy.
	Kind    OutputKind
	arch    Arch
	Layers  []Layer
	maxW    int
	scratch *sync.Pool
}

func newScratchPool() *sync.Pool { return &sync.Pool{} }

// NewNet returns a network of the given architecture with all weights
// zero.
func NewNet(a Arch) (*Net, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	a = a.Clone()
	w := a.widths()
	n := &Net{arch: a, Layers: make([]Layer, len(w)-1), scratch: newScratchPool()}
	for l := range n.Layers {
		n.Layers[l] = Layer{In: w[l], Out: w[l+1], W: make([]float32, w[l]*w[l+1]), B: make([]float32, w[l+1])}
	}
	for _, x := range w {
		n.maxW = max(n.maxW, x)
	}
	return n, nil
}

// InitNet returns a network with weights drawn from rng: hidden layers use
// He (ReLU) or Glorot (tanh) uniform initialisation, the output layer is
// scaled down by outScale (0 means 1), biases start at zero.
func InitNet(a Arch, rng *rand.Rand, outScale float64) (*Net, error) {
	n, err := NewNet(a)
	if err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("nn: InitNet: rng is nil: a seeded source is required")
	}
	if outScale == 0 {
		outScale = 1
	}
	for l := range n.Layers {
		ly := &n.Layers[l]
		var lim float64
		if a.Act == ReLU {
			lim = math.Sqrt(6 / float64(ly.In))
		} else {
			lim = math.Sqrt(6 / float64(ly.In+ly.Out))
		}
		if l == len(n.Layers)-1 {
			lim = math.Sqrt(6/float64(ly.In+ly.Out)) * outScale
		}
		for i := range ly.W {
			ly.W[i] = float32((2*rng.Float64() - 1) * lim)
		}
	}
	return n, nil
}

// Arch returns a copy of the architecture.
func (n *Net) Arch() Arch { return n.arch.Clone() }

// InDim is the observation dimension.
func (n *Net) InDim() int { return n.arch.In }

// OutDim is the number of outputs (actions, or 1 for a value network).
func (n *Net) OutDim() int { return n.arch.Out }

// NumParams counts weights and biases.
func (n *Net) NumParams() int { return n.arch.numParams() }

// Clone returns a deep copy.
func (n *Net) Clone() *Net {
	c, _ := NewNet(n.arch)
	c.Kind = n.Kind
	c.copyWeights(n)
	return c
}

// CopyFrom copies the weights of src, which must have the same
// architecture.
func (n *Net) CopyFrom(src *Net) error {
	if !n.arch.Equal(src.arch) {
		return fmt.Errorf("nn: copy weights: architectures differ (%+v vs %+v)", n.arch, src.arch)
	}
	n.copyWeights(src)
	return nil
}

func (n *Net) copyWeights(src *Net) {
	for l := range n.Layers {
		copy(n.Layers[l].W, src.Layers[l].W)
		copy(n.Layers[l].B, src.Layers[l].B)
	}
}

// SoftUpdate moves every weight towards src: w = (1-tau)·w + tau·src,
// with tau in [0, 1] and src of the same architecture.
func (n *Net) SoftUpdate(src *Net, tau float64) error {
	if !n.arch.Equal(src.arch) {
		return fmt.Errorf("nn: soft update: architectures differ (%+v vs %+v)", n.arch, src.arch)
	}
	if !(tau >= 0 && tau <= 1) {
		return fmt.Errorf("nn: soft update: tau = %v: allowed [0, 1]", tau)
	}
	t := float32(tau)
	for l := range n.Layers {
		d, s := n.Layers[l].W, src.Layers[l].W
		for i := range d {
			d[i] += t * (s[i] - d[i])
		}
		d, s = n.Layers[l].B, src.Layers[l].B
		for i := range d {
			d[i] += t * (s[i] - d[i])
		}
	}
	return nil
}

// Equal reports whether both nets have the same architecture and
// bit-identical weights.
func (n *Net) Equal(o *Net) bool {
	if !n.arch.Equal(o.arch) {
		return false
	}
	for l := range n.Layers {
		for i, v := range n.Layers[l].W {
			if math.Float32bits(v) != math.Float32bits(o.Layers[l].W[i]) {
				return false
			}
		}
		for i, v := range n.Layers[l].B {
			if math.Float32bits(v) != math.Float32bits(o.Layers[l].B[i]) {
				return false
			}
		}
	}
	return true
}

// params lists weight and bias slices in the fixed order
// W0, B0, W1, B1, ...: the order of serialisation and of the graph.
func (n *Net) Params() [][]float32 {
	p := make([][]float32, 0, 2*len(n.Layers))
	for l := range n.Layers {
		p = append(p, n.Layers[l].W, n.Layers[l].B)
	}
	return p
}

func (n *Net) checkObs(obs [][]float32) error {
	for i, o := range obs {
		if len(o) != n.arch.In {
			return fmt.Errorf("nn: observation %d has %d features: the network expects %d", i, len(o), n.arch.In)
		}
	}
	return nil
}

// Forward evaluates the network on a batch and returns one output row per
// observation. The rows share one allocation.
func (n *Net) Forward(obs [][]float32) ([][]float32, error) {
	out := make([]float32, len(obs)*n.arch.Out)
	if err := n.ForwardInto(out, obs); err != nil {
		return nil, err
	}
	return splitRows(out, len(obs), n.arch.Out), nil
}

func splitRows(flat []float32, rows, width int) [][]float32 {
	r := make([][]float32, rows)
	for i := range r {
		r[i] = flat[i*width : (i+1)*width : (i+1)*width]
	}
	return r
}

func (n *Net) ready() error {
	if len(n.Layers) == 0 || n.scratch == nil {
		return fmt.Errorf("nn: network is empty: build it with NewNet, InitNet or UnmarshalNet")
	}
	return nil
}

// ForwardInto evaluates the network on a batch, writing observation i's
// outputs to out[i*OutDim:(i+1)*OutDim]. It does not allocate in steady
// state.
func (n *Net) ForwardInto(out []float32, obs [][]float32) error {
	if err := n.ready(); err != nil {
		return err
	}
	if len(out) < len(obs)*n.arch.Out {
		return fmt.Errorf("nn: output buffer has %d floats: %d observations × %d outputs need %d", len(out), len(obs), n.arch.Out, len(obs)*n.arch.Out)
	}
	if err := n.checkObs(obs); err != nil {
		return err
	}
	s := n.getScratch()
	in := n.arch.In
	for r0 := 0; r0 < len(obs); r0 += tileRows {
		rows := min(tileRows, len(obs)-r0)
		x := s.x[:rows*in]
		for r := 0; r < rows; r++ {
			copy(x[r*in:(r+1)*in], obs[r0+r])
		}
		n.forward(out[r0*n.arch.Out:(r0+rows)*n.arch.Out], x, rows, s)
	}
	n.scratch.Put(s)
	return nil
}

// ForwardFlat evaluates rows of a flat row-major batch (rows × InDim),
// writing rows × OutDim outputs. It does not allocate in steady state.
func (n *Net) ForwardFlat(out, x []float32, rows int) error {
	if err := n.ready(); err != nil {
		return err
	}
	in := n.arch.In
	if rows < 0 || len(x) < rows*in {
		return fmt.Errorf("nn: flat batch has %d floats: %d rows × %d features needed", len(x), rows, in)
	}
	if len(out) < rows*n.arch.Out {
		return fmt.Errorf("nn: output buffer has %d floats: %d rows × %d outputs need %d", len(out), rows, n.arch.Out, rows*n.arch.Out)
	}
	s := n.getScratch()
	for r0 := 0; r0 < rows; r0 += tileRows {
		m := min(tileRows, rows-r0)
		n.forward(out[r0*n.arch.Out:(r0+m)*n.arch.Out], x[r0*in:(r0+m)*in], m, s)
	}
	n.scratch.Put(s)
	return nil
}

// tileRows is how many observations go through the layers together. A
// tile of at least colRows goes through them column-wise (forwardCols:
// one long vector operation per weight), a smaller one row-wise
// (forwardTile: one per observation and input, the better shape for the
// few queues of a training step).
const (
	tileRows = 256
	colRows  = 64
)

// scratch holds a tile's input (x), its transposition (t) and the
// layers' outputs (a, b, alternately).
type scratch struct{ x, t, a, b []float32 }

func (n *Net) getScratch() *scratch {
	if s, ok := n.scratch.Get().(*scratch); ok {
		return s
	}
	return &scratch{
		x: make([]float32, tileRows*n.arch.In),
		t: make([]float32, tileRows*n.arch.In),
		a: make([]float32, tileRows*n.maxW),
		b: make([]float32, tileRows*n.maxW),
	}
}

var blas32 gonum.Implementation

// forward runs a tile of rows observations (x, row-major) through the
// network, writing the last layer to dst (row-major): column-wise when
// the tile is large enough to pay for two transpositions.
func (n *Net) forward(dst, x []float32, rows int, s *scratch) {
	if rows >= colRows {
		n.forwardCols(dst, x, rows, s)
	} else {
		n.forwardTile(dst, x, rows, s)
	}
}

// forwardCols is forwardTile on the transposed tile: unit j of layer l
// is one vector over the tile's observations, the bias plus, for every
// input i, W[i][j] times input i's vector. Each product adds in the
// same order as forwardTile's, so the outputs are the same bits.
func (n *Net) forwardCols(dst, x []float32, rows int, s *scratch) {
	in := n.arch.In
	cur := s.t[:in*rows] // x may be s.x
	for r := 0; r < rows; r++ {
		for i, v := range x[r*in : (r+1)*in] {
			cur[i*rows+r] = v
		}
	}
	buf := [2][]float32{s.a, s.b}
	for l := range n.Layers {
		ly := &n.Layers[l]
		y := buf[l%2][:ly.Out*rows]
		for j, b := range ly.B {
			col := y[j*rows : (j+1)*rows]
			for r := range col {
				col[r] = b
			}
		}
		for i := 0; i < ly.In; i++ {
			xi := cur[i*rows : (i+1)*rows]
			for j, w := range ly.W[i*ly.Out : (i+1)*ly.Out] {
				if w != 0 {
					blas32.Saxpy(rows, w, xi, 1, y[j*rows:(j+1)*rows], 1)
				}
			}
		}
		if l != len(n.Layers)-1 {
			n.activate(y)
		}
		cur = y
	}
	out := n.arch.Out
	for j := 0; j < out; j++ {
		for r, v := range cur[j*rows : (j+1)*rows] {
			dst[r*out+j] = v
		}
	}
}

// activate applies the hidden layers' non-linearity in place.
func (n *Net) activate(y []float32) {
	switch n.arch.Act {
	case ReLU:
		for j, v := range y {
			if v < 0 {
				y[j] = 0
			}
		}
	case Tanh:
		tanhInPlace(y)
	}
}

// forwardTile runs rows observations (x, row-major) through all layers,
// writing the last layer to dst.
func (n *Net) forwardTile(dst, x []float32, rows int, s *scratch) {
	cur := x
	last := len(n.Layers) - 1
	for l := range n.Layers {
		ly := &n.Layers[l]
		var y []float32
		switch {
		case l == last:
			y = dst[:rows*ly.Out]
		case l%2 == 0:
			y = s.a[:rows*ly.Out]
		default:
			y = s.b[:rows*ly.Out]
		}
		for r := 0; r < rows; r++ {
			copy(y[r*ly.Out:(r+1)*ly.Out], ly.B)
		}
		blas32.Sgemm(blas.NoTrans, blas.NoTrans, rows, ly.Out, ly.In, 1, cur, ly.In, ly.W, ly.Out, 1, y, ly.Out)
		if l != last {
			n.activate(y)
		}
		cur = y
	}
}

// WithInputs returns a copy of n that reads in >= n.InDim() inputs: the
// first n.InDim() as n does, the rest with zero weights, so it gives n's
// outputs on any input, whatever the added features say. Training then
// learns what the added features are worth from where n stands (a model
// of an older observation spec continued on a spec that appends
// features).
func (n *Net) WithInputs(in int) (*Net, error) {
	if in < n.arch.In {
		return nil, fmt.Errorf("nn: widen to %d inputs: the network reads %d already", in, n.arch.In)
	}
	a := n.Arch()
	a.In = in
	w, err := NewNet(a)
	if err != nil {
		return nil, err
	}
	w.Kind = n.Kind
	copy(w.Layers[0].W, n.Layers[0].W) // row i is input i's weights: the added rows stay 0
	copy(w.Layers[0].B, n.Layers[0].B)
	for l := 1; l < len(n.Layers); l++ {
		copy(w.Layers[l].W, n.Layers[l].W)
		copy(w.Layers[l].B, n.Layers[l].B)
	}
	return w, nil
}
