package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A scenario file that is not there gets the nearby names: a misspelt
// name in its folder, or the file of that name in a subfolder.
func TestMissingScenarioSuggests(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"websearch-50.yaml", "websearch-70.yaml", "star-incast.yaml", "heldout/timevarying.yaml", "notes.txt"} {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("name: x\n"), 0o644)
	}
	for _, c := range []struct{ missing, want string }{
		{"websearch-5.yaml", "did you mean " + filepath.Join(dir, "websearch-50.yaml")},
		{"star-incats.yaml", "did you mean " + filepath.Join(dir, "star-incast.yaml")},
		{"timevarying.yaml", "did you mean " + filepath.Join(dir, "heldout", "timevarying.yaml")},
	} {
		_, err := Load(filepath.Join(dir, c.missing))
		if err == nil || !strings.Contains(err.Error(), "cannot read scenario") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.missing, err, c.want)
		}
	}
	if _, err := Load(filepath.Join(dir, "zzzzzzzzzzzz.yaml")); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("nothing near: %v", err)
	}
}
