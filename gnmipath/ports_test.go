package gnmipath

import (
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// renamed is s with every port renamed by the round.
func renamed(s env.Snapshot, round int) env.Snapshot {
	out := s
	out.Queues = append([]env.QueueSample(nil), s.Queues...)
	for i := range out.Queues {
		out.Queues[i].Key.Port = "junk" + itoa(round) + "x" + out.Queues[i].Key.Port
	}
	return out
}

// A target that reports ever new port names holds at most MaxPorts ports
// in the decoder: further ports are skipped and counted; ports whose
// counters stop coming are forgotten after ForgetAfter snapshots, and said
// so. Before, every name stayed: 10,000 new names every 50th notification
// took the agent to 2.95 GB in 64 s.
func TestPortsAreBounded(t *testing.T) {
	for _, d := range []Dialect{OpenConfig, Sonic} {
		dec := NewDecoder(Target{Name: "leaf0", Dialect: d, MaxPorts: 40}, lossless...)
		base := testSwitch(16)
		feed := func(s env.Snapshot) {
			for _, n := range encodeAll(d, "", s, gnmi.Encoding_PROTO) {
				_ = dec.Apply(n)
			}
		}
		for round := 0; round < 200; round++ {
			feed(renamed(base, round))
			dec.Snapshot()
			if len(dec.ports) > 40 || len(dec.known) > 40 || len(dec.qs) > 40*len(lossless) {
				t.Fatalf("%s round %d: %d ports, %d known, %d queues kept (bound 40)", d, round, len(dec.ports), len(dec.known), len(dec.qs))
			}
		}
		counts := map[string]uint64{}
		for _, s := range dec.Skipped() {
			counts[s.Shape] = s.Count
		}
		if counts[ShapePortLimit] == 0 || counts[ShapeForgotten] == 0 {
			t.Fatalf("%s: skipped %+v: want ports beyond the bound counted and stale ports forgotten", d, dec.Skipped())
		}
		// a real switch's ports, reported every sample, are all kept
		real := NewDecoder(Target{Name: "leaf0", Dialect: d, MaxPorts: 40}, lossless...)
		for i := 0; i < 3*ForgetAfter; i++ {
			for _, n := range encodeAll(d, "", base, gnmi.Encoding_PROTO) {
				if err := real.Apply(n); err != nil {
					t.Fatal(err)
				}
			}
			if s, inc := real.Snapshot(); len(s.Queues) != len(base.Queues) || len(inc) > 0 {
				t.Fatalf("%s sample %d: %d queues of %d (%v)", d, i, len(s.Queues), len(base.Queues), inc)
			}
		}
	}
}

// A target's Ports list keeps the decoder to those ports.
func TestDecoderKeepsToTheConfiguredPorts(t *testing.T) {
	base := testSwitch(4)
	dec := NewDecoder(Target{Name: "leaf0", Dialect: OpenConfig, Ports: []string{"Ethernet4"}}, lossless...)
	for _, n := range encodeAll(OpenConfig, "", base, gnmi.Encoding_PROTO) {
		if err := dec.Apply(n); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := dec.Snapshot()
	if len(s.Queues) != len(lossless) || s.Queues[0].Key.Port != "Ethernet4" || len(dec.known) != 1 {
		t.Fatalf("queues %+v, %d ports known", s.Queues, len(dec.known))
	}
}
