//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPUTime is the CPU time (user + system) this process has used,
// every thread and the garbage collector included.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
