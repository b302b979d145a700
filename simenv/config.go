package simenv

import (
	"fmt"
	"time"
)

// Time is simulated time in picoseconds. Picoseconds keep serialisation
// delays exact at 400 Gb/s (a 1048 B packet takes 20,960 ps).
type Time int64

const (
	Picosecond  Time = 1
	Nanosecond  Time = 1000
	Microsecond Time = 1000 * Nanosecond
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond

	// MaxDuration bounds a run's Duration and link delays: one hour.
	MaxDuration = 3600 * Second
)

// Bounds of rates and sizes a Config may hold, so that nothing overflows:
// the same as internal/units' (simenv depends on nothing of the project;
// the scenario package's tests check that the two agree).
const (
	MinRateBps       = 1.0               // 1 b/s
	MaxRateBps       = 10e12             // 10 Tb/s
	MaxBytes   int64 = 1_000_000_000_000 // 1 TB
)

// FromDuration converts a wall-style duration into simulated time.
func FromDuration(d time.Duration) Time { return Time(d) * Nanosecond }

// Duration converts simulated time to a time.Duration (nanosecond resolution).
func (t Time) Duration() time.Duration { return time.Duration(t / Nanosecond) }

// Seconds returns t in seconds.
func (t Time) Seconds() float64 { return float64(t) / float64(Second) }

// Ns returns t in whole nanoseconds.
func (t Time) Ns() int64 { return int64(t / Nanosecond) }

func (t Time) String() string { return time.Duration(t / Nanosecond).String() }

// Node is a host or a switch of the fabric.
type Node struct {
	Name   string
	Switch bool
}

// Link is a full-duplex point-to-point link between nodes A and B.
type Link struct {
	A, B    int
	RateBps float64
	Delay   Time
}

// Topology is the fabric graph. Node ids are indices into Nodes. Hosts and
// switches may be interleaved (as in HPCC topology files).
type Topology struct {
	Kind  string // star, leafspine, hpcc: informational
	Nodes []Node
	Links []Link
}

// ECN is the RED-linear marking setting of one egress queue: no mark below
// Kmin bytes, probability Pmax*(q-Kmin)/(Kmax-Kmin) between, always above Kmax.
type ECN struct {
	KminBytes int64
	KmaxBytes int64
	Pmax      float64
}

// Validate checks the invariants every ECN setting must keep.
func (e ECN) Validate() error {
	switch {
	case e.KminBytes < 0:
		return fmt.Errorf("kmin %d B is negative", e.KminBytes)
	case e.KmaxBytes < e.KminBytes:
		return fmt.Errorf("kmin %d B is above kmax %d B (need kmin <= kmax)", e.KminBytes, e.KmaxBytes)
	case !(e.Pmax >= 0 && e.Pmax <= 1):
		// 0: marking above Kmax only, as a switch's profile may say
		// (openconfig and SONiC take a drop probability of 0%)
		return fmt.Errorf("pmax %g is outside [0, 1]", e.Pmax)
	}
	return nil
}

// Headroom formulas.
const (
	HeadroomIEEE = "ieee" // 2*MTU + pause frame + 2*cable + peer response, at port rate
	HeadroomHPCC = "hpcc" // 3 * rate * one-way link delay (ns-3 HPCC)
)

// PFCConfig configures priority flow control and the switch MMU.
type PFCConfig struct {
	Enabled bool
	// Alpha is the dynamic threshold factor: XOFF = Alpha * free shared
	// buffer, in (0, MaxAlpha].
	Alpha float64
	// AlphaScaleWithRate doubles alpha per 2x of port rate over the host NIC
	// rate, at most 3 times (the ns-3 HPCC convention: 1/8 becomes 1 at
	// most).
	AlphaScaleWithRate bool
	CableMeters        float64
	// HeadroomBytes, when > 0, overrides the computed headroom for every
	// lossless (port, PG) at RefRate, scaled with port rate.
	HeadroomBytes int64
	// HeadroomFormula selects how headroom is computed when not given.
	HeadroomFormula string
	// HeadroomFactor, when > 0 and HeadroomBytes is not set, makes every
	// lossless (port, PG)'s headroom this multiple of its computed lossless
	// minimum (MinHeadroom): a vendor's margin over the floor.
	HeadroomFactor float64
	// ReserveBytes is the guaranteed per-(port, PG) ingress reserve.
	ReserveBytes int64
	// XonOffsetBytes: RESUME is sent when the PG's shared use falls below
	// XOFF - XonOffsetBytes.
	XonOffsetBytes int64
}

// DCQCNConfig is the NIC congestion control, Mellanox form.
type DCQCNConfig struct {
	Enabled           bool
	G                 float64
	AIBps             float64 // additive increase
	HAIBps            float64 // hyper increase
	IncreaseTimer     Time    // rate-increase timer
	AlphaTimer        Time    // alpha update interval
	DecreaseTimer     Time    // rate-decrease interval (min time between cuts)
	MinRateBps        float64
	FastRecoverySteps int   // stages of fast recovery before additive increase
	CNPInterval       Time  // min interval between CNPs per flow at the receiver
	ByteCounter       int64 // bytes between byte-counter increase events (0: off); hyper increase needs both stages past FastRecoverySteps
}

// WorkloadKind names a traffic generator.
type WorkloadKind string

const (
	WorkloadCDF       WorkloadKind = "cdf"
	WorkloadIncast    WorkloadKind = "incast"
	WorkloadAllReduce WorkloadKind = "allreduce"
	WorkloadAllToAll  WorkloadKind = "alltoall"
	WorkloadTrace     WorkloadKind = "trace"
)

// CDFPoint is one point of a flow-size CDF: Percent of flows are <= Bytes.
type CDFPoint struct {
	Bytes   float64
	Percent float64
}

// TraceFlow is one flow of an HPCC flow file. Src and Dst are node ids.
type TraceFlow struct {
	Src, Dst  int
	Priority  int
	DPort     int
	SizeBytes int64
	Start     Time
}

// Workload is one traffic source. Hosts, when set, lists the host node ids
// it uses (default: all hosts).
type Workload struct {
	Kind     WorkloadKind
	Start    Time
	End      Time // 0: until the end of the run
	Priority int  // lossless priority/queue of its data (default 3)
	Hosts    []int

	// cdf
	CDF  []CDFPoint
	Load float64

	// incast: Fanin senders send SizeBytes each to one receiver every Every.
	Fanin     int
	SizeBytes int64
	Every     Time

	// allreduce / alltoall: Ranks hosts, collective of SizeBytes, Gap between iterations.
	Ranks int
	Gap   Time

	// trace
	Flows []TraceFlow
}

// Config is everything a simulation run needs. It is built by the scenario
// loader (simenv/scenario) or by hand; simenv itself reads no files.
type Config struct {
	Name     string
	Seed     uint64
	Duration Time // simulated time to run; flows still running then are reported unfinished

	// Interval, when set, is the control interval the fabric is decided
	// at (a twin's: the agent's measured interval): the gym environment
	// and eval take it where no interval is given (0: gym's default for
	// Duration). The simulator itself does not read it.
	Interval Time
	// Warmup, when set, leaves the flows that start before it out of
	// eval's flow figures where no warmup is given (a twin's lead-in:
	// traffic that ran before the observation began). The simulator
	// itself does not read it.
	Warmup Time

	Topology    Topology
	BufferBytes int64 // shared buffer per switch

	// ECN is the initial setting of every lossless egress queue of a port at
	// units.RefRateBps; it scales linearly with the port's rate.
	ECN ECN
	// ECNByRate, when set, gives explicit settings per port rate (bps),
	// overriding the linear scaling (KMIN_MAP/KMAX_MAP/PMAX_MAP of HPCC).
	ECNByRate map[float64]ECN
	// ECNOff turns switch ECN marking off whatever the queues' settings
	// (ns-3's switch EcnEnabled false, which an HPCC config's ENABLE_QCN 0
	// sets): queues keep their thresholds and SetECN still changes them,
	// but no packet is marked.
	ECNOff bool

	PFC   PFCConfig
	DCQCN DCQCNConfig

	MTU             int  // payload bytes per data packet
	HeaderBytes     int  // per-packet header bytes on the wire (48)
	AckBytes        int  // wire size of ACK/CNP packets
	AckHighPriority bool // ACK/CNP on the strict-priority control queue
	AckEvery        int  // one ACK per N data packets (1 = every packet)

	Workloads []Workload

	// Loop repeats the workloads every Duration, for runs that go on past
	// it (simswitch, the demo): a workload active from Start to End is
	// active again from Start+k*Duration to End+k*Duration for every k, a
	// trace replays its flows from Start+k*P (P: Duration, or longer when
	// the trace's last flow starts later), a one-shot incast fires again.
	// A workload without End runs on anyway. Run still stops at Duration.
	Loop bool
}

// Default values (those of the ns-3 HPCC reference runs at 100 Gb/s).
const (
	DefaultMTU          = 1000
	DefaultHeaderBytes  = 48
	DefaultAckBytes     = 64
	DefaultPriority     = 3
	ControlQueue        = 7
	NumQueues           = 8
	DefaultBufferBytes  = 32_000_000
	DefaultReserveBytes = 4 * 1024
	DefaultXonOffset    = 3 * 1024
)

// DefaultConfig returns a Config with every field but topology and
// workloads at the reference defaults.
func DefaultConfig() Config {
	return Config{
		Seed:        1,
		Duration:    10 * Millisecond,
		BufferBytes: DefaultBufferBytes,
		ECN:         ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2},
		PFC: PFCConfig{Enabled: true, Alpha: 0.125, AlphaScaleWithRate: true, CableMeters: 5,
			HeadroomFormula: HeadroomIEEE, ReserveBytes: DefaultReserveBytes, XonOffsetBytes: DefaultXonOffset},
		DCQCN: DCQCNConfig{Enabled: true, G: 1.0 / 256, AIBps: 20e6, HAIBps: 200e6,
			IncreaseTimer: 300 * Microsecond, AlphaTimer: 1 * Microsecond, DecreaseTimer: 4 * Microsecond,
			MinRateBps: 1e9, FastRecoverySteps: 1, CNPInterval: 0},
		MTU: DefaultMTU, HeaderBytes: DefaultHeaderBytes, AckBytes: DefaultAckBytes,
		AckHighPriority: true, AckEvery: 1,
	}
}

// StarTopology is N hosts (nodes 1..N) on one switch (node 0, "sw0").
func StarTopology(hosts int, rateBps float64, delay Time) Topology {
	t := Topology{Kind: "star"}
	t.Nodes = append(t.Nodes, Node{Name: "sw0", Switch: true})
	for i := 0; i < hosts; i++ {
		t.Nodes = append(t.Nodes, Node{Name: fmt.Sprintf("host%d", i)})
		t.Links = append(t.Links, Link{A: 0, B: i + 1, RateBps: rateBps, Delay: delay})
	}
	return t
}

// LeafSpineTopology is a two-tier Clos: every leaf connects to every spine at
// fabricRate; hostsPerLeaf hosts hang off each leaf at hostRate. Node ids:
// hosts first (host0..), then leaves (leaf0..), then spines (spine0..).
func LeafSpineTopology(leaves, spines, hostsPerLeaf int, hostRate, fabricRate float64, delay Time) Topology {
	t := Topology{Kind: "leafspine"}
	nh := leaves * hostsPerLeaf
	for i := 0; i < nh; i++ {
		t.Nodes = append(t.Nodes, Node{Name: fmt.Sprintf("host%d", i)})
	}
	for l := 0; l < leaves; l++ {
		t.Nodes = append(t.Nodes, Node{Name: fmt.Sprintf("leaf%d", l), Switch: true})
	}
	for s := 0; s < spines; s++ {
		t.Nodes = append(t.Nodes, Node{Name: fmt.Sprintf("spine%d", s), Switch: true})
	}
	for l := 0; l < leaves; l++ {
		for h := 0; h < hostsPerLeaf; h++ {
			t.Links = append(t.Links, Link{A: nh + l, B: l*hostsPerLeaf + h, RateBps: hostRate, Delay: delay})
		}
	}
	for l := 0; l < leaves; l++ {
		for s := 0; s < spines; s++ {
			t.Links = append(t.Links, Link{A: nh + l, B: nh + leaves + s, RateBps: fabricRate, Delay: delay})
		}
	}
	return t
}
