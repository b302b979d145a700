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
	"github.com/ecntune/ecntune/policy/rl"
)

// The embedded model says how it was made: the command in TrainCommand,
// on the training scenarios as they are in this tree (same sha256), none
// of them held out.
func TestTrainCommandMatchesProvenance(t *testing.T) {
	m, err := Model()
	if err != nil {
		t.Fatal(err)
	}
	if err := models.CheckSpecIn(m, env.ReadableObsSpecs, env.ReadableActionSpecs); err != nil {
		t.Fatal(err)
	}
	if got := m.Hyper["command"]; got != TrainCommand {
		t.Fatalf("embedded model was trained by\n %q\nTrainCommand says\n %q", got, TrainCommand)
	}
	if m.Name != "builtin" || m.Algorithm != "ppo" || m.Seed != 11 || m.Workers != 2 {
		t.Fatalf("provenance name %s algo %s seed %d workers %d, want builtin ppo 11 2", m.Name, m.Algorithm, m.Seed, m.Workers)
	}
	var want []string
	for _, f := range strings.Fields(TrainCommand) {
		if strings.HasSuffix(f, ".yaml") {
			want = append(want, f)
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
			t.Fatalf("%s changed since training (sha256 %s, model says %s): retrain with TrainCommand", s.Name,
				hex.EncodeToString(sum[:]), s.SHA256)
		}
	}
	net, err := rl.UnmarshalNet(m.Weights)
	if err != nil {
		t.Fatal(err)
	}
	wantIn, wantOut := env.ObsSpecFeatures(m.ObsSpec), env.ActionSpecLen(m.ActSpec)
	if net.InDim() != wantIn || net.OutDim() != wantOut || net.Kind != rl.OutputLogits {
		t.Fatalf("network %d→%d %s, want %d→%d logits (%s, %s)", net.InDim(), net.OutDim(), net.Kind, wantIn, wantOut, m.ObsSpec, m.ActSpec)
	}
	if len(file) > 256<<10 {
		t.Fatalf("embedded model is %d bytes, keep it small (< 256 KiB)", len(file))
	}
}

// Model hands out copies: a caller cannot damage the embedded weights.
func TestModelReturnsCopies(t *testing.T) {
	a, err := Model()
	if err != nil {
		t.Fatal(err)
	}
	a.Weights[0] ^= 0xff
	b, err := Model()
	if err != nil {
		t.Fatal(err)
	}
	if a.Weights[0] == b.Weights[0] {
		t.Fatal("changing one copy changed the next")
	}
}
