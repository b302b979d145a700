//go:build unix

package cputime

import "testing"

func TestProcessGrows(t *testing.T) {
	a := Process()
	x := 0
	for i := range 50_000_000 {
		x ^= i
	}
	if b := Process(); a <= 0 || b <= a || x == 1 {
		t.Fatalf("cpu time %v then %v after a busy loop, want positive and growing", a, b)
	}
}
