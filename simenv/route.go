package simenv

import "math"

// ---- routing: shortest-path ECMP, hashed per flow ----

// buildRoutes fills every switch's table: for each host, the egress ports on
// a shortest path to it (the ECMP group).
func (s *Sim) buildRoutes() {
	n := len(s.cfg.Topology.Nodes)
	dist := make([]int32, n)
	queue := make([]int32, 0, n)
	for si := range s.sws {
		s.sws[si].route = make([][]int32, len(s.hosts))
	}
	for hi, h := range s.hosts {
		queue = s.hopsTo(h.node, dist, queue)
		for si := range s.sws {
			sw := &s.sws[si]
			if dist[sw.node] < 0 {
				continue
			}
			for _, pid := range sw.ports {
				v := s.ports[pid].peerNode
				if dist[v] == dist[sw.node]-1 && (s.nodeSw[v] >= 0 || v == h.node) {
					sw.route[hi] = append(sw.route[hi], pid)
				}
			}
		}
	}
}

// hopsTo fills dist with every node's hop count to node dst (-1 when
// unreachable), by breadth-first search through switches (hosts do not
// forward). queue is scratch space, returned for reuse.
func (s *Sim) hopsTo(dst int32, dist, queue []int32) []int32 {
	for i := range dist {
		dist[i] = -1
	}
	dist[dst] = 0
	queue = append(queue[:0], dst)
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if u != dst && s.nodeSw[u] < 0 {
			continue // hosts do not forward
		}
		for _, pid := range s.nodePort[u] {
			v := s.ports[pid].peerNode
			if dist[v] < 0 {
				dist[v] = dist[u] + 1
				queue = append(queue, v)
			}
		}
	}
	return queue
}

// nextHop picks the egress port at switch si towards host node dst for a flow
// (per-flow ECMP, hash seeded per switch). -1 when unreachable.
func (s *Sim) nextHop(si int32, dstHost int32, flowID int32) int32 {
	r := s.sws[si].route[dstHost]
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
