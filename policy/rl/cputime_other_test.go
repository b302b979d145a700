//go:build !unix

package rl

func processCPUNanos() int64 { return 0 }
