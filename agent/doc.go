// Package agent runs a tuning policy against live switches over gNMI, in shadow mode or closed loop.
// LoadConfig, OpenJournal, DialSwitch per target, then New and Run; NewGuard works alone, without I/O.
//
// Telemetry comes in over gNMI, observations through env.Observer,
// decisions from a policy.Policy, then the Guard's rules, then either a
// recorded recommendation (shadow mode) or a journaled, read-back-checked
// gNMI Set (closed loop).
//
// The Guard is pure (no I/O, no clock: time comes in as an argument); the
// gNMI client, the bbolt journal, the HTTP endpoint and the clock live at the
// edges of this package.
//
// One writer per switch. The agent database is a bbolt file opened with an
// exclusive lock and a timeout: a second agent on the same database fails at
// once with an error that says so (and `agent rollback` refuses while an
// agent runs; `agent history` reads the audit log from its /changes then). A db that is not an agent database (the model registry,
// another bbolt file, not bbolt at all) is refused before anything is
// written to it. Across databases, no public gNMI model has a lease leaf a
// switch would keep for us (gnmic's clustering takes its per-target locks in
// Consul, Kubernetes or Redis, outside the switch), so rather than invent a
// marker on the switch the agent watches what it wrote: a queue that reports
// a setting the agent did not set for two intervals in a row, or a read-back
// showing a third setting, belongs to someone else; the guard adopts that
// setting, raises an external-writer alarm and leaves the queue alone for
// guardrails.external-hold instead of fighting over it. Give each switch to
// one agent configuration; the yield is the safety net, not the partition.
//
// Metrics: Instruments keep per-queue Prometheus series only for the
// metrics-queues most congested queues of each interval (default 20) and
// per-target aggregates for all, so that 10,000 queues stay near 3,000
// series; METRICS.md lists every series with its labels. /healthz fails
// (503, one reason a line) when a target's telemetry is older than
// HealthStaleIntervals intervals or no target has sent any.
package agent
