package eval

import (
	"strings"
	"testing"
)

// The notes name the fixed settings that ran: under --pmax-step 0.01 the
// grid's two 0.3% points run as the 1% ones and are left out (22, not the
// 24 the notes printed whatever ran).
func TestNotesCountTheFixedSettingsThatRan(t *testing.T) {
	whole, held := (&Result{}).fixedSettings(), (&Result{PmaxStep: 0.01}).fixedSettings()
	if whole != 24 || held != 22 {
		t.Fatalf("fixed settings: %d as decided, %d at whole percents; want 24 and 22", whole, held)
	}
	r := &Result{PmaxStep: 0.01, FixedSettings: held}
	if n := r.noFrontierNote(); !strings.Contains(n, "run --frontier for the frontier's 22") {
		t.Fatalf("the note without --frontier:\n%s", n)
	}
	if n := r.catalogueSettings(); n != 14 {
		t.Fatalf("catalogue settings at whole percents: %d, want 14", n)
	}
}
