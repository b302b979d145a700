package eval

import (
	"bytes"
	"strings"
	"testing"
)

// With one seed the HTML report says "1 seed", and a comparison's cut is
// worded as one ("54.5% lower"), not as a signed change ("+54.5%").
func TestReportWordsOneSeedAndCut(t *testing.T) {
	one := plotResult()
	var runs []Run
	var aggs []Aggregate
	for _, p := range one.Policies {
		rs := one.RunsOf("s", p)[:1]
		runs = append(runs, rs...)
		aggs = append(aggs, aggregate("s", p, rs))
	}
	one.Runs, one.Aggregates = runs, aggs
	var b bytes.Buffer
	if err := one.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if strings.Contains(html, "1 seeds") || !strings.Contains(html, "1 seed per scenario") {
		t.Errorf("one seed: %q", html[:min(len(html), 600)])
	}
	c := Comparison{Policy: "builtin", BestPreset: "static:hpcc", SmallP99Cut: 0.545}
	if cells := c.cells(); cells[2] != "54.5% lower" {
		t.Errorf("cut cell %q, want \"54.5%% lower\"", cells[2])
	}
	c.SmallP99Cut = -0.12
	if cells := c.cells(); cells[2] != "12.0% higher (worse)" {
		t.Errorf("negative cut cell %q", cells[2])
	}
	// no small flow finished: no figure (it read "0.0% lower")
	c.SmallP99Cut, c.NoSmallP99Cut = 0, true
	if cells := c.cells(); cells[2] != "– (no small flow finished)" {
		t.Errorf("no-figure cut cell %q", cells[2])
	}
	var text bytes.Buffer
	c.writeText(&text)
	if !strings.Contains(text.String(), "small-flow p99 none (no small flow finished, for it or the preset)") {
		t.Errorf("no-figure cut in the text: %q", text.String())
	}
}

// The text's comparisons say what "the best preset" is where they name it.
func TestComparisonsExplainBestPreset(t *testing.T) {
	var b bytes.Buffer
	c := Comparison{Scenario: "s", Policy: "a", BestPreset: "static:hpcc", SmallP99Cut: 0.2, GoodputRatio: 1}
	writeComparisonsOf(&b, []Comparison{c})
	out := b.String()
	if !strings.Contains(out, "the best preset: of the vendor presets run, the one with the lowest mean small-flow p99") ||
		!strings.Contains(out, "within 5% of the best mean large-flow goodput") {
		t.Errorf("no rule for the best preset in\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if len([]rune(l)) > textWidth {
			t.Errorf("line of %d columns: %q", len([]rune(l)), l)
		}
	}
}
