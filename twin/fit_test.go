package twin

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
)

// truth is a known fabric and workload: the samples the agent would have
// stored of it (through the same observer) and its fabric records.
func truth(t *testing.T, s Scenario, lldp bool) Input {
	t.Helper()
	cfg, err := s.Config()
	if err != nil {
		t.Fatalf("%v\n%s", err, s.YAML())
	}
	samples, err := Measure(cfg, 200*simenv.Microsecond, []int{simenv.DefaultPriority}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range samples {
		samples[i].Peer = env.PeerUnknown // as stored: the record says it
	}
	return Input{Fabric: recordsOf(t, cfg, lldp), Samples: samples}
}

// A small star under web search at 40%: the fit finds the star and a
// web-search load near 40% within a small budget.
func TestFitRecoversSmallStar(t *testing.T) {
	f := Fabric{Kind: "star", Hosts: 8, HostRateBps: 100e9, BufferBytes: 16_000_000, LinkDelay: simenv.Microsecond, CableMeters: 5,
		MTU: 1000, ECN: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}, Alpha: 0.125, Queue: 3}
	want := Workload{Family: "fbhadoop", Load: 0.5}
	s := Scenario{Name: "truth", Seed: 7, Duration: 6 * simenv.Millisecond, Fabric: f, Phases: []Phase{{End: 6 * simenv.Millisecond, Workload: want}}}
	in := truth(t, s, true)
	// A budget in simulations (about 30 s here, the start asked first by
	// chooseLead: this observation reads as running traffic), not in wall
	// time: the same fit however loaded the machine.
	runs := 160
	if os.Getenv("ECNTUNE_TWIN_HEAVY") != "" {
		runs = 640
	}
	start := time.Now()
	r, err := Fit(in, Options{Runs: runs, Seed: 3, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fit in %s, %d simulations:\n%s", time.Since(start).Round(time.Millisecond), r.Report.Runs, r.Scenario.YAML())
	got := r.Scenario.Fabric
	if got.Kind != "star" || got.Hosts != 8 || got.HostRateBps != 100e9 || got.BufferBytes != 16_000_000 {
		t.Fatalf("fabric %+v", got)
	}
	if len(r.Scenario.Phases) != 1 {
		t.Fatalf("phases %+v: steady traffic is one window", r.Scenario.Phases)
	}
	w := r.Scenario.Phases[0].Workload
	if w.Family != want.Family || math.Abs(w.Load-want.Load) > 0.1 {
		t.Errorf("workload %s, want %s (load within 0.1)", w.Describe(), want.Describe())
	}
	checkRivals(t, r)
}

// checkRivals: every rival twin is the twin with one window's workload
// replaced by a runner-up the report lists, within RivalLossFactor of
// the winner, and loads as a scenario.
func checkRivals(t *testing.T, r *Result) {
	t.Helper()
	if len(r.Rivals) == 0 {
		t.Fatalf("no rival twin; the report's windows: %+v", r.Report.Phases)
	}
	for k, rs := range r.Rivals {
		p := r.Report.Phases[rs.Window]
		if rs.Rival.Workload == p.Workload || rs.Rival.Excess < 0 || rs.Rival.Penalised > rivalBound(p.penalised) {
			t.Errorf("rival %d %+v against the winner %s (penalised %.3f)", k, rs.Rival, p.Workload, p.penalised)
		}
		if k > 0 && (rs.Edge == r.Rivals[k-1].Edge && rs.Rival.Excess < r.Rivals[k-1].Rival.Excess || !rs.Edge && r.Rivals[k-1].Edge) {
			t.Errorf("rivals not nearest first: %+v", r.Rivals)
		}
		if rs.Scenario.Name != fmt.Sprintf("%s-rival-%d", r.Scenario.Name, k+1) {
			t.Errorf("rival %d named %q", k, rs.Scenario.Name)
		}
		for i, ph := range rs.Scenario.Phases {
			if got, twin := ph.Workload.Describe(), r.Scenario.Phases[i].Workload.Describe(); (i == rs.Window) == (got == twin) {
				t.Errorf("rival %d window %d: %s, the twin's %s (replaced: window %d)", k, i, got, twin, rs.Window)
			}
		}
		if _, err := rs.Scenario.Config(); err != nil {
			t.Errorf("rival %d does not load: %v\n%s", k, err, rs.Scenario.YAML())
		}
	}
	var text strings.Builder
	if err := r.Report.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	line := "rival: " + r.Rivals[0].Rival.Workload
	if r.Rivals[0].Edge {
		line = "edge of its kind: " + r.Rivals[0].Rival.Workload
	}
	if !strings.Contains(text.String(), line) {
		t.Errorf("the report does not name the rival %s:\n%s", r.Rivals[0].Rival.Workload, text.String())
	}
}

// Rival twins come nearest first over every window, at most n, and
// each replaces only its window's workload.
func TestRivalScenarios(t *testing.T) {
	web := Workload{Family: "websearch", Load: 0.3}
	had := Workload{Family: "fbhadoop", Load: 0.3}
	inc := Workload{Family: "websearch", Load: 0.2, Incast: &Incast{Fanin: 4, SizeBytes: 64_000, Every: simenv.Millisecond}}
	s := Scenario{Name: "tw", Phases: []Phase{{End: 1, Workload: web}, {Start: 1, End: 2, Workload: had}}}
	phases := []PhaseReport{
		{Rivals: []Rival{{Workload: had.Describe(), Excess: 0.5, w: had}, {Workload: inc.Describe(), Excess: 0.9, w: inc}}},
		{Rivals: []Rival{{Workload: web.Describe(), Excess: 0.2, w: web}}},
	}
	got := rivalScenarios(s, phases, 2)
	if len(got) != 2 || got[0].Window != 1 || got[1].Window != 0 || got[1].Rival.Workload != had.Describe() {
		t.Fatalf("rivals %+v", got)
	}
	if got[0].Scenario.Phases[0].Workload.Describe() != web.Describe() || got[0].Scenario.Phases[1].Workload.Describe() != web.Describe() ||
		s.Phases[1].Workload.Describe() != had.Describe() {
		t.Errorf("rival 1 phases %+v (the twin's %+v)", got[0].Scenario.Phases, s.Phases)
	}
	if got[0].Scenario.Name != "tw-rival-1" || got[1].Scenario.Name != "tw-rival-2" {
		t.Errorf("names %q %q", got[0].Scenario.Name, got[1].Scenario.Name)
	}
	if n := len(rivalScenarios(s, phases, -1)); n != 0 {
		t.Errorf("%d rivals when none are asked for", n)
	}
	if n := len(rivalScenarios(s, phases, 5)); n != 3 {
		t.Errorf("%d rivals of 3", n)
	}
	// a window's edge fills in only where too few other kinds qualify
	edge := Workload{Family: "fbhadoop", Load: 0.45}
	phases[1].Edge = &Rival{Workload: edge.Describe(), Excess: 0.01, w: edge}
	if got := rivalScenarios(s, phases, 3); len(got) != 3 || got[2].Edge || got[0].Rival.Workload != web.Describe() {
		t.Errorf("an edge taken before the other kinds: %+v", got)
	}
	got = rivalScenarios(s, phases, 4)
	if len(got) != 4 || !got[3].Edge || got[3].Window != 1 || got[3].Scenario.Phases[1].Workload.Describe() != edge.Describe() || got[3].Scenario.Name != "tw-rival-4" {
		t.Errorf("the edge not filling in: %+v", got)
	}
}

// The edge of a kind is the candidate of the winner's kind within the
// bound whose parameters lie farthest from the winner's.
func TestEdge(t *testing.T) {
	inc := func(load float64, fanin int, every simenv.Time) Workload {
		return Workload{Family: "websearch", Load: load, Incast: &Incast{Fanin: fanin, SizeBytes: 64_000, Every: every}}
	}
	best := scored{kind: "incast", w: inc(0.3, 4, simenv.Millisecond), loss: 0.2}
	s := &search{ft: &fitter{iv: simenv.Millisecond}, obs: observed{stats: Stats{RoleHost: {"util_mean": 0.3}}}}
	s.tried = []scored{best,
		{kind: "incast", w: inc(0.35, 4, simenv.Millisecond), loss: 0.3},                      // near
		{kind: "incast", w: inc(0.3, 8, 2*simenv.Millisecond), loss: 0.9},                     // far, within the noise
		{kind: "incast", w: inc(0.1, 15, 10*simenv.Millisecond), loss: 5},                     // farther, beyond the bound
		{kind: "flows of websearch", w: Workload{Family: "websearch", Load: 0.9}, loss: 0.25}, // another kind
	}
	pen := s.penalised(best.w, best.loss)
	e := s.edge(best, pen)
	if e == nil || e.Workload != inc(0.3, 8, 2*simenv.Millisecond).Describe() {
		t.Fatalf("edge %+v", e)
	}
	s.tried = s.tried[:1]
	if e := s.edge(best, pen); e != nil {
		t.Fatalf("an edge %+v with no other candidate of the kind", e)
	}
}

// The incasts and collectives are tried beside the family that fitted
// best, not the one refined last (whose loss the search holds then), nor
// one of the better ones at the map's whim.
func TestExtrasBesideTheBestFamily(t *testing.T) {
	ws, hadoop := Workload{Family: "websearch", Load: 0.4}, Workload{Family: "fbhadoop", Load: 0.5}
	for range 20 {
		s := &search{refined: map[string]scored{
			"flows of websearch": {kind: "flows of websearch", w: ws, loss: 0.5},
			"flows of fbhadoop":  {kind: "flows of fbhadoop", w: hadoop, loss: 3.0},
		}}
		s.best, s.loss = hadoop, 3.0 // the last family refined
		if b := s.bestFlows(); b != ws {
			t.Fatalf("extras beside %+v, want the web search flows", b)
		}
	}
	s := &search{refined: map[string]scored{"flows of fbhadoop": {w: hadoop, loss: 0.2}}}
	s.best, s.loss = ws, 0.7
	if b := s.bestFlows(); b != hadoop {
		t.Fatalf("extras beside %+v, want the Hadoop flows", b)
	}
}

// An agent started on a production fabric observes traffic long running;
// one started with it (a lab, the pipeline) observes its ramp from an
// empty fabric. The fit tells the two apart and finds the load either
// way: fitted as if from empty, the steady observation of this 50% web
// search star was read as 66%.
func TestFitObservedOnRunningTraffic(t *testing.T) {
	f := Fabric{Kind: "star", Hosts: 8, HostRateBps: 100e9, BufferBytes: 16_000_000, LinkDelay: simenv.Microsecond, CableMeters: 5,
		MTU: 1000, ECN: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}, Alpha: 0.125, Queue: 3}
	want := Workload{Family: "websearch", Load: 0.5}
	for _, running := range []bool{true, false} {
		t.Run(fmt.Sprintf("running=%v", running), func(t *testing.T) {
			var before simenv.Time // simulated before the agent begins to record
			if running {
				before = 6 * simenv.Millisecond
			}
			d := before + 6*simenv.Millisecond
			in := truth(t, Scenario{Name: "truth", Seed: 7, Duration: d, Fabric: f, Phases: []Phase{{End: d, Workload: want}}}, true)
			var kept []Sample
			for _, x := range in.Samples {
				if x.TimeNs > before.Ns() {
					x.TimeNs -= before.Ns()
					kept = append(kept, x)
				}
			}
			in.Samples = kept
			r, err := Fit(in, Options{Runs: 130, Seed: 3, Log: t.Logf}) // about 20 s on an idle machine
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d simulations; notes: %q\n%s", r.Report.Runs, r.Report.Notes, r.Scenario.YAML())
			if got := r.Scenario.Lead > 0; got != running {
				t.Errorf("lead-in %v on an observation that began on running traffic: %v", r.Scenario.Lead.Duration(), running)
			}
			if w := r.Scenario.Phases[0].Workload; math.Abs(w.Load-want.Load) > 0.1 {
				t.Errorf("window 0: %s, want a load within 0.1 of %s's", w.Describe(), want.Describe())
			}
			if running && (r.Scenario.Phases[0].Start != 0 || r.Scenario.Duration != r.Scenario.Lead+6*simenv.Millisecond ||
				!strings.Contains(string(r.Scenario.YAML()), "lead-in")) {
				t.Errorf("the twin's run does not hold its lead-in: %+v", r.Scenario)
			}
		})
	}
}

// Two kinds' refinements may meet at one workload as the report names it
// (fbhadoop at 42.1% and 42.4%: "fbhadoop 42%"): the nearer stands for
// both, every time (the one kept went by the map's order).
func TestRivalsSameEveryRun(t *testing.T) {
	best := scored{kind: "incast", w: Workload{Family: "websearch", Load: 0.3, Incast: &Incast{Fanin: 4, SizeBytes: 64000, Every: 1000000}}, loss: 0.5}
	far, near := Workload{Family: "fbhadoop", Load: 0.421}, Workload{Family: "fbhadoop", Load: 0.424}
	if far.Describe() != near.Describe() {
		t.Fatalf("setup: %q and %q should read alike", far.Describe(), near.Describe())
	}
	for range 50 {
		s := &search{ft: &fitter{}, obs: observed{stats: Stats{RoleHost: {}}}, refined: map[string]scored{
			"flows of websearch": {kind: "flows of websearch", w: far, loss: 0.9},
			"flows of fbhadoop":  {kind: "flows of fbhadoop", w: near, loss: 0.6},
			"incast":             best,
		}}
		rv := s.rivals(best, s.penalised(best.w, best.loss))
		if len(rv) != 1 || rv[0].w.Load != near.Load || rv[0].SearchLoss != 0.6 {
			t.Fatalf("rivals %+v: want the nearer fbhadoop 42.4%% (loss 0.6) alone", rv)
		}
	}
}

// Stopped (an operator's Ctrl-C), the search ends at once: a fit with a
// budget of 100,000 simulations runs each stage's least (394 here: a
// grid's first batch, the noise's calibration, the final run), builds the
// twin from what it found, and its report says it was interrupted.
func TestFitStoppedEarly(t *testing.T) {
	f := Fabric{Kind: "star", Hosts: 4, HostRateBps: 100e9, BufferBytes: 16_000_000, LinkDelay: simenv.Microsecond, CableMeters: 5,
		MTU: 1000, ECN: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}, Alpha: 0.125, Queue: 3}
	s := Scenario{Name: "truth", Seed: 7, Duration: 2 * simenv.Millisecond, Fabric: f, Phases: []Phase{{End: 2 * simenv.Millisecond, Workload: Workload{Family: "websearch", Load: 0.4}}}}
	in := truth(t, s, true)
	r, err := Fit(in, Options{Runs: 100_000, Seed: 3, Stop: func() bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	if r.Report.Runs > 1000 || len(r.Scenario.Phases) == 0 || !strings.Contains(strings.Join(r.Report.Notes, "\n"), "the search was interrupted") {
		t.Fatalf("%d simulations, %d phases, notes %q", r.Report.Runs, len(r.Scenario.Phases), r.Report.Notes)
	}
}

// What a short budget never tried is said: in the window's report and its
// text (at 20 simulations the incast and collective grids are not reached,
// and the rivals spoke as if every kind had been weighed).
func TestFitSaysWhatItNeverTried(t *testing.T) {
	f := Fabric{Kind: "star", Hosts: 4, HostRateBps: 100e9, BufferBytes: 16_000_000, LinkDelay: simenv.Microsecond, CableMeters: 5,
		MTU: 1000, ECN: env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}, Alpha: 0.125, Queue: 3}
	s := Scenario{Name: "truth", Seed: 7, Duration: 2 * simenv.Millisecond, Fabric: f, Phases: []Phase{{End: 2 * simenv.Millisecond, Workload: Workload{Family: "websearch", Load: 0.4}}}}
	in := truth(t, s, true)
	r, err := Fit(in, Options{Runs: 20, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := r.Report.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	p := r.Report.Phases[0]
	if len(p.Untried) == 0 || !strings.Contains(text.String(), "the budget ended before it tried "+strings.Join(p.Untried, ", ")) {
		t.Fatalf("untried %v; report:\n%s", p.Untried, text.String())
	}
	for _, k := range p.Untried {
		if !slices.Contains(allKinds(), k) {
			t.Fatalf("untried kind %q is not one the search tries", k)
		}
	}
	// Every simulation but the final run is a window's, the lead-in's
	// search in the first (it was left out: 3 runs said, 24 in all)
	n := 0
	for _, p := range r.Report.Phases {
		n += p.Runs
	}
	if n+1 != r.Report.Runs {
		t.Fatalf("the windows' runs add up to %d, the fit ran %d (the final run one of them)", n, r.Report.Runs)
	}
}

// A twin's files are its scenario and the CDF files it names, not every
// family's (fbhadoop.txt was written beside a web-search twin).
func TestScenarioFilesOnlyTheCDFsNamed(t *testing.T) {
	f := Fabric{Kind: "star", Hosts: 4, HostRateBps: 100e9}
	s := Scenario{Name: "tw", Seed: 7, Duration: 2 * simenv.Millisecond, Fabric: f, Phases: []Phase{{End: 2 * simenv.Millisecond, Workload: Workload{Family: "websearch", Load: 0.4}}}}
	fs, err := s.Files()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range fs {
		names = append(names, n)
	}
	if len(fs) != 2 || fs["cdf/websearch.txt"] == nil {
		t.Fatalf("files %v: want the scenario and cdf/websearch.txt", names)
	}
}
