package fleetsoak

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// proc is one run of a child process, its output appended to a file.
type proc struct {
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{}
	err     error // once done is closed
}

func start(out *os.File, bin string, args ...string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, started: time.Now(), done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// exited says whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) signal(s syscall.Signal) { _ = p.cmd.Process.Signal(s) }

// kill sends SIGKILL (a paused process dies too) and waits for the end.
func (p *proc) kill() { p.signal(syscall.SIGKILL); <-p.done }

// stop ends the process with SIGTERM (SIGCONT first, in case it is
// paused), SIGKILL after wait.
func (p *proc) stop(wait time.Duration) error {
	p.signal(syscall.SIGCONT)
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(wait):
		p.kill()
		return fmt.Errorf("%s did not stop on SIGTERM in %v", filepath.Base(p.cmd.Path), wait)
	}
}

// waitExit waits at most d for the process to end on its own.
func (p *proc) waitExit(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}
