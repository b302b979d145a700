package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows how far a long run is, with an estimate of the time
// left: a progress bar on a terminal, else a plain line every
// progressLogEvery (a log file, CI), so that no long run is silent.
type progress struct {
	w        io.Writer
	what     string
	unit     string
	total    int64
	start    time.Time
	lastLine time.Time
	bar      *progressbar.ProgressBar
	every    time.Duration
}

// newProgress starts the progress of total units (runs, µs, ...) of what.
func newProgress(w io.Writer, what, unit string, total int64) *progress {
	p := &progress{w: w, what: what, unit: unit, total: total, start: time.Now(), every: progressLogEvery}
	p.lastLine = p.start
	if isTerminal(w) {
		p.bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(what+" ("+unit+")"), progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	return p
}

// set reports n units done.
func (p *progress) set(n int64) {
	if p == nil {
		return
	}
	if p.bar != nil {
		_ = p.bar.Set64(n)
		return
	}
	now := time.Now()
	if now.Sub(p.lastLine) < p.every || n >= p.total {
		return
	}
	p.lastLine = now
	fmt.Fprintln(p.w, p.line(n, now))
}

// line is the plain progress line: done/total, elapsed, time left.
func (p *progress) line(n int64, now time.Time) string {
	el := now.Sub(p.start)
	s := fmt.Sprintf("%s: %d/%d %s (%.0f%%), %s elapsed", p.what, n, p.total, p.unit, 100*float64(n)/float64(max(p.total, 1)), el.Round(time.Second))
	if n > 0 && n < p.total {
		left := time.Duration(float64(el) * float64(p.total-n) / float64(n))
		s += fmt.Sprintf(", about %s left", left.Round(time.Second))
	}
	return s
}

// finish ends the bar, or says how long it took when it ran long enough
// to have printed lines.
func (p *progress) finish() {
	if p == nil {
		return
	}
	if p.bar != nil {
		_ = p.bar.Finish()
		return
	}
	if el := time.Since(p.start); el >= p.every {
		fmt.Fprintf(p.w, "%s: done in %s\n", p.what, el.Round(time.Second))
	}
}

// progressOverTime shows the progress of a run that has no count of its
// own but is expected to take about expected of wall time (bench agent:
// its warm-up and measured intervals): the time left is that estimate
// less the time spent. stop ends it.
func progressOverTime(w io.Writer, what string, expected time.Duration) (stop func()) {
	return progressOverTimeEvery(w, what, expected, progressLogEvery, time.Second)
}

// progressOverTimeEvery is progressOverTime with a plain line every
// `every` and the progress updated every tick.
func progressOverTimeEvery(w io.Writer, what string, expected, every, tick time.Duration) (stop func()) {
	secs := max(int64(expected/time.Second), 1)
	p := newProgress(w, what, "s of about "+fmt.Sprint(secs), secs)
	p.every = every
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				// Never done by the clock alone: the run says when it ends.
				p.set(min(int64(now.Sub(p.start)/time.Second), secs-1))
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			p.finish()
		})
	}
}
