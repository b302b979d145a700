// Package env is the vocabulary switches and policies share: Snapshots, Observer, reward, actions.
// Feed an Observer each switch's Snapshots in turn; score its Observations' Metrics with Reward.
//
// The same types and code serve the simulator in process (simenv/gym
// builds Snapshots from simulator counters) and switches reached over
// gNMI (the agent decodes Snapshots from telemetry); nothing downstream of
// a Snapshot knows which. The package does no I/O, reads no clock and
// imports no simulator: time is each Snapshot's timestamp.
//
// Contracts:
//   - A Snapshot holds what one switch exports at one instant, per
//     lossless egress queue: cumulative counters, queue depths, PFC counters
//     and the current Setting. Beyond the basic queue counters a field the
//     switch does not export is zero, which each field's doc reads as
//     unknown (the features flag xoff_known and peer_known).
//   - Observer is deterministic and owns counter-reset detection and rate
//     computation: the first sample of a queue, and an interval whose
//     counters went backwards, whose timestamp did not advance or whose link
//     rate is not positive and finite, yield an Observation with Valid false
//     and a Problem naming the cause; policies hold on it.
//   - Observation.Features follows SpecVersion (obs-v5) and the action
//     indices follow ActionSpecVersion (act-v3: an ECN and a PFC head); a
//     model records both and refuses to run under others, except the older
//     specs each extends by appending (obs-v3, act-v2: ObsSpecFeatures,
//     ActionSpecLen), which run on the prefix. Byte figures of the
//     catalogue are stated at 100 Gb/s (units.RefRateBps) and scaled
//     linearly to the port rate.
//   - RewardWeights.FlowSmall, FlowLarge and FlowSmallTail are ground truth the simulator
//     alone knows (the slowdown of the flows that crossed a queue): simenv/gym
//     adds them to the counter reward for training; observations stay
//     counters only.
//   - Reward and RewardAt score one measured interval from counters alone;
//     the result is always finite, and an unmeasured interval scores 0.
//
// Why the specs are what they are, with the measurements that chose them,
// is in env/DESIGN.md.
package env
