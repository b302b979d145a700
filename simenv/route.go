package simenv

import "math"

// ---- routing: shortest-path ECMP, hashed per flow ----

// buildRoutes fills every switch's table: for each edge switch (one with
// hosts), the egress ports on a shortest path to it (the ECMP group). A
// host hangs off exactly one switch, so a shortest path to the host is one
// to its switch, then the host's link: one breadth-first search per edge
// switch over the switches, not one per host over every node. The groups
// are the ones a search per host would give, in the same (port) order.
func (s *Sim) buildRoutes() {
	n := len(s.cfg.Topology.Nodes)
	s.hostEdge = make([]int32, len(s.hosts))
	edgeOf := make([]int32, len(s.sws)) // switch index -> edge index, -1
	for i := range edgeOf {
		edgeOf[i] = -1
	}
	var edges []int32 // edge index -> switch index
	for hi := range s.hosts {
		si := s.nodeSw[s.ports[s.hosts[hi].port].peerNode]
		if si < 0 {
			s.hostEdge[hi] = -1 // linked to another host: no switch reaches it
			continue
		}
		if edgeOf[si] < 0 {
			edgeOf[si] = int32(len(edges))
			edges = append(edges, si)
		}
		s.hostEdge[hi] = edgeOf[si]
	}
	for si := range s.sws {
		s.sws[si].route = make([][]int32, len(edges))
	}
	s.edgeComp = make([]int32, len(edges))
	for e := range s.edgeComp {
		s.edgeComp[e] = -1
	}
	dist := make([]int32, n)
	queue := make([]int32, 0, n)
	for e, dsw := range edges {
		queue = s.switchHops(s.sws[dsw].node, dist, queue)
		if s.edgeComp[e] < 0 {
			// a part of the fabric the earlier edges do not reach: every
			// edge this search reaches is in it
			for e2, sw2 := range edges {
				if dist[s.sws[sw2].node] >= 0 {
					s.edgeComp[e2] = int32(e)
				}
			}
		}
		for si := range s.sws {
			sw := &s.sws[si]
			if int32(si) == dsw || dist[sw.node] < 0 {
				continue
			}
			for _, pid := range sw.ports {
				v := s.ports[pid].peerNode
				if s.nodeSw[v] >= 0 && dist[v] == dist[sw.node]-1 {
					sw.route[e] = append(sw.route[e], pid)
				}
			}
		}
	}
}

// connected says whether hosts a and b (host indices) reach each other
// through switches (each part of a fabric may carry its own workloads;
// a flow across parts could only be dropped).
func (s *Sim) connected(a, b int32) bool {
	ea, eb := s.hostEdge[a], s.hostEdge[b]
	if ea < 0 || eb < 0 {
		return ea == eb && s.ports[s.hosts[a].port].peerNode == s.hosts[b].node // two hosts linked directly
	}
	return s.edgeComp[ea] == s.edgeComp[eb]
}

// switchHops fills dist with every switch's hop count to switch node dst
// through switches only (-1 when unreachable; hosts stay -1, as hosts do
// not forward). queue is scratch space, returned for reuse.
func (s *Sim) switchHops(dst int32, dist, queue []int32) []int32 {
	for i := range dist {
		dist[i] = -1
	}
	dist[dst] = 0
	queue = append(queue[:0], dst)
	for head := 0; head < len(queue); head++ {
		u := queue[head]
		for _, pid := range s.nodePort[u] {
			v := s.ports[pid].peerNode
			if dist[v] < 0 && s.nodeSw[v] >= 0 {
				dist[v] = dist[u] + 1
				queue = append(queue, v)
			}
		}
	}
	return queue
}

// nextHop picks the egress port at switch si towards host dstHost (a host
// index) for a flow (per-flow ECMP, hash seeded per switch). -1 when
// unreachable.
func (s *Sim) nextHop(si int32, dstHost int32, flowID int32) int32 {
	hp := &s.ports[s.hosts[dstHost].port]
	if s.nodeSw[hp.peerNode] == si {
		return hp.peerPort // the host's own switch: its link
	}
	e := s.hostEdge[dstHost]
	if e < 0 {
		return -1
	}
	r := s.sws[si].route[e]
	switch len(r) {
	case 0:
		return -1
	case 1:
		return r[0]
	}
	h := (s.sws[si].seed ^ uint64(flowID)) * 0x9e3779b97f4a7c15
	return r[(h>>32)%uint64(len(r))]
}

// pathOf walks the ECMP path of a flow and returns its base RTT (as HPCC
// computes it: twice the propagation plus one MTU payload's serialisation per
// hop) and bottleneck rate.
func (s *Sim) pathOf(src, dst int32, flowID int32) (rtt Time, bw float64, ok bool) {
	var delay, tx Time
	bw = math.Inf(1)
	pid := s.hosts[s.nodeHost[src]].port
	for hops := 0; hops < 64; hops++ {
		p := &s.ports[pid]
		delay += p.delay
		tx += Time(float64(s.cfg.MTU) * p.psPerByte)
		if p.rate < bw {
			bw = p.rate
		}
		if p.peerNode == dst {
			return 2*delay + tx, bw, true
		}
		si := s.nodeSw[p.peerNode]
		if si < 0 {
			return 0, 0, false
		}
		pid = s.nextHop(si, s.nodeHost[dst], flowID)
		if pid < 0 {
			return 0, 0, false
		}
	}
	return 0, 0, false
}
