//go:build race

package simswitch

// raceEnabled: the race detector slows decoding and the simulation several
// times over, so the tests that judge pace skip under it.
const raceEnabled = true
