package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/train"
)

// trainSignals delivers Ctrl-C and SIGTERM to a training run; tests
// replace it.
var trainSignals = func(ch chan<- os.Signal) (stop func()) {
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	return func() { signal.Stop(ch) }
}

// trainExit ends the process on a second Ctrl-C; tests replace it.
var trainExit = os.Exit

// trainInterrupt watches for Ctrl-C during training. The first one asks
// the run to stop after its round, with a checkpoint (train.Hooks.
// Interrupted); a second one quits at once, keeping the last checkpoint.
type trainInterrupt struct {
	flag atomic.Bool
	// after is what a first Ctrl-C says once training is over (the
	// evaluation of train --twin), nil during training
	after atomic.Pointer[string]
	done  chan struct{}
	wg    sync.WaitGroup
	end   func()
}

func watchInterrupt(w io.Writer, run string) *trainInterrupt {
	t := &trainInterrupt{done: make(chan struct{})}
	ch := make(chan os.Signal, 2)
	t.end = trainSignals(ch)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		for {
			select {
			case <-t.done:
				return
			case <-ch:
				if t.flag.Swap(true) {
					fmt.Fprintf(w, "\ninterrupted again: run %s quits now; it resumes from its last checkpoint\n", run)
					trainExit(130)
					return
				}
				if a := t.after.Load(); a != nil {
					fmt.Fprintf(w, "\ninterrupt: %s (Ctrl-C again to quit at once)\n", *a)
					continue
				}
				fmt.Fprintf(w, "\ninterrupt: run %s stops after this round and saves a checkpoint (Ctrl-C again to quit at once)\n", run)
			}
		}
	}()
	return t
}

// trainingOver makes a first Ctrl-C say msg instead of the training's
// "stops after this round and saves a checkpoint".
func (t *trainInterrupt) trainingOver(msg string) { t.after.Store(&msg) }

// interrupted is the train.Hooks.Interrupted hook.
func (t *trainInterrupt) interrupted() bool { return t.flag.Load() }

// stop ends the watch (the signals go back to their default).
func (t *trainInterrupt) stop() {
	t.end()
	close(t.done)
	t.wg.Wait()
}

// interruptedError says where an interrupted run stopped, where its
// checkpoint is and how to resume it.
func interruptedError(o trainOpts, res *train.Result) error {
	round := 0
	if n := len(res.Curve); n > 0 {
		round = res.Curve[n-1].Round
	}
	total := ""
	if o.episodes > 0 {
		total = fmt.Sprintf(" of %d", o.episodes)
	}
	return fmt.Errorf("training run %s interrupted after episode %d%s (round %d); its checkpoint is in %s (ecntune models list --db %s shows it). "+
		"Resume with the same command:\n  %s", o.name, res.Episodes, total, round, o.db, o.db, o.command())
}

// compactRegistry gives back the space of replaced and deleted checkpoints
// when it is most of the file (models.Space.Wasteful), saying so; a
// failure is a warning (the model and checkpoint are stored).
func compactRegistry(w io.Writer, db string) {
	before, after, err := models.Compact(db, models.Options{Timeout: trainLockTimeout}, models.Space.Wasteful)
	switch {
	case err != nil:
		fmt.Fprintf(w, "warning: %s not compacted: %v (ecntune models compact --db %s)\n", db, err, db)
	case after.File < before.File:
		fmt.Fprintf(w, "compacted %s from %s to %s (space of replaced checkpoints)\n", db,
			units.FormatBytes(before.File), units.FormatBytes(after.File))
	}
}
