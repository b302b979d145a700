// Package fleetsoak is the fault harness of a fleet of agents with real
// processes: a 3-member etcd runs in the harness (internal/etcdrun), each
// agent reaches it through a TCP proxy of the harness's that can be cut,
// simswitch serves the simulated switches and records every Set with its
// writer and fencing token (--set-log), and the agents (ecntune agent, in
// closed loop, each listing every switch and joining the fleet) are
// killed, paused past their lease, cut from etcd past it, while etcd's
// Raft leader is stopped and restarted, cycle after cycle (Run).
//
// After the run the harness checks, from the set log, its own watch of the
// fleet's owner and member keys, and the agents' audit logs: no Set
// without a writer, per switch tokens that never go down and rise at each
// change of writer, every token an owner key of its writer, no Set after
// its writer's lease ended, every Set with an audit record of its writer,
// and internal/soak's guard checks (min-hold, rollbacks, floors, changes
// on a past setting, double changes) on the audit logs merged. It measures
// failover from each fault to the new owner key, to the new owner's first
// decision ("fleet: switch taken over" in its log) and to its first Set,
// and writes a report (report.txt in Config.Dir).
//
// TestFleetSoak runs a short soak in the test suite; the environment sets
// a long one (see the test).
package fleetsoak
