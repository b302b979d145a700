package simenv

import (
	"strings"
	"testing"
)

// TestSetHeadroomKeepsTheBufferSum: SetHeadroom refuses a headroom that
// would make the switch's headroom, reserves and one frame of shared space
// per port more than its buffer, as New refuses the same numbers in a
// config. Before, eight calls of buffer/4 each reserved twice the 4 MiB
// buffer, XOFF fell to 0 and PAUSE went out on the first packet.
func TestSetHeadroomKeepsTheBufferSum(t *testing.T) {
	c := hpccStar(8)
	c.BufferBytes = 4 << 20
	c2 := c
	c2.PFC.HeadroomBytes = c.BufferBytes / 4
	if _, err := New(c2); err == nil {
		t.Fatal("New took a headroom of a quarter of the buffer on each of 8 ports")
	}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	sw := &s.sws[0]
	frame := int64(c.MTU + c.HeaderBytes)
	var refused error
	for p := range s.infos[0].Ports {
		before := s.ports[sw.ports[p]].headroom[3]
		err := s.SetHeadroom(PGRef{Switch: 0, Port: p, PG: 3}, sw.buffer/4)
		if err != nil {
			refused = err
			if got := s.ports[sw.ports[p]].headroom[3]; got != before {
				t.Errorf("refused, yet the headroom moved from %d to %d B", before, got)
			}
		}
		if need := sw.totalHdrm + sw.totalRsrv + int64(len(sw.ports))*frame; need > sw.buffer {
			t.Fatalf("after SetHeadroom on port %d: headroom %d + reserve %d + frames reserve %d B of a %d B buffer",
				p, sw.totalHdrm, sw.totalRsrv, need, sw.buffer)
		}
	}
	if refused == nil {
		t.Fatal("every SetHeadroom(buffer/4) accepted")
	}
	t.Logf("refused: %v", refused)
	for _, w := range []string{"Ethernet", "buffer", "at most"} {
		if !strings.Contains(refused.Error(), w) {
			t.Errorf("error %q does not say %q", refused, w)
		}
	}
	last := PGRef{Switch: 0, Port: len(sw.ports) - 1, PG: 3}
	lim := s.HeadroomLimit(last)
	if err := s.SetHeadroom(last, lim); err != nil {
		t.Errorf("SetHeadroom at its HeadroomLimit %d B: %v", lim, err)
	}
	if err := s.SetHeadroom(last, lim+1); err == nil {
		t.Errorf("SetHeadroom took %d B, above its HeadroomLimit %d B", lim+1, lim)
	}
	if xoff := s.Telemetry(0).Ports[1].PG[3].XoffBytes; xoff <= 0 {
		t.Errorf("XOFF %d B after the accepted settings", xoff)
	}
}
