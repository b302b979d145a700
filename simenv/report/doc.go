// Package report summarises a simulation run (FCT slowdown per flow-size bucket, utilisation, goodput, counters) and reads and writes ns-3 HPCC fct files.
// Call Summarize(sim.Flows(), sim.Stats(), wall) and write the Summary with WriteText or WriteJSON; WriteFCT and ReadFCT write and read per-flow FCT files in ns-3 HPCC's format, to compare runs with its reference outputs.
//
// It is pure: it does no I/O beyond the writers and readers it is handed,
// reads no clock (the run's wall time comes in as an argument), and gives the
// same output for the same input.
//
// Figures follow the ns-3 HPCC conventions so that results compare with the
// reference simulator's: slowdown is FCT over the standalone FCT, clamped at
// 1 (simenv.FlowRecord.Slowdown); flows are bucketed by size in bytes with
// decimal bounds (10 KB = 10,000 B); percentiles are nearest-rank
// (Percentile); only finished flows count towards slowdowns. Utilisation is
// the average busy fraction of the host uplinks and goodput the payload
// received by hosts per simulated second. In fct files times are whole
// nanoseconds and nodes are ns-3 addresses (NodeIP, IPNode).
package report
