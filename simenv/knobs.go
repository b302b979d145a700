package simenv

import "fmt"

// ---- knobs: what a controller may change while the simulation runs ----

func (s *Sim) portOf(sw, port int) (*port, error) {
	if sw < 0 || sw >= len(s.sws) {
		return nil, fmt.Errorf("switch %d does not exist (have %d)", sw, len(s.sws))
	}
	ps := s.sws[sw].ports
	if port < 0 || port >= len(ps) {
		return nil, fmt.Errorf("switch %s has no port %d (has %d)", s.infos[sw].Name, port, len(ps))
	}
	return &s.ports[ps[port]], nil
}

// ECN returns the current setting of an egress queue (zero value when the
// queue does not exist).
func (s *Sim) ECN(q QueueRef) ECN {
	p, err := s.portOf(q.Switch, q.Port)
	if err != nil || q.Queue < 0 || q.Queue >= NumQueues {
		return ECN{}
	}
	return p.ecn[q.Queue]
}

// SetECN changes an egress queue's marking setting, effective at once.
func (s *Sim) SetECN(q QueueRef, e ECN) error {
	p, err := s.portOf(q.Switch, q.Port)
	if err != nil {
		return err
	}
	if q.Queue < 0 || q.Queue >= NumQueues {
		return fmt.Errorf("queue %d outside 0..%d", q.Queue, NumQueues-1)
	}
	if err := e.Validate(); err != nil {
		return fmt.Errorf("%s Ethernet%d queue %d: %w", s.infos[q.Switch].Name, q.Port, q.Queue, err)
	}
	p.ecn[q.Queue] = e
	return nil
}

// SetHeadroom changes an ingress PG's headroom, within 0..HeadroomLimit.
func (s *Sim) SetHeadroom(pg PGRef, bytes int64) error {
	p, err := s.portOf(pg.Switch, pg.Port)
	if err != nil {
		return err
	}
	if pg.PG < 0 || pg.PG >= NumQueues || !s.isLossless[pg.PG] {
		return fmt.Errorf("priority group %d is not lossless (lossless: %v)", pg.PG, s.lossless)
	}
	sw := &s.sws[pg.Switch]
	if bytes < 0 || bytes > sw.buffer/4 {
		return fmt.Errorf("headroom %d B outside 0..%d (a quarter of the buffer)", bytes, sw.buffer/4)
	}
	if lim := s.headroomLimit(sw, p, pg.PG); bytes > lim {
		n := int64(len(sw.ports))
		frame := int64(s.cfg.MTU + s.cfg.HeaderBytes)
		hdrm := sw.totalHdrm - p.headroom[pg.PG] + bytes
		info := &s.infos[pg.Switch]
		return fmt.Errorf("headroom %d B on %s %s PG %d does not fit the %d B buffer: headroom %d B in all, reserve %d B, shared space of one %d B frame per port %d B; %d B in all (at most %d B here, or lower the headroom of other ports first)",
			bytes, info.Name, info.Ports[pg.Port].Name, pg.PG, sw.buffer, hdrm, sw.totalRsrv, frame, n*frame, hdrm+sw.totalRsrv+n*frame, lim)
	}
	p.headroom[pg.PG] = bytes
	s.recomputeReserve(sw)
	return nil
}

// HeadroomLimit is the largest headroom SetHeadroom takes for pg now: a
// quarter of the buffer and, with PFC on, what leaves the buffer room for
// everything New checks a config for: the headroom of every other lossless
// (port, PG), every port's reserve and one frame of shared space per port
// (a switch's buffer manager refuses an oversubscribed profile the same
// way). 0 for a PG that does not exist or is not lossless.
func (s *Sim) HeadroomLimit(pg PGRef) int64 {
	p, err := s.portOf(pg.Switch, pg.Port)
	if err != nil || pg.PG < 0 || pg.PG >= NumQueues || !s.isLossless[pg.PG] {
		return 0
	}
	return s.headroomLimit(&s.sws[pg.Switch], p, pg.PG)
}

func (s *Sim) headroomLimit(sw *swState, p *port, pg int) int64 {
	lim := sw.buffer / 4
	if s.cfg.PFC.Enabled {
		frame := int64(s.cfg.MTU + s.cfg.HeaderBytes)
		others := sw.totalHdrm - p.headroom[pg]
		lim = min(lim, max(0, sw.buffer-others-sw.totalRsrv-int64(len(sw.ports))*frame))
	}
	return lim
}

// MaxAlpha is the largest dynamic-threshold factor the simulator takes
// (SONiC's dynamic_th 6; 7 and 8, alpha 128 and 256, make XOFF nearly all
// the free buffer, as 64 does).
const MaxAlpha = 64.0

// SetAlpha changes an ingress PG's dynamic-threshold factor.
func (s *Sim) SetAlpha(pg PGRef, alpha float64) error {
	p, err := s.portOf(pg.Switch, pg.Port)
	if err != nil {
		return err
	}
	if pg.PG < 0 || pg.PG >= NumQueues || !s.isLossless[pg.PG] {
		return fmt.Errorf("priority group %d is not lossless (lossless: %v)", pg.PG, s.lossless)
	}
	if !(alpha > 0 && alpha <= MaxAlpha) {
		return fmt.Errorf("alpha %g outside (0, %g]", alpha, MaxAlpha)
	}
	p.alpha[pg.PG] = alpha
	return nil
}
