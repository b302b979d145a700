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

// SetHeadroom changes an ingress PG's headroom.
func (s *Sim) SetHeadroom(pg PGRef, bytes int64) error {
	p, err := s.portOf(pg.Switch, pg.Port)
	if err != nil {
		return err
	}
	if pg.PG < 0 || pg.PG >= NumQueues || !s.isLossless[pg.PG] {
		return fmt.Errorf("priority group %d is not lossless (lossless: %v)", pg.PG, s.lossless)
	}
	if bytes < 0 || bytes > s.sws[pg.Switch].buffer/4 {
		return fmt.Errorf("headroom %d B outside 0..%d (a quarter of the buffer)", bytes, s.sws[pg.Switch].buffer/4)
	}
	p.headroom[pg.PG] = bytes
	s.recomputeReserve(&s.sws[pg.Switch])
	return nil
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
