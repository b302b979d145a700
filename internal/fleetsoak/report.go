package fleetsoak

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ecntune/ecntune/internal/soak"
)

// Report is what a fleet soak measured and found.
type Report struct {
	Wall                      time.Duration
	Members, Switches, Cycles int
	TTL, MinHold              time.Duration
	Faults                    map[string]int // by kind
	AgentRuns                 int            // agent processes started
	Rejoins                   int            // paused or cut agents that joined again by themselves
	Sets                      int            // queue changes in the set log
	SetsBy                    map[string]int // by writer
	Refused                   int            // Sets refused for a stale token (--fence)
	StaleSeen                 int            // Sets with a stale token, as simswitch counted them
	OwnerKeys                 int            // owner keys created (placements and failovers)
	AuditEntries              int
	Violations                map[string][]string // by kind (Unfenced, StaleToken, ...)
	Guard                     soak.Report         // internal/soak's checks on the merged audit
	Failovers                 []failover
	Lost                      []string // switches a fault left without a new owner
	Notes                     []string // what else the harness saw (an agent ending unbidden, ...)
	Timeline                  []string // each fault: kind, victim, from when until when
}

// Safety counts the safety violations: every kind, the guard's rules and
// switches left without an owner.
func (r *Report) Safety() int {
	n := r.Guard.Violations() + len(r.Lost)
	for _, v := range r.Violations {
		n += len(v)
	}
	return n
}

// All lists every violation.
func (r *Report) All() []string {
	var out []string
	kinds := make([]string, 0, len(r.Violations))
	for k := range r.Violations {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		for _, v := range r.Violations[k] {
			out = append(out, k+": "+v)
		}
	}
	for _, v := range r.Guard.All() {
		out = append(out, GuardRule+": "+v)
	}
	return append(out, r.Lost...)
}

func (r *Report) String() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("fleet soak: %d agents, %d simulated switches, ttl %v, min-hold %v, %d fault cycles %v, wall time %v",
		r.Members, r.Switches, r.TTL, r.MinHold, r.Cycles, r.Faults, r.Wall.Round(time.Second))
	p("agent processes started %d; joined again by themselves after a pause or cut %d; owner keys created %d; audit entries %d",
		r.AgentRuns, r.Rejoins, r.OwnerKeys, r.AuditEntries)
	p("Sets (queue changes in the set log) %d, by writer %v; refused for a stale token %d; stale tokens seen by the switches %d",
		r.Sets, r.SetsBy, r.Refused, r.StaleSeen)
	for _, k := range []string{Unfenced, StaleToken, SameToken, NotOwner, AfterLease, NoAudit} {
		p("violations: %s: %d", k, len(r.Violations[k]))
	}
	p("violations: %s: %d (%s)", GuardRule, r.Guard.Violations(), r.Guard)
	p("switches a fault left without a new owner: %d", len(r.Lost))
	p("failover, from the fault to the new owner's first decision on each switch it took (it may write: \"fleet: switch taken over\"):")
	kinds := []string{Kill, Pause, Cut, Leader, "all"}
	for _, k := range kinds {
		var own, wr, set []time.Duration
		for _, f := range r.Failovers {
			if k != "all" && f.Kind != k {
				continue
			}
			own = append(own, f.Owner)
			if f.Writable > 0 {
				wr = append(wr, f.Writable)
			}
			if f.FirstSet > 0 {
				set = append(set, f.FirstSet)
			}
		}
		p("  %-6s switches moved %3d: first decision p50 %v p99 %v (n %d); owner key p50 %v p99 %v; first Set p50 %v p99 %v (n %d)",
			k, len(own), ms(percentile(wr, .5)), ms(percentile(wr, .99)), len(wr), ms(percentile(own, .5)), ms(percentile(own, .99)),
			ms(percentile(set, .5)), ms(percentile(set, .99)), len(set))
	}
	for _, v := range r.All() {
		p("VIOLATION %s", v)
	}
	for _, n := range r.Notes {
		p("note: %s", n)
	}
	for _, f := range r.Timeline {
		p("fault: %s", f)
	}
	return b.String()
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

var staleSummary = regexp.MustCompile(`simswitch: (\d+) Sets came with a fencing token older`)

// check reads the evidence after the run and makes the report.
func (h *harness) check() (*Report, error) {
	c := h.cfg
	r := &Report{Members: c.Members, Switches: c.Switches, Cycles: len(h.faults), TTL: c.TTL, MinHold: c.MinHold,
		Faults: map[string]int{}, AgentRuns: h.restarts, Rejoins: h.rejoins, OwnerKeys: h.hist.created(), Notes: h.notes}
	for _, f := range h.faults {
		r.Faults[f.Kind]++
		r.Timeline = append(r.Timeline, fmt.Sprintf("%s of %s from %s until %s", f.Kind, f.Victim, f.At.Format("15:04:05.000"), f.Undone.Format("15:04:05.000")))
	}
	log, err := readSetLog(h.setLog)
	if err != nil {
		return nil, err
	}
	a, err := readAudit(h.names, h.dbs)
	if err != nil {
		return nil, err
	}
	for _, es := range a {
		r.AuditEntries += len(es)
	}
	r.Violations, r.SetsBy = checkSets(log, h.hist)
	for _, n := range r.SetsBy {
		r.Sets += n
	}
	for _, l := range log {
		if l.Why == "refused" {
			r.Refused++
		}
	}
	if u := unaudited(log, a); len(u) > 0 {
		r.Violations[NoAudit] = u
	}
	r.Guard = guardRules(a, log, c.MinHold, c.Interval)
	b, _ := os.ReadFile(h.swOut.Name())
	if m := staleSummary.FindSubmatch(b); m != nil {
		r.StaleSeen, _ = strconv.Atoi(string(m[1]))
	}
	logs := make([]string, len(h.outs))
	for i, f := range h.outs {
		logs[i] = f.Name()
	}
	taken, err := takeovers(h.names, logs)
	if err != nil {
		return nil, err
	}
	r.Failovers, r.Lost = failovers(h.faults, h.ended, h.hist, taken, log)
	return r, nil
}
