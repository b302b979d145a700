package simenv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// qstat holds one egress queue's counters and its queue-depth integrals.
type qstat struct {
	txPkts, txBytes         uint64
	markedPkts, markedBytes uint64
	dropPkts, dropBytes     uint64
	max                     int64   // watermark since the last telemetry read
	integ                   float64 // byte*ps since the start
	lastChange              Time
	winInteg                float64 // integ at the last read
}

type port struct {
	id, node, local int32
	peerNode        int32
	peerPort        int32
	isHost          bool
	rate            float64
	psPerByte       float64
	delay           Time

	wire        fifo // frames on the link towards the peer, in arrival order
	busyUntil   Time // the port is serialising a frame until then
	wakePending bool // an evTxDone is scheduled at busyUntil
	busyTime    Time

	pfcq fifo
	ctrl fifo
	q    [NumQueues]fifo

	paused      [NumQueues]bool // our egress held by the peer
	pausedSince [NumQueues]Time
	pausedTotal [NumQueues]Time
	deficit     [NumQueues]int32
	rr          int8

	ecn [NumQueues]ECN
	cnt [NumQueues]qstat

	// ingress MMU state per priority group
	ingBytes     [NumQueues]int64
	hdrmBytes    [NumQueues]int64
	pauseSent    [NumQueues]bool
	pausingSince [NumQueues]Time
	pausingTotal [NumQueues]Time
	headroom     [NumQueues]int64
	alpha        [NumQueues]float64
	minHeadroom  int64
	hdrmPeak     int64 // most headroom ever used on this ingress (any PG)
	pfc          [NumQueues]PFCCounters
}

type swState struct {
	node       int32
	ports      []int32
	buffer     int64
	sharedUsed int64
	totalHdrm  int64
	totalRsrv  int64
	route      [][]int32 // by host index: candidate egress ports
	seed       uint64
	lastRead   Time
}

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
	ceSeen     bool

	rtoGen uint32
	rtoUna int64
}

// Sim is one simulated fabric. It is not safe for concurrent use; it does no
// I/O and reads no clock: time advances only through RunUntil.
type Sim struct {
	cfg Config
	now Time
	evq eventQueue

	pkts []packet
	free []int32

	ports    []port
	sws      []swState
	hosts    []hostState
	nodeSw   []int32 // node -> switch index or -1
	nodeHost []int32 // node -> host index or -1
	nodePort [][]int32
	infos    []SwitchInfo

	flows    []flow
	pairPort map[[2]int32]int32 // next source port per (src, dst), as ns-3 numbers them
	colls    []collState
	gens     []generator

	rngWork *rand.Rand
	rngMark *rand.Rand

	ackPrio    int
	quantum    int32
	nicRate    float64
	nackIvl    Time
	rto        Time
	lossless   []int
	isLossless [NumQueues]bool

	stats Stats
}

// New builds a simulation from cfg. It fails with a message naming the field
// when cfg is inconsistent.
func New(cfg Config) (*Sim, error) {
	if err := validate(&cfg); err != nil {
		return nil, err
	}
	s := &Sim{cfg: cfg}
	s.rngWork = rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15))
	s.rngMark = rand.New(rand.NewPCG(cfg.Seed, 0xd1b54a32d192ed03))
	s.nackIvl = 500 * Microsecond
	s.rto = Millisecond
	s.quantum = int32(cfg.MTU + cfg.HeaderBytes)
	if s.quantum < 1500 {
		s.quantum = 1500
	}
	s.ackPrio = ControlQueue
	if err := s.build(); err != nil {
		return nil, err
	}
	if err := s.initWorkloads(); err != nil {
		return nil, err
	}
	return s, nil
}

func validate(cfg *Config) error {
	t := &cfg.Topology
	if len(t.Nodes) == 0 {
		return fmt.Errorf("topology: no nodes")
	}
	for i, l := range t.Links {
		if l.A < 0 || l.A >= len(t.Nodes) || l.B < 0 || l.B >= len(t.Nodes) || l.A == l.B {
			return fmt.Errorf("topology: link %d joins nodes %d and %d, which do not exist (have %d nodes)", i, l.A, l.B, len(t.Nodes))
		}
		if !(l.RateBps > 0) {
			return fmt.Errorf("topology: link %d (%d-%d) has rate %g, must be positive", i, l.A, l.B, l.RateBps)
		}
		if l.Delay < 0 {
			return fmt.Errorf("topology: link %d (%d-%d) has a negative delay", i, l.A, l.B)
		}
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
	if cfg.BufferBytes <= 0 {
		return fmt.Errorf("buffer %d B must be positive", cfg.BufferBytes)
	}
	if err := cfg.ECN.Validate(); err != nil {
		return fmt.Errorf("ecn: %w", err)
	}
	for r, e := range cfg.ECNByRate {
		if err := e.Validate(); err != nil {
			return fmt.Errorf("ecn at %g bps: %w", r, err)
		}
	}
	if cfg.PFC.Alpha <= 0 {
		return fmt.Errorf("pfc alpha %g must be positive", cfg.PFC.Alpha)
	}
	if cfg.PFC.HeadroomFormula != "" && cfg.PFC.HeadroomFormula != HeadroomIEEE && cfg.PFC.HeadroomFormula != HeadroomHPCC {
		return fmt.Errorf("pfc headroom formula %q unknown (want %s or %s)", cfg.PFC.HeadroomFormula, HeadroomIEEE, HeadroomHPCC)
	}
	d := &cfg.DCQCN
	if d.Enabled {
		if !(d.G > 0 && d.G <= 1) {
			return fmt.Errorf("dcqcn g %g outside (0, 1]", d.G)
		}
		if d.AlphaTimer <= 0 || d.DecreaseTimer <= 0 || d.IncreaseTimer <= 0 {
			return fmt.Errorf("dcqcn timers must be positive")
		}
		if d.MinRateBps <= 0 {
			return fmt.Errorf("dcqcn min rate must be positive")
		}
	}
	for i, w := range cfg.Workloads {
		if w.Priority < 0 || w.Priority >= ControlQueue {
			return fmt.Errorf("workloads[%d]: priority %d outside 0..%d", i, w.Priority, ControlQueue-1)
		}
	}
	return nil
}

func (s *Sim) build() error {
	cfg := &s.cfg
	t := &cfg.Topology
	n := len(t.Nodes)
	s.nodeSw = make([]int32, n)
	s.nodeHost = make([]int32, n)
	s.nodePort = make([][]int32, n)
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
	// lossless priorities: those the workloads use
	for _, w := range cfg.Workloads {
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
	if !cfg.AckHighPriority {
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
	for si := range s.sws {
		sw := &s.sws[si]
		sw.ports = s.nodePort[sw.node]
		sw.buffer = cfg.BufferBytes
		sw.seed = splitmix(cfg.Seed*0x100000001b3 + uint64(si) + 1)
		info := SwitchInfo{Index: si, Node: int(sw.node), Name: t.Nodes[sw.node].Name, BufferBytes: sw.buffer}
		for li, pid := range sw.ports {
			p := &s.ports[pid]
			for q := 0; q < NumQueues; q++ {
				p.ecn[q] = s.initialECN(p.rate)
			}
			p.minHeadroom = s.MinHeadroom(p.rate, p.delay)
			for _, pg := range s.lossless {
				hr := p.minHeadroom
				if cfg.PFC.HeadroomBytes > 0 {
					hr = int64(math.Round(float64(cfg.PFC.HeadroomBytes) * p.rate / 100e9))
				} else if cfg.PFC.HeadroomFormula == HeadroomHPCC {
					hr = int64(p.rate * float64(p.delay/Nanosecond) / 8 / 1e9 * 3)
				}
				p.headroom[pg] = hr
				a := cfg.PFC.Alpha
				if cfg.PFC.AlphaScaleWithRate {
					for r := p.rate; r > s.nicRate*1.0000001; r /= 2 {
						a *= 2
					}
				}
				p.alpha[pg] = a
			}
			info.Ports = append(info.Ports, PortInfo{Index: li, Name: fmt.Sprintf("Ethernet%d", li),
				Peer: t.Nodes[p.peerNode].Name, PeerSwitch: t.Nodes[p.peerNode].Switch, PeerPort: int(s.ports[p.peerPort].local),
				RateBps: p.rate, Delay: p.delay})
		}
		s.recomputeReserve(sw)
		s.infos = append(s.infos, info)
	}
	s.buildRoutes()
	return nil
}

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

// MinHeadroom is the lossless headroom of one (port, PG): what can still
// arrive after the switch decides to send PAUSE. It follows the IEEE 802.1Qbb
// worst case: the PAUSE frame waits behind one MTU frame on our egress, the
// peer finishes the MTU frame it is sending, and everything on the wire in
// both directions (round-trip propagation, from the link delay or the
// configured cable length at 5 ns/m, whichever is longer) lands, plus the
// peer's response time (394 pause quanta at <= 100 Gb/s, 905 above; 802.3
// Annex 31B). Bytes, rounded up.
func (s *Sim) MinHeadroom(rateBps float64, delay Time) int64 {
	wire := float64(s.cfg.MTU + s.cfg.HeaderBytes)
	prop := float64(delay) / float64(Second)
	if c := s.cfg.PFC.CableMeters * 5e-9; c > prop {
		prop = c
	}
	quanta := 394.0
	if rateBps > 100e9 {
		quanta = 905
	}
	bytes := 2*wire + pfcFrameBytes + 2*prop*rateBps/8 + quanta*512/8
	return int64(math.Ceil(bytes))
}

func (s *Sim) recomputeReserve(sw *swState) {
	sw.totalHdrm, sw.totalRsrv = 0, 0
	for _, pid := range sw.ports {
		p := &s.ports[pid]
		for _, pg := range s.lossless {
			sw.totalHdrm += p.headroom[pg]
		}
		sw.totalRsrv += s.cfg.PFC.ReserveBytes
	}
}

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
		for i := range dist {
			dist[i] = -1
		}
		dist[h.node] = 0
		queue = append(queue[:0], h.node)
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			if u != h.node && s.nodeSw[u] < 0 {
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

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
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

// Now is the current simulated time.
func (s *Sim) Now() Time { return s.now }

// RunUntil processes every event up to and including time t, then sets the
// clock to t.
func (s *Sim) RunUntil(t Time) {
	for s.evq.Len() > 0 && s.evq.peekTime() <= t {
		e := s.evq.pop()
		s.now = e.t
		s.stats.Events++
		s.dispatch(e)
	}
	if t > s.now {
		s.now = t
	}
}

// Run runs to Config.Duration, or until the fabric is idle with no more
// traffic to come, whichever is first.
func (s *Sim) Run() {
	const chunk = 100 * Microsecond
	for s.now < s.cfg.Duration && !s.Idle() {
		next := s.now + chunk
		if next > s.cfg.Duration {
			next = s.cfg.Duration
		}
		// skip idle stretches (e.g. traces that start at 2 s)
		if s.evq.Len() > 0 && s.evq.peekTime() > next && s.activeFlows() == 0 {
			next = s.evq.peekTime()
			if next > s.cfg.Duration {
				next = s.cfg.Duration
			}
		}
		s.RunUntil(next)
	}
}

func (s *Sim) activeFlows() int { return s.stats.FlowsStarted - s.stats.FlowsFinished }

// Idle reports whether no flow is active and no workload will start another.
func (s *Sim) Idle() bool {
	if s.activeFlows() > 0 {
		return false
	}
	for i := range s.gens {
		if !s.gens[i].exhausted {
			return false
		}
	}
	return true
}

func (s *Sim) dispatch(e event) {
	a := e.a()
	switch e.kind() {
	case evTxDone:
		s.txDone(a)
	case evArrive:
		p := &s.ports[a]
		pk := s.fifoPop(&p.wire)
		if p.wire.pkts > 0 {
			s.evq.push(s.pkts[p.wire.head].at, evArrive, a, 0)
		}
		s.arrive(p.peerPort, pk)
	case evFlowStart:
		s.startFlow(a)
	case evHostWake:
		h := &s.hosts[s.nodeHost[s.ports[a].node]]
		if h.wakeAt == e.t {
			h.wakeAt = 0
			s.tryTx(a)
		}
	case evRateDec:
		s.rateDecrease(a, e.b)
	case evRateInc:
		s.rateIncreaseTimer(a, e.b)
	case evRTO:
		s.rtoFire(a, e.b)
	case evGenerator:
		s.generate(int(a))
	case evCollective:
		s.collectiveStart(int(a), int(e.b))
	}
}

// ---- transmission ----

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

func (s *Sim) hasBacklog(p *port) bool {
	if p.pfcq.pkts > 0 || p.ctrl.pkts > 0 {
		return true
	}
	if p.isHost {
		return false // hostSend arms its own wake-up for data
	}
	for q := range p.q {
		if p.q[q].pkts > 0 {
			return true
		}
	}
	return false
}

func (s *Sim) txDone(pid int32) {
	s.ports[pid].wakePending = false
	s.tryTx(pid)
}

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
	if p.ctrl.pkts > 0 {
		s.transmit(pid, s.fifoPop(&p.ctrl))
		if p.isHost {
			s.armHostWake(pid, &s.hosts[s.nodeHost[p.node]])
		}
		return
	}
	if p.isHost {
		s.hostSend(pid)
		return
	}
	// DWRR among data queues that are not paused
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

func (s *Sim) touchQueue(p *port, q int) {
	c := &p.cnt[q]
	c.integ += float64(p.q[q].bytes) * float64(s.now-c.lastChange)
	c.lastChange = s.now
}

func (s *Sim) dequeueData(pid int32, q int) int32 {
	p := &s.ports[pid]
	s.touchQueue(p, q)
	pk := s.fifoPop(&p.q[q])
	pkt := &s.pkts[pk]
	size := int64(pkt.size)
	sw := &s.sws[s.nodeSw[p.node]]
	in := &s.ports[pkt.inPort]
	pg := int(pkt.prio)
	// ingress accounting (ns-3 HPCC SwitchMmu semantics)
	fromHdrm := min(in.hdrmBytes[pg], size)
	fromShared := int64(0)
	if in.ingBytes[pg] > s.cfg.PFC.ReserveBytes {
		fromShared = min(size-fromHdrm, in.ingBytes[pg]-s.cfg.PFC.ReserveBytes)
	}
	in.hdrmBytes[pg] -= fromHdrm
	in.ingBytes[pg] -= size - fromHdrm
	sw.sharedUsed -= fromShared
	c := &p.cnt[q]
	c.txPkts++
	c.txBytes += uint64(size)
	if pkt.kind == pktData && s.mark(p.ecn[q], p.q[q].bytes) {
		pkt.ce = true
		c.markedPkts++
		c.markedBytes += uint64(size)
		s.stats.ECNMarked++
	}
	s.checkResume(sw, pkt.inPort, pg)
	return pk
}

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

// ---- switch MMU and PFC ----

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
	out := s.nextHop(si, pkt.dst, pkt.flow)
	if out < 0 {
		s.drop(nil, 0, pk)
		return
	}
	op := &s.ports[out]
	pkt = &s.pkts[pk]
	if pkt.kind != pktData && s.ackPrio >= 0 {
		op.cnt[ControlQueue].txPkts++
		op.cnt[ControlQueue].txBytes += uint64(pkt.size)
		s.fifoPush(&op.ctrl, pk)
		s.tryTx(out)
		return
	}
	pg := int(pkt.prio)
	size := int64(pkt.size)
	// admission (drop only when the headroom overflows; without PFC, when
	// the dynamic threshold is exceeded)
	shared := s.sharedOf(p, pg)
	thr := s.threshold(sw, p, pg)
	if s.cfg.PFC.Enabled {
		if size+p.hdrmBytes[pg] > p.headroom[pg] && size+shared > thr {
			s.drop(op, pg, pk)
			return
		}
	} else if p.ingBytes[pg]+size > s.cfg.PFC.ReserveBytes && size+shared > thr {
		s.drop(op, pg, pk)
		return
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
	s.touchQueue(op, pg)
	s.fifoPush(&op.q[pg], pk)
	if b := op.q[pg].bytes; b > op.cnt[pg].max {
		op.cnt[pg].max = b
	}
	s.checkPause(sw, pid, pg)
	s.tryTx(out)
}

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

// ---- knobs ----

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

// SetAlpha changes an ingress PG's dynamic-threshold factor.
func (s *Sim) SetAlpha(pg PGRef, alpha float64) error {
	p, err := s.portOf(pg.Switch, pg.Port)
	if err != nil {
		return err
	}
	if pg.PG < 0 || pg.PG >= NumQueues || !s.isLossless[pg.PG] {
		return fmt.Errorf("priority group %d is not lossless (lossless: %v)", pg.PG, s.lossless)
	}
	if !(alpha > 0 && alpha <= 64) {
		return fmt.Errorf("alpha %g outside (0, 64]", alpha)
	}
	p.alpha[pg.PG] = alpha
	return nil
}

// ---- read side ----

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
			s.touchQueue(p, q)
			c := &p.cnt[q]
			cur := p.q[q].bytes
			if q == ControlQueue {
				cur = p.ctrl.bytes
			}
			qc := QueueCounters{TxPkts: c.txPkts, TxBytes: c.txBytes, MarkedPkts: c.markedPkts, MarkedBytes: c.markedBytes,
				DropPkts: c.dropPkts, DropBytes: c.dropBytes, CurBytes: cur, MaxBytes: max(c.max, cur), ECN: p.ecn[q]}
			if win > 0 {
				qc.AvgBytes = (c.integ - c.winInteg) / float64(win)
			} else {
				qc.AvgBytes = float64(cur)
			}
			c.winInteg = c.integ
			c.max = cur
			pt.Queues[q] = qc
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
			pt.PFC[q] = pf
			pt.PG[q] = PGState{Lossless: s.isLossless[q], HeadroomBytes: p.headroom[q], MinHeadroomBytes: p.minHeadroom,
				Alpha: p.alpha[q], XoffBytes: s.threshold(st, p, q), SharedBytes: s.sharedOf(p, q), HeadroomUsed: p.hdrmBytes[q]}
		}
	}
	st.lastRead = s.now
	return t
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
		if s.flows[i].started {
			out = append(out, s.flows[i].FlowRecord)
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
