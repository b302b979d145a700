package agent

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/internal/units"
)

// AddHealthCheck adds problems from outside the agent (a demo's fabric
// that stopped, say) to Health, and so to /healthz and the dashboard's
// pill alike. check returns none when all is well; it must be safe to
// call from any goroutine.
func (a *Agent) AddHealthCheck(check func() []string) {
	a.mu.Lock()
	a.checks = append(a.checks, check)
	a.mu.Unlock()
}

// Health says whether the agent is doing its job: every target's
// telemetry is at most config.HealthStaleIntervals intervals old, at least
// one target has sent telemetry at all, and the added health checks find
// nothing. It returns the problems, one per line-worthy sentence, and the
// per-target ages; no problems means healthy.
func (a *Agent) Health() (problems []string, ages map[string]time.Duration) {
	a.mu.Lock()
	checks := slices.Clone(a.checks)
	a.mu.Unlock()
	defer func() {
		for _, c := range checks {
			problems = append(problems, c()...)
		}
	}()
	now := a.o.Clock()
	limit := config.HealthStaleIntervals * a.cfg.Interval
	a.mu.Lock()
	defer a.mu.Unlock()
	ages = map[string]time.Duration{}
	reporting, served := 0, 0
	var silent []string
	for _, n := range a.names {
		if a.unserved[n] {
			continue // another member of the fleet serves it
		}
		served++
		seen := a.heard[n]
		age := now.Sub(a.lastSeen[n])
		ages[n] = age
		switch {
		case !seen:
			silent = append(silent, n)
			if age > limit {
				problems = append(problems, fmt.Sprintf("%s: no telemetry since the agent started %s ago (limit %s = %d intervals)%s",
					n, age.Round(time.Millisecond), limit, config.HealthStaleIntervals, a.unreachableNote(n)))
			}
		case age > limit:
			problems = append(problems, fmt.Sprintf("%s: telemetry stale: the last arrived %s ago (limit %s = %d intervals)%s",
				n, age.Round(time.Millisecond), limit, config.HealthStaleIntervals, a.unreachableNote(n)))
		default:
			reporting++
		}
		if ti := a.tinfo[n]; ti != nil && ti.absentNote != "" {
			problems = append(problems, ti.absentNote)
		}
		if ti := a.tinfo[n]; ti != nil && ti.absentQueues != "" {
			problems = append(problems, ti.absentQueues)
		}
		if p := a.setFailureProblem(n); p != "" {
			problems = append(problems, p)
		}
		if p := a.deferProblem(n, now); p != "" {
			problems = append(problems, p)
		}
	}
	if a.o.Journal != nil {
		if since, n, last, _ := a.o.Journal.WriteFailure(); n > 0 {
			what := "nothing is recorded"
			if a.cfg.Mode == config.ModeClosedLoop {
				what += ", and no switch is written (every change is recorded before it is set)"
			}
			problems = append(problems, fmt.Sprintf("agent db %s: writes fail since %s (%d in a row; the last: %v): %s; free space there",
				a.o.Journal.Path(), since.Format(time.RFC3339), n, last, what))
		}
	}
	if l, ok := a.o.Gate.(leaseProblemer); ok {
		// a member cut off from etcd writes nothing, while its own
		// telemetry looks fine
		if p := l.LeaseProblem(now); p != "" {
			problems = append(problems, p)
		}
	}
	if u, ok := a.o.Gate.(unowner); ok {
		// a switch no member of the fleet owns is tuned by nobody, while
		// every member's own targets look fine
		owned := u.Unowned(now)
		for _, sw := range slices.Sorted(maps.Keys(owned)) {
			problems = append(problems, fmt.Sprintf("%s: no member of the fleet owns it (for %s): nobody tunes it; every member draining, or a configuration the leader does not list it in (ecntune fleet status)",
				sw, owned[sw].Round(time.Second)))
		}
	}
	if len(a.names) == 0 {
		problems = append(problems, "no targets configured")
	} else if served > 0 && reporting == 0 && len(silent) == served {
		problems = append([]string{fmt.Sprintf("no target reachable: %s sent telemetry yet (%s)",
			noneOf(served), strings.Join(silent, ", "))}, problems...)
	}
	return problems, ages
}

// leaseProblemer is a Gate that can say what keeps it from writing at
// all (fleet.Node.LeaseProblem).
type leaseProblemer interface{ LeaseProblem(now time.Time) string }

// unowner is a Gate (a fleet member) that knows the switches of its
// configuration no member owns (fleet.Node.Unowned).
type unowner interface {
	Unowned(now time.Time) map[string]time.Duration
}

// noneOf says that none of n targets has (sent something): "none of the
// 3 targets has", "the one target has not".
func noneOf(n int) string {
	if n == 1 {
		return "the one target has not"
	}
	return "none of the " + units.Count(n, "target") + " has"
}

// unreachableNote is ": WHY" for a target whose telemetry fails, else "".
// Callers hold a.mu.
func (a *Agent) unreachableNote(target string) string {
	if ti := a.tinfo[target]; ti != nil && ti.Unreachable != "" {
		return ": " + ti.Unreachable
	}
	return ""
}
