package train

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/train/rl"
)

// TestResultModel: the record of a run carries its weights, its
// configuration's hyper-parameters and provenance, and its evaluation.
func TestResultModel(t *testing.T) {
	cfg := tinyConfig(AlgoPPO).withDefaults()
	cfg.Scenarios[0].SHA256 = strings.Repeat("ab", 32)
	net, err := rl.NewNet(rl.Arch{In: env.NumFeatures, Hidden: []int{16}, Out: env.DefaultCatalogue().Outputs(), Act: rl.ReLU})
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{Config: cfg, Net: net, Episodes: 8, ResumedFrom: 4, Eval: map[string]float64{"a": 0.5, "b": -0.25}}
	created := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	m, err := res.Model(Provenance{Name: "tiny", Command: "ecntune train --scenario a.yaml", Build: "abc123", Created: created})
	if err != nil {
		t.Fatal(err)
	}
	back, err := rl.UnmarshalNet(m.Weights)
	if err != nil || back.Arch().Hidden[0] != 16 {
		t.Fatalf("weights: %v", err)
	}
	if m.Name != "tiny" || m.Algorithm != AlgoPPO || m.ObsSpec != env.SpecVersion || m.ActSpec != env.ActionSpecVersion ||
		m.Seed != 3 || m.Workers != 2 || !m.Created.Equal(created) {
		t.Fatalf("model %+v", m)
	}
	for k, v := range cfg.Hyper() {
		if m.Hyper[k] != v {
			t.Errorf("hyper %s = %q, want the configuration's %q", k, m.Hyper[k], v)
		}
	}
	if m.Hyper["command"] != "ecntune train --scenario a.yaml" || m.Hyper["resumed_from_episode"] != "4" ||
		m.Hyper["episodes_done"] != "8" || m.Hyper["build"] != "abc123" {
		t.Fatalf("provenance in hyper %v", m.Hyper)
	}
	if len(m.Scenarios) != 2 || m.Scenarios[0].Name != "a.yaml" || m.Scenarios[0].SHA256 != cfg.Scenarios[0].SHA256 {
		t.Fatalf("scenarios %+v", m.Scenarios)
	}
	var ev struct {
		Greedy map[string]float64 `json:"greedy_mean_reward"`
		Seed   int                `json:"eval_seed"`
	}
	if err := json.Unmarshal(m.Eval, &ev); err != nil || ev.Greedy["b"] != -0.25 || ev.Seed != EvalSeed {
		t.Fatalf("eval %s (%v)", m.Eval, err)
	}

	// A fresh run records no resumption, an unknown build no build.
	res.ResumedFrom = 0
	if m, err = res.Model(Provenance{Name: "tiny"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Hyper["resumed_from_episode"]; ok {
		t.Error("a fresh run records a resumption")
	}
	if _, ok := m.Hyper["build"]; ok {
		t.Error("an unknown build is recorded")
	}
}
