package agent

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// HealthStaleIntervals is how many control intervals a target's telemetry
// may be old before /healthz fails.
const HealthStaleIntervals = 3

// Health says whether the agent is doing its job: every target's
// telemetry is at most HealthStaleIntervals intervals old, and at least
// one target has sent telemetry at all. It returns the problems, one per
// line-worthy sentence, and the per-target ages; no problems means
// healthy.
func (a *Agent) Health() (problems []string, ages map[string]time.Duration) {
	now := a.o.Clock()
	limit := HealthStaleIntervals * a.cfg.Interval
	a.mu.Lock()
	defer a.mu.Unlock()
	ages = map[string]time.Duration{}
	reporting := 0
	var silent []string
	for _, n := range a.names {
		seen := a.heard[n]
		age := now.Sub(a.lastSeen[n])
		ages[n] = age
		switch {
		case !seen:
			silent = append(silent, n)
			if age > limit {
				problems = append(problems, fmt.Sprintf("%s: no telemetry since the agent started %s ago (limit %s = %d intervals)",
					n, age.Round(time.Millisecond), limit, HealthStaleIntervals))
			}
		case age > limit:
			problems = append(problems, fmt.Sprintf("%s: telemetry stale: the last arrived %s ago (limit %s = %d intervals)",
				n, age.Round(time.Millisecond), limit, HealthStaleIntervals))
		default:
			reporting++
		}
	}
	if len(a.names) == 0 {
		problems = append(problems, "no targets configured")
	} else if reporting == 0 && len(silent) == len(a.names) {
		problems = append([]string{fmt.Sprintf("no target reachable: none of the %d targets has sent telemetry yet (%s)",
			len(a.names), strings.Join(silent, ", "))}, problems...)
	}
	return problems, ages
}

// healthz answers 200 "ok" when Health finds nothing wrong, else 503 with
// one problem per line.
func (a *Agent) healthz(w http.ResponseWriter, _ *http.Request) {
	problems, _ := a.Health()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	// What a target's switch does not export is not a fault (the agent
	// decides without it) but belongs with its health: one line each.
	var notes []string
	for _, ti := range a.Targets() {
		if len(ti.Missing) > 0 {
			notes = append(notes, fmt.Sprintf("%s (device %s): without %s", ti.Target, ti.Device, strings.Join(ti.Missing, ", ")))
		}
		if len(ti.Refused) > 0 {
			notes = append(notes, fmt.Sprintf("%s: subscriptions refused by the switch: %s", ti.Target, strings.Join(ti.Refused, ", ")))
		}
	}
	if len(problems) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "unhealthy\n%s\n", strings.Join(append(problems, notes...), "\n"))
		return
	}
	fmt.Fprintln(w, "ok")
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}
