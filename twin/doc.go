// Package twin fits a simulated fabric to what an agent observed of a real
// one: from the agent's fabric records (env.FabricRecord: ports, speeds,
// LLDP neighbours, buffer and PFC state) it builds the topology of an
// ordinary scenario file, and from the per-queue, per-interval figures the
// agent stored in shadow mode (env.Metrics) it fits the scenario's
// workload by simulation: candidate workloads (a flow-size family of the
// shipped CDFs at a load, incasts, all-reduce or all-to-all collectives)
// are simulated, their counters go through the same path as a switch's
// (simenv/export, env.Observer, env.Metrics), and the same statistics are
// computed from both sides (Stats). Where the observed traffic changes
// over time, each time window (Phase) is fitted on its own and the
// scenario's workloads get start and end times. A simulation starts on an
// empty fabric; where the observation began on traffic already running
// (an agent started on a production fabric, not with its traffic), the
// twin's run begins with a lead-in of the first window's traffic
// (Scenario.Lead, chooseLead).
//
// The package is pure but for the clock that bounds the search: it reads
// no file and writes none. Its inputs are plain values (the caller reads
// them from the agent's database), its outputs a scenario's YAML, the
// simulated configuration and a Report with the fit's error per
// statistic; WritePlot draws observed against simulated.
//
// What it cannot see, it states: DCQCN parameters are not observable and
// take the scenarios' convention scaled to the host rate; a buffer, cable
// length or MTU the switches and the agent's configuration do not report
// takes a default, and the Report's Notes say which. Only star and
// two-tier leaf-spine fabrics are built.
package twin
