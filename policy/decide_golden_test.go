package policy

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/train/rl"
)

// goldenObs are observations with random features and a spread of
// current settings, rates, peers and metrics, so that reasons name every
// kind of change.
func goldenObs(n int) []env.Observation {
	rng := rand.New(rand.NewPCG(5, 6))
	rates := []float64{25e9, 100e9, 400e9}
	curs := []env.Setting{{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}, {KminBytes: 52_376, KmaxBytes: 3_482_571, Pmax: 0.013},
		{KminBytes: 5_000, KmaxBytes: 200_000, Pmax: 0.01}}
	obs := make([]env.Observation, n)
	for i := range obs {
		o := validObs(rates[i%3], curs[i%len(curs)])
		o.Peer = env.Peer([]env.Peer{env.PeerHost, env.PeerSwitch, env.PeerUnknown}[i%3])
		o.Metrics.Util, o.Metrics.MarkFrac, o.Metrics.AvgQueueFrac = rng.Float64(), rng.Float64()/10, rng.Float64()*3
		o.Metrics.PauseRxFrac, o.Metrics.DropFrac = rng.Float64()/20, float64(i%7)/1000
		f := make([]float32, env.NumFeatures)
		for j := range f[:env.ObsSpecFeatures("obs-v3")] { // obs-v4's PFC features stay 0
			f[j] = rng.Float32()
		}
		o.Features = f
		if i%11 == 0 {
			o.Valid = false
		}
		obs[i] = o
	}
	return obs
}

// TestDecisionsGolden pins what the learned policy decides, down to the
// confidence's bits and the reason's text, for Q and logit networks with
// and without a preference: speed work must not change a decision.
// testdata/decide-golden.txt holds every decision, one a line, so that a
// change reads as a diff; ECNTUNE_GOLDEN=1 rewrites it.
func TestDecisionsGolden(t *testing.T) {
	var b strings.Builder
	for _, kind := range []rl.OutputKind{rl.OutputQ, rl.OutputLogits} {
		for _, pref := range []float64{0, -0.5, 0.7} {
			cat := env.DefaultCatalogue()
			// An obs-v3/act-v2 network: the golden predates obs-v4, and
			// a model of an older spec must decide as it did.
			net, err := rl.InitNet(rl.Arch{In: env.ObsSpecFeatures("obs-v3"), Hidden: []int{64, 64}, Out: env.ActionSpecLen("act-v2"), Act: rl.ReLU},
				rand.New(rand.NewPCG(1, 2)), 1)
			if err != nil {
				t.Fatal(err)
			}
			net.Kind = kind
			l, err := NewLearned("golden", net, cat, 0)
			if err != nil {
				t.Fatal(err)
			}
			if l, err = l.WithPreference("golden", pref); err != nil {
				t.Fatal(err)
			}
			for i, d := range l.Decide(goldenObs(300)) {
				fmt.Fprintf(&b, "%v %g %d %+v %x %s\n", kind, pref, i, d.Setting, d.Confidence, d.Reason)
			}
		}
	}
	got := b.String()
	const file = "testdata/decide-golden.txt"
	if os.Getenv("ECNTUNE_GOLDEN") == "1" {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		var diff []string
		for i := 0; i < max(len(gl), len(wl)) && len(diff) < 12; i++ {
			g, w := "", ""
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				diff = append(diff, fmt.Sprintf("line %d:\n  want %s\n  got  %s", i+1, w, g))
			}
		}
		t.Fatalf("decisions changed (%d lines, want %d; the first differences below; ECNTUNE_GOLDEN=1 rewrites %s once a change is meant):\n%s",
			len(gl), len(wl), file, strings.Join(diff, "\n"))
	}
}
