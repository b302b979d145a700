package scenario

import (
	"path/filepath"
	"testing"
)

// BenchmarkLoadHPCCFatTree loads the HPCC paper's fat tree (376 nodes, 480
// links) with its 3,198-flow WebSearch trace.
func BenchmarkLoadHPCCFatTree(b *testing.B) {
	path := filepath.Join(refDir, "config_fat_ws30_dcqcn.txt")
	if _, err := LoadHPCCConfig(path); err != nil {
		b.Fatalf("reference: %v", err)
	}
	for b.Loop() {
		if _, err := LoadHPCCConfig(path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadScenario loads the README's main scenario.
func BenchmarkLoadScenario(b *testing.B) {
	for b.Loop() {
		if _, err := Load("../../scenarios/websearch-50.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}
