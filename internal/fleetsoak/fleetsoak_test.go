package fleetsoak

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/internal/childproc"
)

// TestFleetSoak runs the fleet's fault harness (Run) with real processes
// and fails on any safety violation. By default a short run: 3 agents, 12
// switches, 4 cycles (one of each fault). The environment sets a long one:
//
//	ECNTUNE_FLEETSOAK_CYCLES    fault cycles (100 for the full run)
//	ECNTUNE_FLEETSOAK_SWITCHES  simulated switches (30 for the full run)
//	ECNTUNE_FLEETSOAK_MEMBERS   agents (3)
//	ECNTUNE_FLEETSOAK_TTL       the fleet's ttl (4s, the default)
//	ECNTUNE_FLEETSOAK_MINHOLD   the guard's min-hold (2s)
//	ECNTUNE_FLEETSOAK_KINDS     faults in turn, comma-separated (kill,pause,cut,leader)
//	ECNTUNE_FLEETSOAK_FENCE     1: simswitch refuses stale tokens (--fence)
//	ECNTUNE_FLEETSOAK_KEEP      a directory to keep the evidence and report.txt in
func TestFleetSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the fleet soak runs etcd, simswitch and agents for a minute or more")
	}
	dir := t.TempDir()
	if keep := os.Getenv("ECNTUNE_FLEETSOAK_KEEP"); keep != "" {
		dir = keep
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Dir: dir, Bin: bin, Logf: t.Logf,
		Cycles:   childproc.EnvInt(t, "ECNTUNE_FLEETSOAK_CYCLES", 4),
		Switches: childproc.EnvInt(t, "ECNTUNE_FLEETSOAK_SWITCHES", 12),
		Members:  childproc.EnvInt(t, "ECNTUNE_FLEETSOAK_MEMBERS", 3),
		TTL:      childproc.EnvDur(t, "ECNTUNE_FLEETSOAK_TTL", 4*time.Second),
		MinHold:  childproc.EnvDur(t, "ECNTUNE_FLEETSOAK_MINHOLD", 2*time.Second),
		Fence:    os.Getenv("ECNTUNE_FLEETSOAK_FENCE") == "1",
	}
	if k := os.Getenv("ECNTUNE_FLEETSOAK_KINDS"); k != "" {
		cfg.Kinds = strings.Split(k, ",")
	}
	r, err := Run(cfg)
	if r == nil {
		t.Fatalf("%v (evidence in %s)", err, dir)
	}
	if err != nil {
		t.Errorf("%v (evidence in %s)", err, dir)
	}
	t.Logf("report (%s):\n%s", filepath.Join(dir, "report.txt"), r)
	for _, v := range r.All() {
		t.Error(v)
	}
	// sanity, not timing: the loop wrote, every fault moved switches,
	// and a failover took less than a minute
	if r.Sets == 0 || len(r.SetsBy) < 2 {
		t.Errorf("the soak exercised little: %d Sets by %v", r.Sets, r.SetsBy)
	}
	for _, f := range r.Failovers {
		if f.Owner > time.Minute {
			t.Errorf("failover of %s after %s took %v", f.Switch, f.Kind, f.Owner)
		}
	}
}
