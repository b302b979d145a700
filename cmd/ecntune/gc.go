package main

import (
	"os"
	"runtime/debug"
)

// agentGCPercent is the garbage collector's target for the long-running
// agent: its live heap is small (about 14 MB per 1,000 queues), and
// letting it grow to three times that before collecting halves the CPU
// the collector takes (bench agent). GOGC, when set, wins.
const agentGCPercent = 200

// tuneGCForAgent applies agentGCPercent unless GOGC is set.
func tuneGCForAgent() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(agentGCPercent)
	}
}
