package simenv

// ---- ground truth for training: which flows finished, and where they went ----
//
// A switch cannot tell what its queues did to the flows that crossed them;
// the simulator can. Training may reward a policy with it (the observations
// stay counters only); evaluation reads the same records at the end of a run.

// FinishedFlows returns the flows that finished after the first from of
// them (in the order they finished) and the cursor to pass next time:
// FinishedFlows(0) is every finished flow so far.
func (s *Sim) FinishedFlows(from int) ([]FlowRecord, int) {
	if from < 0 {
		from = 0
	}
	if from >= len(s.finished) {
		return nil, len(s.finished)
	}
	out := make([]FlowRecord, 0, len(s.finished)-from)
	for _, id := range s.finished[from:] {
		out = append(out, s.flows[id].FlowRecord)
	}
	return out, len(s.finished)
}

// FlowPath appends to dst the switch egress queues a flow's data crosses,
// source side first, at the flow's priority (its per-flow ECMP path). A
// flow that does not exist or whose destination cannot be reached gives dst
// unchanged.
func (s *Sim) FlowPath(dst []QueueRef, id int) []QueueRef {
	if id < 0 || id >= len(s.flows) {
		return dst
	}
	f := &s.flows[id]
	dstNode := int32(f.Dst)
	if int(dstNode) >= len(s.nodeHost) || s.nodeHost[dstNode] < 0 {
		return dst
	}
	dstHost := s.nodeHost[dstNode]
	pid := s.hosts[f.srcHost].port
	for hops := 0; hops < 64; hops++ {
		p := &s.ports[pid]
		if p.peerNode == dstNode {
			return dst
		}
		si := s.nodeSw[p.peerNode]
		if si < 0 {
			return dst
		}
		pid = s.nextHop(si, dstHost, int32(id))
		if pid < 0 {
			return dst
		}
		dst = append(dst, QueueRef{Switch: int(si), Port: int(s.ports[pid].local), Queue: int(f.prio)})
	}
	return dst
}

// ActiveFlow is a flow in flight: started, not finished.
type ActiveFlow struct {
	ID        int
	SizeBytes int64
	// Remaining is what its sender has yet to see acknowledged.
	Remaining int64
	// Start and Standalone are its FlowRecord's.
	Start, Standalone Time
}

// ActiveFlows appends to dst every flow in flight now, host by host. Like
// FinishedFlows it is ground truth that no switch counter shows: training
// may give it to a critic, never to a policy.
func (s *Sim) ActiveFlows(dst []ActiveFlow) []ActiveFlow {
	for h := range s.hosts {
		for _, id := range s.hosts[h].flows {
			f := &s.flows[id]
			dst = append(dst, ActiveFlow{ID: int(id), SizeBytes: f.SizeBytes, Remaining: max(f.SizeBytes-f.sndUna, 0),
				Start: f.Start, Standalone: f.Standalone})
		}
	}
	return dst
}
