package simenv

// QueueRef names one egress queue: switch index (into Sim.Switches()), port
// index on that switch, and queue (= priority) 0..7.
type QueueRef struct {
	Switch, Port, Queue int
}

// PGRef names one ingress priority group: switch index, port index, priority.
type PGRef struct {
	Switch, Port, PG int
}

// PortInfo describes one switch port.
type PortInfo struct {
	Index int
	Name  string // Ethernet0, Ethernet1, ... in port order
	Peer  string // name of the node at the other end
	// PeerSwitch is true when the peer is a switch (a fabric link), false
	// when it is a host (an edge port).
	PeerSwitch bool
	// PeerPort is the index of the port at the other end among the peer
	// node's ports (a switch names it Ethernet<PeerPort>).
	PeerPort int
	RateBps  float64
	Delay    Time
	// CableMeters is the cable length the port's lossless floor is
	// computed for (MinHeadroom): the configured cable length or the link
	// delay at 5 ns/m, whichever is longer.
	CableMeters float64
}

// SwitchInfo describes one switch of the fabric.
type SwitchInfo struct {
	Index       int    // index into Sim.Switches()
	Node        int    // node id in the topology
	Name        string // leaf0, spine0, sw0, ...
	BufferBytes int64
	// FrameBytes is the largest frame on the wire (MTU and headers), what
	// a lossless floor is computed for (MinHeadroom).
	FrameBytes int
	Ports      []PortInfo
}

// QueueCounters is what a switch exports for one egress queue. Counters are
// cumulative since the start of the run; CurBytes is the instantaneous
// occupancy; MaxBytes and AvgBytes cover the time since the previous
// Telemetry call for that switch (a watermark read-and-clear, as switches do).
type QueueCounters struct {
	TxPkts      uint64
	TxBytes     uint64
	MarkedPkts  uint64
	MarkedBytes uint64
	DropPkts    uint64
	DropBytes   uint64
	CurBytes    int64
	MaxBytes    int64
	AvgBytes    float64
	ECN         ECN // current setting
}

// PFCCounters is per port and priority. Tx counts frames this switch sent on
// the port (it asked the peer to stop); Rx frames it received from the peer.
// PausedNs is the cumulative time this port's egress for that priority was
// held paused by the peer; PausingNs the cumulative time this switch held the
// peer paused.
type PFCCounters struct {
	PauseTx, ResumeTx uint64
	PauseRx, ResumeRx uint64
	PausedNs          uint64
	PausingNs         uint64
}

// PGState is the MMU state and knobs of one ingress (port, priority group).
type PGState struct {
	Lossless         bool
	HeadroomBytes    int64   // configured headroom
	MinHeadroomBytes int64   // computed lossless minimum for this port
	Alpha            float64 // dynamic threshold factor
	XoffBytes        int64   // current dynamic XOFF threshold
	SharedBytes      int64   // shared buffer use by this PG now
	HeadroomUsed     int64   // headroom in use now
	// DropPkts and DropBytes count, cumulatively, the packets this ingress
	// PG refused because its headroom was full (PFC on): a switch's
	// SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS. Those drops are not
	// in the egress queue's QueueCounters, which count only the losses of
	// a lossy fabric (PFC off) at the dynamic threshold.
	DropPkts  uint64
	DropBytes uint64
}

// PortTelemetry groups a port's counters.
type PortTelemetry struct {
	Queues [NumQueues]QueueCounters
	PFC    [NumQueues]PFCCounters
	PG     [NumQueues]PGState
}

// SwitchTelemetry is everything one switch exports at one instant.
type SwitchTelemetry struct {
	Switch      int
	Name        string
	Time        Time
	BufferBytes int64
	SharedUsed  int64
	Ports       []PortTelemetry // same order as SwitchInfo.Ports
}

// FlowRecord is ground truth about one flow, which a switch cannot see.
type FlowRecord struct {
	ID         int
	Src, Dst   int // node ids
	SPort      int
	DPort      int
	Priority   int
	SizeBytes  int64
	Start      Time
	Finish     Time // 0 while unfinished
	Standalone Time // base RTT + bytes on wire / bottleneck rate
	Workload   int  // index into Config.Workloads
	// Delivered is the bytes the receiver holds in order (SizeBytes once
	// finished): an unfinished flow's progress.
	Delivered int64
}

// FCT is the flow completion time (0 while unfinished).
func (f FlowRecord) FCT() Time {
	if f.Finish == 0 {
		return 0
	}
	return f.Finish - f.Start
}

// Slowdown is FCT / standalone FCT, clamped at 1 (as HPCC reports it).
func (f FlowRecord) Slowdown() float64 {
	if f.Finish == 0 || f.Standalone <= 0 {
		return 0
	}
	s := float64(f.FCT()) / float64(f.Standalone)
	if s < 1 {
		s = 1
	}
	return s
}

// CollectiveRecord is one completed iteration of an allreduce/alltoall.
type CollectiveRecord struct {
	Workload  int
	Iteration int
	Start     Time
	Finish    Time
}

// Stats are run-wide totals (ground truth).
type Stats struct {
	Now            Time
	Events         uint64
	PacketHops     uint64 // packets transmitted on any link (data, ACK, CNP, PFC)
	DataHops       uint64
	Drops          uint64
	DropBytes      uint64
	PFCPauses      uint64 // PAUSE frames sent
	PFCResumes     uint64
	ECNMarked      uint64
	FlowsStarted   int
	FlowsFinished  int
	InjectedBytes  uint64 // payload bytes put on the wire by hosts, first transmissions
	DeliveredBytes uint64 // payload bytes accepted in order by receivers
	RetxBytes      uint64 // payload bytes re-sent by go-back-N
	// Packet-level conservation: every data packet a host sends is, at any
	// instant, received by a host, dropped, or still in the fabric.
	DataSentPkts uint64 // data packets sent by hosts (first sends and retransmissions)
	DataRecvPkts uint64 // data packets that reached their destination host
	DataDropPkts uint64 // data packets dropped in the fabric
	// HostLinkBusy is, summed over host uplinks, the time spent transmitting;
	// divide by (hosts * Now) for average host-link utilisation.
	HostTxBusy   Time
	HostRxBytes  uint64 // payload bytes received by hosts (goodput)
	SwitchTxBusy Time   // summed over switch ports
	SwitchPorts  int
	Hosts        int
}
