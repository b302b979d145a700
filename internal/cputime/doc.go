// Package cputime reads the CPU time the process has used, so speed figures can give it beside wall time.
// Call Process before and after the work and subtract.
//
// The two differ when other processes compete for the cores. Process
// counts user and system time of every thread, the garbage collector
// included. It returns 0 when the time cannot be read, and always on
// platforms outside the unix build tag.
package cputime
