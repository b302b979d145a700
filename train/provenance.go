package train

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/ecntune/ecntune/models"
)

// Provenance is what the record of a trained model says beyond the run's
// configuration and result.
type Provenance struct {
	Name    string // the model's name (models.ValidName)
	Command string // the command line that runs the training again
	Build   string // the VCS revision of the binary (BuildRevision; "": unknown)
	Created time.Time
	// Parent is the registry model ("name@version") a fine-tuning run
	// started from, if any (models.Model.Parent).
	Parent string
	// Hyper and Eval add entries to the record's hyper-parameters and
	// evaluation (a fine-tuning run's twin and its frontier verdict);
	// they do not replace the run's own.
	Hyper map[string]string
	Eval  map[string]any
}

// Model assembles the registry record of a finished run: the network's
// weights, the spec versions, the algorithm, seed and workers, the
// hyper-parameters (Config.Hyper, with the command, the episode a resumed
// run started from, the episodes done and the build), the scenarios with
// their sha256, and the greedy evaluation (mean reward per scenario and
// its seed).
func (r *Result) Model(p Provenance) (models.Model, error) {
	weights, err := r.Net.MarshalBinary()
	if err != nil {
		return models.Model{}, err
	}
	hyper := r.Config.Hyper()
	hyper["command"] = p.Command
	if r.ResumedFrom > 0 {
		hyper["resumed_from_episode"] = strconv.Itoa(r.ResumedFrom)
	}
	hyper["episodes_done"] = strconv.Itoa(r.Episodes)
	if sel := r.Selected; sel != nil {
		hyper["selected"] = fmt.Sprintf("the network after round %d (episode %d), the best of %d judged: score %.4f", sel.Round, sel.Episodes, sel.Judged, sel.Score)
		if sel.Note != "" {
			hyper["selected"] += " (" + sel.Note + ")"
		}
	}
	if p.Build != "" {
		hyper["build"] = p.Build // the simulator's behaviour is part of what was learned
	}
	for k, v := range p.Hyper {
		if _, ok := hyper[k]; !ok {
			hyper[k] = v
		}
	}
	ev := map[string]any{"greedy_mean_reward": r.Eval, "eval_seed": EvalSeed}
	for k, v := range p.Eval {
		if _, ok := ev[k]; !ok {
			ev[k] = v
		}
	}
	evalJSON, err := json.Marshal(ev)
	if err != nil {
		return models.Model{}, err
	}
	m := models.Model{Name: p.Name, Algorithm: r.Config.Algo, ObsSpec: r.Config.ObsSpec(), ActSpec: r.Config.ActionSpec(),
		Hyper: hyper, Seed: int64(r.Config.Seed), Workers: r.Config.Workers, Eval: evalJSON, Created: p.Created, Weights: weights,
		Parent: p.Parent}
	for _, s := range r.Config.Scenarios {
		m.Scenarios = append(m.Scenarios, models.ScenarioRef{Name: s.Path, SHA256: s.SHA256})
	}
	return m, nil
}

// BuildRevision is the VCS revision the running binary was built from (""
// when unknown), with "+modified" for a dirty tree.
func BuildRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+modified"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}
