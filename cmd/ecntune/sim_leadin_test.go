package main

import (
	"strings"
	"testing"
)

// ns-3's single-flow experiment starts its flow at 2 s: a --duration that
// ends before says so and what duration reaches it, and the full run's
// utilisation is given from the first flow's start as well.
func TestSimSaysWhenTheFlowFileStarts(t *testing.T) {
	cfg := "../../testdata/ns3-hpcc/config_star_single1MB_dcqcn.txt"
	out, errOut, err := runSim(t, "--hpcc-config", cfg, "--duration", "2ms")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "the flow file's first flow starts at 2s, after --duration 2ms ends: no flow starts") ||
		!strings.Contains(errOut, "--duration 2.001s or more") {
		t.Errorf("stderr:\n%s", errOut)
	}
	if !strings.Contains(out, "0 started") {
		t.Errorf("stdout:\n%s", out)
	}
	out, _, err = runSim(t, "--hpcc-config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "from the first flow's start at 2s") || !strings.Contains(out, "idle lead-in") {
		t.Errorf("utilisation of the full run:\n%s", out)
	}
}
