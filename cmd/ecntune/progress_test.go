package main

import (
	"bytes"
	"io"
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
	nilp.stop()
	// an interrupted run is not "done"
	b.Reset()
	p = newProgress(&b, "twin eval", "simulations", 40)
	p.every = 0
	p.start = time.Now().Add(-10 * time.Second)
	p.set(10)
	p.stop()
	if !strings.Contains(b.String(), "twin eval: interrupted after 10s") || strings.Contains(b.String(), "done") {
		t.Errorf("interrupted: %q", b.String())
	}
}

// On a terminal the bar gives the time left measured over the work done
// since the start: 3 of 24 simulations in 16 s leave about 1m52s, not
// what progressbar's own prediction makes of the first burst (it rates
// the work since its first update, not since the start: 3x off in eval).
func TestProgressBarTimeLeftIsMeasured(t *testing.T) {
	old := progressTerminal
	t.Cleanup(func() { progressTerminal = old })
	progressTerminal = func(io.Writer) bool { return true }
	var b bytes.Buffer
	p := newProgress(&b, "eval", "simulations", 24)
	now := p.start
	p.now = func() time.Time { return now }
	now = now.Add(16 * time.Second)
	p.set(3)
	if s := b.String(); !strings.Contains(s, "eval (simulations), about 1m52s left") {
		t.Fatalf("bar: %q", s)
	}
}

// bench agent counts its intervals from the agent's start: the switches'
// start-up is not in the rate.
func TestBenchAgentProgressFromTheAgentsStart(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, "bench agent", "intervals", 13)
	p.every = 0
	now := p.start
	p.now = func() time.Time { return now }
	hook := benchAgentProgress(p)
	now = now.Add(10 * time.Second) // 100 switches started
	hook(0, 13)
	now = now.Add(5 * time.Second)
	hook(5, 13)
	if s := b.String(); !strings.Contains(s, "bench agent: 5/13 intervals (38%), 5s elapsed, about 8s left") {
		t.Fatalf("lines: %q", s)
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

// eval learns its total from its first finished simulation: the estimate
// still counts from the run's start, so 2 of 24 simulations done 20 s
// after it leave about 3m40s, not nothing measured at 0 s.
func TestLazyProgressCountsFromTheStart(t *testing.T) {
	var b bytes.Buffer
	l := newLazyProgress(&b, "eval", "simulations")
	now := l.start.Add(20 * time.Second)
	l.now = func() time.Time { return now }
	l.set(2, 24)
	if s := b.String(); !strings.Contains(s, "eval: 2/24 simulations (8%), 20s elapsed, about 3m40s left") {
		t.Fatalf("line: %q", s)
	}
	l.finish()
	if !strings.Contains(b.String(), "eval: done in 20s") {
		t.Fatalf("end: %q", b.String())
	}
	(&lazyProgress{}).finish() // never started
}
