// Package childproc runs the child processes of the project's process
// harnesses (internal/fleetsoak, internal/fleetscale): the ecntune binary
// built from the work tree, started with its output in a file, signalled,
// stopped, and read back; and the harnesses' knobs from the environment.
package childproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Build builds package pkg (an import path) into dir/name and returns its
// path.
func Build(dir, name, pkg string) (string, error) {
	bin := filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// BuildEcntune builds the ecntune command into dir.
func BuildEcntune(dir string) (string, error) {
	return Build(dir, "ecntune", "github.com/ecntune/ecntune/cmd/ecntune")
}

// Proc is one run of a child process.
type Proc struct {
	Cmd     *exec.Cmd
	Started time.Time
	done    chan struct{}
	err     error // once done is closed
}

// Start runs bin with args, its output (stdout and stderr) to out.
func Start(out *os.File, bin string, args ...string) (*Proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{Cmd: cmd, Started: time.Now(), done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// Done is closed when the process has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is how the process ended (once Done is closed).
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// Exited says whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends s.
func (p *Proc) Signal(s syscall.Signal) { _ = p.Cmd.Process.Signal(s) }

// Kill sends SIGKILL (a paused process dies too) and waits for the end.
func (p *Proc) Kill() { p.Signal(syscall.SIGKILL); <-p.done }

// Stop ends the process with SIGTERM (SIGCONT first, in case it is
// paused), SIGKILL after wait.
func (p *Proc) Stop(wait time.Duration) error {
	p.Signal(syscall.SIGCONT)
	p.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(wait):
		p.Kill()
		return fmt.Errorf("%s did not stop on SIGTERM in %v", filepath.Base(p.Cmd.Path), wait)
	}
}

// WaitExit waits at most d for the process to end on its own.
func (p *Proc) WaitExit(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// LastLines is the end of a log file, n lines joined by " | ".
func LastLines(path string, n int) string {
	b, _ := os.ReadFile(path)
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}

// EnvInt reads an integer knob of the environment (def when unset).
func EnvInt(t testing.TB, k string, def int) int {
	s := os.Getenv(k)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", k, s, err)
	}
	return n
}

// EnvDur reads a duration knob of the environment (def when unset).
func EnvDur(t testing.TB, k string, def time.Duration) time.Duration {
	s := os.Getenv(k)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", k, s, err)
	}
	return d
}
