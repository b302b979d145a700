package nn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func testNet(t *testing.T, seed uint64) *Net {
	t.Helper()
	n, err := InitNet(Arch{In: 12, Hidden: []int{16, 8}, Out: 5, Act: Tanh}, rand.New(rand.NewPCG(seed, 1)), 1)
	if err != nil {
		t.Fatal(err)
	}
	n.Kind = OutputQ
	return n
}

func TestNetMarshalRoundTrip(t *testing.T) {
	n := testNet(t, 1)
	b1, err := n.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if want := 8 + 2 + 1 + 1 + 4 + 4 + 1 + 2*4 + 4*n.NumParams() + 4; len(b1) != want {
		t.Fatalf("blob is %d bytes, want %d", len(b1), want)
	}
	m, err := UnmarshalNet(b1)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Equal(n) || m.Kind != OutputQ || m.InDim() != 12 || m.OutDim() != 5 {
		t.Fatalf("round trip changed the network: kind %v in %d out %d", m.Kind, m.InDim(), m.OutDim())
	}
	b2, _ := m.MarshalBinary()
	if !bytes.Equal(b1, b2) {
		t.Fatal("re-encoding the decoded network gives different bytes")
	}
	obs := randObs(rand.New(rand.NewPCG(2, 2)), 50, 12)
	a, b := must(n.Forward(obs)), must(m.Forward(obs))
	for i := range a {
		for j := range a[i] {
			if math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) {
				t.Fatalf("output %d,%d: %v before, %v after round trip", i, j, a[i][j], b[i][j])
			}
		}
	}
	// A different network must not encode the same.
	o, _ := testNet(t, 2).MarshalBinary()
	if bytes.Equal(o, b1) {
		t.Fatal("different weights encode to the same bytes")
	}
}

func TestNetUnmarshalCorrupt(t *testing.T) {
	b, _ := testNet(t, 3).MarshalBinary()
	for i := 0; i < len(b); i++ {
		c := append([]byte(nil), b...)
		c[i] ^= 0x10
		if _, err := UnmarshalNet(c); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flipping a bit of byte %d: err = %v, want ErrCorrupt", i, err)
		}
	}
	for l := 0; l < len(b); l++ {
		if _, err := UnmarshalNet(b[:l]); err == nil {
			t.Fatalf("truncated to %d of %d bytes: no error", l, len(b))
		}
	}
	if _, err := UnmarshalNet(nil); err == nil {
		t.Fatal("nil input: no error")
	}
	// Valid checksum but hostile header: a huge architecture must be
	// refused before anything is allocated for it.
	e := &Enc{}
	e.B = append(e.B, netMagic...)
	e.U16(netVersion)
	e.U8(uint8(OutputQ))
	e.U8(uint8(ReLU))
	e.U32(MaxLayerWidth)
	e.U32(MaxLayerWidth)
	e.U8(MaxLayers - 1)
	for i := 0; i < MaxLayers-1; i++ {
		e.U32(MaxLayerWidth)
	}
	if _, err := UnmarshalNet(e.Seal()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("oversized architecture: err = %v, want ErrCorrupt", err)
	}
	// Valid checksum, valid header, weights cut short.
	short := append([]byte(nil), b[:len(b)-4-40]...)
	short = binary.LittleEndian.AppendUint32(short, crc32.ChecksumIEEE(short))
	if _, err := UnmarshalNet(short); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short weights with a valid checksum: err = %v, want ErrCorrupt", err)
	}
	// Unknown version with a valid checksum.
	v2 := append([]byte(nil), b[:len(b)-4]...)
	binary.LittleEndian.PutUint16(v2[8:], 2)
	v2 = binary.LittleEndian.AppendUint32(v2, crc32.ChecksumIEEE(v2))
	if _, err := UnmarshalNet(v2); err == nil {
		t.Fatal("version 2: no error")
	}
	// NaN weight with a valid checksum.
	nan := append([]byte(nil), b[:len(b)-4]...)
	binary.LittleEndian.PutUint32(nan[len(nan)-4:], math.Float32bits(float32(math.NaN())))
	nan = binary.LittleEndian.AppendUint32(nan, crc32.ChecksumIEEE(nan))
	if _, err := UnmarshalNet(nan); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("NaN weight: err = %v, want ErrCorrupt", err)
	}
}

// A non-finite weight is named where it sits (the byte and the
// parameter), not at the end of the weights.
func TestNonFiniteWeightWhere(t *testing.T) {
	n := testNet(t, 3)
	b, _ := n.MarshalBinary()
	off := len(b) - 4 - 4*n.NumParams() + 4*5 // weight #5
	c := append([]byte(nil), b[:len(b)-4]...)
	binary.LittleEndian.PutUint32(c[off:], math.Float32bits(float32(math.NaN())))
	c = binary.LittleEndian.AppendUint32(c, crc32.ChecksumIEEE(c))
	_, err := UnmarshalNet(c)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at byte %d: non-finite weight NaN (parameter 0, index 5)", off)) {
		t.Fatalf("NaN weight #5 at byte %d: %v", off, err)
	}
}
