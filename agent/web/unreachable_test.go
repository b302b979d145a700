package web

import (
	"strings"
	"testing"
)

// The dashboard's line of a switch it cannot reach says why, and says the
// telemetry it lacks is unknown rather than "none"; a heatmap that
// cannot be drawn is hidden with a sentence, not shown as a broken image.
func TestDashboardUnreachableSwitch(t *testing.T) {
	js, err := webFS.ReadFile("static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	s := string(js)
	for _, want := range []string{"t.unreachable", `t.heard ? "none" : "unknown"`} {
		if !strings.Contains(s, want) {
			t.Errorf("app.js lacks %q", want)
		}
	}
	i := strings.Index(s, "function drawHeatmap")
	if i < 0 {
		t.Fatal("no drawHeatmap")
	}
	heat := s[i:]
	heat = heat[:strings.Index(heat, "\n}\n")]
	if !strings.Contains(heat, "img.onerror = () => {\n    img.hidden = true;") {
		t.Errorf("the heatmap's onerror does not hide the image:\n%s", heat)
	}
}
