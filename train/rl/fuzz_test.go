package rl

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// reseal replaces a blob's checksum so that fuzzed bodies reach the
// decoders instead of stopping at the CRC.
func reseal(body []byte) []byte {
	out := append([]byte(nil), body...)
	return binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(out))
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
