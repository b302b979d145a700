// Package layout holds no code: its tests check the package graph that
// ../shared/design.md draws ("one loop, two worlds") with go list.
//
// The layers, bottom up (TestLayers: no package imports one above it):
//
//   - the ground: internal/units, safeio, await, cputime, chart, the
//     embedded CDFs and models (the model format and registry).
//   - the vocabulary: env (snapshots, settings, queue keys, the Observer,
//     reward, the action catalogue); pure.
//   - policy/nn (the inference network), policy/builtin (the embedded
//     model) and gnmipath (the gNMI codec: every path, device profile and
//     encoding, Set composition and read-back), beside the vocabulary.
//   - policy: every way to decide, from a typed spec; pure, and linking no
//     training library (no gorgonia). simenv, the simulator, which depends
//     on nothing of the project.
//   - the simulator world above it: simenv/export (its telemetry as env
//     Snapshots), simenv/scenario, simenv/report, simenv/gym (the
//     Gym-style environment), train/rl and train (training, in gorgonia),
//     eval.
//   - the gNMI world beside it: agent/core (the agent's decisions behind a
//     Ready boundary; no I/O), agent/config, agent/journal, agent/metrics,
//     agent/gnmiclient, agent/web, and agent, the driver.
//   - the one bridge: simswitch, the simulator served as gNMI targets
//     (through simenv/export; no training environment).
//   - what tests start: internal/simtest (simulated switches),
//     internal/sonictest (the real sonic-gnmi server), internal/soak,
//     internal/fleetsoak (the fleet of agents under faults).
//   - wiring: cmd/ecntune with its harnesses cmd/ecntune/internal/bench
//     (ecntune bench) and cmd/ecntune/internal/demo.
//
// The two worlds never import each other (TestTheTwoWorldsNeverMeet).
package layout
