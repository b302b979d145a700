package nn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Wire formats. All integers and floats are little-endian; every blob ends
// with a CRC-32 (IEEE) of the bytes before it.
//
// Policy (Net.MarshalBinary), version 1:
//
//	magic "ECNRLNET" | u16 version | u8 output kind | u8 activation |
//	u32 in | u32 out | u8 hidden count | u32 hidden width ... |
//	f32 weights and biases, layer by layer (W row-major [in][out], then B) |
//	u32 crc
const (
	netMagic   = "ECNRLNET"
	netVersion = 1
)

// OutputKind says what a network's outputs mean, so that a deployed blob
// is interpreted the way it was trained.
type OutputKind uint8

const (
	// OutputUnspecified is a bare network.
	OutputUnspecified OutputKind = 0
	// OutputQ: one Q-value per action (DDQN).
	OutputQ OutputKind = 1
	// OutputLogits: one logit per action, softmax gives probabilities (PPO actor).
	OutputLogits OutputKind = 2
	// OutputValue: a state value (PPO critic).
	OutputValue OutputKind = 3
)

// String names the kind.
func (k OutputKind) String() string {
	switch k {
	case OutputUnspecified:
		return "unspecified"
	case OutputQ:
		return "q-values"
	case OutputLogits:
		return "logits"
	case OutputValue:
		return "value"
	}
	return fmt.Sprintf("output-kind(%d)", uint8(k))
}

// ErrCorrupt is wrapped by every decoding error caused by the bytes
// themselves (bad magic, version, checksum, truncation, bounds).
var ErrCorrupt = errors.New("corrupt")

type Enc struct{ B []byte }

func (e *Enc) U8(v uint8)    { e.B = append(e.B, v) }
func (e *Enc) U16(v uint16)  { e.B = binary.LittleEndian.AppendUint16(e.B, v) }
func (e *Enc) U32(v uint32)  { e.B = binary.LittleEndian.AppendUint32(e.B, v) }
func (e *Enc) U64(v uint64)  { e.B = binary.LittleEndian.AppendUint64(e.B, v) }
func (e *Enc) F64(v float64) { e.U64(math.Float64bits(v)) }
func (e *Enc) Bytes(p []byte) {
	e.U32(uint32(len(p)))
	e.B = append(e.B, p...)
}
func (e *Enc) F32s(v []float32) {
	for _, x := range v {
		e.U32(math.Float32bits(x))
	}
}
func (e *Enc) Seal() []byte { e.U32(crc32.ChecksumIEEE(e.B)); return e.B }

// dec reads a sealed blob; the first error sticks.
type Dec struct {
	what string
	b    []byte
	off  int
	err  error
}

// open checks the checksum and magic and returns a decoder positioned
// after the magic.
func Open(what string, data []byte, magic string) (*Dec, error) {
	if len(data) < len(magic)+4 {
		return nil, fmt.Errorf("nn: %s: %d bytes is too short: %w", what, len(data), ErrCorrupt)
	}
	if string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("nn: %s: bad magic %q (want %q): %w", what, data[:len(magic)], magic, ErrCorrupt)
	}
	body := data[:len(data)-4]
	if got, want := crc32.ChecksumIEEE(body), binary.LittleEndian.Uint32(data[len(data)-4:]); got != want {
		return nil, fmt.Errorf("nn: %s: checksum %08x does not match stored %08x: %w", what, got, want, ErrCorrupt)
	}
	return &Dec{what: what, b: body, off: len(magic)}, nil
}

// Err is the first error the decoder met (nil while none).
func (d *Dec) Err() error { return d.err }

// Left is how many bytes remain before the checksum.
func (d *Dec) Left() int { return len(d.b) - d.off }

// Fail records the first error: format and args say what is wrong.
func (d *Dec) Fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("nn: %s at byte %d: %s: %w", d.what, d.off, fmt.Sprintf(format, args...), ErrCorrupt)
	}
}

func (d *Dec) Take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || len(d.b)-d.off < n {
		d.Fail("truncated (need %d bytes, %d left)", n, len(d.b)-d.off)
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *Dec) U8() uint8 {
	if p := d.Take(1); p != nil {
		return p[0]
	}
	return 0
}
func (d *Dec) U16() uint16 {
	if p := d.Take(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}
func (d *Dec) U32() uint32 {
	if p := d.Take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}
func (d *Dec) U64() uint64 {
	if p := d.Take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}
func (d *Dec) F64() float64 { return math.Float64frombits(d.U64()) }

// count reads a u32 and checks it against an upper bound.
func (d *Dec) Count(field string, limit int) int {
	v := d.U32()
	if d.err == nil && int64(v) > int64(limit) {
		d.Fail("%s = %d exceeds %d", field, v, limit)
		return 0
	}
	return int(v)
}

func (d *Dec) Bytes(field string) []byte {
	n := d.Count(field+" length", len(d.b))
	return d.Take(n)
}

func (d *Dec) F32s(dst []float32) {
	p := d.Take(4 * len(dst))
	if p == nil {
		return
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
	}
}

func (d *Dec) End() error {
	if d.err == nil && d.off != len(d.b) {
		d.Fail("%d unexpected trailing bytes", len(d.b)-d.off)
	}
	return d.err
}

// MarshalBinary encodes the architecture, output kind and weights. The
// same weights always give the same bytes.
func (n *Net) MarshalBinary() ([]byte, error) {
	e := &Enc{B: make([]byte, 0, 64+4*n.NumParams())}
	e.B = append(e.B, netMagic...)
	e.U16(netVersion)
	n.EncodeBody(e)
	return e.Seal(), nil
}

func (n *Net) EncodeBody(e *Enc) {
	e.U8(uint8(n.Kind))
	e.U8(uint8(n.arch.Act))
	e.U32(uint32(n.arch.In))
	e.U32(uint32(n.arch.Out))
	e.U8(uint8(len(n.arch.Hidden)))
	for _, h := range n.arch.Hidden {
		e.U32(uint32(h))
	}
	for _, p := range n.Params() {
		e.F32s(p)
	}
}

// UnmarshalBinary replaces n with the network encoded in data. Corrupt,
// truncated or foreign input gives an error wrapping ErrCorrupt (or naming
// the unsupported version); it never panics.
func (n *Net) UnmarshalBinary(data []byte) error {
	d, err := Open("policy", data, netMagic)
	if err != nil {
		return err
	}
	if v := d.U16(); d.err == nil && v != netVersion {
		return fmt.Errorf("nn: policy format version %d: this build reads version %d", v, netVersion)
	}
	m, err := DecodeNet(d)
	if err != nil {
		return err
	}
	if err := d.End(); err != nil {
		return err
	}
	n.arch, n.Layers, n.maxW, n.Kind = m.arch, m.Layers, m.maxW, m.Kind
	n.scratch = newScratchPool()
	return nil
}

func DecodeNet(d *Dec) (*Net, error) {
	kind := OutputKind(d.U8())
	var a Arch
	a.Act = Activation(d.U8())
	a.In = d.Count("in", MaxLayerWidth)
	a.Out = d.Count("out", MaxLayerWidth)
	nh := int(d.U8())
	if d.err == nil && nh > MaxLayers-1 {
		d.Fail("hidden layer count %d exceeds %d", nh, MaxLayers-1)
	}
	if d.err != nil {
		return nil, d.err
	}
	a.Hidden = make([]int, nh)
	for i := range a.Hidden {
		a.Hidden[i] = d.Count(fmt.Sprintf("hidden[%d]", i), MaxLayerWidth)
	}
	if d.err != nil {
		return nil, d.err
	}
	if kind > OutputValue {
		d.Fail("output kind %d unknown", kind)
		return nil, d.err
	}
	if err := a.Validate(); err != nil {
		d.Fail("%v", err)
		return nil, d.err
	}
	if need := 4 * a.numParams(); len(d.b)-d.off < need {
		d.Fail("truncated weights (need %d bytes, %d left)", need, len(d.b)-d.off)
		return nil, d.err
	}
	net, err := NewNet(a)
	if err != nil {
		return nil, err
	}
	net.Kind = kind
	start := d.off
	for _, p := range net.Params() {
		d.F32s(p)
	}
	if d.err != nil {
		return nil, d.err
	}
	i := 0
	for pi, p := range net.Params() {
		for j, v := range p {
			if !finite32(v) {
				d.off = start + 4*i // where it sits, not the end of the weights
				d.Fail("non-finite weight %v (parameter %d, index %d)", v, pi, j)
				return nil, d.err
			}
			i++
		}
	}
	return net, nil
}

// UnmarshalNet decodes a policy blob into a new Net.
func UnmarshalNet(data []byte) (*Net, error) {
	n := &Net{}
	if err := n.UnmarshalBinary(data); err != nil {
		return nil, err
	}
	return n, nil
}
