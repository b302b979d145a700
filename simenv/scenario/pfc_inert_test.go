package scenario

import (
	"strings"
	"testing"
)

// pfc keys that would do nothing: formula beside headroom (headroom sets
// every lossless PG's) is refused; headroom, formula and xon_offset with
// PFC off are warned about (no headroom, no PAUSE: they are legal, inert).
func TestPFCInertKeys(t *testing.T) {
	dir := writeFiles(t, map[string]string{"ws.txt": testCDF})
	if _, err := Parse([]byte(baseScenario+"pfc: {headroom: 100KB, formula: hpcc}\n"), dir, "b.yaml"); err == nil ||
		!strings.Contains(err.Error(), "pfc.formula") || !strings.Contains(err.Error(), "pfc.headroom") {
		t.Errorf("formula beside headroom: %v", err)
	}
	for _, tc := range []struct {
		pfc  string
		want []string // in the one pfc warning; none when empty
	}{
		{"{enabled: false, headroom: 100KB, xon_offset: 4KiB}", []string{"pfc.headroom 100KB", "pfc.xon_offset 4.096KB", "PFC off"}},
		{"{enabled: false, formula: hpcc}", []string{"pfc.formula hpcc", "PFC off"}},
		{"{enabled: false, alpha: 0.5}", nil}, // alpha sets the lossy drop threshold
		{"{enabled: false}", nil},
		{"{enabled: true, headroom: 100KB, xon_offset: 4KiB}", nil},
	} {
		cfg, err := Parse([]byte(baseScenario+"pfc: "+tc.pfc+"\n"), dir, "a.yaml")
		if err != nil {
			t.Errorf("pfc: %s: %v", tc.pfc, err)
			continue
		}
		var got []string
		for _, w := range Warnings(cfg) {
			if strings.Contains(w, "PFC off") {
				got = append(got, w)
			}
		}
		if len(tc.want) == 0 {
			if len(got) != 0 {
				t.Errorf("pfc: %s: warnings %q", tc.pfc, got)
			}
			continue
		}
		if len(got) != 1 {
			t.Errorf("pfc: %s: warnings %q, want one", tc.pfc, got)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got[0], w) {
				t.Errorf("pfc: %s: warning %q lacks %q", tc.pfc, got[0], w)
			}
		}
	}
}
