package scenario

import (
	"strings"
	"testing"
)

// Keys read but ignored are named, with their lines, in two warnings.
func TestHPCCConfigWarnsIgnoredKeys(t *testing.T) {
	_, w, err := LoadHPCCConfigWarn("../../testdata/ns3-hpcc/config_fat_ws30_dcqcn.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 2 || !strings.Contains(w[0], "QLEN_MON_FILE (line 45)") || !strings.Contains(w[1], "U_TARGET (line 30)") {
		t.Errorf("warnings %q", w)
	}
}

// Lines after the flows a flow file declares are ignored, as ns-3 does,
// and said so with their line.
func TestHPCCConfigWarnsFlowsPastCount(t *testing.T) {
	dir := writeFiles(t, map[string]string{"topo.txt": testTopo, "flows.txt": "1\n1 2 3 100 1000 2\n2 1 3 100 1000 2\n"})
	cfg, w, err := ParseHPCCConfigWarn([]byte(hpccWith(nil)), dir, "c.txt")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cfg.Workloads[0].Flows); n != 1 {
		t.Errorf("%d flows, want the 1 declared", n)
	}
	want := "flows.txt: line 3: 1 more line after the 1 flow declared on line 1; ignored, as ns-3 does"
	if len(w) != 1 || !strings.Contains(w[0], want) {
		t.Errorf("warnings %q, want one with %q", w, want)
	}
	dir = writeFiles(t, map[string]string{"topo.txt": testTopo, "flows.txt": testFlows + "\n\n"})
	if _, w, err := ParseHPCCConfigWarn([]byte(hpccWith(nil)), dir, "c.txt"); err != nil || len(w) != 0 {
		t.Errorf("blank lines after the flows: warnings %q, %v", w, err)
	}
}

// ENABLE_QCN 0 turns switch marking off: a warning says the ECN settings,
// a policy's too, change nothing, and no threshold is warned about.
func TestWarningsECNOff(t *testing.T) {
	dir := writeFiles(t, map[string]string{"topo.txt": testTopo, "flows.txt": testFlows})
	cfg, err := ParseHPCCConfig([]byte(hpccWith(nil, "ENABLE_QCN 0")), dir, "c.txt")
	if err != nil {
		t.Fatal(err)
	}
	cfg.ECN.KminBytes = 100 // below one MTU: a warning with marking on
	w := Warnings(cfg)
	if len(w) == 0 || !strings.Contains(w[0], "ECN marking is off") {
		t.Errorf("warnings %q", w)
	}
	for _, x := range w {
		if strings.Contains(x, "kmin") {
			t.Errorf("a threshold warned about with marking off: %q", x)
		}
	}
}
