package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// Off a terminal, progress is a plain line now and then with the time
// left, and a closing line once it printed any.
func TestProgressLines(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, "eval", "simulations", 40)
	p.every = 0
	p.start = time.Now().Add(-10 * time.Second)
	p.set(10)
	line := strings.TrimSpace(b.String())
	if !strings.HasPrefix(line, "eval: 10/40 simulations (25%), 10s elapsed, about 30s left") {
		t.Errorf("line %q", line)
	}
	p.set(40) // the end is not a progress line
	p.finish()
	if got := strings.Count(b.String(), "\n"); got != 2 || !strings.Contains(b.String(), "eval: done in 10s") {
		t.Errorf("output %q", b.String())
	}
	var nilp *progress
	nilp.set(1)
	nilp.finish()
}
