package main

import (
	"bytes"
	"strings"
	"sync"
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

// A run measured by the clock prints plain lines off a terminal while it
// runs, never claims to be done before it stops, and stops once.
func TestProgressOverTime(t *testing.T) {
	var b syncBuffer
	stop := progressOverTimeEvery(&b, "bench agent", 3*time.Second, 0, time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(b.String(), "bench agent: ") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	stop()
	out := b.String()
	if !strings.Contains(out, "bench agent: 0/3 s of about 3") {
		t.Errorf("no progress line in %q", out)
	}
	if strings.Contains(out, "3/3") {
		t.Errorf("done by the clock: %q", out)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
