// Package scenario turns scenario files into simenv.Config: ecntune's YAML scenarios and the ns-3 HPCC simulator's input files.
// Call Load (or Parse, ParseFS) for a YAML scenario, LoadHPCCConfig for an HPCC config.txt, then simenv.New on the result.
//
// It is the I/O edge of the simulator: it reads files (Load*, ParseFS) or
// parses bytes it is handed (Parse*); the same input always gives the same
// Config. LoadHPCCTopology, LoadFlowFile and LoadCDF read the other HPCC
// formats (topology, flow and flow-size CDF files) on their own.
//
// A YAML scenario:
//
//	name: websearch-50          # default: the file name without extension
//	seed: 1
//	duration: 20ms
//	interval: 800us             # the control interval it is decided at (default: eval's for the duration)
//	warmup: 2ms                 # eval leaves flows starting before it out of its flow figures (default 0; sim counts them, saying so)
//	topology: {kind: leafspine, leaves: 4, spines: 2, hosts_per_leaf: 8,
//	           host_rate: 100Gbps, fabric_rate: 400Gbps, link_delay: 1us, buffer: 32MB}
//	  # kind: star takes hosts, host_rate, link_delay, buffer
//	  # kind: hpcc takes file (an HPCC topology file) and buffer
//	ecn: {kmin: 400KB, kmax: 1600KB, pmax: 0.2}   # at 100 Gb/s, scaled with port rate; pmax also 20%
//	pfc: {enabled: true, alpha: 0.125, alpha_scale_with_rate: true, cable: 5m,
//	      headroom: 100KB, reserve: 4KiB, xon_offset: 3KiB}
//	  # headroom, like ecn, at 100 Gb/s and scaled with port rate (default: the
//	  # lossless floor per port; a warning says where it is in effect below it);
//	  # or formula: ieee (that floor) or hpcc (3 x rate x link delay), not both;
//	  # with enabled: false, headroom, formula and xon_offset do nothing (a warning)
//	dcqcn: {enabled: true, g: 0.00390625, ai: 20Mbps, hai: 200Mbps, increase_timer: 300us,
//	        alpha_timer: 1us, decrease_timer: 4us, min_rate: 1Gbps, fast_recovery: 1,
//	        cnp_interval: 0us, byte_counter: 0}
//	mtu: 1000                   # payload bytes per packet
//	header_bytes: 48
//	ack_bytes: 64
//	ack_high_priority: true
//	ack_every: 1
//	workloads:                  # every kind also takes start, end, priority, hosts
//	  - {kind: cdf, cdf: cdf/websearch.txt, load: 0.5, start: 0ms, end: 20ms}
//	  - {kind: incast, fanin: 16, size: 1MB, every: 2ms}
//	  - {kind: allreduce, ranks: 16, size: 16MiB, gap: 1ms}
//	  - {kind: alltoall, ranks: 8, size: 8MiB, gap: 1ms}
//	  - {kind: trace, file: flows.txt}   # an HPCC flow file; takes only file
//
// File paths are relative to the scenario file. Sizes take B, KB, MB, GB
// (decimal) or KiB, MiB, GiB; rates bps..Tbps; durations ns, us, ms, s;
// cable lengths m or km. The unit is required on every size, rate and
// duration: a bare number other than 0 (kmin: 400, quoted or not) is an
// error that shows the fix, as ns-3 states KMIN_MAP in KB where a YAML
// file could mean bytes; an ECN threshold below one MTU loads with a
// warning (Warnings). mtu, header_bytes and ack_bytes are counts of bytes
// by their name. Every omitted field takes simenv.DefaultConfig()'s
// value; topology rates default to 100Gbps (fabric_rate: host_rate), link
// delay to 1us, buffer to simenv.DefaultBufferBytes; dcqcn.min_rate to
// 1Gbps, or 1% of the host links' rate where that is not below it. hosts lists host names
// (host0, host1, ...; in hpcc topologies host<node id>).
//
// Unknown keys, values of the wrong type or out of range, and references to
// files, nodes or hosts that do not exist are errors naming the file, the
// line and the field path; nothing is returned until everything is valid.
//
// Every file is read through a size cap (internal/safeio), so an endless or
// huge file is an error naming the file and the cap, not an exhausted
// machine: YAML scenarios 4 MiB, CDF files and ns-3 configs 1 MiB, topology
// files 32 MiB, flow files 64 MiB. A YAML scenario may hold at most 524,288
// nodes with every alias expanded (counted on the parsed tree before
// anything is decoded, so an alias bomb costs a linear parse).
package scenario
