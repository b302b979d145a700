package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// day is the length of a day in Unix time, which has no leap seconds.
const day = 24 * time.Hour

// NewDaily parses a daily schedule with the zero Resolver (every entry but
// model:NAME); see Resolver.NewDaily.
func NewDaily(spec string) (*Schedule, error) { return Resolver{}.NewDaily(spec) }

// NewDaily parses "HH:MM=WHAT,HH:MM=WHAT,..." (see SplitDaily): a Schedule
// by the time of day in UTC, on the observations' clock (the switches'
// telemetry timestamps). Each entry holds from its time until the next
// entry's, and the last one past midnight until the first. Unlike
// schedule:, which counts its offsets from the agent's first decision and
// so starts over when the agent restarts, it reads the clock: a restarted
// agent picks up the entry in force. Entries are what schedule entries may
// be. Only the entry in force is asked to decide, and each keeps its own
// state from one day to the next: a stateful policy (adaptive) resumes its
// search where it left it the day before, or starts over if the setting it
// left was changed meanwhile. Example: "08:00=builtin:prefer=1,20:00=builtin".
func (r Resolver) NewDaily(spec string) (*Schedule, error) {
	entries, err := SplitDaily(spec)
	if err != nil {
		return nil, err
	}
	return r.timed("daily", spec, entries)
}

// SplitDaily reads a daily schedule spec ("HH:MM=WHAT,...", without
// "daily:") into its entries, each Offset the time since midnight UTC. It
// checks the times (HH:MM, HH:MM:SS or HH:MM:SS.fraction, strictly
// increasing through the day) and that every entry applies something, not
// what.
func SplitDaily(spec string) ([]ScheduleEntry, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("empty daily schedule (want HH:MM=WHAT,..., times of day in UTC, e.g. 08:00=builtin:prefer=1,20:00=builtin)")
	}
	var out []ScheduleEntry
	for i, e := range strings.Split(spec, ",") {
		e = strings.TrimSpace(e)
		at, what, ok := strings.Cut(e, "=")
		if !ok {
			return nil, fmt.Errorf("daily entry %d %q: want HH:MM=WHAT (a time of day in UTC, then what holds from then on)", i+1, e)
		}
		en := ScheduleEntry{At: strings.TrimSpace(at), What: strings.TrimSpace(what)}
		if en.At == "prefer" {
			return nil, fmt.Errorf("daily entry %d %q: a comma separates entries, so model:NAME,prefer=P cannot be one (use builtin:prefer=P, or the model without prefer)", i+1, e)
		}
		tod, err := ParseTimeOfDay(en.At)
		if err != nil {
			return nil, fmt.Errorf("daily entry %d %q: %w", i+1, e, err)
		}
		en.Offset = tod
		if i > 0 && tod <= out[i-1].Offset {
			return nil, fmt.Errorf("daily entry %d %q: %s is not after the previous entry's %s (give the times in order through the day)", i+1, e, en.At, out[i-1].At)
		}
		if en.What == "" {
			return nil, fmt.Errorf("daily entry %d %q: nothing to apply (want a preset name, KMIN/KMAX/PMAX or a policy such as builtin:prefer=1)", i+1, e)
		}
		out = append(out, en)
	}
	return out, nil
}

// ParseTimeOfDay reads HH:MM, HH:MM:SS or HH:MM:SS.fraction (00:00 to
// 23:59:59.999999999) as the time since midnight.
func ParseTimeOfDay(s string) (time.Duration, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, fmt.Errorf("time %q: want HH:MM or HH:MM:SS (UTC)", s)
	}
	h, err1 := strconv.Atoi(parts[0])
	m, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || !digits(parts[0], 2) || !digits(parts[1], 2) || h > 23 || m > 59 {
		return 0, fmt.Errorf("time %q: want HH:MM with HH 00-23 and MM 00-59 (UTC)", s)
	}
	tod := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute
	if len(parts) == 3 {
		whole, frac, dot := strings.Cut(parts[2], ".")
		sec, err := strconv.Atoi(whole)
		if err != nil || !digits(whole, 2) || sec > 59 {
			return 0, fmt.Errorf("time %q: seconds %q: want 00-59", s, parts[2])
		}
		tod += time.Duration(sec) * time.Second
		if dot {
			if len(frac) > 9 {
				return 0, fmt.Errorf("time %q: more than nine digits after the second", s)
			}
			n, err := strconv.Atoi(frac)
			if err != nil || !digits(frac, len(frac)) || frac == "" {
				return 0, fmt.Errorf("time %q: fraction of a second %q is not digits", s, frac)
			}
			for range 9 - len(frac) {
				n *= 10
			}
			tod += time.Duration(n)
		}
	}
	return tod, nil
}

// digits reports whether s is exactly n ASCII digits (no sign, no space).
func digits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
