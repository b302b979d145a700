package web

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
)

// The dashboard's setting columns (app.js setting()) show alpha when the
// queue has one, as agent report does (env.FormatAlpha): an alpha change
// showed the same setting on both sides of the arrow.
func TestDashboardSettingShowsAlpha(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node to run app.js's functions")
	}
	js, err := webFS.ReadFile("static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	// the top-level functions setting() calls, as app.js declares them
	var src strings.Builder
	for _, name := range []string{"sig", "fmtBytes", "fmtAlpha", "setting"} {
		if f := regexp.MustCompile(`(?ms)^function ` + name + `\(.*?^}\n`).Find(js); f != nil {
			src.Write(f)
		}
	}
	base := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 52_376}
	alphas := []float64{0, 1.0 / 64, 0.125, 0.5, 1, 2, 8, 1.0 / 3, 0.3, 1.5}
	var in []map[string]any
	for _, a := range alphas {
		in = append(in, map[string]any{"kmin_bytes": base.KminBytes, "kmax_bytes": base.KmaxBytes, "pmax": base.Pmax, "headroom_bytes": base.HeadroomBytes, "alpha": a})
	}
	arg, _ := json.Marshal(in)
	src.WriteString("console.log(JSON.stringify(" + string(arg) + ".map(setting)));\n")
	out, err := exec.Command(node, "-e", src.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(alphas) {
		t.Fatalf("node printed %s (%v)", out, err)
	}
	for i, a := range alphas {
		want := "kmin 400KB kmax 1.6MB pmax 20% headroom 52.38KB"
		if a > 0 {
			want += " alpha " + env.FormatAlpha(a)
		}
		if got[i] != want {
			t.Errorf("alpha %g: setting() = %q, want %q", a, got[i], want)
		}
	}
}
