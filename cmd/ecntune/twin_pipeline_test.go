package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/eval"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/gym"
	"github.com/ecntune/ecntune/simenv/scenario"
)

// TestTwinPipeline runs issue 40's path as an operator meets it, on each
// scenario of ECNTUNE_TWIN_PIPELINE (comma-separated files, each "the
// production fabric"): the agent in shadow mode against the scenario's
// switches (simswitch, lockstep, the model's default interval), ecntune
// twin on its database, ecntune train --twin from its default start (the
// embedded model the default policy runs on the twin's host ports),
// judged and promoted behind the shipped guardrails (--agent with
// examples/eval-agent-builtin.yaml), and
// ecntune eval on the true scenario: the built-in model, the default
// policy (before fitting) and the fine-tuned one against the true
// frontier of fixed settings (the bare ones and the fixed settings at the
// whole-percent Pmax switches hold, eval --pmax-step 0.01, as the loops
// run), the fine-tuned one also behind the shipped
// guardrails (eval's agent:FILE). It writes
// the table to ECNTUNE_TWIN_PIPELINE_OUT (default: the test log) and
// fails on no figure; the bars are the issue's, read off the table.
//
//	ECNTUNE_TWIN_BUDGET        the fit's budget (default 2m)
//	ECNTUNE_TWIN_TRAIN_BUDGET  the fine-tuning's budget (default 3m)
//	ECNTUNE_TWIN_SEEDS         seeds of the evaluation on the truth (default 10)
//	ECNTUNE_TWIN_TRAIN_REWARD  the fine-tuning's --reward (default: none, the
//	                           starting model's reward with its ground truth)
//	ECNTUNE_TWIN_PIPELINE_KEEP a directory to keep each scenario's twin, report,
//	                           registry and eval summary in (DIR/twin-NAME)
//	ECNTUNE_TWIN_RUNNING       a duration: the agent starts on traffic running
//	                           that long already, as on a production fabric (the
//	                           shadow runs the truth that much longer and the twin
//	                           reads its last intervals; for stationary scenarios)
func TestTwinPipeline(t *testing.T) {
	files := os.Getenv("ECNTUNE_TWIN_PIPELINE")
	if files == "" {
		t.Skip("set ECNTUNE_TWIN_PIPELINE=a.yaml,b.yaml to run shadow → twin → train --twin → eval on them")
	}
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	fitBudget, trainBudget, seeds := env("ECNTUNE_TWIN_BUDGET", "2m"), env("ECNTUNE_TWIN_TRAIN_BUDGET", "3m"), env("ECNTUNE_TWIN_SEEDS", "10")
	var table []string
	table = append(table, "| scenario | built-in model: frontier ratio [95% CI] | default policy (before fitting) | fine-tuned on its twin (from; changes per queue per 100 intervals past the first 10, flaps a run) | fine-tuned behind the shipped guardrails (changes, flaps) | promoted (judged behind the guardrails on the twin, 10 seeds, and its rival twins) | what runs after the path: the promoted model, else the default policy, behind the guardrails (changes, flaps) | twin fit (largest errors) | times: shadow · twin · train · eval |",
		"| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, f := range strings.Split(files, ",") {
		row := twinPipelineRow(t, f, fitBudget, trainBudget, seeds)
		table = append(table, row)
		t.Log(row)
	}
	out := strings.Join(table, "\n") + "\n"
	if p := os.Getenv("ECNTUNE_TWIN_PIPELINE_OUT"); p != "" {
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("\n%s", out)
}

// twinPipelineRow runs the pipeline on one scenario file and returns its
// table row.
func twinPipelineRow(t *testing.T, file, fitBudget, trainBudget, seeds string) string {
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	truth := loadTruth(t, twinCase{file: abs})
	name := "twin-" + strings.TrimSuffix(filepath.Base(file), ".yaml")
	dir := t.TempDir()
	if keep := os.Getenv("ECNTUNE_TWIN_PIPELINE_KEEP"); keep != "" { // the twin, its report, the registry, the summary
		dir = filepath.Join(keep, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	reg := filepath.Join(dir, "models.db")
	twinFile := filepath.Join(dir, "twin.yaml")

	t0 := time.Now()
	iv := defaultInterval(truth)
	observed := truth
	if v := os.Getenv("ECNTUNE_TWIN_RUNNING"); v != "" {
		// The agent starts on traffic already running: the truth runs that
		// much longer in shadow, and the twin reads only its last duration.
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			t.Fatalf("ECNTUNE_TWIN_RUNNING=%q: want a duration", v)
		}
		observed.Duration += simenv.Time(d.Nanoseconds()) * simenv.Nanosecond
	}
	db := shadowDB(t, observed, iv)
	tShadow := time.Since(t0)

	t0 = time.Now()
	runRoot(t, "twin", "--db", db, "--out", twinFile, "--report", filepath.Join(dir, "report"), "--budget", fitBudget, "--seed", "3",
		"--intervals", strconv.Itoa(int(truth.Duration.Duration()/iv)))
	tTwin := time.Since(t0)

	loop := guardedConfig(t, dir, "guarded.yaml", "model:"+name)
	shipped := guardedConfig(t, dir, "shipped.yaml", policy.DefaultSpec)
	t0 = time.Now()
	args := []string{"train", "--twin", twinFile, "--budget", trainBudget, "--db", reg, "--name", name, "--agent", strings.TrimPrefix(loop, "agent:")}
	if w := os.Getenv("ECNTUNE_TWIN_TRAIN_REWARD"); w != "" {
		args = append(args, "--reward", w)
	}
	for k := 1; ; k++ { // the rival twins ecntune twin wrote
		rv := rivalPath(twinFile, k)
		if _, err := os.Stat(rv); err != nil {
			break
		}
		args = append(args, "--rival", rv)
	}
	runRoot(t, args...)
	tTrain := time.Since(t0)
	promoted := isPromoted(t, reg, name) + verdictParts(t, reg, name)
	fixed, fixedSays := fixedSetting(t, reg, name)
	promoted += fixedSays

	t0 = time.Now()
	sum, runs := filepath.Join(dir, "summary.json"), filepath.Join(dir, "runs.json")
	args = []string{"eval", "--scenario", abs, "--policy", "builtin", "--policy", policy.DefaultSpec, "--policy", "model:" + name,
		"--policy", loop, "--policy", shipped, "--db", reg, "--seeds", seeds, "--frontier", "--summary-out", sum, "--json-out", runs,
		// the bare models and the fixed settings at the Pmax switches hold, as the loops run (loop-eval.txt)
		"--pmax-step", "0.01"}
	fixedLoop := ""
	if fixed != "" {
		fixedLoop = guardedConfig(t, dir, "fixed.yaml", strconv.Quote(fixed))
		args = append(args, "--policy", fixedLoop)
	}
	runRoot(t, args...)
	tEval := time.Since(t0)

	ratios := frontierRatios(t, sum)
	churn := loopChurn(t, runs)
	twin, err := scenario.LoadNamed(twinFile)
	if err != nil {
		t.Fatal(err)
	}
	after := shipped
	switch {
	case strings.HasPrefix(promoted, "yes"):
		after = loop
	case fixedLoop != "":
		after = fixedLoop
	}
	return fmt.Sprintf("| %s | %s | %s | %s (%s; %s) | %s (%s) | %s | %s (%s) | %s | %s · %s · %s · %s |", filepath.Base(file),
		ratios["builtin"], ratios[policy.DefaultSpec], ratios["model:"+name], defaultStart(twin.Config), churn["model:"+name],
		ratios[loop], churn[loop], promoted, ratios[after], churn[after],
		fitSummary(t, filepath.Join(dir, "report", "report.json")),
		tShadow.Round(time.Second), tTwin.Round(time.Second), tTrain.Round(time.Second), tEval.Round(time.Second))
}

// guardedConfig writes the agent configuration a loop is measured with
// (examples/eval-agent-builtin.yaml, the shipped guardrails) running spec
// into dir/name, and returns its eval spec (agent:FILE): a model as it
// would run behind the guard.
func guardedConfig(t *testing.T, dir, name, spec string) string {
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "eval-agent-builtin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const line = "\npolicy: builtin\n"
	if !bytes.Contains(data, []byte(line)) {
		t.Fatalf("examples/eval-agent-builtin.yaml: no line %q to put %s in", strings.TrimSpace(line), spec)
	}
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, bytes.Replace(data, []byte(line), []byte("\npolicy: "+spec+"\n"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	return "agent:" + file
}

// loopChurn reads each policy's changes per queue per 100 intervals past
// the first 10 and flaps a run (means over seeds) from eval's --json-out.
// Its flaps are the whole run's (as eval's table prints them), where
// train --twin's churn counts those past the first 10.
func loopChurn(t *testing.T, path string) map[string]string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var runs []eval.Run
	if err := json.Unmarshal(data, &runs); err != nil {
		t.Fatal(err)
	}
	type acc struct {
		n            int
		after, flaps float64
	}
	by := map[string]*acc{}
	for _, r := range runs {
		if r.Loop == nil {
			continue
		}
		a := by[r.Policy]
		if a == nil {
			a = &acc{}
			by[r.Policy] = a
		}
		a.n++
		a.after += r.Loop.ChangesPerQueuePer100After
		a.flaps += float64(r.Loop.Flaps)
	}
	out := map[string]string{}
	for p, a := range by {
		out[p] = fmt.Sprintf("%.2f, %.1f", a.after/float64(a.n), a.flaps/float64(a.n))
	}
	return out
}

// isPromoted says whether the registry has a promoted version of name.
func isPromoted(t *testing.T, reg, name string) string {
	r, err := models.Open(reg, models.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Info(name + "@promoted"); err != nil {
		return "no"
	}
	return "yes"
}

// verdictParts says what the rule said on the twin alone and what the
// rival twins found, from the model's record: " (on the twin alone:
// yes; rivals: small-flow p99 1.03, 0.98)".
func verdictParts(t *testing.T, reg, name string) string {
	rec := loadTwinRecord(t, reg, name)
	alone := rec
	alone.Twin.Rivals = nil
	out := " (on the twin alone: no"
	if alone.verdict().Promote {
		out = " (on the twin alone: yes"
	}
	if len(rec.Twin.Rivals) == 0 {
		return out + "; no rival)"
	}
	var ps []string
	for _, rv := range rec.Twin.Rivals {
		p, g := rv.SmallP99.paired(), rv.Goodput.paired()
		ps = append(ps, fmt.Sprintf("%.2f [%.2f, %.2f] at goodput %.2f", p.Mean, p.Lo, p.Hi, g.Mean))
	}
	return out + "; on its rivals, small-flow p99 over the start's: " + strings.Join(ps, ", ") + ")"
}

// loadTwinRecord reads the evaluation record of model name in the
// registry reg.
func loadTwinRecord(t *testing.T, reg, name string) twinRecord {
	t.Helper()
	m, err := models.Load(reg, name)
	if err != nil {
		t.Fatal(err)
	}
	var rec twinRecord
	if err := json.Unmarshal(m.Eval, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// fixedSetting reads what train --twin said of the fixed setting the
// starting model was behind on the twin: its spec when it recommended it
// ("" otherwise), and the verdict in a few words for the table.
func fixedSetting(t *testing.T, reg, name string) (spec, says string) {
	rec := loadTwinRecord(t, reg, name)
	f := rec.Twin.Fixed
	if f == nil {
		return "", "; the start not behind on the twin: no fixed setting"
	}
	if f.Recommended {
		return f.Policy, fmt.Sprintf("; recommended instead: %s (%.2f on the twin)", f.Policy, f.Judged.Ratio)
	}
	return "", fmt.Sprintf("; %s not recommended (%.2f on the twin)", f.Policy, f.Judged.Ratio)
}

// defaultInterval is eval's default control interval for a scenario
// (gym.IntervalFor: the one it names, else the default for its duration). (It read simulated time as nanoseconds
// before, so the shadow runs of the pipeline decided every 500 µs
// whatever eval's default for the scenario was.)
func defaultInterval(c simenv.Config) time.Duration {
	return gym.IntervalFor(c).Duration()
}

// runRoot runs an ecntune command line in process and returns what it
// printed; an error fails the test with its output.
func runRoot(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&out)
	if err := root.Execute(); err != nil {
		t.Fatalf("ecntune %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	t.Logf("ecntune %s:\n%s", strings.Join(args, " "), out.String())
	return out.String()
}

// frontierRatios reads each policy's frontier ratio and its paired CI
// from an eval summary.
func frontierRatios(t *testing.T, path string) map[string]string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s eval.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range s.Comparisons {
		if c.FrontierRatio == 0 && c.Frontier == "" && c.FixedRun > 0 {
			out[c.Policy] = "beyond the frontier in goodput"
			continue
		}
		if c.FrontierRatio == 0 {
			t.Errorf("%s: no frontier ratio", c.Policy)
			continue
		}
		p := c.PairedVsFrontier
		out[c.Policy] = fmt.Sprintf("%.2f [%.2f, %.2f]", c.FrontierRatio, p.Lo, p.Hi)
	}
	return out
}

// fitSummary is the twin report's three largest errors.
func fitSummary(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("twin report: %v", err)
		return "?"
	}
	return twinLargestErrors(t, data, 3)
}

// twinLargestErrors reads a twin report (report.json) and names its n
// largest errors per statistic, with the mean absolute error of all.
func twinLargestErrors(t *testing.T, data []byte, n int) string {
	type row struct {
		Window              int
		Role, Name          string
		Error               float64
		Observed, Simulated float64
	}
	var r struct{ Rows []row }
	if err := json.Unmarshal(data, &r); err != nil || len(r.Rows) == 0 {
		t.Errorf("twin report: %v (%d rows)", err, len(r.Rows))
		return "?"
	}
	rows := r.Rows
	sum := 0.0
	for _, x := range rows {
		sum += math.Abs(x.Error)
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Compare(math.Abs(b.Error), math.Abs(a.Error))
	})
	parts := []string{fmt.Sprintf("mean abs error %.2f over %d", sum/float64(len(rows)), len(rows))}
	for _, x := range rows[:min(n, len(rows))] {
		parts = append(parts, fmt.Sprintf("%s/%s w%d %+.2f", x.Role, x.Name, x.Window, x.Error))
	}
	return strings.Join(parts, "; ")
}
