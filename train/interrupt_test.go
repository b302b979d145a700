package train

import (
	"errors"
	"testing"
)

// An interrupt before the first checkpoint is due (CheckpointEvery 10,
// interrupted after round 1) still leaves a checkpoint of that round, the
// run ends with ErrInterrupted, and the run started again says at once
// that it resumes, and ends with the weights of an uninterrupted run.
func TestInterruptCheckpointsAndResumes(t *testing.T) {
	cfg := tinyConfig(AlgoDDQN)
	cfg.CheckpointEvery = 10
	whole, err := Run(cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	reg := openReg(t)
	res, err := Run(cfg, Hooks{Store: reg, Run: "tiny", Interrupted: func() bool { return true }})
	if !errors.Is(err, ErrInterrupted) || res == nil || res.Episodes != 2 {
		t.Fatalf("interrupted run: err %v, result %+v: want ErrInterrupted after 2 episodes", err, res)
	}
	cp, err := reg.LoadCheckpoint("tiny")
	if err != nil || cp.Step != 2 {
		t.Fatalf("checkpoint after the interrupt: step %d, err %v: want episode 2", cp.Step, err)
	}
	var resumedEps, resumedRound int
	res, err = Run(cfg, Hooks{Store: reg, Run: "tiny", Resumed: func(e, r int) { resumedEps, resumedRound = e, r }})
	if err != nil {
		t.Fatal(err)
	}
	if resumedEps != 2 || resumedRound != 1 {
		t.Fatalf("Resumed told episodes %d round %d, want 2 and 1", resumedEps, resumedRound)
	}
	if !res.Net.Equal(whole.Net) {
		t.Fatal("the resumed run ended with other weights than the uninterrupted one")
	}
}
