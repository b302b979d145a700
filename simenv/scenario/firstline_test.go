package scenario

import (
	"strings"
	"testing"
)

// shadowLike is shaped like /etc/shadow: nothing a loader expects.
const shadowLike = "root:$6$SECRETHASH:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n"

// TestNoFileContentInErrors: a file that is not of the kind expected is
// refused with the line and what was wanted, never with its content.
func TestNoFileContentInErrors(t *testing.T) {
	for name, parse := range map[string]func([]byte) error{
		"scenario": func(b []byte) error { _, err := Parse(b, "", "f"); return err },
		"cdf":      func(b []byte) error { _, err := ParseCDF(b, "f"); return err },
		"topology": func(b []byte) error { _, err := ParseHPCCTopology(b, "f"); return err },
		"flows":    func(b []byte) error { _, err := ParseFlowFile(b, "f"); return err },
		"ns-3 config": func(b []byte) error {
			_, err := ParseHPCCConfig(b, "", "f")
			return err
		},
	} {
		err := parse([]byte(shadowLike))
		if err == nil || strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "root") || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestValuesStillQuotedOnceTheFileIsKnown: after a first valid line, a
// bad value is still quoted, so a typo can be found.
func TestValuesStillQuotedOnceTheFileIsKnown(t *testing.T) {
	if _, err := ParseCDF([]byte("0 0\n100 x50\n"), "f"); err == nil || !strings.Contains(err.Error(), `"100 x50"`) {
		t.Errorf("cdf: %v", err)
	}
	if _, err := ParseHPCCConfig([]byte("CC_MODE 1\nKMAX_MAPP 1\n"), "", "f"); err == nil || !strings.Contains(err.Error(), `"KMAX_MAPP"`) {
		t.Errorf("ns-3 config: %v", err)
	}
	if _, err := ParseHPCCTopology([]byte("4 1 x3\n"), "f"); err == nil || !strings.Contains(err.Error(), `"x3"`) {
		t.Errorf("topology: %v", err)
	}
}
