package simenv

import (
	"fmt"
	"math"
)

// ---- building the fabric from a Config ----

// validate checks cfg, fills the defaults it may (AckEvery), and names the
// first inconsistent field.
func validate(cfg *Config) error {
	if err := validateTopology(&cfg.Topology); err != nil {
		return err
	}
	if cfg.MTU <= 0 {
		return fmt.Errorf("mtu %d must be positive", cfg.MTU)
	}
	if cfg.HeaderBytes < 0 || cfg.AckBytes <= 0 {
		return fmt.Errorf("header bytes %d / ack bytes %d invalid", cfg.HeaderBytes, cfg.AckBytes)
	}
	if cfg.AckEvery <= 0 {
		cfg.AckEvery = 1
	}
	if cfg.Duration < 0 || cfg.Duration > MaxDuration {
		return fmt.Errorf("duration %v outside 0..%v", cfg.Duration, MaxDuration)
	}
	if cfg.Interval < 0 || cfg.Warmup < 0 {
		return fmt.Errorf("interval %v / warmup %v: negative", cfg.Interval, cfg.Warmup)
	}
	if cfg.BufferBytes <= 0 || cfg.BufferBytes > MaxBytes {
		return fmt.Errorf("buffer %d B outside 1..%d", cfg.BufferBytes, MaxBytes)
	}
	if err := cfg.ECN.Validate(); err != nil {
		return fmt.Errorf("ecn: %w", err)
	}
	for r, e := range cfg.ECNByRate {
		if err := e.Validate(); err != nil {
			return fmt.Errorf("ecn at %g bps: %w", r, err)
		}
	}
	if f := cfg.PFC.HeadroomFactor; f != 0 && !(f >= 1 && f <= 16) {
		return fmt.Errorf("pfc headroom factor %g must be in [1, 16] (a multiple of the lossless minimum)", f)
	}
	if cfg.PFC.Alpha <= 0 {
		return fmt.Errorf("pfc alpha %g must be positive", cfg.PFC.Alpha)
	}
	if err := validatePFCSizes(cfg); err != nil {
		return err
	}
	if cfg.PFC.HeadroomFormula != "" && cfg.PFC.HeadroomFormula != HeadroomIEEE && cfg.PFC.HeadroomFormula != HeadroomHPCC {
		return fmt.Errorf("pfc headroom formula %q unknown (want %s or %s)", cfg.PFC.HeadroomFormula, HeadroomIEEE, HeadroomHPCC)
	}
	if err := validateDCQCN(&cfg.DCQCN); err != nil {
		return err
	}
	for i, w := range cfg.Workloads {
		if w.Priority < 0 || w.Priority >= ControlQueue {
			return fmt.Errorf("workloads[%d]: priority %d outside 0..%d", i, w.Priority, ControlQueue-1)
		}
	}
	return nil
}

// FieldError is a Config field whose value the simulator refuses. Field
// is the Go path of the field (BufferBytes, PFC.ReserveBytes,
// PFC.HeadroomBytes, PFC.XonOffsetBytes), so that a loader can point at the
// line that set it.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Msg }

// validatePFCSizes bounds the MMU's sizes before anything scales them
// (headroom is stated at 100 Gb/s and scaled to each port's rate); checkMMU
// holds them to the buffer once the ports are known.
func validatePFCSizes(cfg *Config) error {
	pfc := &cfg.PFC
	for _, f := range []struct {
		field, what string
		v           int64
	}{{"PFC.ReserveBytes", "reserve", pfc.ReserveBytes}, {"PFC.HeadroomBytes", "headroom", pfc.HeadroomBytes},
		{"PFC.XonOffsetBytes", "xon offset", pfc.XonOffsetBytes}} {
		if f.v < 0 || f.v > MaxBytes {
			return &FieldError{f.field, fmt.Sprintf("pfc %s %d B outside 0..%d B", f.what, f.v, MaxBytes)}
		}
	}
	return nil
}

// checkMMU checks, once every port's headroom is known, that each
// switch's buffer can hold what its MMU carves out of it, naming the field
// to change:
//   - the buffer, when it is below one full frame of shared space per
//     port (whatever the other settings);
//   - the reserve, the XON offset or the headroom (at some port's rate),
//     when one of them alone is above the buffer;
//   - the buffer, when the sum does not fit: the reserve of every port,
//     the headroom of every lossless (port, PG) when PFC is on, and one
//     frame of shared space per port (the message shows the sum).
func (s *Sim) checkMMU() error {
	cfg := &s.cfg
	pfc := &cfg.PFC
	frame := int64(cfg.MTU + cfg.HeaderBytes)
	for si := range s.sws {
		sw := &s.sws[si]
		name := cfg.Topology.Nodes[sw.node].Name
		n := int64(len(sw.ports))
		if floor := n * frame; sw.buffer < floor {
			return &FieldError{"BufferBytes", fmt.Sprintf("buffer %d B is below the minimum of %d B for switch %s: one %d B frame for each of its %d ports",
				sw.buffer, floor, name, frame, n)}
		}
		if pfc.ReserveBytes > sw.buffer {
			return &FieldError{"PFC.ReserveBytes", fmt.Sprintf("pfc reserve %d B per port is above the %d B buffer", pfc.ReserveBytes, sw.buffer)}
		}
		if pfc.XonOffsetBytes > sw.buffer {
			return &FieldError{"PFC.XonOffsetBytes", fmt.Sprintf("pfc xon offset %d B is above the %d B buffer", pfc.XonOffsetBytes, sw.buffer)}
		}
		hdrm := 0.0 // summed in float64: sw.totalHdrm may wrap for absurd delays
		if pfc.Enabled {
			for _, pid := range sw.ports {
				p := &s.ports[pid]
				for _, pg := range s.lossless {
					hdrm += float64(p.headroom[pg])
					if p.headroom[pg] > sw.buffer && pfc.HeadroomBytes > 0 {
						return &FieldError{"PFC.HeadroomBytes", fmt.Sprintf("pfc headroom %d B at 100 Gb/s is %d B on %s's %s port, above its %d B buffer",
							pfc.HeadroomBytes, p.headroom[pg], name, fmtRate(p.rate), sw.buffer)}
					}
				}
			}
		}
		need := float64(sw.totalRsrv) + hdrm + float64(n*frame)
		if need <= float64(sw.buffer) {
			continue
		}
		what := fmt.Sprintf("switch %s has %d ports: reserve %d B × %d = %d B, headroom %.0f B (%d lossless priorities), shared space of one %d B frame per port = %d B; %.0f B in all",
			name, n, pfc.ReserveBytes, n, sw.totalRsrv, hdrm, len(s.lossless), frame, n*frame, need)
		if !pfc.Enabled {
			what = fmt.Sprintf("switch %s has %d ports: reserve %d B × %d = %d B, shared space of one %d B frame per port = %d B; %.0f B in all (no headroom: PFC is off)",
				name, n, pfc.ReserveBytes, n, sw.totalRsrv, frame, n*frame, need)
		}
		return &FieldError{"BufferBytes", fmt.Sprintf("buffer %d B is below what the MMU needs: %s", sw.buffer, what)}
	}
	return nil
}

// fmtRate renders a port rate for messages: 100G, 400G, 25G, 1.5M.
func fmtRate(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%gG", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%gM", bps/1e6)
	}
	return fmt.Sprintf("%gbps", bps)
}

// validateTopology checks that there are nodes and that every link joins
// two of them at a positive rate with a non-negative delay. Host links are
// checked when the fabric is built.
func validateTopology(t *Topology) error {
	if len(t.Nodes) == 0 {
		return fmt.Errorf("topology: no nodes")
	}
	for i, l := range t.Links {
		if l.A < 0 || l.A >= len(t.Nodes) || l.B < 0 || l.B >= len(t.Nodes) || l.A == l.B {
			return fmt.Errorf("topology: link %d joins nodes %d and %d, which do not exist (have %d nodes)", i, l.A, l.B, len(t.Nodes))
		}
		if !(l.RateBps >= MinRateBps && l.RateBps <= MaxRateBps) {
			return fmt.Errorf("topology: link %d (%d-%d) has rate %g bps, outside 1bps..10Tbps", i, l.A, l.B, l.RateBps)
		}
		if l.Delay < 0 || l.Delay > MaxDuration {
			return fmt.Errorf("topology: link %d (%d-%d) has delay %v, outside 0..%v", i, l.A, l.B, l.Delay, MaxDuration)
		}
	}
	return nil
}

// validateDCQCN checks the NIC congestion control's parameters when it is
// enabled.
func validateDCQCN(d *DCQCNConfig) error {
	if !d.Enabled {
		return nil
	}
	if !(d.G > 0 && d.G <= 1) {
		return fmt.Errorf("dcqcn g %g outside (0, 1]", d.G)
	}
	if d.AlphaTimer <= 0 || d.DecreaseTimer <= 0 || d.IncreaseTimer <= 0 {
		return fmt.Errorf("dcqcn timers must be positive")
	}
	if !(d.MinRateBps >= MinRateBps && d.MinRateBps <= MaxRateBps) {
		return fmt.Errorf("dcqcn min rate %g bps outside 1bps..10Tbps", d.MinRateBps)
	}
	if !(d.AIBps >= 0 && d.AIBps <= MaxRateBps && d.HAIBps >= 0 && d.HAIBps <= MaxRateBps) {
		return fmt.Errorf("dcqcn rate increase steps %g / %g bps outside 0..10Tbps", d.AIBps, d.HAIBps)
	}
	return nil
}

// build lays the fabric out: nodes and links, the hosts' NIC ports, the
// lossless priorities, every switch's ports and MMU, then the routes.
func (s *Sim) build() error {
	s.buildNodes()
	if err := s.attachHosts(); err != nil {
		return err
	}
	s.chooseLossless()
	for si := range s.sws {
		s.initSwitch(si)
	}
	if err := s.checkMMU(); err != nil {
		return err
	}
	s.buildRoutes()
	return nil
}

// buildNodes makes a switch or a host of every node and two ports of every
// link, in configuration order (which fixes every index).
func (s *Sim) buildNodes() {
	t := &s.cfg.Topology
	n := len(t.Nodes)
	s.nodeSw = make([]int32, n)
	s.nodeHost = make([]int32, n)
	s.nodePort = make([][]int32, n)
	s.ports = make([]port, 0, 2*len(t.Links)) // ports are large: no growth copies
	for i, nd := range t.Nodes {
		s.nodeSw[i], s.nodeHost[i] = -1, -1
		if nd.Switch {
			s.nodeSw[i] = int32(len(s.sws))
			s.sws = append(s.sws, swState{node: int32(i)})
		} else {
			s.nodeHost[i] = int32(len(s.hosts))
			s.hosts = append(s.hosts, hostState{node: int32(i), port: -1})
		}
	}
	for _, l := range t.Links {
		a := s.addPort(int32(l.A), l)
		b := s.addPort(int32(l.B), l)
		s.ports[a].peerNode, s.ports[a].peerPort = int32(l.B), b
		s.ports[b].peerNode, s.ports[b].peerPort = int32(l.A), a
	}
}

// attachHosts gives every host its one port and sets the NIC rate (the
// fastest host link).
func (s *Sim) attachHosts() error {
	t := &s.cfg.Topology
	for i := range s.hosts {
		h := &s.hosts[i]
		if len(s.nodePort[h.node]) != 1 {
			return fmt.Errorf("topology: host %s (node %d) has %d links; a host needs exactly one", t.Nodes[h.node].Name, h.node, len(s.nodePort[h.node]))
		}
		h.port = s.nodePort[h.node][0]
		if r := s.ports[h.port].rate; r > s.nicRate {
			s.nicRate = r
		}
	}
	if len(s.hosts) < 2 {
		return fmt.Errorf("topology: %d hosts, need at least 2", len(s.hosts))
	}
	return nil
}

// chooseLossless makes lossless the priorities the workloads use
// (DefaultPriority when none does) and takes ACKs off the control queue
// unless Config.AckHighPriority.
func (s *Sim) chooseLossless() {
	for _, w := range s.cfg.Workloads {
		p := w.Priority
		if w.Kind == WorkloadTrace {
			for _, f := range w.Flows {
				if f.Priority >= 0 && f.Priority < ControlQueue {
					s.isLossless[f.Priority] = true
				}
			}
			continue
		}
		s.isLossless[p] = true
	}
	if !s.cfg.AckHighPriority {
		s.ackPrio = -1
	}
	for p := 0; p < NumQueues; p++ {
		if s.isLossless[p] {
			s.lossless = append(s.lossless, p)
		}
	}
	if len(s.lossless) == 0 {
		s.isLossless[DefaultPriority] = true
		s.lossless = []int{DefaultPriority}
	}
}

// initSwitch sets switch si up: buffer, ECMP seed, the initial ECN setting
// of every egress queue, the MMU of every ingress port, and its SwitchInfo
// (appended to s.infos, so switches are set up in index order).
func (s *Sim) initSwitch(si int) {
	cfg := &s.cfg
	t := &cfg.Topology
	sw := &s.sws[si]
	sw.ports = s.nodePort[sw.node]
	sw.buffer = cfg.BufferBytes
	sw.seed = splitmix(cfg.Seed*0x100000001b3 + uint64(si) + 1)
	info := SwitchInfo{Index: si, Node: int(sw.node), Name: t.Nodes[sw.node].Name, BufferBytes: sw.buffer,
		FrameBytes: cfg.MTU + cfg.HeaderBytes}
	for li, pid := range sw.ports {
		p := &s.ports[pid]
		for q := 0; q < NumQueues; q++ {
			p.ecn[q] = s.initialECN(p.rate)
		}
		s.initPortMMU(p)
		info.Ports = append(info.Ports, PortInfo{Index: li, Name: fmt.Sprintf("Ethernet%d", li),
			Peer: t.Nodes[p.peerNode].Name, PeerSwitch: t.Nodes[p.peerNode].Switch, PeerPort: int(s.ports[p.peerPort].local),
			RateBps: p.rate, Delay: p.delay, CableMeters: s.cableMeters(p.delay)})
	}
	s.recomputeReserve(sw)
	s.infos = append(s.infos, info)
}

// initPortMMU sets a switch port's minimum headroom and, for every lossless
// PG, its configured headroom and dynamic-threshold alpha.
func (s *Sim) initPortMMU(p *port) {
	cfg := &s.cfg
	p.minHeadroom = s.MinHeadroom(p.rate, p.delay)
	for _, pg := range s.lossless {
		p.headroom[pg] = pgHeadroom(cfg, p.minHeadroom, p.rate, p.delay)
		a := cfg.PFC.Alpha
		if cfg.PFC.AlphaScaleWithRate {
			// Doubled per 2x of port rate over the NIC's, at most
			// maxAlphaDoublings times, as ns-3 HPCC's third.cc (its shift
			// goes from 3 to 0: 1/8 becomes 1 at most); uncapped, 1G hosts
			// on an 800G fabric gave 128, an XOFF of 4 GB on 32 MB.
			for r, n := p.rate, 0; r > s.nicRate*1.0000001 && n < maxAlphaDoublings; r, n = r/2, n+1 {
				a *= 2
			}
			a = min(a, MaxAlpha)
		}
		p.alpha[pg] = a
	}
}

// maxAlphaDoublings bounds the PFC alpha's scaling with port rate
// (PFCConfig.AlphaScaleWithRate).
const maxAlphaDoublings = 3

func (s *Sim) addPort(node int32, l Link) int32 {
	id := int32(len(s.ports))
	p := port{id: id, node: node, local: int32(len(s.nodePort[node])), rate: l.RateBps,
		psPerByte: 8e12 / l.RateBps, delay: l.Delay, isHost: !s.cfg.Topology.Nodes[node].Switch}
	p.pfcq, p.ctrl, p.wire = newFifo(), newFifo(), newFifo()
	for q := range p.q {
		p.q[q] = newFifo()
	}
	s.ports = append(s.ports, p)
	s.nodePort[node] = append(s.nodePort[node], id)
	return id
}

func (s *Sim) initialECN(rate float64) ECN {
	if e, ok := s.cfg.ECNByRate[rate]; ok {
		return e
	}
	e := s.cfg.ECN
	f := rate / 100e9
	return ECN{KminBytes: int64(math.Round(float64(e.KminBytes) * f)), KmaxBytes: int64(math.Round(float64(e.KmaxBytes) * f)), Pmax: e.Pmax}
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
