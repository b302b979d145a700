package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // daily:tz=ZONE names a zone wherever the agent runs, without the host's zone files
)

// NewDaily parses a daily schedule with the zero Resolver (every entry but
// model:NAME); see Resolver.NewDaily.
func NewDaily(spec string) (*Schedule, error) { return Resolver{}.NewDaily(spec) }

// NewDaily parses "[tz=ZONE,]HH:MM=WHAT,HH:MM=WHAT,..." (see SplitDaily): a
// Schedule by the time of day in ZONE (an IANA name such as Europe/Berlin;
// UTC when not given), on the observations' clock (the switches' telemetry
// timestamps). Each entry holds from its time until the next entry's, and
// the last one past midnight until the first. Unlike schedule:, which
// counts its offsets from the agent's first decision and so starts over
// when the agent restarts, it reads the clock: a restarted agent picks up
// the entry in force. Across a daylight-saving change the times are the
// zone's wall-clock times (an entry in the skipped hour takes effect when
// the clock passes it). Entries are what schedule entries may be. Only the
// entry in force is asked to decide, and each keeps its own state from one
// day to the next: a stateful policy (adaptive) resumes its search where
// it left it the day before, or starts over if the setting it left was
// changed meanwhile. Example: "tz=Europe/Berlin,08:00=builtin:prefer=1,20:00=builtin".
func (r Resolver) NewDaily(spec string) (*Schedule, error) {
	sp := Spec{Text: DailyPrefix + spec, Base: DailyPrefix + spec, Kind: KindDaily, Arg: spec}
	if err := (&Parser{}).timed(&sp, spec, true); err != nil {
		return nil, err
	}
	return r.timed(sp)
}

// SplitDaily reads a daily schedule spec ("[tz=ZONE,]HH:MM=WHAT,...",
// without "daily:") into its zone (UTC when not given) and entries, each
// Offset the time since midnight there. It checks the zone (an IANA name),
// the times (HH:MM, HH:MM:SS or HH:MM:SS.fraction, strictly increasing
// through the day) and that every entry applies something, not what.
func SplitDaily(spec string) (*time.Location, []ScheduleEntry, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil, fmt.Errorf("empty daily schedule (want [tz=ZONE,]HH:MM=WHAT,..., e.g. tz=Europe/Berlin,08:00=builtin:prefer=1,20:00=builtin; UTC without tz=)")
	}
	loc := time.UTC
	items := strings.Split(spec, ",")
	if zone, ok := strings.CutPrefix(strings.TrimSpace(items[0]), "tz="); ok {
		zone = strings.TrimSpace(zone)
		l, err := time.LoadLocation(zone)
		if err != nil || zone == "" || zone == "Local" {
			return nil, nil, fmt.Errorf("daily tz=%q: want an IANA time zone name such as Europe/Berlin or UTC", zone)
		}
		loc, items = l, items[1:]
		if len(items) == 0 {
			return nil, nil, fmt.Errorf("daily tz=%s: no entries after the zone (want tz=ZONE,HH:MM=WHAT,...)", zone)
		}
	}
	var out []ScheduleEntry
	for i, e := range items {
		e = strings.TrimSpace(e)
		at, what, ok := strings.Cut(e, "=")
		if !ok {
			return nil, nil, fmt.Errorf("daily entry %d %q: want HH:MM=WHAT (a time of day, then what holds from then on)", i+1, e)
		}
		en := ScheduleEntry{At: strings.TrimSpace(at), What: strings.TrimSpace(what)}
		switch en.At {
		case "prefer":
			return nil, nil, fmt.Errorf("daily entry %d %q: a comma separates entries, so model:NAME,prefer=P cannot be one (write model:NAME:prefer=P)", i+1, e)
		case "tz":
			return nil, nil, fmt.Errorf("daily entry %d %q: tz=ZONE comes first, once", i+1, e)
		}
		tod, err := ParseTimeOfDay(en.At)
		if err != nil {
			return nil, nil, fmt.Errorf("daily entry %d %q: %w", i+1, e, err)
		}
		en.Offset = tod
		if i > 0 && tod <= out[i-1].Offset {
			return nil, nil, fmt.Errorf("daily entry %d %q: %s is not after the previous entry's %s (give the times in order through the day)", i+1, e, en.At, out[i-1].At)
		}
		if en.What == "" {
			return nil, nil, fmt.Errorf("daily entry %d %q: nothing to apply (want a preset name, KMIN/KMAX/PMAX or a policy such as builtin:prefer=1)", i+1, e)
		}
		out = append(out, en)
	}
	return loc, out, nil
}

// ParseTimeOfDay reads HH:MM, HH:MM:SS or HH:MM:SS.fraction (00:00 to
// 23:59:59.999999999) as the time since midnight.
func ParseTimeOfDay(s string) (time.Duration, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, fmt.Errorf("time %q: want HH:MM or HH:MM:SS", s)
	}
	h, err1 := strconv.Atoi(parts[0])
	m, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || !digits(parts[0], 2) || !digits(parts[1], 2) || h > 23 || m > 59 {
		return 0, fmt.Errorf("time %q: want HH:MM with HH 00-23 and MM 00-59", s)
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
