package simenv

import "math"

// ---- hosts: RoCEv2 NIC with DCQCN (Mellanox form, as ns-3 HPCC models it) ----

type hostState struct {
	node   int32
	port   int32
	flows  []int32
	rr     int
	wakeAt Time
}

type flow struct {
	FlowRecord
	srcHost    int32
	prio       uint8
	sndNxt     int64
	sndUna     int64
	maxSent    int64
	done       bool
	started    bool
	collective int32 // index into s.colls, -1 when none
	collStep   int32

	rate, target, maxRate float64
	nextAvail             Time
	lastPktSize           int32

	cnpSeen    bool
	alpha      float64
	alphaFlag  bool
	decFlag    bool
	alphaNext  Time
	decPhase   Time
	decPending bool
	decGen     uint32
	rpStage    int32
	rpGen      uint32
	incAt      Time // when the live rate-increase timer fires next (0: none)
	bcBytes    int64
	bcStage    int32

	rcvNxt     int64
	lastNack   int64
	nackTimer  Time
	lastCNP    Time
	ackPending int32
	dupPending int32 // duplicates received since the last ACK of one
	ceSeen     bool

	rtoGen uint32
	rtoUna int64
}

// newFlow registers a flow; it starts at start.
func (s *Sim) newFlow(src, dst int32, prio int, size int64, start Time, workload int, dport int) int32 {
	id := s.addFlow(src, dst, prio, size, start, workload, dport)
	if start <= s.now {
		s.startFlow(id)
	} else {
		s.evq.push(start, evFlowStart, id, 0)
	}
	return id
}

// addFlow registers a flow without starting it.
func (s *Sim) addFlow(src, dst int32, prio int, size int64, start Time, workload int, dport int) int32 {
	id := int32(len(s.flows))
	f := flow{collective: -1}
	f.ID = int(id)
	f.Src, f.Dst = int(src), int(dst)
	if s.pairPort == nil {
		s.pairPort = make(map[[2]int32]int32)
	}
	k := [2]int32{src, dst}
	f.SPort = 10000 + int(s.pairPort[k])
	s.pairPort[k]++
	f.DPort = dport
	f.Priority = prio
	f.SizeBytes = size
	f.Start = start
	f.Workload = workload
	f.srcHost = s.nodeHost[src]
	f.prio = uint8(prio)
	f.lastNack = -1
	s.flows = append(s.flows, f)
	return id
}

func (s *Sim) startFlow(id int32) {
	f := &s.flows[id]
	f.started = true
	h := &s.hosts[f.srcHost]
	hp := &s.ports[h.port]
	f.maxRate = hp.rate
	f.rate, f.target = hp.rate, hp.rate
	f.nextAvail = s.now
	if rtt, bw, ok := s.pathOf(int32(f.Src), int32(f.Dst), id); ok {
		pkts := (f.SizeBytes + int64(s.cfg.MTU) - 1) / int64(s.cfg.MTU)
		wire := f.SizeBytes + pkts*int64(s.cfg.HeaderBytes)
		f.Standalone = rtt + Time(float64(wire)*8e12/bw)
	}
	s.stats.FlowsStarted++
	if f.SizeBytes <= 0 {
		s.finish(id)
		return
	}
	h.flows = append(h.flows, id)
	s.tryTx(h.port)
}

// hostSend picks the next data packet among the host's active flows: round
// robin over flows whose pacing allows a packet now and whose priority is not
// paused; otherwise it arms a wake-up for the earliest pacing instant.
func (s *Sim) hostSend(pid int32) {
	p := &s.ports[pid]
	h := &s.hosts[s.nodeHost[p.node]]
	n := len(h.flows)
	if n == 0 {
		return
	}
	var wake Time = -1
	for i := 0; i < n; i++ {
		idx := (h.rr + i) % n
		fid := h.flows[idx]
		f := &s.flows[fid]
		if f.sndNxt >= f.SizeBytes || p.paused[f.prio] {
			continue
		}
		if f.nextAvail > s.now {
			if wake < 0 || f.nextAvail < wake {
				wake = f.nextAvail
			}
			continue
		}
		h.rr = (idx + 1) % n
		s.sendPacket(pid, h, fid)
		return
	}
	if wake >= 0 && (h.wakeAt == 0 || wake < h.wakeAt) {
		h.wakeAt = wake
		s.evq.push(wake, evHostWake, pid, 0)
	}
}

// sendPacket sends the next packet of flow fid from host port pid: it
// accounts new and retransmitted bytes, paces the flow at its rate, feeds
// DCQCN's byte counter, and arms the RTO once the last byte is out.
func (s *Sim) sendPacket(pid int32, h *hostState, fid int32) {
	f := &s.flows[fid]
	payload := int64(s.cfg.MTU)
	if rem := f.SizeBytes - f.sndNxt; rem < payload {
		payload = rem
	}
	pk := s.allocPacket()
	size := int32(payload) + int32(s.cfg.HeaderBytes)
	s.pkts[pk] = packet{kind: pktData, prio: f.prio, size: size, payload: int32(payload), flow: fid,
		seq: int32(f.sndNxt), dst: s.nodeHost[f.Dst]}
	if end := f.sndNxt + payload; end > f.maxSent {
		s.stats.InjectedBytes += uint64(end - max(f.maxSent, f.sndNxt))
		f.maxSent = end
	} else {
		s.stats.RetxBytes += uint64(payload)
	}
	f.sndNxt += payload
	f.lastPktSize = size
	s.stats.DataSentPkts++
	f.nextAvail = s.now + Time(float64(size)*8e12/f.rate+0.5)
	if s.cfg.DCQCN.Enabled && s.cfg.DCQCN.ByteCounter > 0 && f.cnpSeen {
		f.bcBytes += int64(size)
		if f.bcBytes >= s.cfg.DCQCN.ByteCounter {
			f.bcBytes = 0
			s.rateIncrease(f, f.rpStage, f.bcStage)
			f.bcStage++
		}
	}
	if f.sndNxt >= f.SizeBytes {
		f.rtoGen++
		f.rtoUna = f.sndUna
		s.evq.push(s.now+s.rto, evRTO, fid, f.rtoGen)
	}
	s.transmit(pid, pk)
	s.armHostWake(pid, h)
}

// armHostWake schedules the NIC's next look at its flows: when the frame on
// the wire is out and the earliest flow's pacing allows its next packet.
func (s *Sim) armHostWake(pid int32, h *hostState) {
	p := &s.ports[pid]
	wake := Time(-1)
	for _, fid := range h.flows {
		f := &s.flows[fid]
		if f.sndNxt >= f.SizeBytes || p.paused[f.prio] {
			continue
		}
		if wake < 0 || f.nextAvail < wake {
			wake = f.nextAvail
		}
	}
	if wake < 0 {
		return
	}
	if wake < p.busyUntil {
		wake = p.busyUntil
	}
	if h.wakeAt == 0 || wake < h.wakeAt {
		h.wakeAt = wake
		s.evq.push(wake, evHostWake, pid, 0)
	}
}

func (s *Sim) hostReceive(pid int32, pk int32) {
	pkt := s.pkts[pk]
	s.freePacket(pk)
	f := &s.flows[pkt.flow]
	switch pkt.kind {
	case pktData:
		s.receiveData(pid, f, &pkt)
	case pktAck, pktNack:
		s.receiveAck(f, &pkt)
	}
}

func (s *Sim) receiveData(pid int32, f *flow, pkt *packet) {
	s.stats.DataRecvPkts++
	if pkt.ce {
		f.ceSeen = true
	}
	switch {
	case int64(pkt.seq) == f.rcvNxt:
		f.rcvNxt += int64(pkt.payload)
		s.stats.DeliveredBytes += uint64(pkt.payload)
		s.stats.HostRxBytes += uint64(pkt.payload)
		f.ackPending++
		if f.ackPending >= int32(s.cfg.AckEvery) || f.rcvNxt >= f.SizeBytes {
			f.ackPending = 0
			s.sendAck(pid, f, pktAck)
		}
	case int64(pkt.seq) > f.rcvNxt:
		if s.now >= f.nackTimer || f.lastNack != f.rcvNxt {
			f.nackTimer = s.now + s.nackIvl
			f.lastNack = f.rcvNxt
			s.sendAck(pid, f, pktNack)
		}
	default:
		// A duplicate: the sender has not seen our ACK of it (lost, or
		// still on its way). Answer with an ACK of what we hold, as an IB
		// responder acknowledges a duplicate request: always for the
		// flow's last packet (nothing later would ACK it), otherwise every
		// AckEvery-th duplicate.
		f.dupPending++
		if int64(pkt.seq)+int64(pkt.payload) >= f.SizeBytes || f.dupPending >= int32(s.cfg.AckEvery) {
			f.dupPending = 0
			s.sendAck(pid, f, pktAck)
		}
	}
}

func (s *Sim) sendAck(pid int32, f *flow, kind uint8) {
	cnp := false
	if f.ceSeen {
		if s.cfg.DCQCN.CNPInterval <= 0 || f.lastCNP == 0 || s.now-f.lastCNP >= s.cfg.DCQCN.CNPInterval {
			cnp = true
			f.lastCNP = s.now
		}
		f.ceSeen = false
	}
	pk := s.allocPacket()
	prio := f.prio
	if s.ackPrio >= 0 {
		prio = uint8(s.ackPrio)
	}
	s.pkts[pk] = packet{kind: kind, prio: prio, cnp: cnp, size: int32(s.cfg.AckBytes), flow: int32(f.ID),
		seq: int32(f.rcvNxt), dst: f.srcHost}
	p := &s.ports[pid]
	s.touchQueue(p, ControlQueue)
	s.fifoPush(&p.ctrl, pk)
	s.tryTx(pid)
}

func (s *Sim) receiveAck(f *flow, pkt *packet) {
	if f.done {
		return
	}
	if int64(pkt.seq) > f.sndUna {
		f.sndUna = int64(pkt.seq)
	}
	if f.sndUna >= f.SizeBytes {
		s.finish(int32(f.ID))
		return
	}
	kick := false
	if pkt.kind == pktNack {
		f.sndNxt = f.sndUna
		kick = true
	}
	if pkt.cnp && s.cfg.DCQCN.Enabled {
		s.cnpReceived(f)
		kick = true
	}
	if kick {
		s.tryTx(s.hosts[f.srcHost].port)
	}
}

func (s *Sim) finish(id int32) {
	f := &s.flows[id]
	f.done = true
	f.Finish = s.now
	if f.Finish == f.Start {
		f.Finish = f.Start + 1
	}
	f.decGen++
	f.rpGen++
	f.rtoGen++
	s.stats.FlowsFinished++
	s.lastFinish = max(s.lastFinish, f.Finish)
	s.finished = append(s.finished, id)
	h := &s.hosts[f.srcHost]
	for i, x := range h.flows {
		if x == id {
			last := len(h.flows) - 1
			h.flows[i] = h.flows[last]
			h.flows = h.flows[:last]
			if h.rr > last {
				h.rr = 0
			}
			break
		}
	}
	if f.collective >= 0 {
		s.collectiveFlowDone(f)
	}
}

func (s *Sim) rtoFire(id int32, gen uint32) {
	f := &s.flows[id]
	if f.done || gen != f.rtoGen {
		return
	}
	if f.sndUna == f.rtoUna && f.sndNxt >= f.SizeBytes {
		f.sndNxt = f.sndUna
		s.tryTx(s.hosts[f.srcHost].port)
		return
	}
	if f.sndNxt >= f.SizeBytes {
		f.rtoGen++
		f.rtoUna = f.sndUna
		s.evq.push(s.now+s.rto, evRTO, id, f.rtoGen)
	}
}

// catchUpAlpha applies the alpha timer ticks up to time t lazily: the first
// tick sees the CNP flag, the rest decay alpha by (1-g) each. This gives the
// same alpha as a timer every AlphaTimer, with no event per tick.
func (s *Sim) catchUpAlpha(f *flow, t Time) {
	if f.alphaNext > t {
		return
	}
	g := s.cfg.DCQCN.G
	T := s.cfg.DCQCN.AlphaTimer
	k := int64((t-f.alphaNext)/T) + 1
	if f.alphaFlag {
		f.alpha = (1-g)*f.alpha + g
	} else {
		f.alpha *= 1 - g
	}
	f.alphaFlag = false
	if k > 1 {
		f.alpha *= math.Pow(1-g, float64(k-1))
	}
	f.alphaNext += Time(k) * T
}

func (s *Sim) cnpReceived(f *flow) {
	d := &s.cfg.DCQCN
	if !f.cnpSeen {
		f.cnpSeen = true
		f.alpha = 1
		f.alphaFlag = false
		f.alphaNext = s.now + d.AlphaTimer
		f.decPhase = s.now + Nanosecond
		f.target = f.rate
	} else {
		s.catchUpAlpha(f, s.now)
		f.alphaFlag = true
	}
	f.decFlag = true
	if !f.decPending {
		k := (s.now-f.decPhase)/d.DecreaseTimer + 1
		if s.now < f.decPhase {
			k = 1
		}
		f.decPending = true
		f.decGen++
		s.evq.push(f.decPhase+k*d.DecreaseTimer, evRateDec, int32(f.ID), f.decGen)
	}
}

func (s *Sim) rateDecrease(id int32, gen uint32) {
	f := &s.flows[id]
	if f.done || gen != f.decGen {
		return
	}
	f.decPending = false
	if !f.decFlag {
		return
	}
	d := &s.cfg.DCQCN
	if f.incAt == s.now {
		// The rate-increase timer is due at this very instant (with the
		// HPCC defaults both timers share the 4 us grid). ns-3 runs it
		// first: it was scheduled one increase period ago, before this
		// check was (one decrease interval ago), and its scheduler is FIFO
		// among equal times. Our heap is not, so apply the increase here;
		// the cut below cancels the event still queued.
		s.timedIncrease(f)
	}
	s.catchUpAlpha(f, s.now)
	if f.rpStage != 0 {
		f.target = f.rate
	}
	nr := f.rate * (1 - f.alpha/2)
	if nr < d.MinRateBps {
		nr = d.MinRateBps
	}
	f.rate = nr
	f.rpStage = 0
	f.bcStage = 0
	f.bcBytes = 0
	f.decFlag = false
	f.rpGen++
	f.incAt = s.now + d.IncreaseTimer
	s.evq.push(f.incAt, evRateInc, id, f.rpGen)
}

func (s *Sim) rateIncreaseTimer(id int32, gen uint32) {
	f := &s.flows[id]
	if f.done || gen != f.rpGen {
		return
	}
	f.incAt = s.now + s.cfg.DCQCN.IncreaseTimer
	s.evq.push(f.incAt, evRateInc, id, gen)
	s.timedIncrease(f)
}

// timedIncrease is one tick of the rate-increase timer.
func (s *Sim) timedIncrease(f *flow) {
	bc := f.rpStage // no byte counter: the timer's stage alone
	if s.cfg.DCQCN.ByteCounter > 0 {
		bc = f.bcStage
	}
	s.rateIncrease(f, f.rpStage, bc)
	f.rpStage++
}

// rateIncrease is one rate-increase event, at timer stage timer and byte-
// counter stage bc (both counted before the event; bc = timer without a
// byte counter), with F = FastRecoverySteps: fast recovery (the rate halves
// toward the target) while both stages are below F, hyper increase of the
// target only when both are past F, additive increase otherwise.
//
// ns-3 HPCC's rdma-hw.cc (RateIncEventMlx, the Mellanox model) has no byte
// counter: its timer stage alone picks fast recovery below F, additive
// increase (m_rai) at F and hyper increase (m_rhai) above, then the rate
// becomes (rate + target) / 2; with ByteCounter 0 this is that rule
// exactly. With a byte counter, the two stages combine as QCN (802.1Qau)
// and DCQCN's own ns-3 (ns3-rdma QbbNetDevice::rpr_active_select) do:
// additive increase as long as either counter has not passed F, hyper only
// when both have; that model also multiplies the hyper step by
// min(T, BC) - F + 1, which we do not (rdma-hw.cc's fixed m_rhai).
func (s *Sim) rateIncrease(f *flow, timer, bc int32) {
	d := &s.cfg.DCQCN
	fr := int32(d.FastRecoverySteps)
	switch {
	case max(timer, bc) < fr:
	case min(timer, bc) > fr:
		f.target = math.Min(f.target+d.HAIBps, f.maxRate)
	default:
		f.target = math.Min(f.target+d.AIBps, f.maxRate)
	}
	f.rate = (f.rate + f.target) / 2
}
