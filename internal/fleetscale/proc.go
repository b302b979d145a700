package fleetscale

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ecntune/ecntune/internal/childproc"
)

// proc is a child process (internal/childproc), its output in a file.
type proc struct {
	*childproc.Proc
	name string
	log  string
}

func start(dir, name, bin string, args ...string) (*proc, error) {
	log := filepath.Join(dir, name+".log")
	out, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cp, err := childproc.Start(out, bin, args...)
	if err != nil {
		out.Close()
		return nil, err
	}
	go func() { <-cp.Done(); out.Close() }()
	return &proc{Proc: cp, name: name, log: log}, nil
}

// waitLine waits at most d for a line of the process's output that
// contains marker, and returns the rest of that line after it.
func (p *proc) waitLine(marker string, d time.Duration) (string, error) {
	for end := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(p.log)
		if _, after, ok := strings.Cut(string(b), marker); ok {
			line, _, _ := strings.Cut(after, "\n")
			return strings.TrimSpace(line), nil
		}
		if p.Exited() {
			return "", fmt.Errorf("%s ended (%v): %s", p.name, p.Err(), lastLines(p.log, 5))
		}
		if time.Now().After(end) {
			return "", fmt.Errorf("%s: no %q in its output in %v: %s", p.name, marker, d, lastLines(p.log, 5))
		}
	}
}

var lastLines = childproc.LastLines

// usage is what a process has used: CPU time (user + system, all threads)
// and resident memory now and at its peak.
type usage struct {
	CPU      time.Duration
	RSS, HWM int64 // bytes
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go runs on.
const clockTick = 100

// procUsage reads /proc/PID/stat (utime, stime) and /proc/PID/status
// (VmRSS, VmHWM).
func procUsage(pid int) (usage, error) {
	var u usage
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return u, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(s[i+1:]) // from field 3 (state): utime is field 14, stime 15
	if len(f) < 13 {
		return u, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return u, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	u.CPU = time.Duration(ut+st) * time.Second / clockTick
	if b, err = os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err != nil {
		return u, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if k == "VmRSS" {
			u.RSS = kb << 10
		} else {
			u.HWM = kb << 10
		}
	}
	return u, nil
}

// loadAvg is /proc/loadavg's three load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
