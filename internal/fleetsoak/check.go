package fleetsoak

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/soak"
	"github.com/ecntune/ecntune/simswitch"
)

// Violation kinds.
const (
	Unfenced   = "unfenced Set (no writer)"
	StaleToken = "Set under a token lower than one the switch had seen"
	SameToken  = "change of writer without a higher token"
	NotOwner   = "Set under a token that was never the writer's owner key"
	AfterLease = "Set after its writer's lease had ended"
	NoAudit    = "Set without an audit record of its writer"
	GuardRule  = "guard rule broken on the merged audit (internal/soak)"
)

// setLine is a set-log line with its writer's owner key, for the checks.
type setLine = simswitch.SetLogEntry

// checkSets checks the set log's Sets against each other and the fleet's
// owner keys: every Set fenced; per switch, tokens never going down and
// rising at each change of writer; each token an owner key of its writer;
// no Set landing after its writer's lease ended (as the harness saw the
// member key go, which is after it went: lenient). It returns the
// violations by kind and the Sets counted by writer.
func checkSets(log []setLine, hist *history) (map[string][]string, map[string]int) {
	bad := map[string][]string{}
	by := map[string]int{}
	add := func(kind, format string, args ...any) { bad[kind] = append(bad[kind], fmt.Sprintf(format, args...)) }
	type last struct {
		writer string
		token  int64
	}
	high := map[string]last{}
	for _, l := range log {
		if l.Why != "set" {
			continue
		}
		by[l.Writer]++
		at := time.Unix(0, l.TimeNs)
		where := fmt.Sprintf("%s %s/q%d at %s by %s/%d", l.Switch, l.Port, l.Queue, at.Format("15:04:05.000"), l.Writer, l.Token)
		if l.Writer == "" {
			add(Unfenced, "%s", where)
			continue
		}
		p, seen := high[l.Switch]
		switch {
		case seen && l.Token < p.token:
			add(StaleToken, "%s: token %d of %s seen before", where, p.token, p.writer)
		case seen && l.Writer != p.writer && l.Token == p.token:
			add(SameToken, "%s: the previous Set was %s's under the same token", where, p.writer)
		}
		if !seen || l.Token > p.token {
			high[l.Switch] = last{l.Writer, l.Token}
		}
		k, ok := hist.key(l.Switch, l.Token)
		if !ok || k.Member != l.Writer {
			add(NotOwner, "%s: owner key of that token: %+v (found %v)", where, k, ok)
			continue
		}
		if end, ok := hist.leaseEnded(k.Lease); ok && at.After(end) {
			add(AfterLease, "%s: lease %x ended (member key gone) at %s, %v before", where, k.Lease, end.Format("15:04:05.000"), at.Sub(end))
		}
	}
	return bad, by
}

// audit is the members' audit logs.
type audit map[string][]core.AuditEntry

func readAudit(names, dbs []string) (audit, error) {
	a := audit{}
	for i, db := range dbs {
		j, err := journal.OpenJournalReadOnly(db, 10*time.Second)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", names[i], err)
		}
		es, err := j.Entries("", 0)
		j.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", names[i], err)
		}
		a[names[i]] = es
	}
	return a, nil
}

func sameECN(a env.Setting, e setLine) bool {
	if a.KminBytes != e.Kmin || a.KmaxBytes != e.Kmax || math.Abs(a.Pmax-e.Pmax) > 0.005 {
		return false
	}
	return a.HeadroomBytes <= 0 || a.HeadroomBytes == e.Headroom
}

// unaudited lists the Sets of log that no audit entry of their writer
// explains: the queue, the setting, an intent written before the Set (30 s
// at most).
func unaudited(log []setLine, a audit) []string {
	type qk struct {
		writer string
		key    env.QueueKey
	}
	by := map[qk][]core.AuditEntry{}
	for w, es := range a {
		for _, e := range es {
			k := qk{w, e.Key}
			by[k] = append(by[k], e)
		}
	}
	var out []string
	for _, l := range log {
		if l.Why != "set" || l.Writer == "" {
			continue
		}
		found := false
		for _, e := range by[qk{l.Writer, env.QueueKey{Target: l.Switch, Port: l.Port, Queue: l.Queue}}] {
			if e.TimeNs <= l.TimeNs && l.TimeNs-e.TimeNs < int64(30*time.Second) && sameECN(e.New, l) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, fmt.Sprintf("%s %s/q%d at %s by %s/%d: kmin %d kmax %d pmax %g", l.Switch, l.Port, l.Queue,
				time.Unix(0, l.TimeNs).Format("15:04:05.000"), l.Writer, l.Token, l.Kmin, l.Kmax, l.Pmax))
		}
	}
	return out
}

var entryRef = regexp.MustCompile(`audit entry (\d+) `)

// guardRules runs internal/soak's checks on the members' audit logs
// merged in time order (an entry a new owner took over, in two logs, once;
// renumbered, each violation naming the member and its own number).
func guardRules(a audit, log []setLine, minHold, interval time.Duration) soak.Report {
	type src struct {
		e      core.AuditEntry
		member string
	}
	var all []src
	seen := map[string]int{}
	for w, es := range a {
		for _, e := range es {
			id := fmt.Sprint(e.Key, e.TimeNs, e.Kind, e.New)
			if i, ok := seen[id]; ok {
				all[i].e.ResultNs = earliest(all[i].e.ResultNs, e.ResultNs)
				if all[i].e.State != core.StateApplied && e.State == core.StateApplied {
					all[i] = src{withResult(e, all[i].e.ResultNs), w}
				}
				continue
			}
			seen[id] = len(all)
			all = append(all, src{e, w})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].e.TimeNs < all[j].e.TimeNs })
	entries := make([]core.AuditEntry, len(all))
	for i, s := range all {
		entries[i] = s.e
		entries[i].Seq = uint64(i + 1)
	}
	r := soak.Check(entries, log, minHold, interval)
	r.StepViolations = soak.Steps(entries, log, 2) // the agents' max-step-ratio, dwell 1
	name := func(s string) string {
		return entryRef.ReplaceAllStringFunc(s, func(m string) string {
			n, _ := strconv.Atoi(entryRef.FindStringSubmatch(m)[1])
			return fmt.Sprintf("audit entry %s#%d ", all[n-1].member, all[n-1].e.Seq)
		})
	}
	for _, l := range []*[]string{&r.HoldViolations, &r.BadRollbacks, &r.BelowFloor, &r.PastSets, &r.DoubleChanges, &r.StepViolations} {
		for i := range *l {
			(*l)[i] = name((*l)[i])
		}
	}
	return r
}

// earliest is the earlier of two result times (0: none). A change in two
// logs (its writer's, and the new owner's that took it over) finished by
// the first result either knows: a writer paused between its Set and its
// result records it only when it runs again, seconds after the new owner
// read the change back and went on (min-hold counts from the change's end).
func earliest(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

func withResult(e core.AuditEntry, ns int64) core.AuditEntry {
	e.ResultNs = ns
	return e
}

// readSetLog reads simswitch's set log.
func readSetLog(path string) ([]setLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return soak.ReadSetLog(f)
}
