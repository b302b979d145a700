package train

import (
	"errors"
	"math"
	"testing"

	"github.com/ecntune/ecntune/train/rl"
)

// TestSelectKeepsTheBestSnapshot: with Hooks.Select the run ends with the
// network it judged best (here the one after round 2 of 4, by a score
// that is lowest there), not its last one; the provenance says which; a
// run interrupted after round 3 and resumed chooses among all four rounds'
// snapshots, the one of round 2 included, kept in the checkpoint.
func TestSelectKeepsTheBestSnapshot(t *testing.T) {
	cfg := tinyConfig(AlgoPPO)
	snaps := map[int]*rl.Net{}
	score := func(r Round, net *rl.Net) (float64, string, error) {
		snaps[r.Round] = net.Clone()
		return math.Abs(float64(r.Round) - 2), "distance from round 2", nil
	}
	plain, err := Run(cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(cfg, Hooks{Select: score, SelectEvery: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 4 || res.Selected == nil || res.Selected.Round != 2 || res.Selected.Episodes != 4 || res.Selected.Judged != 4 {
		t.Fatalf("judged rounds %d, selected %+v: want round 2 (episode 4) of 4", len(snaps), res.Selected)
	}
	if !res.Net.Equal(snaps[2]) || res.Net.Equal(plain.Net) {
		t.Fatal("the run did not end with the snapshot of round 2")
	}
	m, err := res.Model(Provenance{Name: "sel"})
	if err != nil || m.Hyper["selected"] != "the network after round 2 (episode 4), the best of 4 judged: score 0.0000 (distance from round 2)" {
		t.Fatalf("provenance: %q (%v)", m.Hyper["selected"], err)
	}

	reg := openReg(t)
	rounds := 0
	_, err = Run(cfg, Hooks{Store: reg, Run: "sel", Select: score, SelectEvery: 1,
		Interrupted: func() bool { rounds++; return rounds == 3 }})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted run: %v", err)
	}
	again, err := Run(cfg, Hooks{Store: reg, Run: "sel", Select: score, SelectEvery: 1})
	if err != nil {
		t.Fatal(err)
	}
	if again.Selected == nil || again.Selected.Round != 2 || again.Selected.Judged != 4 || !again.Net.Equal(res.Net) {
		t.Fatalf("resumed run selected %+v: want round 2 of 4 judged, the same network", again.Selected)
	}

	// Resumed on another basis (other validation scenarios), the kept
	// choice does not count: only rounds judged on the new basis do.
	reg2 := openReg(t)
	rounds = 0
	_, err = Run(cfg, Hooks{Store: reg2, Run: "sel", Select: score, SelectEvery: 1, SelectBasis: "val-a",
		Interrupted: func() bool { rounds++; return rounds == 3 }})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted run: %v", err)
	}
	other, err := Run(cfg, Hooks{Store: reg2, Run: "sel", Select: score, SelectEvery: 1, SelectBasis: "val-b"})
	if err != nil {
		t.Fatal(err)
	}
	if other.Selected == nil || other.Selected.Round != 4 || other.Selected.Judged != 1 || other.Selected.Basis != "val-b" {
		t.Fatalf("resumed on another basis: selected %+v, want round 4, the one judged on it", other.Selected)
	}

	// A judge that fails stops the run and says where.
	_, err = Run(cfg, Hooks{Select: func(Round, *rl.Net) (float64, string, error) { return 0, "", errors.New("no scenario") }})
	if err == nil || err.Error() != "train: judging the network after round 1: no scenario" {
		t.Fatalf("failing judge: %v", err)
	}
}

// TestSelectJudgesTheStart: a run from a model's weights judges them
// before it learns, and keeps them when no snapshot judged after scores
// better.
func TestSelectJudgesTheStart(t *testing.T) {
	cfg := tinyConfig(AlgoPPO)
	start, err := Run(cfg, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Init, cfg.InitName, cfg.CriticWarmUp = start.Net, "start", 1
	rounds := []int{}
	res, err := Run(cfg, Hooks{SelectEvery: 1, Select: func(r Round, _ *rl.Net) (float64, string, error) {
		rounds = append(rounds, r.Round)
		return float64(r.Round), "", nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rounds) != 5 || rounds[0] != 0 || res.Selected.Round != 0 || res.Selected.Judged != 5 || !res.Net.Equal(start.Net) {
		t.Fatalf("judged rounds %v, selected %+v: want the start (round 0) of 5", rounds, res.Selected)
	}
}

// TestSelectJudgesTheLastUnderABudget: a run stopped by Hooks.Stop (the
// CLI's --budget) judges the network it ends with, whatever SelectEvery.
func TestSelectJudgesTheLastUnderABudget(t *testing.T) {
	cfg := tinyConfig(AlgoPPO)
	cfg.Episodes = 0 // until stopped
	var judged []int
	res, err := Run(cfg, Hooks{SelectEvery: 100, Stop: func(r Round) bool { return r.Round == 3 },
		Select: func(r Round, _ *rl.Net) (float64, string, error) {
			judged = append(judged, r.Round)
			return 1, "", nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(judged) != 1 || judged[0] != 3 || res.Selected == nil || res.Selected.Round != 3 {
		t.Fatalf("judged rounds %v, selected %+v: want the last, round 3", judged, res.Selected)
	}
}
