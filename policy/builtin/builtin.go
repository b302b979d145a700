// Package builtin holds ecntune's pretrained default policy, embedded in
// the binary so that "builtin" works without a model registry.
//
// The model file builtin.ecnmodel is a model export (see models.WriteExport)
// carrying the weights and their full provenance. It is reproduced by the
// command in TrainCommand, run from the repository root, followed by
//
//	ecntune models export builtin --db builtin-train.db -o policy/builtin/builtin.ecnmodel
//
// Training is deterministic for a given --seed and --workers: the same
// command gives the same weights (see TestTrainCommandMatchesProvenance,
// which checks the embedded provenance against this command and the
// scenario files' sha256).
//
// The training scenarios live in policy/builtin/scenarios/; the held-out
// scenarios used to judge the model (scenarios/heldout/) were never seen in
// training.
package builtin

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/ecntune/ecntune/models"
)

// TrainCommand is the exact command line that produced the embedded model.
const TrainCommand = "ecntune train --scenario policy/builtin/scenarios/train-websearch.yaml " +
	"--scenario policy/builtin/scenarios/train-incast.yaml --scenario policy/builtin/scenarios/train-mixed.yaml " +
	"--algo ppo --episodes 800 --workers 2 --seed 7 --name builtin --db builtin-train.db " +
	`--reward '{"delay":0.12,"tail_delay":0.02}' --gamma 0.5`

//go:embed builtin.ecnmodel
var file []byte

var (
	once  sync.Once
	model models.Model
	err   error
)

// Model decodes and verifies the embedded model export (once).
func Model() (models.Model, error) {
	once.Do(func() {
		model, err = models.ReadExport(bytes.NewReader(file))
		if err != nil {
			err = fmt.Errorf("builtin model: %w", err)
		}
	})
	if err != nil {
		return models.Model{}, err
	}
	m := model
	m.Weights = bytes.Clone(model.Weights)
	return m, nil
}
