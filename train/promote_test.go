package train

import (
	"strings"
	"testing"
)

func TestPromotionRule(t *testing.T) {
	fr := func(r float64) FrontierFigures { return FrontierFigures{Ratio: r} }
	beyond := FrontierFigures{Beyond: true}
	for _, c := range []struct {
		name         string
		start, tuned FrontierFigures
		promote      bool
		says         string
	}{
		{"on the frontier", fr(1.10), fr(1.00), true, "frontier ratio 1.00: not behind"},
		{"beyond it", fr(0.98), fr(0.91), true, "not behind"},
		{"1.004 prints as 1.00", fr(1.2), fr(1.004), true, "not behind"},
		{"beyond in goodput", fr(1.3), beyond, true, "beyond the frontier in goodput"},
		{"worse than a start on the frontier", fr(0.99), fr(1.01), false, "where the starting model is not (frontier ratio 0.99)"},
		{"behind, start beyond in goodput", beyond, fr(1.05), false, "where the starting model is not"},
		{"behind but better than a start behind", fr(1.80), fr(1.20), true, "not worse than the starting model, itself behind it (frontier ratio 1.80)"},
		{"behind and equal to a start behind", fr(1.304), fr(1.296), true, "not worse"},
		{"behind and worse than a start behind", fr(1.11), fr(1.15), false, "worse than the starting model (frontier ratio 1.11)"},
		{"more drops", fr(1.2), FrontierFigures{Ratio: 0.9, Drops: 3}, false, "dropped 3 packets where the starting model dropped 0"},
		{"no more drops than a start that dropped", FrontierFigures{Ratio: 1.2, Drops: 5}, FrontierFigures{Ratio: 0.9, Drops: 5}, true, "5 drops"},
		{"no frontier", fr(1.1), FrontierFigures{}, false, "no fixed setting ran"},
		{"start without a ratio", FrontierFigures{}, fr(1.1), false, "no frontier ratio to compare with"},
	} {
		v := PromotionRule(c.start, c.tuned)
		if v.Promote != c.promote || !strings.Contains(v.Reason, c.says) {
			t.Errorf("%s: %+v, want promote %v saying %q", c.name, v, c.promote, c.says)
		}
	}
}
