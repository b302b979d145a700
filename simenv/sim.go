package simenv

import "math/rand/v2"

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
	hdrmPeak     int64             // most headroom ever used on this ingress (any PG)
	pgDropPkts   [NumQueues]uint64 // refused by ingress admission with PFC on
	pgDropBytes  [NumQueues]uint64
	pfc          [NumQueues]PFCCounters
}

type swState struct {
	node       int32
	ports      []int32
	buffer     int64
	sharedUsed int64
	totalHdrm  int64
	totalRsrv  int64
	route      [][]int32 // by edge switch (Sim.hostEdge): candidate egress ports
	seed       uint64
	lastRead   Time
}

// Sim is one simulated fabric. It is not safe for concurrent use; it does no
// I/O and reads no clock: time advances only through RunUntil.
type Sim struct {
	cfg        Config
	now        Time
	lastFinish Time // when the newest finished flow finished
	evq        eventQueue

	pkts []packet
	free []int32

	ports    []port
	sws      []swState
	hosts    []hostState
	nodeSw   []int32 // node -> switch index or -1
	nodeHost []int32 // node -> host index or -1
	nodePort [][]int32
	hostEdge []int32 // host index -> index of its switch among the edge switches (route tables)
	edgeComp []int32 // edge index -> the part of the fabric it is in (the lowest edge index there)
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
	// finished lists flow ids in the order they finished (FinishedFlows).
	finished []int32

	// dropHook, set only by tests of this package, drops the frames it
	// reports true for as they arrive at a switch (a lost packet, where and
	// when a test wants it).
	dropHook func(*packet) bool
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

// Check reports whether New would accept cfg, with New's error (a
// *FieldError for MMU sizes that do not fit the buffer). Loaders call it
// so that a configuration they return is one the simulator runs.
func Check(cfg Config) error {
	_, err := New(cfg)
	return err
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
// traffic to come, whichever is first; in the second case Now is when the
// last flow finished.
func (s *Sim) Run() { s.RunFunc(nil) }

// RunFunc is Run calling each (when not nil) after every 100 µs of
// simulated time, with the simulated time reached (for progress).
func (s *Sim) RunFunc(each func(now Time)) {
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
		if each != nil {
			each(s.now)
		}
	}
	if s.now < s.cfg.Duration && s.Idle() && s.lastFinish > 0 && s.lastFinish < s.now {
		// ended idle: the run's time is until its last flow finished,
		// not the end of the 100 µs step it finished in (a 1 MB flow of
		// 88 µs read as 80 Gb/s over 0.1 ms at every link rate)
		s.now = s.lastFinish
	} else if s.now < s.cfg.Duration && s.Idle() && s.stats.FlowsStarted == 0 {
		// no flow started, nor will: the run stands for an idle fabric
		// over its whole duration, not until the event after which no
		// workload could start one (a cdf workload whose first arrival
		// fell past its end read "simulated time 0 ms")
		s.now = s.cfg.Duration
	}
}

// FlowArrivalRate is the flows per simulated second workload i starts on
// average, all its hosts together: a cdf workload's load of its hosts'
// links in flows of its CDF's mean size (0 for the other kinds).
func (s *Sim) FlowArrivalRate(i int) float64 {
	if i < 0 || i >= len(s.gens) {
		return 0
	}
	return s.gens[i].rate
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
	k := e.kind()
	if (k == evFlowStart || k == evGenerator || k == evCollective) && !s.cfg.Loop && s.cfg.Duration > 0 && e.t >= s.cfg.Duration {
		// A run covers [0, Duration): work due at its end starts no flow
		// (a burst every 2 ms of a 10 ms run left 15 of 90 flows
		// "unfinished", started at 10 ms)
		return
	}
	switch k {
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
