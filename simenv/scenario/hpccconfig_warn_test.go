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
