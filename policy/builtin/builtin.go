package builtin

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"
	"time"

	"github.com/ecntune/ecntune/models"
)

// TrainCommand is the exact command line that produced the embedded model.
// On today's build the same recipe needs --spec obs-v3/act-v2 --randomise
// '{"random_pfc":0}' (the defaults now train obs-v4/act-v3 models and
// start episodes at random PFC settings), and gives other weights, since
// the simulator and the inference arithmetic have changed (MODEL.md,
// "Reproducing it").
const TrainCommand = "ecntune train --scenario policy/builtin/scenarios/train-websearch.yaml " +
	"--scenario policy/builtin/scenarios/train-incast.yaml --scenario policy/builtin/scenarios/train-mixed.yaml " +
	"--scenario policy/builtin/scenarios/train-leafspine.yaml --scenario policy/builtin/scenarios/train-leafspine4.yaml " +
	"--algo ppo --episodes 1200 --workers 2 --seed 11 --name builtin --db builtin-train.db " +
	`--reward '{"delay":0.12,"tail_delay":0.02,"fabric_throughput":0}' --gamma 0.5`

// The decision intervals the embedded model was validated for, in the
// switch's own time (the span of the counters a decision reads): held-out
// evaluations at 500 µs, 10 ms and 50 ms and a 20 s run deciding every 1 s
// (interval-eval.txt). A learned policy holds every queue outside them.
const (
	ValidatedIntervalMin = 200 * time.Microsecond
	ValidatedIntervalMax = time.Second
)

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
