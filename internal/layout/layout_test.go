package layout

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/ecntune/ecntune"

// deps lists the project packages pkg depends on (itself included),
// relative to the module, from go list -deps.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	return project(goList(t, "-deps", "-f", "{{.ImportPath}}", "./"+pkg))
}

// project keeps the module's own packages of paths, relative to the module.
func project(paths []string) []string {
	var out []string
	for _, p := range paths {
		if rel, ok := strings.CutPrefix(p, module+"/"); ok {
			out = append(out, rel)
		}
	}
	return out
}

// imports lists the direct imports of pkg (standard library included).
func imports(t *testing.T, pkg string) []string {
	t.Helper()
	return goList(t, "-f", `{{join .Imports "\n"}}`, "./"+pkg)
}

// touchSources stats every Go file and go.mod of the module once, so that
// go test's result cache (which sees the files a test opens, not what a
// child go list reads) reruns this test when any of them changes.
var touchSources = sync.OnceValue(func() error {
	return filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "../.." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".go") || d.Name() == "go.mod") {
			_, err = os.ReadFile(p)
		}
		return err
	})
})

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	if err := touchSources(); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	return strings.Fields(string(out))
}

// under reports whether pkg is root or a package below it.
func under(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

// world names the side of the house a project package belongs to.
func world(pkg string) string {
	switch {
	case under(pkg, "simenv") || under(pkg, "eval") || under(pkg, "train") || under(pkg, "twin"):
		return "simulator"
	case under(pkg, "agent") || under(pkg, "gnmipath"):
		return "gnmi"
	case under(pkg, "simswitch"):
		return "bridge"
	case under(pkg, "cmd") || pkg == "internal/soak" || pkg == "internal/fleetsoak" || pkg == "internal/simtest" || pkg == "internal/sonictest":
		return "wiring" // the CLI with its benchmark harness and demo, and what tests start (the kill -9 soak and the fleet's, simulated and real switches), put both worlds together
	}
	return "shared"
}

// projectPackages lists every package of the module.
func projectPackages(t *testing.T) []string {
	t.Helper()
	return project(goList(t, "-f", "{{.ImportPath}}", "./..."))
}

func TestTheTwoWorldsNeverMeet(t *testing.T) {
	pkgs := projectPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %v", pkgs)
	}
	for _, p := range pkgs {
		w := world(p)
		if w == "bridge" || w == "wiring" {
			continue
		}
		for _, d := range deps(t, p) {
			dw := world(d)
			switch {
			case w == "shared" && dw != "shared" && d != p:
				t.Errorf("%s (shared by both worlds) depends on %s (%s world)", p, d, dw)
			case w == "simulator" && (dw == "gnmi" || dw == "bridge" || dw == "wiring"):
				t.Errorf("%s (simulator world) depends on %s (%s)", p, d, dw)
			case w == "gnmi" && (dw == "simulator" || dw == "bridge" || dw == "wiring"):
				t.Errorf("%s (gNMI world) depends on %s (%s)", p, d, dw)
			}
		}
	}
}

func TestAgentAndPolicyDoNotLinkTheSimulator(t *testing.T) {
	for _, p := range []string{"agent", "gnmipath", "policy", "env"} {
		for _, d := range deps(t, p) {
			if under(d, "simenv") || d == "eval" || under(d, "train") || d == "simswitch" || under(d, "twin") {
				t.Errorf("%s depends on %s", p, d)
			}
		}
	}
}

func TestSimulatorDependsOnNothingOfTheProject(t *testing.T) {
	for _, d := range deps(t, "simenv") {
		if d != "simenv" {
			t.Errorf("simenv depends on %s", d)
		}
	}
}

func TestVocabularyIsTheBottom(t *testing.T) {
	for _, d := range deps(t, "env") {
		if d != "env" && d != "internal/units" {
			t.Errorf("env depends on %s; the vocabulary may use internal/units only", d)
		}
	}
}

// The pure core does no I/O: no file system, network, process or
// environment access among its direct imports.
func TestPureCoreImportsNoIO(t *testing.T) {
	io := []string{"os", "os/exec", "os/signal", "net", "net/http", "io/ioutil", "io/fs", "syscall", "path/filepath", "log", "log/slog"}
	for _, p := range []string{"env", "simenv", "policy", "policy/nn", "train/rl"} {
		for _, d := range imports(t, p) {
			if slices.Contains(io, d) {
				t.Errorf("%s imports %s; the pure core does no I/O", p, d)
			}
		}
	}
}

// The runtime decides with plain Go: gorgonia (and the tensor library under
// it) is linked only where models are trained. The agent, the inference
// policies, their network package, the registry, simswitch and eval link
// none of it; only train/rl and train, which train with it, do.
func TestRuntimeLinksNoTrainingLibrary(t *testing.T) {
	for _, p := range []string{"agent", "policy", "policy/nn", "policy/builtin", "models", "simswitch", "eval", "twin"} {
		all := goList(t, "-deps", "-f", "{{.ImportPath}}", "./"+p)
		for _, d := range all {
			if strings.HasPrefix(d, "gorgonia.org/") || strings.HasPrefix(d, "go4.org/unsafe/") {
				t.Errorf("%s links %s; training libraries belong to train/rl and train", p, d)
				break
			}
		}
	}
	if !slices.ContainsFunc(goList(t, "-deps", "-f", "{{.ImportPath}}", "./train/rl"), func(d string) bool { return d == "gorgonia.org/gorgonia" }) {
		t.Error("train/rl no longer links gorgonia: this test checks nothing")
	}
}

// simswitch, the bridge, reads the simulator through simenv/export as the
// training environment does, and links no training: neither simenv/gym nor
// train and train/rl.
func TestBridgeLinksNoTrainingEnvironment(t *testing.T) {
	for _, d := range deps(t, "simswitch") {
		if under(d, "simenv/gym") || under(d, "train") {
			t.Errorf("simswitch depends on %s", d)
		}
	}
}

// layers are the project's packages bottom up. A package may import
// packages of its own layer or below, never above; the two worlds share
// layers 4 and 5 and never meet (TestTheTwoWorldsNeverMeet).
var layers = [][]string{
	// 0 the ground: helpers that know nothing of the project
	{"internal/units", "internal/safeio", "internal/await", "internal/cputime", "internal/chart", "internal/layout", "internal/etcdtest", "internal/etcdrun", "internal/childproc", "scenarios/cdf", "models"},
	// 1 the vocabulary
	{"env"},
	// 2 the inference network, the embedded model, and the codec beside
	// the vocabulary
	{"policy/nn", "policy/builtin", "gnmipath"},
	// 3
	{"policy", "simenv"},
	// 4 the simulator's views; the agent's pure core
	{"simenv/export", "simenv/scenario", "simenv/report", "agent/core"},
	// 5 training environment; the agent's edges
	{"simenv/gym", "agent/config", "agent/journal", "agent/metrics", "agent/fleet"},
	// 6
	{"train/rl", "agent/gnmiclient", "agent/web"},
	// 7 training and evaluation; the agent's driver
	{"train", "agent"},
	// 8 evaluation; the twin fitted to an agent's observations
	{"eval", "twin"},
	// 9 the bridge
	{"simswitch"},
	// 10 what tests of several packages start
	{"internal/simtest", "internal/sonictest", "internal/soak", "internal/fleetsoak", "internal/fleetscale", "internal/fleetscale/etcdmain"},
	// 11 wiring: the harnesses behind ecntune bench and demo, then the CLI
	{"cmd/ecntune/internal/bench", "cmd/ecntune/internal/demo", "cmd/ecntune/internal/loop"},
	{"cmd/ecntune"},
}

// TestLayers checks that every package has a layer and imports nothing
// above it.
func TestLayers(t *testing.T) {
	layer := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			layer[p] = i
		}
	}
	for _, p := range projectPackages(t) {
		lp, ok := layer[p]
		if !ok {
			t.Errorf("%s has no layer: put it in internal/layout's layers", p)
			continue
		}
		for _, d := range project(imports(t, p)) {
			if ld, ok := layer[d]; ok && ld > lp {
				t.Errorf("%s (layer %d) imports %s (layer %d, above it)", p, lp, d, ld)
			}
		}
	}
}

// The agent's core is pure: no I/O among its imports, and nothing of the
// gNMI client, the HTTP endpoint, the configuration file or the metrics
// under it. (It links bbolt through policy: stored models, the embedded
// one too, are bbolt files that models reads; the core opens none.)
func TestAgentCoreIsPure(t *testing.T) {
	// gonum's distributions: Student's t for a probation's evidence (pure arithmetic)
	allowed := []string{"errors", "fmt", "math", "slices", "sort", "strconv", "strings", "time", "gonum.org/v1/gonum/stat/distuv"}
	for _, d := range imports(t, "agent/core") {
		if rel, ok := strings.CutPrefix(d, module+"/"); ok {
			if rel != "env" && rel != "policy" && rel != "internal/units" {
				t.Errorf("agent/core imports %s; it decides from the vocabulary and the policy only", rel)
			}
		} else if !slices.Contains(allowed, d) {
			t.Errorf("agent/core imports %s; the core does no I/O and keeps no clock", d)
		}
	}
	for _, d := range goList(t, "-deps", "-f", "{{.ImportPath}}", "./agent/core") {
		for _, edge := range []string{"google.golang.org/grpc", "github.com/openconfig/", "github.com/prometheus/", "net/http", "gopkg.in/yaml"} {
			if strings.HasPrefix(d, edge) {
				t.Errorf("agent/core links %s", d)
			}
		}
	}
}
