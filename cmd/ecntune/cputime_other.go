//go:build !unix

package main

import "time"

// processCPUTime is not available here: the CPU figures read 0.
func processCPUTime() time.Duration { return 0 }
