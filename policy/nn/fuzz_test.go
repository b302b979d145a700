package nn

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// reseal replaces a blob's checksum so that fuzzed bodies reach the
// decoders instead of stopping at the CRC.
func reseal(body []byte) []byte {
	out := append([]byte(nil), body...)
	return binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(out))
}

func FuzzUnmarshalNet(f *testing.F) {
	n, _ := InitNet(Arch{In: 3, Hidden: []int{4}, Out: 2, Act: ReLU}, rand.New(rand.NewPCG(1, 1)), 1)
	b, _ := n.MarshalBinary()
	f.Add(b[:len(b)-4])
	f.Add(b[:20])
	f.Fuzz(func(t *testing.T, body []byte) {
		blob := reseal(body)
		m, err := UnmarshalNet(blob)
		if err != nil {
			return
		}
		again, err := m.MarshalBinary()
		if err != nil || !bytes.Equal(again, blob) {
			t.Fatalf("accepted blob does not re-encode to itself")
		}
		if _, err := m.Forward([][]float32{make([]float32, m.InDim())}); err != nil {
			t.Fatal(err)
		}
	})
}
