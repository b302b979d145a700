package main

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/ecntune/ecntune/train"
)

// trainProgress shows a run's progress on stderr: a progress bar on a
// terminal, else a plain line now and then (a log file, CI), both with the
// time left. The bar counts episodes (--episodes), or seconds of the
// wall-clock budget (--budget alone). The time left is the episodes left
// at the rate measured since this process started (episodes resumed from
// a checkpoint do not count), or the budget left, whichever is shorter.
type trainProgress struct {
	w          io.Writer
	name, algo string
	total      int           // episodes, 0 under a budget alone
	budget     time.Duration // 0: none
	bar        *progressbar.ProgressBar
	lastEval   string
	lastLine   time.Time
	start      time.Time
	base       int // episodes done when this process started (resumed)
	now        func() time.Time
}

func newTrainProgress(w io.Writer, name, algo string, episodes int, budget time.Duration) *trainProgress {
	p := &trainProgress{w: w, name: name, algo: algo, total: episodes, budget: budget, lastEval: "-", now: time.Now}
	p.start = p.now()
	p.lastLine = p.start
	if progressTerminal(w) {
		total := int64(episodes)
		if total == 0 {
			total = max(int64(budget/time.Second), 1)
		}
		p.bar = newBar(w, total, "training "+name)
	}
	return p
}

// resumed tells the progress that the run resumed with episodes done.
func (p *trainProgress) resumed(episodes int) {
	p.base = episodes
	if p.bar != nil && p.total > 0 {
		_ = p.bar.Set(episodes)
	}
}

// left is the time left after episodes done, and whether it is known.
func (p *trainProgress) left(episodes int, now time.Time) (time.Duration, bool) {
	el := now.Sub(p.start)
	left, ok := timeLeft(el, int64(episodes-p.base), int64(p.total-episodes))
	if p.total <= 0 {
		ok = false
	}
	if p.budget > 0 && (!ok || p.budget-el < left) {
		left, ok = max(p.budget-el, 0), true
	}
	return left, ok
}

// round is the train.Hooks.Progress hook.
func (p *trainProgress) round(r train.Round, _ int) {
	if r.Evaluated {
		p.lastEval = fmt.Sprintf("%.3f", r.EvalScore)
	}
	now := p.now()
	el := now.Sub(p.start)
	when := ", " + el.Round(time.Second).String() + " elapsed"
	if p.budget > 0 {
		when = fmt.Sprintf(", %s of %s", el.Round(time.Second), p.budget)
	}
	if left, ok := p.left(r.Episodes, now); ok {
		when += ", about " + fmtLeft(left) + " left"
	}
	status := progressStatus(p.algo, r, p.lastEval)
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("training %s: %s%s, %s", p.name, progressCount(r.Episodes, p.total), when, status))
		if p.total > 0 {
			_ = p.bar.Set(r.Episodes)
		} else {
			_ = p.bar.Set64(min(int64(el/time.Second), int64(p.budget/time.Second)))
		}
		return
	}
	if now.Sub(p.lastLine) >= progressLogEvery {
		p.lastLine = now
		fmt.Fprintf(p.w, "training %s: %s%s, %s\n", p.name, progressCount(r.Episodes, p.total), when, status)
	}
}

func (p *trainProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
