// Package agent is the driver of the tuning loop: it runs a policy
// against live switches over gNMI, in shadow mode or closed loop. Open
// builds an agent from a configuration (config.Load); Run subscribes to
// every switch and runs a control interval each Config.Interval.
//
// One interval, as Tick runs it: take the newest observation of each
// queue (Ingest keeps them as telemetry arrives), ask the policy, hand both
// to the core (agent/core, pure: the guard, its memory, the hold rules,
// shadow verdicts and safety repairs) and do what its Ready says: record
// the recommendations, and in closed loop write each change ahead in the
// journal, set it, read it back and hand the outcome to the core. The
// edges are packages of their own: agent/gnmiclient (the gNMI transport;
// the codec is gnmipath), agent/journal (the bbolt audit log),
// agent/config, agent/metrics and agent/web (the HTTP endpoint, the
// dashboard and agent report).
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
// Metrics (agent/metrics): per-queue Prometheus series only for the
// metrics-queues most congested queues of each interval (default 20) and
// per-target aggregates for all, so that 10,000 queues stay near 3,000
// series; agent/metrics/METRICS.md lists every series with its labels.
// /healthz fails (503, one reason a line) when a target's telemetry is
// older than config.HealthStaleIntervals intervals or no target has sent
// any.
package agent
