package simswitch

import (
	"testing"
	"time"

	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
)

// A Set that fails part-way is undone in reverse order, so that each
// headroom it restores fits the buffer again: undone in order, a headroom
// lowered to make room for another's rise could not be restored while
// the other still held the room (SetHeadroom keeps the buffer's sum), and
// "nothing changed" left the first port at its lowered headroom.
func TestFailedSetUndoneInReverse(t *testing.T) {
	cfg := simenv.DefaultConfig()
	cfg.Topology = simenv.StarTopology(8, 100e9, simenv.Microsecond)
	cfg.BufferBytes = 1_000_000
	sim, err := simenv.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pg := func(p int) simenv.PGRef { return simenv.PGRef{Switch: 0, Port: p, PG: 3} }
	hdrm := func(p int) int64 { return sim.Telemetry(0).Ports[p].PG[3].HeadroomBytes }
	for _, p := range []int{2, 3} {
		if err := sim.SetHeadroom(pg(p), 240_000); err != nil {
			t.Fatal(err)
		}
	}
	big := sim.HeadroomLimit(pg(0))
	if err := sim.SetHeadroom(pg(0), big); err != nil {
		t.Fatal(err)
	}
	small := hdrm(1)
	r := newRunner(sim, gnmipath.DefaultDevice(gnmipath.OpenConfig), 1000, time.Millisecond, 0)
	q := func(p int) simenv.QueueRef { return simenv.QueueRef{Switch: 0, Port: p, Queue: 3} }
	ecn := sim.ECN(q(4))
	changes := []change{
		{ref: q(0), hdrm: small, oldHdrm: big, setHdrm: true, describe: "port 0 headroom down"},
		{ref: q(1), hdrm: big, oldHdrm: small, setHdrm: true, describe: "port 1 headroom up"},
		{ref: q(4), ecn: simenv.ECN{KminBytes: 2, KmaxBytes: 1, Pmax: 0.1}, old: ecn, setECN: true, describe: "bad ECN"},
	}
	err = r.commitSet(0, prepared{ver: r.pub[0].ver, changes: changes}, nil)
	if err == nil {
		t.Fatal("a Set with kmin above kmax went through")
	}
	t.Logf("rejected: %v", err)
	if h0, h1 := hdrm(0), hdrm(1); h0 != big || h1 != small {
		t.Errorf("after the rejected Set: port 0 headroom %d B (was %d), port 1 %d B (was %d)", h0, big, h1, small)
	}
}
