package builtin

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/train/rl"
)

// The embedded models say how they were made: the command in
// TrainCommand (PreferenceTrainCommand), on the training scenarios as they
// are in this tree (same sha256), none of them held out.
func TestTrainCommandMatchesProvenance(t *testing.T) {
	for _, c := range []struct {
		load    func() (models.Model, error)
		command string
		name    string
		seed    int64
		pref    string // the preference_scale hyper-parameter, "" for none
	}{
		{Model, TrainCommand, "builtin", 11, ""},
		{PreferenceModel, PreferenceTrainCommand, "builtin-preference", 12, "2"},
		{HighRateModel, HighRateTrainCommand, "builtin-400g", 12, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := c.load()
			if err != nil {
				t.Fatal(err)
			}
			checkProvenance(t, m, c.command)
			if m.Name != c.name || m.Algorithm != "ppo" || m.Seed != c.seed || m.Workers != 2 {
				t.Fatalf("provenance name %s algo %s seed %d workers %d, want %s ppo %d 2", m.Name, m.Algorithm, m.Seed, m.Workers, c.name, c.seed)
			}
			net, err := rl.UnmarshalNet(m.Weights)
			if err != nil {
				t.Fatal(err)
			}
			if m.Hyper[models.HyperPreferenceScale] != c.pref {
				t.Fatalf("preference_scale %q, want %q", m.Hyper[models.HyperPreferenceScale], c.pref)
			}
			wantIn, wantOut := env.ObsSpecFeatures(m.ObsSpec), env.ActionSpecLen(m.ActSpec)
			if c.pref != "" {
				wantIn++ // the preference
			}
			if net.InDim() != wantIn || net.OutDim() != wantOut || net.Kind != rl.OutputLogits {
				t.Fatalf("network %d→%d %s, want %d→%d logits (%s, %s)", net.InDim(), net.OutDim(), net.Kind, wantIn, wantOut, m.ObsSpec, m.ActSpec)
			}
		})
	}
	if n := len(file) + len(prefFile) + len(highFile); n > 256<<10 {
		t.Fatalf("embedded models are %d bytes, keep them small (< 256 KiB)", n)
	}
}

// checkProvenance checks that m was trained by command, on the scenario
// files of this tree, none held out, and speaks specs this build reads.
func checkProvenance(t *testing.T, m models.Model, command string) {
	t.Helper()
	if err := models.CheckSpecIn(m, env.ReadableObsSpecs, env.ReadableActionSpecs); err != nil {
		t.Fatal(err)
	}
	if got := m.Hyper["command"]; got != command {
		t.Fatalf("embedded model was trained by\n %q\nthe package says\n %q", got, command)
	}
	var want []string // the training scenarios (not --select-on's validation ones)
	fields := strings.Fields(command)
	for i, f := range fields[1:] {
		if fields[i] == "--scenario" {
			want = append(want, f)
		}
		if strings.Contains(f, "heldout") {
			t.Fatalf("the command reads %s, a held-out scenario", f)
		}
	}
	if len(m.Scenarios) != len(want) || len(want) == 0 {
		t.Fatalf("model lists %d scenarios, the command %d", len(m.Scenarios), len(want))
	}
	root := filepath.Join("..", "..")
	for i, s := range m.Scenarios {
		if s.Name != want[i] {
			t.Fatalf("scenario %d is %s, the command says %s", i, s.Name, want[i])
		}
		if strings.Contains(s.Name, "heldout") {
			t.Fatalf("scenario %s is a held-out scenario", s.Name)
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(s.Name)))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != s.SHA256 {
			t.Fatalf("%s changed since training (sha256 %s, model says %s): retrain with the package's command", s.Name,
				hex.EncodeToString(sum[:]), s.SHA256)
		}
	}
}

// Model hands out copies: a caller cannot damage the embedded weights.
func TestModelReturnsCopies(t *testing.T) {
	for _, load := range []func() (models.Model, error){Model, PreferenceModel, HighRateModel} {
		a, err := load()
		if err != nil {
			t.Fatal(err)
		}
		a.Weights[0] ^= 0xff
		b, err := load()
		if err != nil {
			t.Fatal(err)
		}
		if a.Weights[0] == b.Weights[0] {
			t.Fatalf("%s: changing one copy changed the next", a.Name)
		}
	}
}
