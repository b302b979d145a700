package fleetsoak

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRecheckKeptEvidence runs the guard's checks again on the evidence a
// soak kept (ECNTUNE_FLEETSOAK_RECHECK=DIR, the soak's
// ECNTUNE_FLEETSOAK_KEEP: its members' agent dbs and the set log), so
// that a checker fixed after a 30-minute run judges that run's audit.
func TestRecheckKeptEvidence(t *testing.T) {
	dir := os.Getenv("ECNTUNE_FLEETSOAK_RECHECK")
	if dir == "" {
		t.Skip("ECNTUNE_FLEETSOAK_RECHECK=DIR rechecks a kept soak")
	}
	dbs, err := filepath.Glob(filepath.Join(dir, "agent-*.db"))
	if err != nil || len(dbs) == 0 {
		t.Fatalf("no agent-*.db in %s (%v)", dir, err)
	}
	names := make([]string, len(dbs))
	for i, db := range dbs {
		names[i] = strings.TrimSuffix(filepath.Base(db), ".db")
	}
	a, err := readAudit(names, dbs)
	if err != nil {
		t.Fatal(err)
	}
	log, err := readSetLog(filepath.Join(dir, "sets.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	minHold := 2 * time.Second
	if s := os.Getenv("ECNTUNE_FLEETSOAK_MINHOLD"); s != "" {
		if minHold, err = time.ParseDuration(s); err != nil {
			t.Fatal(err)
		}
	}
	r := guardRules(a, log, minHold, 500*time.Millisecond) // the soak's interval (Config.Interval)
	t.Logf("%s: %s", dir, r)
	for _, v := range r.All() {
		t.Error(v)
	}
}
