// Package simenv is a deterministic, packet-level simulator of a RoCEv2 fabric: switch MMU and PFC, ECN marking, DCQCN hosts.
// Build a Config (DefaultConfig or simenv/scenario), New it, advance with RunUntil, read Telemetry, change knobs with SetECN.
//
// # Determinism
//
// A Sim does no I/O and reads no clock: simulated time advances only
// through RunUntil and Run. The same Config, including Seed, and the same
// knob changes at the same simulated times give a bit-identical run (every
// counter, flow record and event count). Randomness comes from two PCG
// sources seeded from Config.Seed, one for the workloads and one for ECN
// marking; events at the same instant leave the event queue in a fixed order
// (not necessarily the order they were scheduled in); nothing depends on map
// iteration, goroutines or the host machine. Reading (Telemetry, Stats,
// Flows) never changes what the fabric does. A Sim is not safe for
// concurrent use; separate Sims share nothing.
//
// # Units and names
//
//   - Time is simulated time in picoseconds (Nanosecond, Microsecond, ...
//     convert); telemetry durations are in nanoseconds (PausedNs).
//   - Rates are bits per second (float64, RateBps); sizes are bytes. MTU is
//     the payload of a data packet; HeaderBytes are added on the wire, and
//     queue depths, ECN thresholds and buffer use count wire bytes.
//   - Config.ECN and PFCConfig.HeadroomBytes are given at 100 Gb/s and
//     scale linearly with each port's rate; Config.ECNByRate overrides the
//     scaling per rate. Knobs set through SetECN and SetHeadroom are taken
//     as given, for that port.
//   - Switches are numbered in node order (Switches); a switch's ports in
//     link order, named Ethernet0, Ethernet1, ...; a queue is a priority,
//     0..NumQueues-1. ControlQueue (7) carries ACKs and CNPs; the lossless
//     priorities are those the workloads use (LosslessPriorities).
//
// # What is simulated
//
// Switches follow the semantics of ns-3 HPCC's SwitchMmu: one shared buffer
// per switch, ingress accounting per (port, priority group) with a reserve,
// a dynamic XOFF threshold of alpha times the free shared buffer, headroom
// per (port, PG) reserved out of the buffer, PAUSE and RESUME frames that
// stop and restart a priority on the upstream egress, and drops only when
// headroom overflows (or, without PFC, above the threshold). A headroom
// overflow is counted on the ingress PG that refused the packet
// (PGState.DropPkts), a drop without PFC on the egress queue it was headed
// for (QueueCounters.DropPkts), as switches count them. Egress ports
// serve PFC frames, then the control queue, then the data queues by
// deficit-weighted round robin; ECN marking is RED-linear at dequeue on the
// egress queue's depth. Routing is shortest-path ECMP, hashed per flow with
// a seed per switch.
//
// Hosts are RoCEv2 NICs with DCQCN in the Mellanox form (rate decrease on
// CNP, alpha and rate-increase timers, fast recovery, additive and hyper
// increase, optional byte counter), per-flow pacing, round robin among
// flows, cumulative ACKs, and go-back-N with NACK and a tail timeout. A
// receiver answers duplicate data with an ACK of what it holds (always
// for a flow's last packet), so a lost final ACK costs one tail timeout.
// A host's ACKs travel on the data's priority unless AckHighPriority; a
// PAUSE of that priority holds them as it holds the data.
// Workloads (Poisson arrivals from a size CDF, incast, ring allreduce,
// alltoall, and traces) run side by side within start and end times.
//
// Not simulated: CNPs are a flag on ACKs; PFC frames are never dropped and
// PAUSE has no quanta expiry; hosts have unlimited receive buffers and send
// no PFC; one NIC per host; no link errors; ECMP hashes the flow id rather
// than a 5-tuple. A flow carries at most MaxFlowBytes.
//
// # What New refuses
//
// Besides inconsistent fields, New (and Check, which only reports) refuses
// what no fabric could be or carry, so that a run neither overflows nor
// exhausts memory: link rates outside MinRateBps..MaxRateBps (1 b/s..10
// Tb/s), delays and Duration above MaxDuration (1 h), sizes above MaxBytes
// (1 TB); a switch buffer smaller than the reserve of every port, the
// headroom of every lossless (port, PG) when PFC is on and one frame of
// shared space per port, or a reserve, XON offset or headroom above the
// buffer; CDF sizes below 1 byte; flow arrivals faster than a workload's
// host links can start flows (one frame of header and 1 byte each); incast
// bursts carrying more than those links' rate. MMU and workload refusals
// are *FieldError, naming the Config field. Setup is near-linear in the
// number of hosts (routes are computed per edge switch).
//
// # Counters
//
// Telemetry returns what a switch would export: per egress queue, counters
// cumulative since the start of the run, the current depth, and the maximum
// and average depth since the previous Telemetry call for that switch (a
// read-and-clear window, as switches keep watermarks); per port and
// priority, PFC frames and paused time; per ingress PG, the MMU state.
// Stats, Flows and Collectives are ground truth that no switch sees.
package simenv
