package simenv

// ---- transmission: egress scheduling, serialisation, ECN marking ----

// transmit starts serialising packet pk on port pid and schedules its
// arrival at the peer. The port frees itself at busyUntil; an evTxDone is
// scheduled only when something is waiting to go next, so an idle link
// costs one event per packet, not two.
func (s *Sim) transmit(pid int32, pk int32) {
	p := &s.ports[pid]
	pkt := &s.pkts[pk]
	dt := Time(float64(pkt.size)*p.psPerByte + 0.5)
	p.busyUntil = s.now + dt
	p.busyTime += dt
	s.stats.PacketHops++
	if pkt.kind == pktData {
		s.stats.DataHops++
	}
	pkt.inPort = p.peerPort
	pkt.at = p.busyUntil + p.delay
	// Frames cross a link in order, so only the first one on the wire needs
	// an event: the queue holds one entry per busy link, not per frame.
	if p.wire.pkts == 0 {
		s.evq.push(pkt.at, evArrive, pid, 0)
	}
	s.fifoPush(&p.wire, pk)
	if !p.wakePending && s.hasBacklog(p) {
		p.wakePending = true
		s.evq.push(p.busyUntil, evTxDone, pid, 0)
	}
}

// hasBacklog reports whether port p has a frame waiting that tryTx would
// send when the port frees.
func (s *Sim) hasBacklog(p *port) bool {
	if p.pfcq.pkts > 0 {
		return true
	}
	if p.isHost {
		// hostSend arms its own wake-up for data; ACKs of a paused
		// priority wait for the RESUME, which calls tryTx.
		return p.ctrl.pkts > 0 && !p.paused[s.pkts[p.ctrl.head].prio]
	}
	if p.ctrl.pkts > 0 {
		return true
	}
	for q := range p.q {
		if p.q[q].pkts > 0 {
			return true
		}
	}
	return false
}

// txDone handles evTxDone: port pid has finished serialising a frame.
func (s *Sim) txDone(pid int32) {
	s.ports[pid].wakePending = false
	s.tryTx(pid)
}

// tryTx sends the next frame of port pid if the port is free: PFC frames
// first, then the control queue, then data (a host's flows, or DWRR on a
// switch). A busy port arms an evTxDone for when it frees.
func (s *Sim) tryTx(pid int32) {
	p := &s.ports[pid]
	if s.now < p.busyUntil {
		if !p.wakePending {
			p.wakePending = true
			s.evq.push(p.busyUntil, evTxDone, pid, 0)
		}
		return
	}
	if p.pfcq.pkts > 0 {
		s.transmit(pid, s.fifoPop(&p.pfcq))
		return
	}
	if p.ctrl.pkts > 0 && !(p.isHost && p.paused[s.pkts[p.ctrl.head].prio]) {
		s.touchQueue(p, ControlQueue)
		pk := s.fifoPop(&p.ctrl)
		if !p.isHost {
			// counted as sent, as every other queue's packets are
			c := &p.cnt[ControlQueue]
			c.txPkts++
			c.txBytes += uint64(s.pkts[pk].size)
		}
		s.transmit(pid, pk)
		if p.isHost {
			s.armHostWake(pid, &s.hosts[s.nodeHost[p.node]])
		}
		return
	}
	if p.isHost {
		s.hostSend(pid)
		return
	}
	s.serveDWRR(pid)
}

// serveDWRR sends the next data packet of switch port pid, picked by
// deficit-weighted round robin among its data queues that are not paused.
func (s *Sim) serveDWRR(pid int32) {
	p := &s.ports[pid]
	for tries := 0; tries < NumQueues; tries++ {
		q := int(p.rr)
		f := &p.q[q]
		if f.pkts > 0 && !p.paused[q] {
			size := s.pkts[f.head].size
			if p.deficit[q] < size {
				p.deficit[q] += s.quantum
			}
			p.deficit[q] -= size
			pk := s.dequeueData(pid, q)
			if f.pkts == 0 {
				p.deficit[q] = 0
				p.rr = int8((q + 1) % NumQueues)
			} else if p.deficit[q] < s.pkts[f.head].size {
				p.rr = int8((q + 1) % NumQueues)
			}
			s.transmit(pid, pk)
			return
		}
		if f.pkts == 0 {
			p.deficit[q] = 0
		}
		p.rr = int8((q + 1) % NumQueues)
	}
}

// touchQueue brings the depth integral of egress queue q up to now; it is
// called before the queue's depth changes and before it is read.
func (s *Sim) touchQueue(p *port, q int) {
	c := &p.cnt[q]
	c.integ += float64(queuedBytes(p, q)) * float64(s.now-c.lastChange)
	c.lastChange = s.now
}

// queuedBytes is egress queue q's depth: for the control queue its ACK/CNP
// fifo besides any data of that priority (telemetry read the fifo's depth
// while its average and watermark followed the empty data queue).
func queuedBytes(p *port, q int) int64 {
	if q == ControlQueue {
		return p.ctrl.bytes + p.q[q].bytes
	}
	return p.q[q].bytes
}

// dequeueData takes the head packet of data queue q of switch port pid:
// it releases the packet's ingress buffer, counts it, marks it CE by the
// queue's ECN setting, and resumes the ingress PG if it may.
func (s *Sim) dequeueData(pid int32, q int) int32 {
	p := &s.ports[pid]
	s.touchQueue(p, q)
	pk := s.fifoPop(&p.q[q])
	pkt := &s.pkts[pk]
	size := int64(pkt.size)
	sw := &s.sws[s.nodeSw[p.node]]
	in := &s.ports[pkt.inPort]
	pg := int(pkt.prio)
	s.release(sw, in, pg, size)
	c := &p.cnt[q]
	c.txPkts++
	c.txBytes += uint64(size)
	if pkt.kind == pktData && !s.cfg.ECNOff && s.mark(p.ecn[q], p.q[q].bytes) {
		pkt.ce = true
		c.markedPkts++
		c.markedBytes += uint64(size)
		s.stats.ECNMarked++
	}
	s.checkResume(sw, pkt.inPort, pg)
	return pk
}

// mark decides RED-style ECN marking for a packet leaving a queue of q
// bytes: never at or below Kmin, always above Kmax, linearly up to Pmax
// between them.
func (s *Sim) mark(e ECN, q int64) bool {
	if q <= e.KminBytes {
		return false
	}
	if q > e.KmaxBytes || e.KmaxBytes == e.KminBytes {
		return true
	}
	p := e.Pmax * float64(q-e.KminBytes) / float64(e.KmaxBytes-e.KminBytes)
	return s.rngMark.Float64() < p
}
