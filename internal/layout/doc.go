// Package layout holds no code: its test checks the package graph that
// ../shared/design.md draws ("one loop, two worlds") with go list -deps.
//
// The layers, bottom up:
//
//   - vocabulary: env (snapshots, settings, queue keys, the Observer,
//     reward, the action catalogue) and internal/units; pure.
//   - policy: policy, policy/nn (the inference network), policy/builtin,
//     over the vocabulary; pure (a caller hands it a way to load stored
//     models), and linking no training library (no gorgonia).
//   - the simulator world: simenv (the simulator, which depends on nothing
//     of the project), simenv/export (its telemetry as env Snapshots),
//     simenv/scenario, simenv/report, simenv/gym (the Gym-style
//     environment), train and train/rl (training: the loop, DDQN and PPO
//     in gorgonia), eval.
//   - the gNMI world: gnmipath (the codec, beside env: every path, device
//     profile and encoding) and agent (the driver).
//   - the one bridge: simswitch, the simulator served as gNMI targets
//     (through simenv/export; no training environment).
//   - wiring: cmd/ecntune, and internal/bench (the measurements behind
//     ecntune bench, which run both worlds together).
//
// The two worlds never import each other; models (the registry) and
// internal helpers may be used by both.
package layout
