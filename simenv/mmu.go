package simenv

import "math"

// ---- switch MMU and PFC: ingress admission, dynamic threshold, PAUSE/RESUME ----

// MinHeadroom is the lossless headroom of one (port, PG): what can still
// arrive after the switch decides to send PAUSE. It follows the IEEE 802.1Qbb
// worst case: the PAUSE frame waits behind one MTU frame on our egress, the
// peer finishes the MTU frame it is sending, and everything on the wire in
// both directions (round-trip propagation, from the link delay or the
// configured cable length at 5 ns/m, whichever is longer) lands, plus the
// peer's response time (394 pause quanta at <= 100 Gb/s, 905 above; 802.3
// Annex 31B). Bytes, rounded up.
func (s *Sim) MinHeadroom(rateBps float64, delay Time) int64 {
	return minHeadroom(&s.cfg, rateBps, delay)
}

func minHeadroom(cfg *Config, rateBps float64, delay Time) int64 {
	wire := float64(cfg.MTU + cfg.HeaderBytes)
	prop := max(cfg.PFC.CableMeters, float64(delay)/float64(Second)/5e-9) * 5e-9

	quanta := 394.0
	if rateBps > 100e9 {
		quanta = 905
	}
	bytes := 2*wire + pfcFrameBytes + 2*prop*rateBps/8 + quanta*512/8
	return int64(math.Ceil(bytes))
}

// PGHeadroom is the headroom a lossless PG of a switch port of rateBps
// with a link of one-way delay gets under cfg (pfc.headroom, stated at 100
// Gb/s and scaled with the rate, or its factor or formula), and the
// lossless floor there (MinHeadroom). 0, 0 with PFC off.
func PGHeadroom(cfg Config, rateBps float64, delay Time) (headroom, floor int64) {
	if !cfg.PFC.Enabled {
		return 0, 0
	}
	floor = minHeadroom(&cfg, rateBps, delay)
	return pgHeadroom(&cfg, floor, rateBps, delay), floor
}

func pgHeadroom(cfg *Config, floor int64, rateBps float64, delay Time) int64 {
	switch {
	case cfg.PFC.HeadroomBytes > 0:
		return int64(math.Round(float64(cfg.PFC.HeadroomBytes) * rateBps / 100e9))
	case cfg.PFC.HeadroomFactor > 0:
		return int64(math.Ceil(float64(floor) * cfg.PFC.HeadroomFactor))
	case cfg.PFC.HeadroomFormula == HeadroomHPCC:
		return int64(rateBps * float64(delay/Nanosecond) / 8 / 1e9 * 3)
	}
	return floor
}

// cableMeters is the cable length a link of one-way delay delay stands for
// in MinHeadroom: the configured cable length or the link delay at 5 ns/m,
// whichever is longer.
func (s *Sim) cableMeters(delay Time) float64 {
	return max(s.cfg.PFC.CableMeters, float64(delay)/float64(Second)/5e-9)
}

// recomputeReserve sums the switch's per-port reserves and, with PFC on,
// the lossless PGs' headroom, both kept out of the shared pool (with PFC
// off there is no headroom: a cable length moved XOFF and the drops).
func (s *Sim) recomputeReserve(sw *swState) {
	sw.totalHdrm, sw.totalRsrv = 0, 0
	for _, pid := range sw.ports {
		p := &s.ports[pid]
		if s.cfg.PFC.Enabled {
			for _, pg := range s.lossless {
				sw.totalHdrm += p.headroom[pg]
			}
		}
		sw.totalRsrv += s.cfg.PFC.ReserveBytes
	}
}

func (s *Sim) threshold(sw *swState, p *port, pg int) int64 {
	free := sw.buffer - sw.totalHdrm - sw.totalRsrv - sw.sharedUsed
	if free < 0 {
		return 0
	}
	return int64(float64(free) * p.alpha[pg])
}

func (s *Sim) sharedOf(p *port, pg int) int64 {
	if u := p.ingBytes[pg] - s.cfg.PFC.ReserveBytes; u > 0 {
		return u
	}
	return 0
}

func (s *Sim) checkPause(sw *swState, pid int32, pg int) {
	if !s.cfg.PFC.Enabled {
		return
	}
	p := &s.ports[pid]
	if p.pauseSent[pg] {
		return
	}
	if p.hdrmBytes[pg] > 0 || s.sharedOf(p, pg) >= s.threshold(sw, p, pg) {
		p.pauseSent[pg] = true
		p.pausingSince[pg] = s.now
		p.pfc[pg].PauseTx++
		s.stats.PFCPauses++
		s.sendPFC(pid, pg, true)
	}
}

func (s *Sim) checkResume(sw *swState, pid int32, pg int) {
	p := &s.ports[pid]
	if !p.pauseSent[pg] {
		return
	}
	used := s.sharedOf(p, pg)
	if p.hdrmBytes[pg] == 0 && (used == 0 || used+s.cfg.PFC.XonOffsetBytes <= s.threshold(sw, p, pg)) {
		p.pauseSent[pg] = false
		p.pausingTotal[pg] += s.now - p.pausingSince[pg]
		p.pfc[pg].ResumeTx++
		s.stats.PFCResumes++
		s.sendPFC(pid, pg, false)
	}
}

func (s *Sim) sendPFC(pid int32, pg int, pause bool) {
	pk := s.allocPacket()
	s.pkts[pk] = packet{kind: pktPFC, prio: uint8(pg), pause: pause, size: pfcFrameBytes, flow: -1}
	s.fifoPush(&s.ports[pid].pfcq, pk)
	s.tryTx(pid)
}

// receivePFC handles a PAUSE/RESUME that arrived on port pid: it holds or
// releases that port's egress for the priority.
func (s *Sim) receivePFC(pid int32, pk int32) {
	p := &s.ports[pid]
	pkt := &s.pkts[pk]
	c := int(pkt.prio)
	if pkt.pause {
		p.pfc[c].PauseRx++
		if !p.paused[c] {
			p.paused[c] = true
			p.pausedSince[c] = s.now
		}
	} else {
		p.pfc[c].ResumeRx++
		if p.paused[c] {
			p.paused[c] = false
			p.pausedTotal[c] += s.now - p.pausedSince[c]
		}
	}
	s.freePacket(pk)
	if !pkt.pause {
		s.tryTx(pid)
	}
}

// arrive handles frame pk arriving on port pid. PFC frames act on the
// port's egress; a host's NIC takes what reaches it; a switch forwards
// ACKs and CNPs on the control queue, and admits data to the egress
// queue of its priority, pausing the ingress PG when it fills.
func (s *Sim) arrive(pid int32, pk int32) {
	p := &s.ports[pid]
	if s.pkts[pk].kind == pktPFC {
		s.receivePFC(pid, pk)
		return
	}
	if p.isHost {
		s.hostReceive(pid, pk)
		return
	}
	si := s.nodeSw[p.node]
	sw := &s.sws[si]
	pkt := &s.pkts[pk]
	if s.dropHook != nil && s.dropHook(pkt) {
		s.drop(nil, 0, pk)
		return
	}
	out := s.nextHop(si, pkt.dst, pkt.flow)
	if out < 0 {
		s.drop(nil, 0, pk)
		return
	}
	op := &s.ports[out]
	pkt = &s.pkts[pk]
	if pkt.kind != pktData && s.ackPrio >= 0 {
		s.touchQueue(op, ControlQueue)
		s.fifoPush(&op.ctrl, pk)
		if b := queuedBytes(op, ControlQueue); b > op.cnt[ControlQueue].max {
			op.cnt[ControlQueue].max = b
		}
		s.tryTx(out)
		return
	}
	pg := int(pkt.prio)
	if !s.admit(sw, p, pg, int64(pkt.size)) {
		if s.cfg.PFC.Enabled {
			// The PG's headroom is full: an ingress drop, counted on the
			// (port, PG) that refused it as a switch does
			// (SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS), not on
			// the egress queue it was headed for.
			p.pgDropPkts[pg]++
			p.pgDropBytes[pg] += uint64(pkt.size)
			s.drop(nil, 0, pk)
			return
		}
		// Lossy (PFC off): the loss of the queue the packet was headed
		// for (SAI_QUEUE_STAT_DROPPED_PACKETS).
		s.drop(op, pg, pk)
		return
	}
	s.touchQueue(op, pg)
	s.fifoPush(&op.q[pg], pk)
	if b := queuedBytes(op, pg); b > op.cnt[pg].max {
		op.cnt[pg].max = b
	}
	s.checkPause(sw, pid, pg)
	s.tryTx(out)
}

// admit charges size bytes arriving on ingress port p for priority group pg
// to the PG's reserve, the switch's shared buffer or the PG's headroom, in
// that order (ns-3 HPCC SwitchMmu semantics). It reports false, charging
// nothing, when the packet must be dropped: with PFC only when the headroom
// would overflow; without PFC when the dynamic threshold is exceeded.
func (s *Sim) admit(sw *swState, p *port, pg int, size int64) bool {
	shared := s.sharedOf(p, pg)
	thr := s.threshold(sw, p, pg)
	if s.cfg.PFC.Enabled {
		if size+p.hdrmBytes[pg] > p.headroom[pg] && size+shared > thr {
			return false
		}
	} else if p.ingBytes[pg]+size > s.cfg.PFC.ReserveBytes && size+shared > thr {
		return false
	}
	nb := p.ingBytes[pg] + size
	if nb <= s.cfg.PFC.ReserveBytes {
		p.ingBytes[pg] = nb
	} else if nb-s.cfg.PFC.ReserveBytes > thr {
		p.hdrmBytes[pg] += size
		if p.hdrmBytes[pg] > p.hdrmPeak {
			p.hdrmPeak = p.hdrmBytes[pg]
		}
	} else {
		p.ingBytes[pg] = nb
		sw.sharedUsed += min(size, nb-s.cfg.PFC.ReserveBytes)
	}
	return true
}

// release returns size bytes leaving through an egress port to the
// accounts admit charged them to on ingress port in: headroom first, then
// the PG's shared use, then its reserve.
func (s *Sim) release(sw *swState, in *port, pg int, size int64) {
	fromHdrm := min(in.hdrmBytes[pg], size)
	fromShared := int64(0)
	if in.ingBytes[pg] > s.cfg.PFC.ReserveBytes {
		fromShared = min(size-fromHdrm, in.ingBytes[pg]-s.cfg.PFC.ReserveBytes)
	}
	in.hdrmBytes[pg] -= fromHdrm
	in.ingBytes[pg] -= size - fromHdrm
	sw.sharedUsed -= fromShared
}

// drop discards pk, counting it in the run's totals and on egress queue q
// of op (nil when the packet had no route or its ingress PG counted it).
func (s *Sim) drop(op *port, q int, pk int32) {
	pkt := &s.pkts[pk]
	s.stats.Drops++
	s.stats.DropBytes += uint64(pkt.size)
	if pkt.kind == pktData {
		s.stats.DataDropPkts++
	}
	if op != nil {
		op.cnt[q].dropPkts++
		op.cnt[q].dropBytes += uint64(pkt.size)
	}
	s.freePacket(pk)
}
