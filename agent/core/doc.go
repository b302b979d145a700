// Package core is the agent's decisions without its I/O, as etcd's raft is
// consensus without a network. Core.Tick takes one interval's observations
// and the policy's decisions and returns a Ready: the recommendations (each
// with the guard's verdict in shadow mode), the changes to write ahead and
// apply, rejections, alarms and frozen targets. The driver (package agent)
// does the I/O and hands the outcomes back: ReadBack judges a Set by what
// the switch reports after it, Settle says how each audit entry ends and
// which rollback the guard orders, Confirm and Reconcile judge what
// a restarted or rewritten switch runs. The Guard holds the rules
// (confidence gate and fallback, hold, step, bounds, XOFF and headroom
// invariants, probation and rollback, the stale-telemetry watchdog, another
// writer) and its memory of every queue (QueueMemory), which the journal
// keeps across restarts. No clock, no goroutine, no file, no network: time
// comes in as nanoseconds.
//
// One record follows a queue change from decision to audit: the Change the
// guard allows, carried by the Result of its Set and embedded in the
// AuditEntry that journals it.
package core
