//go:build unix

package rl

import "syscall"

// processCPUNanos is the user+system CPU time of the test process, so that
// benchmarks can report CPU per operation next to wall time (the two
// differ when other processes compete for the cores).
func processCPUNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
