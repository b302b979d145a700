package fleetsoak

import (
	"bufio"
	"os"
	"sort"
	"strings"
	"time"
)

// logLine is one slog text line of an agent: its time, message and
// attributes.
type logLine struct {
	At    time.Time
	Msg   string
	Attrs map[string]string
}

// parseSlog reads a slog text line (key=value, values quoted when they
// need it); ok false for other lines.
func parseSlog(s string) (logLine, bool) {
	l := logLine{Attrs: map[string]string{}}
	for s != "" {
		s = strings.TrimLeft(s, " ")
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			break
		}
		k, rest := s[:eq], s[eq+1:]
		var v string
		if strings.HasPrefix(rest, `"`) {
			i := 1
			for i < len(rest) && rest[i] != '"' {
				if rest[i] == '\\' {
					i++
				}
				i++
			}
			v = strings.ReplaceAll(rest[1:min(i, len(rest))], `\"`, `"`)
			rest = rest[min(i+1, len(rest)):]
		} else {
			sp := strings.IndexByte(rest, ' ')
			if sp < 0 {
				sp = len(rest)
			}
			v, rest = rest[:sp], rest[sp:]
		}
		l.Attrs[k] = v
		s = rest
	}
	t, err := time.Parse(time.RFC3339Nano, l.Attrs["time"])
	if err != nil {
		return l, false
	}
	l.At, l.Msg = t, l.Attrs["msg"]
	return l, true
}

// takeovers reads, from each member's log, when it first might write each
// switch it took: its "fleet: switch taken over" lines, by member and
// switch, in time order.
func takeovers(names []string, logs []string) (map[string]map[string][]time.Time, error) {
	out := map[string]map[string][]time.Time{}
	for i, path := range logs {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		m := map[string][]time.Time{}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if !strings.Contains(sc.Text(), `msg="fleet: switch taken over"`) {
				continue
			}
			if l, ok := parseSlog(sc.Text()); ok {
				m[l.Attrs["target"]] = append(m[l.Attrs["target"]], l.At)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
		out[names[i]] = m
	}
	return out, nil
}

// failover is one switch moved by a fault: from the fault to the new
// owner key, to the new owner's first decision (it may write: "switch
// taken over"), to its first Set of the switch (if it made one within a
// minute).
type failover struct {
	Kind, Switch, From, To string
	Owner, Writable        time.Duration
	FirstSet               time.Duration // 0: none
}

// failovers measures every switch a fault moved: the switches the victim
// owned when it struck (for an etcd leader stop, any switch whose owner's
// lease ended while the member was down or within 10 s of its restart,
// before the next fault), each to its next owner key. A
// switch without a new owner 2 min after the fault is lost (one the run
// ended too soon after, at ended, is not judged).
func failovers(faults []fault, ended time.Time, hist *history, taken map[string]map[string][]time.Time, log []setLine) (fs []failover, lost []string) {
	for i, f := range faults {
		// a leader stop's window ends 10 s after the member restarted, or
		// at the next fault, whose own moves are its own
		until := f.Undone.Add(10 * time.Second)
		if i+1 < len(faults) && faults[i+1].At.Before(until) {
			until = faults[i+1].At
		}
		for _, k := range hist.heldAt(f.At) {
			if f.Kind != Leader && k.Member != f.Victim {
				continue
			}
			if f.Kind == Leader {
				// a switch whose owner lost its lease while etcd's
				// leader was down (or just after): the leader change moved it
				if end, ok := hist.leaseEnded(k.Lease); !ok || end.Before(f.At) || end.After(until) || end.After(ended) {
					continue
				}
			}
			n, ok := hist.next(k.Switch, f.At)
			if !ok || n.Created.Sub(f.At) > 2*time.Minute {
				if ended.Sub(f.At) > 2*time.Minute {
					lost = append(lost, f.Kind+" of "+f.Victim+" at "+f.At.Format("15:04:05.000")+": "+k.Switch+" got no new owner in 2 min")
				}
				continue
			}
			fo := failover{Kind: f.Kind, Switch: k.Switch, From: k.Member, To: n.Member, Owner: n.Created.Sub(f.At)}
			for _, t := range taken[n.Member][k.Switch] {
				if !t.Before(n.Created.Add(-time.Second)) {
					fo.Writable = t.Sub(f.At)
					break
				}
			}
			for _, l := range log {
				if l.Why == "set" && l.Switch == k.Switch && l.Writer == n.Member && l.Token == n.Token {
					if d := time.Unix(0, l.TimeNs).Sub(f.At); d < time.Minute {
						fo.FirstSet = d
					}
					break
				}
			}
			fs = append(fs, fo)
		}
	}
	return fs, lost
}

// percentile is the p-quantile (0..1) of ds by the nearest rank (0: none).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}
