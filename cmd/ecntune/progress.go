package main

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows how far a long run is, with an estimate of the time
// left: a progress bar on a terminal, else a plain line every
// progressLogEvery (a log file, CI), so that no long run is silent. The
// time left is measured, on the bar as in the lines: the time spent so
// far over the work done since the estimate's start (begin), times the
// work left. (progressbar's own prediction is not used: it rates the
// first burst of work over the time since that burst, not since the
// start, and was 3x off for eval.)
type progress struct {
	w        io.Writer
	what     string
	unit     string
	total    int64
	start    time.Time
	base     int64 // work done when the estimate started (begin)
	lastLine time.Time
	bar      *progressbar.ProgressBar
	every    time.Duration
	now      func() time.Time
}

// progressTerminal tells whether progress goes to a terminal (a bar) or
// not (plain lines); tests replace it.
var progressTerminal = isTerminal

// newProgress starts the progress of total units (runs, µs, ...) of what.
func newProgress(w io.Writer, what, unit string, total int64) *progress {
	p := &progress{w: w, what: what, unit: unit, total: total, every: progressLogEvery, now: time.Now}
	p.start = p.now()
	p.lastLine = p.start
	if progressTerminal(w) {
		p.bar = newBar(w, total, what+" ("+unit+")")
	}
	return p
}

// newBar is the bar of total units: the count, the percentage and the
// description, which carries the measured time left.
func newBar(w io.Writer, total int64, desc string) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total, progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc), progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(false), progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
}

// begin starts the estimate now, at n units done: what came before (a
// start-up, work resumed from a checkpoint) does not count in the rate.
func (p *progress) begin(n int64) {
	if p == nil {
		return
	}
	p.start, p.base = p.now(), n
	p.set(n)
}

// set reports n units done.
func (p *progress) set(n int64) {
	if p == nil {
		return
	}
	now := p.now()
	if p.bar != nil {
		p.bar.Describe(p.what + " (" + p.unit + ")" + p.leftText(n, now))
		_ = p.bar.Set64(n)
		return
	}
	if now.Sub(p.lastLine) < p.every || n >= p.total {
		return
	}
	p.lastLine = now
	fmt.Fprintln(p.w, p.line(n, now))
}

// line is the plain progress line: done/total, elapsed, time left.
func (p *progress) line(n int64, now time.Time) string {
	el := now.Sub(p.start)
	return fmt.Sprintf("%s: %d/%d %s (%.0f%%), %s elapsed%s", p.what, n, p.total, p.unit,
		100*float64(n)/float64(max(p.total, 1)), el.Round(time.Second), p.leftText(n, now))
}

// leftText is ", about D left" once there is work done to measure, else "".
func (p *progress) leftText(n int64, now time.Time) string {
	if left, ok := timeLeft(now.Sub(p.start), n-p.base, p.total-n); ok {
		return ", about " + fmtLeft(left) + " left"
	}
	return ""
}

// timeLeft is the time the work left takes at the rate measured over
// the work done in elapsed: false while nothing is done or nothing is left.
func timeLeft(elapsed time.Duration, done, left int64) (time.Duration, bool) {
	if done <= 0 || left <= 0 || elapsed <= 0 {
		return 0, false
	}
	return time.Duration(float64(elapsed) * float64(left) / float64(done)), true
}

// fmtLeft rounds a time left to the second (to 0.1 s below 10 s).
func fmtLeft(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
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
	if el := p.now().Sub(p.start); el >= p.every {
		fmt.Fprintf(p.w, "%s: done in %s\n", p.what, el.Round(time.Second))
	}
}

// stop ends the bar where it stands, or says how far it got when it
// printed lines: an interrupted run is not "done".
func (p *progress) stop() {
	if p == nil {
		return
	}
	if p.bar != nil {
		_ = p.bar.Exit()
		fmt.Fprintln(p.w)
		return
	}
	if el := p.now().Sub(p.start); el >= p.every {
		fmt.Fprintf(p.w, "%s: interrupted after %s\n", p.what, el.Round(time.Second))
	}
}

// lazyProgress is the progress of a run that learns its total from its
// first report (eval, bench sim): the bar or lines start then, but the
// estimate counts from the run's start, when lazyProgress was made. (Made
// at the first report, the progress took the time before it for none and
// the first work done for free: eval's first simulation is most of its
// first minute.)
type lazyProgress struct {
	w          io.Writer
	what, unit string
	start      time.Time
	p          *progress
	now        func() time.Time
}

func newLazyProgress(w io.Writer, what, unit string) *lazyProgress {
	return &lazyProgress{w: w, what: what, unit: unit, start: time.Now(), now: time.Now}
}

// set reports done units of total.
func (l *lazyProgress) set(done, total int64) {
	if l.p == nil {
		l.p = newProgress(l.w, l.what, l.unit, total)
		l.p.now = l.now
		l.p.start, l.p.lastLine = l.start, l.start
	}
	l.p.total = total
	l.p.set(done)
}

// finish ends the progress, if it started.
func (l *lazyProgress) finish() { l.p.finish() }

// stop is progress.stop.
func (l *lazyProgress) stop() { l.p.stop() }
