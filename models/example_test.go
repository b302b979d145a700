package models_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ecntune/ecntune/models"
)

// Store two versions of a model, promote the first, load the promoted one
// and list every version with its status.
func ExampleRegistry() {
	dir, err := os.MkdirTemp("", "models-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	reg, err := models.Open(filepath.Join(dir, "models.db"), models.Options{NoSync: true})
	if err != nil {
		panic(err)
	}
	defer reg.Close()

	created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) // the registry never reads a clock
	for _, weights := range []string{"weights of run 1", "weights of run 2"} {
		m, err := reg.Put(models.Model{
			Name: "mine", Algorithm: "ppo", ObsSpec: "obs-v2", ActSpec: "act-v2",
			Seed: 11, Workers: 2, Created: created, Weights: []byte(weights),
		})
		if err != nil {
			panic(err)
		}
		fmt.Printf("put %s (id %d, %s)\n", m.Ref(), m.ID, m.Status)
	}
	if _, err := reg.Promote("mine@1", created.Add(time.Hour)); err != nil {
		panic(err)
	}
	m, err := reg.Resolve("mine") // the promoted version, weights checked against their sha256
	if err != nil {
		panic(err)
	}
	fmt.Printf("resolve mine: %s %q\n", m.Ref(), m.Weights)
	list, err := reg.List("mine")
	if err != nil {
		panic(err)
	}
	for _, m := range list {
		fmt.Printf("%s %s %s %d B sha256 %.12s…\n", m.Ref(), m.Algorithm, m.Status, m.WeightsSize, m.WeightsSHA256)
	}
	// Output:
	// put mine@1 (id 1, candidate)
	// put mine@2 (id 2, candidate)
	// resolve mine: mine@1 "weights of run 1"
	// mine@1 ppo promoted 16 B sha256 64f9f4c80553…
	// mine@2 ppo candidate 16 B sha256 47060206636f…
}
