package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/train"
)

// Ctrl-C during train: the run stops after its round with a checkpoint,
// although the first one was due only after 10 rounds; it says where it
// stopped and how to resume; models list shows the unfinished run; the
// run started again says at its start that it resumes.
func TestTrainInterruptAndResume(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(sc, []byte(tinyTrainScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "reg.db")
	args := []string{"--scenario", sc, "--episodes", "40", "--workers", "2", "--seed", "5", "--checkpoint-every", "10",
		"--name", "tiny", "--db", db, "--out", filepath.Join(dir, "curves"), "--hidden", "8"}
	old := trainSignals
	t.Cleanup(func() { trainSignals = old })
	trainSignals = func(ch chan<- os.Signal) func() {
		ch <- os.Interrupt // Ctrl-C during the first round
		return func() {}
	}
	_, stderr, err := runTrainCmd(t, args...)
	if err == nil || !strings.Contains(err.Error(), "training run tiny interrupted after episode 2 of 40 (round 1); its checkpoint is in "+db) ||
		!strings.Contains(err.Error(), "Resume with the same command:\n  ecntune train --scenario") {
		t.Fatalf("interrupted train: %v", err)
	}
	if !strings.Contains(stderr, "interrupt: run tiny stops after this round and saves a checkpoint") {
		t.Fatalf("stderr:\n%s", stderr)
	}
	out, _, err := runModels(t, nil, "list", "--db", db)
	if err != nil || !strings.Contains(out, "tiny  stopped, resumable  2 ") {
		t.Fatalf("models list after the interrupt:\n%s%v", out, err)
	}
	trainSignals = func(chan<- os.Signal) func() { return func() {} }
	stdout, stderr, err := runTrainCmd(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stderr, "resuming run tiny from its checkpoint in "+db+": 2 episodes (1 rounds) done before\n") ||
		!strings.Contains(stdout, "stored tiny@1 (ddqn, 40 episodes") {
		t.Fatalf("resumed run:\nstdout %s\nstderr %s", stdout, stderr)
	}
}

// runTrainCmd runs ecntune train and returns its stdout and stderr.
func runTrainCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	c := newTrainCmd()
	var out, errOut bytes.Buffer
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(&errOut)
	c.SilenceUsage, c.SilenceErrors = true, true
	err := c.Execute()
	return out.String(), errOut.String(), err
}

// On a terminal, train under --budget shows a bar with the time left; off
// one, its lines give the time left too: the budget's, or the episodes' at
// the rate measured since start (not counting resumed episodes), whichever
// is shorter.
func TestTrainProgressTimeLeft(t *testing.T) {
	old := progressTerminal
	t.Cleanup(func() { progressTerminal = old })
	progressTerminal = func(io.Writer) bool { return true }
	var b bytes.Buffer
	p := newTrainProgress(&b, "mine", train.AlgoDDQN, 0, time.Minute)
	now := p.start
	p.now = func() time.Time { return now }
	now = now.Add(15 * time.Second)
	p.round(train.Round{Round: 5, Episodes: 10}, 0)
	if s := b.String(); !strings.Contains(s, "training mine: episode 10, 15s of 1m0s, about 45s left") {
		t.Fatalf("bar under a budget: %q", s)
	}
	progressTerminal = func(io.Writer) bool { return false }
	b.Reset()
	p = newTrainProgress(&b, "mine", train.AlgoDDQN, 100, 0)
	p.resumed(40)
	start := p.start
	p.now = func() time.Time { return start.Add(20 * time.Second) }
	p.round(train.Round{Round: 25, Episodes: 50}, 100)
	if s := b.String(); !strings.Contains(s, "training mine: episode 50/100 (50%), 20s elapsed, about 1m40s left") {
		t.Fatalf("line: %q", s)
	}
}

// Once training is over (train --twin's evaluation), a Ctrl-C says what it
// stops then, not that the run saves a checkpoint after its round.
func TestInterruptAfterTraining(t *testing.T) {
	old := trainSignals
	t.Cleanup(func() { trainSignals = old })
	var sig chan<- os.Signal
	trainSignals = func(ch chan<- os.Signal) func() { sig = ch; return func() {} }
	var w syncBuffer
	intr := watchInterrupt(&w, "lab")
	intr.trainingOver("training is over: the evaluation on the twin stops")
	sig <- os.Interrupt
	for i := 0; i < 100 && !strings.Contains(w.String(), "interrupt:"); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	intr.stop()
	if got := w.String(); !strings.Contains(got, "interrupt: training is over: the evaluation on the twin stops (Ctrl-C again to quit at once)") ||
		strings.Contains(got, "saves a checkpoint") || !intr.interrupted() {
		t.Fatalf("said %q", got)
	}
}
