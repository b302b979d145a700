// Package fleetscale measures a fleet of agents at scale with real
// processes on 127.0.0.1: a one-member etcd in a child process of its own
// (etcdmain, internal/etcdrun), simswitch serving a leaf-spine of many
// switches on one listener with almost no traffic (counters only), and
// agents in shadow mode that each list every switch and join the fleet.
// Run waits until the fleet has placed every switch and every owner has
// telemetry of its switches, then measures a window at rest: etcd's
// requests by kind (its own Prometheus counters, before and after), the
// CPU time and memory of etcd, of each agent and of simswitch (from
// /proc), and checks that no process died, every switch kept one owner
// and every owner kept receiving telemetry. Fit fits each figure to
// a + b·switches over points of different sizes and projects it.
//
// TestFleetScale runs it when ECNTUNE_FLEETSCALE lists the sizes (see the
// test); it is skipped otherwise and under -short.
package fleetscale
