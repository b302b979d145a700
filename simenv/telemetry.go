package simenv

import "sort"

// ---- read side: topology, telemetry counters, run totals, flow records ----

// Switches describes every switch, in index order.
func (s *Sim) Switches() []SwitchInfo { return s.infos }

// Hosts returns the node ids of the hosts.
func (s *Sim) Hosts() []int {
	out := make([]int, len(s.hosts))
	for i, h := range s.hosts {
		out[i] = int(h.node)
	}
	return out
}

// LosslessPriorities returns the priorities carrying lossless data.
func (s *Sim) LosslessPriorities() []int { return append([]int(nil), s.lossless...) }

// Telemetry returns what switch sw exports now, and starts a new watermark
// window for its max/avg queue figures.
func (s *Sim) Telemetry(sw int) SwitchTelemetry {
	st := &s.sws[sw]
	t := SwitchTelemetry{Switch: sw, Name: s.infos[sw].Name, Time: s.now, BufferBytes: st.buffer, SharedUsed: st.sharedUsed,
		Ports: make([]PortTelemetry, len(st.ports))}
	win := s.now - st.lastRead
	for li, pid := range st.ports {
		p := &s.ports[pid]
		pt := &t.Ports[li]
		for q := 0; q < NumQueues; q++ {
			pt.Queues[q] = s.readQueue(p, q, win)
			pt.PFC[q] = s.pfcCounters(p, q)
			pt.PG[q] = s.pgState(st, p, q)
		}
	}
	st.lastRead = s.now
	return t
}

// readQueue returns egress queue q's counters, its average depth over the
// last win of simulated time, and its watermark since the last read; it
// starts a new window.
func (s *Sim) readQueue(p *port, q int, win Time) QueueCounters {
	s.touchQueue(p, q)
	c := &p.cnt[q]
	cur := queuedBytes(p, q)
	qc := QueueCounters{TxPkts: c.txPkts, TxBytes: c.txBytes, MarkedPkts: c.markedPkts, MarkedBytes: c.markedBytes,
		DropPkts: c.dropPkts, DropBytes: c.dropBytes, CurBytes: cur, MaxBytes: max(c.max, cur), ECN: p.ecn[q]}
	if win > 0 {
		qc.AvgBytes = (c.integ - c.winInteg) / float64(win)
	} else {
		qc.AvgBytes = float64(cur)
	}
	c.winInteg = c.integ
	c.max = cur
	return qc
}

// pfcCounters returns priority q's PFC frame counts on port p and the time
// it has spent paused and pausing its peer, up to now.
func (s *Sim) pfcCounters(p *port, q int) PFCCounters {
	pf := p.pfc[q]
	paused := p.pausedTotal[q]
	if p.paused[q] {
		paused += s.now - p.pausedSince[q]
	}
	pausing := p.pausingTotal[q]
	if p.pauseSent[q] {
		pausing += s.now - p.pausingSince[q]
	}
	pf.PausedNs = uint64(paused / Nanosecond)
	pf.PausingNs = uint64(pausing / Nanosecond)
	return pf
}

// pgState returns the MMU state of ingress priority group pg of port p.
func (s *Sim) pgState(sw *swState, p *port, pg int) PGState {
	return PGState{Lossless: s.isLossless[pg], HeadroomBytes: p.headroom[pg], MinHeadroomBytes: p.minHeadroom,
		Alpha: p.alpha[pg], XoffBytes: s.threshold(sw, p, pg), SharedBytes: s.sharedOf(p, pg), HeadroomUsed: p.hdrmBytes[pg],
		DropPkts: p.pgDropPkts[pg], DropBytes: p.pgDropBytes[pg]}
}

// Stats returns run-wide totals.
func (s *Sim) Stats() Stats {
	st := s.stats
	st.Now = s.now
	st.Hosts = len(s.hosts)
	st.HostTxBusy, st.SwitchTxBusy, st.SwitchPorts = 0, 0, 0
	for i := range s.ports {
		p := &s.ports[i]
		if p.isHost {
			st.HostTxBusy += p.busyTime
		} else {
			st.SwitchTxBusy += p.busyTime
			st.SwitchPorts++
		}
	}
	return st
}

// Flows returns every flow started so far, finished or not, in start order.
func (s *Sim) Flows() []FlowRecord {
	out := make([]FlowRecord, 0, len(s.flows))
	for i := range s.flows {
		if f := &s.flows[i]; f.started {
			r := f.FlowRecord
			r.Delivered = min(f.rcvNxt, r.SizeBytes)
			if r.Finish > 0 {
				r.Delivered = r.SizeBytes
			}
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Start < out[b].Start })
	return out
}

// Collectives returns every completed collective iteration.
func (s *Sim) Collectives() []CollectiveRecord {
	var out []CollectiveRecord
	for i := range s.colls {
		out = append(out, s.colls[i].done...)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Finish < out[b].Finish })
	return out
}

// PeekQueue returns egress queue q's counters and PFC counters now
// without starting a new watermark window: MaxBytes is the peak since the
// last Telemetry call, AvgBytes is left 0. An observer that is not the
// switch's telemetry reader (a report's trace) uses it so as not to
// disturb what that reader sees.
func (s *Sim) PeekQueue(q QueueRef) (QueueCounters, PFCCounters) {
	p, err := s.portOf(q.Switch, q.Port)
	if err != nil || q.Queue < 0 || q.Queue >= NumQueues {
		return QueueCounters{}, PFCCounters{}
	}
	c := &p.cnt[q.Queue]
	cur := queuedBytes(p, q.Queue)
	qc := QueueCounters{TxPkts: c.txPkts, TxBytes: c.txBytes, MarkedPkts: c.markedPkts, MarkedBytes: c.markedBytes,
		DropPkts: c.dropPkts, DropBytes: c.dropBytes, CurBytes: cur, MaxBytes: max(c.max, cur), ECN: p.ecn[q.Queue]}
	return qc, s.pfcCounters(p, q.Queue)
}
