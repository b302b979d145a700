package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// phasesScenario is a two-phase scenario: an incast from 0, a second one
// from 2ms.
const phasesScenario = `name: phases
seed: 1
duration: 3ms
topology: {kind: star, hosts: 4, host_rate: 100Gbps, link_delay: 1us, buffer: 32MB}
workloads:
  - {kind: incast, fanin: 2, size: 20KB, every: 200us}
  - {kind: incast, fanin: 3, size: 20KB, every: 200us, start: 2ms}
`

// A --duration that ends before a workload starts says so, in sim and
// eval, as the scenario file would refuse it; so does a schedule entry
// eval's runs end before.
func TestDurationBeforeAWorkloadIsSaid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "phases.yaml")
	if err := os.WriteFile(path, []byte(phasesScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = "warning: phases: workloads[1] (incast) starts at 2ms, when the 1ms run has ended: it never runs (give --duration above 2ms)"
	_, errOut, err := runSim(t, "--scenario", path, "--duration", "1ms")
	if err != nil || !strings.Contains(errOut, want) {
		t.Errorf("sim --duration 1ms: %v, stderr %q; want %q", err, errOut, want)
	}
	if _, errOut, err := runSim(t, "--scenario", path, "--duration", "2.5ms"); err != nil || strings.Contains(errOut, "never runs") {
		t.Errorf("sim --duration 2.5ms: %v, stderr %q; want no note", err, errOut)
	}

	c := newEvalCmd()
	var stdout, stderr bytes.Buffer
	c.SetOut(&stdout)
	c.SetErr(&stderr)
	c.SilenceUsage, c.SilenceErrors = true, true
	c.SetArgs([]string{"--scenario", path, "--duration", "1ms", "--interval", "100us", "--seeds", "1",
		"--policy", "static:hpcc", "--policy", "schedule:hpcc,500us=nvidia,2ms=hpcc"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{strings.Replace(want, "phases:", "phases@1ms:", 1), "warning: schedule:hpcc,500us=nvidia,2ms=hpcc: entry 3 (at 2ms) starts when the 1ms runs (--duration) have ended: it never applies"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("eval --duration 1ms: stderr %q; want %q", stderr.String(), w)
		}
	}
	if strings.Contains(stderr.String(), "entry 2") {
		t.Errorf("eval: an entry within the run is noted: %q", stderr.String())
	}
}

// sim does not apply a scenario's warmup, as eval does, and says so with
// what it counts; without a warmup nothing is said.
func TestSimSaysItIgnoresWarmup(t *testing.T) {
	dir := t.TempDir()
	with := filepath.Join(dir, "wu.yaml")
	if err := os.WriteFile(with, []byte(strings.Replace(phasesScenario, "duration: 3ms\n", "duration: 3ms\nwarmup: 1ms\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := runSim(t, "--scenario", with)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`note: phases: the scenario's warmup 1ms is not applied by sim: its figures count all \d+ flows, \d+ of which started before it \(eval leaves those out\)`).MatchString(errOut) {
		t.Errorf("stderr %q; want the warmup note", errOut)
	}
	without := filepath.Join(dir, "nowu.yaml")
	if err := os.WriteFile(without, []byte(phasesScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := runSim(t, "--scenario", without); err != nil || strings.Contains(errOut, "warmup") {
		t.Errorf("no warmup: %v, stderr %q", err, errOut)
	}
}
