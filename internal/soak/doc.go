// Package soak holds the kill -9 soak of the closed loop: simswitch and
// the agent run as real processes on loopback and are killed with SIGKILL
// at random moments and restarted, again and again; at the end the audit
// log (the agent's side) and simswitch's set log (the switch's side) are
// checked for guardrail violations: a tuning change inside min-hold, a
// rollback to a setting the switch never had (in its current run), a
// lossless PG left below its headroom floor.
//
// The checks are in check.go; the soak itself is TestSoakKill9 (a short
// run in the normal test suite, ECNTUNE_SOAK=5m for a long one).
package soak
