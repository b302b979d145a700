package simenv

import "testing"

// hdrmOverflow is an 8 -> 1 incast on a 9-host star with PFC on, DCQCN off
// and a 3000 B headroom: the senders' ingress PGs overflow their headroom
// and drop.
func hdrmOverflow() Config {
	c := hpccStar(9)
	c.DCQCN.Enabled = false
	c.PFC.HeadroomBytes = 3000
	c.BufferBytes = 2_000_000
	c.Duration = 2 * Millisecond
	var fl []TraceFlow
	for i := 2; i <= 9; i++ {
		fl = append(fl, TraceFlow{Src: i, Dst: 1, Priority: 3, SizeBytes: 2_000_000})
	}
	c.Workloads = []Workload{trace(fl...)}
	return c
}

// TestHeadroomDropsCountedOnIngressPG: a packet the ingress admission
// refuses because its PG's headroom is full is counted on that ingress
// (port, PG), as a switch counts it (SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS),
// not on the egress queue it was headed for (31,229 drops all landed on the
// receiver's egress queue 3, whose ingress never used a byte of headroom).
func TestHeadroomDropsCountedOnIngressPG(t *testing.T) {
	s := run(t, hdrmOverflow())
	st := s.Stats()
	if st.Drops == 0 {
		t.Fatal("no drops: the headroom did not overflow")
	}
	tel := s.Telemetry(0)
	var pgPkts, pgBytes uint64
	for pi, pt := range tel.Ports {
		info := s.infos[0].Ports[pi]
		for q := 0; q < NumQueues; q++ {
			if d := pt.Queues[q].DropPkts; d != 0 {
				t.Errorf("%s (to %s) egress queue %d counts %d drops: headroom overflow is an ingress drop", info.Name, info.Peer, q, d)
			}
		}
		pg := pt.PG[3]
		pgPkts += pg.DropPkts
		pgBytes += pg.DropBytes
		if info.Peer == "host0" && pg.DropPkts != 0 {
			t.Errorf("%s (the receiver's port, which only carries ACKs in) counts %d ingress drops", info.Name, pg.DropPkts)
		}
		if pg.DropPkts > 0 && s.ports[s.sws[0].ports[pi]].hdrmPeak == 0 {
			t.Errorf("%s counts %d ingress drops but never used headroom", info.Name, pg.DropPkts)
		}
	}
	t.Logf("run drops %d (%d B), ingress PG 3 drops %d (%d B)", st.Drops, st.DropBytes, pgPkts, pgBytes)
	if pgPkts != st.Drops || pgBytes != st.DropBytes {
		t.Errorf("ingress PG drops %d pkts %d B, run totals %d pkts %d B: want them equal", pgPkts, pgBytes, st.Drops, st.DropBytes)
	}
}

// TestLossyDropsCountedOnEgressQueue: with PFC off the same incast drops at
// the dynamic threshold, a lossy loss a switch counts on the egress queue.
func TestLossyDropsCountedOnEgressQueue(t *testing.T) {
	c := hdrmOverflow()
	c.PFC.Enabled = false
	s := run(t, c)
	st := s.Stats()
	if st.Drops == 0 {
		t.Fatal("no drops with PFC off")
	}
	var q, pg uint64
	for _, pt := range s.Telemetry(0).Ports {
		q += pt.Queues[3].DropPkts
		pg += pt.PG[3].DropPkts
	}
	if q != st.Drops || pg != 0 {
		t.Errorf("PFC off: egress queue drops %d, ingress PG drops %d, run drops %d: want all on the egress queues", q, pg, st.Drops)
	}
}
