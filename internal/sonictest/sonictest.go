// Package sonictest runs the real sonic-gnmi server for tests: the one
// ../shared/tools/sonic builds (sonic-net/sonic-gnmi's telemetry server over
// a local Redis seeded like a SONiC switch). A test calls Start, which skips
// it with a clear message unless SONIC_DIR points at a built server; the
// server listens on free loopback ports and stops when the test ends.
//
// Environment: SONIC_DIR, the tool's work folder with the built server
// (bin/telemetry); SONIC_TOOLS, the tool's folder when it is not
// ../shared/tools/sonic beside the repository. One server runs per
// SONIC_DIR at a time (the tool keeps its Redis and logs there), so tests
// that use it must not run in parallel.
package sonictest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// Server is one running sonic-gnmi.
type Server struct {
	Addr  string // gNMI, 127.0.0.1:port, no TLS
	Dir   string // SONIC_DIR
	Tools string // the tool's folder
	Seed  string // the seed file loaded into its Redis
}

// Tools returns SONIC_DIR and the tool's folder, skipping t when either is
// missing or the server is not built.
func Tools(t testing.TB) (dir, tools string) {
	t.Helper()
	dir = os.Getenv("SONIC_DIR")
	if dir == "" {
		t.Skip("SONIC_DIR is not set: build the real sonic-gnmi server with ../shared/tools/sonic (see its README) and point SONIC_DIR at it to run this test against it")
	}
	tools = os.Getenv("SONIC_TOOLS")
	if tools == "" {
		_, file, _, _ := runtime.Caller(0)
		tools = filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "tools", "sonic")
	}
	tools, _ = filepath.Abs(tools)
	// SONIC_DIR asks for the real server: what is missing then fails the
	// test (a skip let a run that tested nothing report ok)
	if _, err := os.Stat(filepath.Join(tools, "run-sonic-target.sh")); err != nil {
		t.Fatalf("SONIC_DIR is set but the sonic tool is not at %s (set SONIC_TOOLS to ../shared/tools/sonic): %v", tools, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bin", "telemetry")); err != nil {
		t.Fatalf("SONIC_DIR %s holds no built server (bin/telemetry): run the tool's build first: %v", dir, err)
	}
	if err := seedFolder(dir, tools); err != nil {
		t.Fatal(err)
	}
	return dir, tools
}

// seedFolder gives SONIC_DIR the tool's seed/ (its start reads the seed
// and its generator there, and the tool's build does not put them there),
// unless it has one.
func seedFolder(dir, tools string) error {
	dst := filepath.Join(dir, "seed")
	if _, err := os.Stat(filepath.Join(dst, "gen_seed.py")); err == nil {
		return nil
	}
	src := filepath.Join(tools, "seed")
	ents, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("the sonic tool's seed folder: %w", err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Start starts the server with seed (the tool's format: CONFIG_DB and
// COUNTERS_DB hashes by key) loaded before any request; nil keeps the
// tool's own seed (a 4-port Broadcom-style switch, 10 queues a port).
func Start(t testing.TB, seed []byte) *Server {
	t.Helper()
	dir, tools := Tools(t)
	s := &Server{Dir: dir, Tools: tools, Seed: filepath.Join(dir, "seed", "seed.json")}
	if seed != nil {
		s.Seed = filepath.Join(t.TempDir(), "seed.json")
		if err := os.WriteFile(s.Seed, seed, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gport, rport := freePort(t), freePort(t)
	env := append(os.Environ(), "SONIC_DIR="+dir, "GNMI_PORT="+gport, "REDIS_PORT="+rport)
	out, err := os.Create(filepath.Join(t.TempDir(), "start.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	script := filepath.Join(tools, "run-sonic-target.sh")
	run := func(args ...string) {
		// The server and Redis outlive the script: their output goes to a
		// file, so that Run returns when the script does.
		cmd := exec.Command("bash", append([]string{script}, args...)...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
		if err := cmd.Run(); err != nil {
			b, _ := os.ReadFile(out.Name())
			t.Fatalf("%s %v: %v\n%s", script, args, err, b)
		}
	}
	t.Cleanup(func() { run("stop") })
	run("start")
	if seed != nil {
		// sonic-gnmi reads its port and queue maps once, at the first
		// request that needs them: the seed goes in before any.
		load := exec.Command("sh", "-c", `python3 "$LOAD" "$SEED" | redis-cli -s "$SOCK" --pipe`)
		load.Env = append(env, "LOAD="+filepath.Join(tools, "seed", "load_seed.py"), "SEED="+s.Seed, "SOCK="+s.socket())
		if b, err := load.CombinedOutput(); err != nil {
			t.Fatalf("loading %s: %v\n%s", s.Seed, err, b)
		}
	}
	s.Addr = "127.0.0.1:" + gport
	return s
}

func (s *Server) socket() string { return filepath.Join(s.Dir, "run", "redis.sock") }

// Tick makes the seeded counters move every second for d (the tool's
// tick.py), until the test ends.
func (s *Server) Tick(t testing.TB, d time.Duration) {
	t.Helper()
	cmd := exec.Command("python3", filepath.Join(s.Tools, "tick.py"), s.socket(), s.Seed, strconv.Itoa(int(d.Seconds())+1))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// ConfigDB runs a redis-cli command on the server's CONFIG_DB (database 4)
// and returns its output, as what the switch runs.
func (s *Server) ConfigDB(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("redis-cli", append([]string{"-s", s.socket(), "-n", "4"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Log returns the server's log so far (it says why it closed a stream).
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "run", "telemetry.log"))
	return string(b)
}

func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
