// Package simswitch serves the switches of a running simenv simulation as gNMI targets.
// Start a Server from a Config (simulation, dialect, address); Close it, or cancel Start's context.
//
// The agent (and gnmic) talk to the simulated switches exactly as to real
// ones.
//
// One goroutine owns the simulation and advances it paced to the wall clock:
// Timescale wall seconds per simulated second (1000: one wall second is one
// simulated millisecond), in small steps, past the scenario's duration. If
// the simulator cannot keep up it falls behind (Status reports the lag;
// it runs in slices of 100 µs of simulated time, publishing at least every
// step, so a small timescale holds neither a stop nor a Set for long);
// gRPC handlers never wait for a step, only Sets wait for the step boundary.
//
// Subscribe: ONCE, POLL and STREAM; in STREAM, SAMPLE honours
// sample_interval (wall time; 0 means Config.DefaultSample, shorter than
// Config.MinSampleInterval is raised to it — unlike sonic-gnmi, which
// refuses intervals below 1 s), suppress_redundant and heartbeat_interval;
// TARGET_DEFINED is sampled like SAMPLE; ON_CHANGE sends the leaves that
// changed as soon as a Set commits (state leaves are checked every 100 ms),
// and deletes for leaves that went away. Every subscription gets its
// initial dump and then sync_response.
//
// LLDP: every connected port has one neighbour in the openconfig-lldp
// state, /lldp/interfaces/interface[name=X]/neighbors/neighbor[id=1]/
// state/{system-name,port-id,chassis-id} and .../capabilities/
// capability[name=C]/state/enabled: a neighbouring switch advertises
// MAC_BRIDGE and ROUTER, a host STATION_ONLY, and system-name is the peer's
// node name (see LLDPItems). Get, ONCE, POLL and STREAM serve it
// like any state leaf. In the sonic dialect it is under prefix.target
// OC-YANG, as sonic-gnmi serves openconfig models (module prefixes such as
// openconfig-lldp:lldp are accepted there); OC-YANG has no namespace
// element, so it needs a listener with one switch (PerSwitch, or a
// one-switch fabric).
//
// Addressing: every switch is a gNMI target named as the simulator names it
// (leaf0, spine0, sw0), its interfaces Ethernet0, Ethernet1, ... in port
// order. openconfig: prefix.target (or path target) is the switch name.
// sonic: prefix.target is the database (CONFIG_DB, COUNTERS_DB), as
// sonic-gnmi expects; the switch is named by the namespace element that
// follows the database in sonic-gnmi's multi-namespace paths
// (COUNTERS_DB /leaf0/COUNTERS/...). "localhost" or no namespace element
// selects the listener's only switch. Config.PerSwitch gives every switch its
// own listener instead, so clients built for one switch per address need no
// namespace at all.
//
// Limits: a request may not make the server do or hold unbounded work.
// Config.MaxPaths (default DefaultMaxPaths, 1024) bounds the paths of a
// Get and the subscriptions of a SubscriptionList, Config.MaxSetOps
// (default DefaultMaxSetOps, 4096) the deletes, replaces and updates of a
// Set, and Config.MaxMsgBytes (default DefaultMaxMsgBytes, 4 MiB, gRPC's
// default) the size of every request received and response sent; beyond
// them a request fails with ResourceExhausted, naming the limit and the
// value. Duplicate paths of a Get or a subscription list are answered
// once. A Get whose answer would exceed MaxMsgBytes fails with
// ResourceExhausted (ask for narrower paths); a subscription splits a
// notification that would exceed it into several of the same timestamp.
// Like a switch ASIC, whose WRED and buffer profiles live in fixed-size
// tables, a simulated switch holds at most ProfilesPerQueue (4) ECN
// profiles per queue, 4 x ports x 8 in all, and as many SONiC buffer
// profiles: a Set that would leave more fails with ResourceExhausted. Sets
// also fail for interfaces the switch does not have (NotFound) and for
// names or string values longer than MaxNameBytes (128; InvalidArgument).
// Every Set is checked whole, on a copy of the configuration, before any
// of it reaches the simulation: a refused Set changes nothing. That
// checking (decoding its values) runs on the Set's own goroutine, one Set
// at a time, so that a large Set does not hold the simulation up.
//
// Timestamps are simulated time: Epoch + simulated ns (see
// SimTimestamp), so counter deltas over timestamp deltas are
// simulated rates whatever the timescale. Device sonic stamps each path
// of a subscription list sonicPathStagger after the one before it, as
// sonic-gnmi's per-path readers do: a sample is not one timestamp. Get does not reset the max/avg
// queue windows; every SAMPLE, ONCE and POLL read does (read-and-clear
// watermarks; concurrent samplers share one window per switch).
package simswitch
