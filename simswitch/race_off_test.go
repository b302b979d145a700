//go:build !race

package simswitch

const raceEnabled = false
