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
// the simulator and the inference arithmetic have changed (docs/model/LAB-NOTES.md,
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

// PreferenceTrainCommand is the exact command line that produced the
// embedded preference model (PreferenceModel), on this build: the same
// scenarios, episodes and gamma as TrainCommand, with the ground-truth
// reward terms and the preference as an input (--preference-scale).
const PreferenceTrainCommand = "ecntune train --scenario policy/builtin/scenarios/train-websearch.yaml " +
	"--scenario policy/builtin/scenarios/train-incast.yaml --scenario policy/builtin/scenarios/train-mixed.yaml " +
	"--scenario policy/builtin/scenarios/train-leafspine.yaml --scenario policy/builtin/scenarios/train-leafspine4.yaml " +
	"--algo ppo --episodes 1200 --workers 2 --seed 12 --name builtin-preference --db builtin-train.db " +
	`--randomise '{"random_pfc":0}' ` +
	`--reward '{"delay":0.12,"tail_delay":0.02,"fabric_throughput":0,"flow_small":0.1,"flow_large":0.1}' ` +
	"--gamma 0.5 --spec obs-v3/act-v2 --preference-scale 2"

//go:embed builtin.ecnmodel
var file []byte

//go:embed preference.ecnmodel
var prefFile []byte

// embedded is a model export in the binary, decoded and verified once.
type embedded struct {
	name  string
	file  []byte
	once  sync.Once
	model models.Model
	err   error
}

var (
	base = &embedded{name: "builtin model", file: file}
	pref = &embedded{name: "builtin preference model", file: prefFile}
)

func (e *embedded) get() (models.Model, error) {
	e.once.Do(func() {
		e.model, e.err = models.ReadExport(bytes.NewReader(e.file))
		if e.err != nil {
			e.err = fmt.Errorf("%s: %w", e.name, e.err)
		}
	})
	if e.err != nil {
		return models.Model{}, e.err
	}
	m := e.model
	m.Weights = bytes.Clone(e.model.Weights)
	return m, nil
}

// Model decodes and verifies the embedded model export (once).
func Model() (models.Model, error) { return base.get() }

// PreferenceModel decodes and verifies the embedded preference model
// (once): a model trained across operator preferences that reads the
// preference as an input (models.HyperPreferenceScale). The policy
// builtin:prefer=P, P != 0, runs it; builtin alone runs Model.
func PreferenceModel() (models.Model, error) { return pref.get() }
