package rl

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

func FuzzRestoreCheckpoint(f *testing.F) {
	d, _ := NewDDQN(DDQNConfig{Arch: Arch{In: 2, Hidden: []int{3}, Out: 2, Act: ReLU}, Gamma: 0.5, BatchSize: 2, ReplayCapacity: 4, Seed: 1})
	o := []float32{1, 2}
	for i := 0; i < 5; i++ {
		d.Store(Transition{Obs: o, Next: o, Action: i % 2, Reward: 1})
	}
	d.Train()
	ck, _ := d.MarshalCheckpoint(true)
	f.Add(ck[:len(ck)-4])
	p, _ := NewPPO(PPOConfig{Arch: Arch{In: 2, Hidden: []int{3}, Out: 2, Act: Tanh}, MinibatchSize: 2})
	pk, _ := p.MarshalCheckpoint()
	f.Add(pk[:len(pk)-4])
	f.Fuzz(func(t *testing.T, body []byte) {
		blob := reseal(body)
		if r, err := RestoreDDQN(blob); err == nil {
			if _, err := r.MarshalCheckpoint(true); err != nil {
				t.Fatal(err)
			}
		}
		if r, err := RestorePPO(blob); err == nil {
			if _, err := r.MarshalCheckpoint(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
