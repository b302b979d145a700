package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/cmd/ecntune/internal/loop"
	"github.com/ecntune/ecntune/policy"
)

// writeTinyScenario writes tinyTrainScenario (a 1 ms, 4-host star) to a
// file and returns its path.
// evalOneRun runs eval --json on scenario file sc with one policy and one
// seed (and args) and returns its one run.
func evalOneRun(t *testing.T, sc, policy string, args ...string) map[string]any {
	t.Helper()
	js, err := runCmd(t, newEvalCmd(), append([]string{"--scenario", sc, "--policy", policy, "--seeds", "1", "--json"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var runs []map[string]any
	if err := json.Unmarshal([]byte(js), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("eval json (%v): %s", err, js)
	}
	return runs[0]
}

func writeTinyScenario(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tiny.yaml")
	if err := os.WriteFile(p, []byte(tinyTrainScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkPNG fails unless b decodes as a PNG of at least 600×400 pixels.
func checkPNG(t *testing.T, what string, b []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: not a PNG (%d bytes): %v", what, len(b), err)
	}
	if s := img.Bounds().Size(); s.X < 600 || s.Y < 400 || len(b) < 5000 {
		t.Fatalf("%s: %dx%d pixels, %d bytes", what, s.X, s.Y, len(b))
	}
}

// TestEvalPlotReport: eval --plot DIR writes, per scenario, NAME-cdf.png
// and NAME-p99.png (the NAME@DURATION label made file-safe) and nothing
// else; --report FILE writes an HTML page naming the scenario and every
// policy, with both plots embedded as PNGs.
func TestEvalPlotReport(t *testing.T) {
	sc := writeTinyScenario(t)
	dir := t.TempDir()
	plots, report := filepath.Join(dir, "plots"), filepath.Join(dir, "report.html")
	policies := []string{"static:hpcc", "adaptive"}
	out, err := runCmd(t, newEvalCmd(), "--scenario", sc, "--policy", policies[0], "--policy", policies[1], "--seeds", "2",
		"--duration", "2ms", "--interval", "100us", "--plot", plots, "--report", report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "scenario tiny-train@2ms (2 seeds") {
		t.Fatalf("text output:\n%s", out)
	}
	ents, err := os.ReadDir(plots)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if want := []string{"tiny-train_2ms-cdf.png", "tiny-train_2ms-p99.png"}; strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("--plot wrote %v, want %v", names, want)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(plots, n))
		if err != nil {
			t.Fatal(err)
		}
		checkPNG(t, n, b)
	}

	page, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	h := html.UnescapeString(string(page))
	if !strings.HasPrefix(h, "<!DOCTYPE html>") || !strings.Contains(h, "<h2>tiny-train@2ms</h2>") {
		t.Fatalf("report lacks the scenario heading:\n%.2000s", h)
	}
	// The scenario's first table has one row per policy.
	table, _, _ := strings.Cut(h[strings.Index(h, "<h2>tiny-train@2ms</h2>"):], "</table>")
	for _, p := range policies {
		if strings.Count(table, "<tr><td>"+p+"</td>") != 1 {
			t.Errorf("report's table has no row for policy %s:\n%s", p, table)
		}
	}
	imgs := regexp.MustCompile(`<img src="data:image/png;base64,([^"]+)"`).FindAllStringSubmatch(h, -1)
	if len(imgs) != 4 {
		t.Fatalf("report embeds %d PNGs, want 4 (CDF, p99 and a queue heatmap per policy)", len(imgs))
	}
	for i, m := range imgs {
		b, err := base64.StdEncoding.DecodeString(m[1])
		if err != nil {
			t.Fatalf("embedded image %d: %v", i, err)
		}
		if i < 2 {
			checkPNG(t, "embedded image", b)
			continue
		}
		// A queue heatmap; of this tiny run's idle queues, the word "idle"
		// in a picture of the heatmap's width.
		if img, err := png.Decode(bytes.NewReader(b)); err != nil || img.Bounds().Dx() < 600 {
			t.Fatalf("embedded heatmap %d: %v", i, err)
		}
	}
}

// TestEvalJSONShape: with --duration, eval --json objects name the
// scenario as sim --json does (its own name, not NAME@DURATION), carry the
// duration in sim_time_s as sim --json does, and hold every key of sim
// --json's object besides "policy".
func TestEvalJSONShape(t *testing.T) {
	sc := writeTinyScenario(t)
	simOut, err := runCmd(t, newSimCmd(), "--scenario", sc, "--duration", "2ms", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var sim map[string]any
	if err := json.Unmarshal([]byte(simOut), &sim); err != nil {
		t.Fatal(err)
	}
	if sim["scenario"] != "tiny-train" || sim["sim_time_s"] != 0.002 {
		t.Fatalf("sim --json: scenario %v, sim_time_s %v", sim["scenario"], sim["sim_time_s"])
	}
	js, err := runCmd(t, newEvalCmd(), "--scenario", sc, "--policy", "static:hpcc", "--policy", "adaptive", "--seeds", "2",
		"--duration", "2ms", "--interval", "100us", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var runs []map[string]any
	if err := json.Unmarshal([]byte(js), &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 4 {
		t.Fatalf("%d objects, want 4 (2 policies x 2 seeds)", len(runs))
	}
	for i, r := range runs {
		if r["scenario"] != sim["scenario"] || r["sim_time_s"] != sim["sim_time_s"] || r["policy"] != []string{"static:hpcc", "adaptive"}[i/2] {
			t.Errorf("object %d: scenario %v, sim_time_s %v, policy %v; want %v, %v", i, r["scenario"], r["sim_time_s"], r["policy"],
				sim["scenario"], sim["sim_time_s"])
		}
		for k := range sim {
			if _, ok := r[k]; !ok {
				t.Errorf("object %d lacks sim --json's key %q", i, k)
			}
		}
		for b := range sim["fct_slowdown"].(map[string]any) {
			if _, ok := r["fct_slowdown"].(map[string]any)[b]; !ok {
				t.Errorf("object %d lacks sim --json's fct_slowdown bucket %q", i, b)
			}
		}
	}
	// --json-out: the same objects in a file, the text tables on stdout;
	// --summary-out: the comparisons and the fixed settings.
	file := filepath.Join(t.TempDir(), "runs.json")
	sumFile := filepath.Join(t.TempDir(), "summary.json")
	text, err := runCmd(t, newEvalCmd(), "--scenario", sc, "--policy", "static:hpcc", "--policy", "adaptive", "--seeds", "2",
		"--duration", "2ms", "--interval", "100us", "--json-out", file, "--summary-out", sumFile)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var fromFile []map[string]any
	if err := json.Unmarshal(data, &fromFile); err != nil || len(fromFile) != 4 || !strings.Contains(text, "static:hpcc") || strings.HasPrefix(text, "[") {
		t.Fatalf("--json-out: %d objects (%v), text %.80q", len(fromFile), err, text)
	}
	data, err = os.ReadFile(sumFile)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Comparisons []struct {
			Policy     string `json:"policy"`
			BestPreset string `json:"best_preset"`
		} `json:"comparisons"`
		FixedSettings []struct {
			Setting    string  `json:"setting"`
			SmallP99   float64 `json:"small_flow_p99"`
			OnFrontier bool    `json:"on_frontier"`
		} `json:"fixed_settings"`
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatalf("--summary-out: %v\n%s", err, data)
	}
	if len(sum.Comparisons) != 1 || sum.Comparisons[0].BestPreset != "static:hpcc" || sum.Comparisons[0].Policy != "adaptive" ||
		len(sum.FixedSettings) != 1 || sum.FixedSettings[0].Setting != "static:hpcc" || !sum.FixedSettings[0].OnFrontier ||
		!(sum.FixedSettings[0].SmallP99 > 0) {
		t.Fatalf("--summary-out: %s", data)
	}
}

// eval takes ns-3 HPCC configs as sim does, named as sim names them.
func TestEvalHPCCConfig(t *testing.T) {
	out, err := runCmd(t, newEvalCmd(), "--hpcc-config", "../../testdata/ns3-hpcc/config_star_incast2_dcqcn.txt",
		"--policy", "static:hpcc", "--seeds", "1", "--duration", "1ms")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "scenario star_incast2_dcqcn@1ms (1 seed") || !strings.Contains(out, "static:hpcc") {
		t.Fatalf("output:\n%s", out)
	}
	if _, err := runCmd(t, newEvalCmd(), "--policy", "static:hpcc"); err == nil || !strings.Contains(err.Error(), "no --scenario or --hpcc-config given") {
		t.Errorf("no input: %v", err)
	}
}

// --warmup takes a time or "interval", records what it applied in the
// JSON, and refuses anything else with the flag named.
func TestEvalWarmupFlag(t *testing.T) {
	sc := writeTinyScenario(t)
	js, err := runCmd(t, newEvalCmd(), "--scenario", sc, "--policy", "static:hpcc", "--seeds", "1",
		"--duration", "2ms", "--interval", "100us", "--warmup", "interval", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var runs []map[string]any
	if err := json.Unmarshal([]byte(js), &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) == 0 || runs[0]["warmup_us"] != 100.0 {
		t.Fatalf("runs %v: want warmup_us 100", runs)
	}
	for _, bad := range []string{"soon", "-1ms"} {
		if _, err := runCmd(t, newEvalCmd(), "--scenario", sc, "--policy", "static:hpcc", "--warmup", bad); err == nil || !strings.Contains(err.Error(), "--warmup") {
			t.Errorf("--warmup %s: %v", bad, err)
		}
	}
}

// --stretch N runs each scenario N times as long at the interval its
// written duration gives: N times the decisions, N times the simulated
// time; it refuses 0 and --duration beside it.
func TestEvalStretch(t *testing.T) {
	sc := writeTinyScenario(t)
	one, three := evalOneRun(t, sc, "builtin"), evalOneRun(t, sc, "builtin", "--stretch", "3")
	if d1, d3 := one["decisions"].(float64), three["decisions"].(float64); d1 < 20 || d3 != 3*d1 {
		t.Fatalf("decisions %v, stretched 3 times %v: want 3 times as many at the same interval", d1, d3)
	}
	if s1, s3 := one["sim_time_s"].(float64), three["sim_time_s"].(float64); math.Abs(s3-3*s1) > 1e-9 {
		t.Fatalf("simulated time %v, stretched %v", s1, s3)
	}
	out, err := runCmd(t, newEvalCmd(), "--scenario", sc, "--policy", "static:hpcc", "--seeds", "1", "--stretch", "2")
	if err != nil || !strings.Contains(out, "@x2") {
		t.Fatalf("%v: output without the @x2 label:\n%s", err, out)
	}
	for _, bad := range [][]string{{"--stretch", "0"}, {"--stretch", "2", "--duration", "1ms"}} {
		if _, err := runCmd(t, newEvalCmd(), append([]string{"--scenario", sc, "--policy", "static:hpcc"}, bad...)...); err == nil || !strings.Contains(err.Error(), "--stretch") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// --stretch stretches the workloads' start and end with the run: a
// scenario whose workloads end where it does ran 24 decisions at
// --stretch 4 as unstretched (the fabric fell idle at the written end).
func TestEvalStretchesWorkloadWindows(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ends.yaml")
	src := strings.Replace(tinyTrainScenario, "every: 150us}", "every: 150us, end: 1ms}", 1)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	one, four := evalOneRun(t, p, "static:hpcc"), evalOneRun(t, p, "static:hpcc", "--stretch", "4")
	if d1, d4 := one["decisions"].(float64), four["decisions"].(float64); d1 < 10 || d4 < 3.5*d1 {
		t.Fatalf("decisions %v, stretched 4 times %v: want about 4 times as many", d1, d4)
	}
}

// A bad agent:FILE (missing, refused by the configuration's checks, a
// suffix other than shadow, a model its policy names that is not there)
// is refused before any simulation, named by its --policy: eval.RunAll
// reports a run's error only after every run (hours on a frontier
// evaluation). The shipped loop files pass the same check.
func TestEvalRefusesBadAgentFileFirst(t *testing.T) {
	dir := t.TempDir()
	sc := writeTinyScenario(t)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok, err := os.ReadFile(filepath.Join("..", "..", "examples", "eval-agent-builtin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mode := write("mode.yaml", strings.Replace(string(ok), "mode: closed-loop", "mode: something-else", 1))
	hold := write("hold.yaml", strings.Replace(string(ok), "min-hold: 5s", `min-hold: "abc"`, 1))
	model := write("model.yaml", strings.Replace(string(ok), "policy: builtin", "policy: model:nope", 1))
	good := write("good.yaml", string(ok))
	for _, c := range []struct{ spec, want string }{
		{"agent:" + filepath.Join(dir, "missing.yaml"), "no such file"},
		{"agent:" + mode, `mode: "something-else" is not allowed`},
		{"agent:" + hold, `guardrails.min-hold: cannot parse duration "abc"`},
		{"agent:" + good + ",bogus", `"bogus" after the file`},
		{"agent:" + model, `policy "model:nope": no registry at`},
	} {
		_, err := runCmd(t, newEvalCmd(), "--scenario", sc, "--duration", "200us", "--seeds", "1",
			"--db", filepath.Join(dir, "none.db"), "--policy", "fixed:100KB/200KB/1%", "--policy", c.spec)
		if err == nil || !strings.HasPrefix(err.Error(), "--policy "+c.spec+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it refused first (--policy %s: ...%s...)", c.spec, err, c.spec, c.want)
		}
	}
	for _, f := range []string{"eval-agent-builtin.yaml", "eval-agent-demo.yaml"} {
		spec := "agent:" + filepath.Join("..", "..", "examples", f)
		if err := loop.CheckSpec(spec, func(string) policy.Resolver { return policy.Resolver{} }); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
		if err := loop.CheckSpec(spec+",shadow", func(string) policy.Resolver { return policy.Resolver{} }); err != nil {
			t.Errorf("%s,shadow: %v", spec, err)
		}
	}
}

// An output eval cannot write is refused before any simulation runs (it
// was found after them, and the results were lost); a writable one is
// written beside the tables on stdout.
func TestEvalOutputsCheckedFirst(t *testing.T) {
	sc := writeTinyScenario(t)
	for _, c := range []struct{ flag, path, want string }{
		{"--summary-out", "/proc/ecntune-nosuch/s.json", "--summary-out /proc/ecntune-nosuch/s.json: cannot write in /proc"},
		{"--json-out", "/proc/ecntune-nosuch/r.json", "cannot write in /proc"},
		{"--report", "/proc/ecntune-nosuch/r.html", "cannot write in /proc"},
		{"--plot", "/proc/ecntune-nosuch", "cannot write in /proc"},
		{"--loop-audit", "/proc/ecntune-nosuch", "cannot write in /proc"},
	} {
		out, err := runCmd(t, newEvalCmd(), "--scenario", sc, "--policy", "static:hpcc", "--seeds", "1", c.flag, c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || out != "" {
			t.Errorf("%s %s: %v, stdout %q: want %q before any run", c.flag, c.path, err, out, c.want)
		}
	}
	// two outputs on one path: refused (the last written replaced the other)
	same := filepath.Join(t.TempDir(), "same.json")
	if out, err := runCmd(t, newEvalCmd(), "--scenario", sc, "--policy", "static:hpcc", "--seeds", "1", "--json-out", same, "--summary-out", same); err == nil ||
		!strings.Contains(err.Error(), "--json-out and --summary-out both name") || out != "" {
		t.Errorf("one path for two outputs: %v, stdout %q", err, out)
	}
	// folders that do not exist yet are made (the pre-check let them
	// pass, then the run's files were lost after it)
	dir := t.TempDir()
	p, j := filepath.Join(dir, "new", "s.json"), filepath.Join(dir, "new2", "deeper", "j.json")
	out, err := runCmd(t, newEvalCmd(), "--scenario", sc, "--policy", "static:hpcc", "--seeds", "1", "--summary-out", p, "--json-out", j)
	_, serr := os.Stat(p)
	_, jerr := os.Stat(j)
	if err != nil || serr != nil || jerr != nil || !strings.Contains(out, "static:hpcc") {
		t.Fatalf("a writable --summary-out and --json-out in new folders: %v, %v, %v\n%s", err, serr, jerr, out)
	}
}

// Scenario names that differ only in characters a file name cannot hold
// get plots of their own, not each other's.
func TestEvalPlotNamesDoNotCollide(t *testing.T) {
	dir := t.TempDir()
	var args []string
	for i, name := range []string{"inc ast", "inc_ast"} {
		p := filepath.Join(dir, fmt.Sprintf("s%d.yaml", i))
		if err := os.WriteFile(p, []byte(strings.Replace(tinyTrainScenario, "name: tiny-train", "name: "+name, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--scenario", p)
	}
	plots := filepath.Join(dir, "plots")
	if _, err := runCmd(t, newEvalCmd(), append(args, "--policy", "static:hpcc", "--seeds", "1", "--duration", "1ms", "--plot", plots)...); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(plots)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 4 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("--plot wrote %v for two scenarios, want 4 files", names)
	}
}

// A Ctrl-C during eval says how far it got and that nothing was written,
// and exits 130 (it ended silently).
func TestEvalInterruptSaysSo(t *testing.T) {
	sc := writeTinyScenario(t)
	oldSig, oldExit := trainSignals, trainExit
	t.Cleanup(func() { trainSignals, trainExit = oldSig, oldExit })
	trainSignals = func(ch chan<- os.Signal) func() {
		ch <- os.Interrupt // at once: before any simulation ends
		return func() {}
	}
	code := make(chan int, 1)
	trainExit = func(c int) { code <- c }
	c := newEvalCmd()
	var errOut syncBuffer
	c.SetErr(&errOut)
	c.SetOut(io.Discard)
	c.SetArgs([]string{"--scenario", sc, "--policy", "static:hpcc", "--seeds", "1"})
	c.Execute()
	select {
	case got := <-code:
		if got != 130 {
			t.Fatalf("exit %d", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit on Ctrl-C")
	}
	if !strings.Contains(errOut.String(), "eval: interrupted after ") || !strings.Contains(errOut.String(), "no file written") {
		t.Fatalf("stderr: %s", errOut.String())
	}
}

// A loop's audit file is named after the scenario made a file name, in the
// --loop-audit folder: a scenario named ../../pwned wrote two levels up.
func TestLoopAuditStaysInDir(t *testing.T) {
	root := t.TempDir()
	sc := filepath.Join(root, "s.yaml")
	if err := os.WriteFile(sc, []byte(strings.Replace(tinyTrainScenario, "name: tiny-train", "name: ../../pwned", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(root, "a", "b", "audit")
	if _, err := runCmd(t, newEvalCmd(), "--scenario", sc, "--policy", "agent:../../examples/eval-agent-builtin.yaml", "--seeds", "1", "--duration", "1ms", "--loop-audit", audit); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(audit)
	if len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), ".._.._pwned_") {
		t.Fatalf("audit files in %s: %v", audit, ents)
	}
	if m, _ := filepath.Glob(filepath.Join(root, "a", "pwned_*")); len(m) != 0 {
		t.Fatalf("written outside --loop-audit: %v", m)
	}
}
