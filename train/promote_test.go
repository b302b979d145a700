package train

import (
	"strings"
	"testing"
)

// ruleCase is a case of a promotion rule: the starting and the judged
// policy's figures, their paired small-flow p99, and the verdict wanted.
type ruleCase struct {
	name         string
	start, tuned FrontierFigures
	vs           Paired
	promote      bool
	says         string
}

// checkRule runs rule on each case and reports the verdicts that differ.
func checkRule(t *testing.T, rule func(start, tuned FrontierFigures, vs Paired) Verdict, cases []ruleCase) {
	t.Helper()
	for _, c := range cases {
		v := rule(c.start, c.tuned, c.vs)
		if v.Promote != c.promote || !strings.Contains(v.Reason, c.says) {
			t.Errorf("%s: %+v, want promote %v saying %q", c.name, v, c.promote, c.says)
		}
	}
}

func fr(r float64) FrontierFigures { return FrontierFigures{Ratio: r} }

func TestPromotionRule(t *testing.T) {
	beyond := FrontierFigures{Beyond: true}
	better := Paired{Mean: 0.8, Lo: 0.7, Hi: 0.9, N: 10}
	noise := Paired{Mean: 0.97, Lo: 0.90, Hi: 1.05, N: 10}
	checkRule(t, PromotionRule, []ruleCase{
		{"on the frontier", fr(1.10), fr(1.00), noise, true, "frontier ratio 1.00: not behind"},
		{"beyond it", fr(0.98), fr(0.91), noise, true, "not behind"},
		{"1.004 prints as 1.00", fr(1.2), fr(1.004), noise, true, "not behind"},
		{"beyond in goodput", fr(1.3), beyond, noise, true, "beyond the frontier in goodput"},
		{"both beyond, lower p99", beyond, beyond, noise, true, "not behind"},
		{"both beyond, p99 three times the start's", beyond, beyond, Paired{Mean: 3, Lo: 3, Hi: 3, N: 10}, false, "not as low as the starting model's: its small-flow p99 over the starting model's, seed by seed, 3.00"},
		{"both beyond, no paired seeds", beyond, beyond, Paired{}, false, "no seed-by-seed comparison"},
		{"not behind but worse than the start", fr(0.90), fr(0.99), noise, false, "worse than the starting model (frontier ratio 0.90)"},
		{"worse than a start on the frontier", fr(0.99), fr(1.01), better, false, "worse than the starting model (frontier ratio 0.99)"},
		{"behind, start beyond in goodput", beyond, fr(1.05), better, false, "where the starting model is beyond the frontier"},
		{"not beyond, start beyond in goodput", beyond, fr(0.95), better, false, "where the starting model is beyond the frontier"},
		{"behind but better than a start behind", fr(1.80), fr(1.20), better, true, "better than the starting model, itself behind it (frontier ratio 1.80)"},
		{"behind, lower ratio within the noise", fr(1.80), fr(1.20), noise, false, "not better than the starting model (frontier ratio 1.80) beyond the seeds' noise"},
		{"no small flow to compare by", fr(1.05), FrontierFigures{NoSmallFlows: true}, better, false,
			"no frontier ratio on the twin to judge it by: no frontier ratio (no small flow finished to compare it by)"},
		{"behind, interval printed reaching 1.00", fr(1.80), fr(1.20), Paired{Mean: 0.9, Lo: 0.81, Hi: 0.998, N: 10}, false, "0.90 [0.81, 1.00]"},
		{"behind and equal to a start behind", fr(1.304), fr(1.296), Paired{Mean: 1, Lo: 1, Hi: 1, N: 5}, false, "not better"},
		{"behind, no paired seeds", fr(1.5), fr(1.2), Paired{}, false, "no seed-by-seed comparison"},
		{"behind and worse than a start behind", fr(1.11), fr(1.15), better, false, "worse than the starting model (frontier ratio 1.11)"},
		{"more drops", fr(1.2), FrontierFigures{Ratio: 0.9, Drops: 3}, better, false, "dropped 3 packets where the starting model dropped 0"},
		{"no more drops than a start that dropped", FrontierFigures{Ratio: 1.2, Drops: 5}, FrontierFigures{Ratio: 0.9, Drops: 5}, noise, true, "5 drops"},
		{"no frontier", fr(1.1), FrontierFigures{}, better, false, "no fixed setting ran"},
		{"start without a ratio", FrontierFigures{}, fr(1.1), better, false, "no frontier ratio to compare with"},
		{"the start's figures, more churn", FrontierFigures{Ratio: 0.98}, FrontierFigures{Ratio: 0.98, Changes: 75, Flaps: 17.5}, noise, false,
			"frontier ratio 0.98: no better than the starting model (frontier ratio 0.98; its small-flow p99 over the starting model's, seed by seed, 0.97 [0.90, 1.05]), " +
				"and it changes the settings more: 75.0 changes per queue per 100 intervals and 17.5 flaps a run against the starting model's 0.0 changes per queue per 100 intervals and 0.0 flaps a run"},
		{"the start's figures, more flaps only", FrontierFigures{Ratio: 0.98, Changes: 5}, FrontierFigures{Ratio: 0.98, Changes: 5, Flaps: 1}, noise, false, "changes the settings more"},
		{"both beyond, p99 as low, more churn", beyond, FrontierFigures{Beyond: true, Changes: 3}, noise, false, "changes the settings more"},
		{"the start's figures, churn equal as printed", FrontierFigures{Ratio: 0.98, Changes: 3.04}, FrontierFigures{Ratio: 0.98, Changes: 2.96}, noise, true, "not behind"},
		{"the start's figures, less churn", FrontierFigures{Ratio: 0.98, Changes: 30, Flaps: 4}, FrontierFigures{Ratio: 0.98, Changes: 3}, noise, true, "not behind"},
		{"a lower ratio, more churn", FrontierFigures{Ratio: 0.98}, FrontierFigures{Ratio: 0.95, Changes: 75, Flaps: 17.5}, noise, true, "not behind"},
		{"the start's ratio, lower p99, more churn", FrontierFigures{Ratio: 0.98}, FrontierFigures{Ratio: 0.98, Changes: 75}, better, true, "not behind"},
		{"beyond where the start is not, more churn", fr(1.2), FrontierFigures{Beyond: true, Changes: 75}, noise, true, "beyond the frontier in goodput"},
	})
}

// A fixed setting replaces the starting model only where its lower
// small-flow p99 shows beyond the seeds' noise: its ratio of 1.00 says
// nothing, the frontier being made of such settings.
func TestFixedSettingRule(t *testing.T) {
	better := Paired{Mean: 0.8, Lo: 0.7, Hi: 0.9, N: 10}
	noise := Paired{Mean: 1.00, Lo: 0.93, Hi: 1.08, N: 10}
	checkRule(t, FixedSettingRule, []ruleCase{
		{"lower p99 beyond the noise", fr(1.10), fr(1.00), better, true, "frontier ratio 1.00: not behind"},
		{"a hair ahead, p99 within the noise", fr(1.02), fr(1.00), noise, false,
			"frontier ratio 1.00, but its small-flow p99 is not lower than the starting model's (frontier ratio 1.02) beyond the seeds' noise: its small-flow p99 over the starting model's, seed by seed, 1.00 [0.93, 1.08]"},
		{"interval printed reaching 1.00", fr(1.2), fr(1.00), Paired{Mean: 0.9, Lo: 0.81, Hi: 0.998, N: 10}, false, "0.90 [0.81, 1.00]"},
		{"no paired seeds", fr(1.2), fr(1.00), Paired{}, false, "no seed-by-seed comparison"},
		{"more drops, lower p99", fr(1.2), FrontierFigures{Ratio: 1.0, Drops: 2}, better, false, "dropped 2 packets"},
		{"worse than the start", fr(1.01), fr(1.03), better, false, "worse than the starting model"},
	})
}

// A model promoted on the twin stays promoted only if no rival twin finds
// it worse than the starting model; a verdict not to promote stands.
func TestJudgeRivals(t *testing.T) {
	yes := Verdict{true, "frontier ratio 0.95: not behind"}
	no := Verdict{false, "frontier ratio 1.10: worse"}
	p := func(m float64) Paired { return Paired{Mean: m, Lo: m - 0.05, Hi: m + 0.05, N: 10} }
	ok := RivalFigures{Name: "tw-rival-1", SmallP99: p(0.97), Goodput: p(1.00)}
	for _, c := range []struct {
		name    string
		v       Verdict
		rivals  []RivalFigures
		promote bool
		says    string
	}{
		{"no rivals", yes, nil, true, "not behind"},
		{"no worse on each", yes, []RivalFigures{ok, {Name: "tw-rival-2", SmallP99: p(1.004), Goodput: p(0.975)}}, true,
			"no worse than the starting model on 2 rival twins (on rival tw-rival-1, seed by seed over the starting model: small-flow p99 0.97 [0.92, 1.02]"},
		{"higher p99 on one", yes, []RivalFigures{ok, {Name: "tw-rival-2", SmallP99: p(1.006), Goodput: p(1.1)}}, false,
			"but a higher small-flow p99 than the starting model on rival tw-rival-2"},
		{"less goodput", yes, []RivalFigures{{Name: "r", SmallP99: p(0.5), Goodput: p(0.974)}}, false, "but less than 98% of the starting model's large-flow goodput on rival r, seed by seed"},
		{"more drops", yes, []RivalFigures{{Name: "r", SmallP99: p(0.9), Goodput: p(1), Drops: 2}}, false, "but more drops than the starting model on rival r"},
		{"drops no more than the start", yes, []RivalFigures{{Name: "r", SmallP99: p(0.9), Goodput: p(1), Drops: 2, StartDrops: 2}}, true, "2 drops (the starting model 2)"},
		{"no seeds", yes, []RivalFigures{{Name: "r"}}, false, "no seed of rival r ran for both models"},
		{"starves a rival's all-reduce", yes, []RivalFigures{{Name: "r", SmallP99: p(0.6), Goodput: p(1),
			Collectives: CollectiveFigures{Tuned: 0.1, Start: 0.9, Mean: -0.8, Lo: -1.1, Hi: -0.5, N: 10, Fewer: true}}}, false,
			"but collectives behind the starting model's on rival r, seed by seed over the starting model: small-flow p99 0.60 [0.55, 0.65], large-flow goodput 1.00 [0.95, 1.05], 0.1 collective iterations a run against 0.9 (seed by seed -0.8 [-1.1, -0.5])"},
		{"slows a rival's all-reduce", yes, []RivalFigures{{Name: "r", SmallP99: p(0.6), Goodput: p(1),
			Collectives: CollectiveFigures{N: 10, Goodput: Paired{Mean: 0.5, Lo: 0.4, Hi: 0.6, N: 10}}}}, false,
			"but collectives behind the starting model's on rival r, seed by seed over the starting model: small-flow p99 0.60 [0.55, 0.65], large-flow goodput 1.00 [0.95, 1.05], 0.0 collective iterations a run against 0.0 (seed by seed +0.0 [+0.0, +0.0]), collective flows' goodput 0.50 [0.40, 0.60]"},
		{"as many on a rival", yes, []RivalFigures{{Name: "r", SmallP99: p(0.6), Goodput: p(1),
			Collectives: CollectiveFigures{Tuned: 0.9, Start: 0.9, Lo: -0.3, Hi: 0.3, N: 10}}}, true, "0.9 collective iterations a run against 0.9"},
		{"more on a rival, slower flows", yes, []RivalFigures{{Name: "r", SmallP99: p(0.6), Goodput: p(1),
			Collectives: CollectiveFigures{Tuned: 4, Start: 3, Mean: 1, Lo: 1, Hi: 1, N: 10, More: true, Goodput: Paired{Mean: 0.9, Lo: 0.85, Hi: 0.95, N: 10}}}}, true,
			"4.0 collective iterations a run against 3.0 (seed by seed +1.0 [+1.0, +1.0]), collective flows' goodput 0.90 [0.85, 0.95]"},
		{"not promoted stands", no, []RivalFigures{ok}, false, "frontier ratio 1.10: worse"},
	} {
		v := JudgeRivals(c.v, c.rivals)
		if v.Promote != c.promote || !strings.Contains(v.Reason, c.says) || !strings.HasPrefix(v.Reason, c.v.Reason) {
			t.Errorf("%s: %+v, want promote %v saying %q", c.name, v, c.promote, c.says)
		}
	}
}

func TestJudgeCollectives(t *testing.T) {
	yes := Verdict{true, "frontier ratio 0.60: not behind"}
	no := Verdict{false, "frontier ratio 1.10: worse"}
	for _, c := range []struct {
		name    string
		v       Verdict
		c       CollectiveFigures
		promote bool
		says    string
	}{
		{"no collective", yes, CollectiveFigures{}, true, "not behind"},
		{"starves the all-reduce", yes, CollectiveFigures{Tuned: 0, Start: 0.8, Mean: -0.8, Lo: -1.1, Hi: -0.5, N: 10, Fewer: true}, false,
			"but its collectives fall behind the starting model's (0.0 collective iterations a run against the starting model's 0.8, seed by seed -0.8 [-1.1, -0.5]), which the frontier ratio does not count"},
		{"slows the all-reduce", yes, CollectiveFigures{N: 10, Goodput: Paired{Mean: 0.9, Lo: 0.85, Hi: 0.95, N: 10}}, false,
			"collective flows' goodput over the starting model's 0.90 [0.85, 0.95]), which the frontier ratio does not count"},
		{"slower within the noise", yes, CollectiveFigures{N: 10, Goodput: Paired{Mean: 0.9, Lo: 0.7, Hi: 1.1, N: 10}}, true, "not behind"},
		{"98% of its goodput", yes, CollectiveFigures{N: 10, Goodput: Paired{Mean: 0.981, Lo: 0.97, Hi: 0.99, N: 10}}, true, "not behind"},
		{"fewer within the noise", yes, CollectiveFigures{Tuned: 0.6, Start: 0.8, Mean: -0.2, Lo: -0.5, Hi: 0.1, N: 10}, true, "not behind"},
		{"as many", yes, CollectiveFigures{Tuned: 3, Start: 3, N: 10}, true, "not behind"},
		// finished no collective flow on 4 seeds of 5 (no goodput ratio
		// there), the starting model on none
		{"starved on seeds without a ratio", yes, CollectiveFigures{N: 5, Goodput: Paired{Mean: 0.9, Lo: 0.9, Hi: 0.9, N: 1},
			Starved: 4, StarvedBehind: true}, false, "no collective flow finished on 4 seed(s) on which the starting model's did (the reverse on 0)"},
		{"slower, printed interval reaching 1.00", yes, CollectiveFigures{N: 10, Goodput: Paired{Mean: 0.97, Lo: 0.94, Hi: 0.996, N: 10}}, true, "not behind"},
		// the oracle on the held-out 25G 3:1 fabric: a fixed setting with
		// one more all-to-all iteration a run on every seed, whose flows'
		// mean goodput counts the extra iteration's
		{"more iterations, slower flows", yes, CollectiveFigures{Tuned: 4, Start: 3, Mean: 1, Lo: 1, Hi: 1, N: 10, More: true,
			Goodput: Paired{Mean: 0.91, Lo: 0.89, Hi: 0.92, N: 10}}, true, "not behind"},
		{"more within the noise, slower flows", yes, CollectiveFigures{Tuned: 3.2, Start: 3, Mean: 0.2, Lo: -0.1, Hi: 0.5, N: 10,
			Goodput: Paired{Mean: 0.91, Lo: 0.89, Hi: 0.92, N: 10}}, false, "collective flows' goodput over the starting model's 0.91 [0.89, 0.92])"},
		{"one seed", yes, CollectiveFigures{Tuned: 0, Start: 1, Mean: -1, Lo: -1, Hi: -1, N: 1}, true, "not behind"},
		{"not promoted stands", no, CollectiveFigures{Tuned: 0, Start: 1, Mean: -1, Lo: -1, Hi: -1, N: 10}, false, "frontier ratio 1.10: worse"},
	} {
		v := JudgeCollectives(c.v, c.c)
		if v.Promote != c.promote || !strings.Contains(v.Reason, c.says) || !strings.HasPrefix(v.Reason, c.v.Reason) {
			t.Errorf("%s: %+v, want promote %v saying %q", c.name, v, c.promote, c.says)
		}
	}
}
