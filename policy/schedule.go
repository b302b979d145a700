package policy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
)

// ParseFixed parses an explicit setting "KMIN/KMAX/PMAX" stated at 100 Gb/s,
// such as "387KB/774KB/0.3%" (Pmax as a percentage, or a probability such
// as 0.003). It wants 0 <= Kmin <= Kmax, Kmax > 0 and Pmax in (0, 100%].
func ParseFixed(s string) (env.Setting, error) {
	parts := strings.Split(strings.TrimSpace(s), "/")
	if len(parts) != 3 {
		return env.Setting{}, fmt.Errorf("setting %q: want KMIN/KMAX/PMAX at 100 Gb/s, e.g. 387KB/774KB/0.3%%", s)
	}
	kmin, err := units.ParseBytes(parts[0])
	if err != nil {
		return env.Setting{}, fmt.Errorf("setting %q: kmin: %w", s, err)
	}
	kmax, err := units.ParseBytes(parts[1])
	if err != nil {
		return env.Setting{}, fmt.Errorf("setting %q: kmax: %w", s, err)
	}
	p := strings.TrimSpace(parts[2])
	scale := 1.0
	if t, ok := strings.CutSuffix(p, "%"); ok {
		p, scale = strings.TrimSpace(t), 0.01
	}
	pmax, err := strconv.ParseFloat(p, 64)
	if err != nil || math.IsNaN(pmax) || math.IsInf(pmax, 0) {
		return env.Setting{}, fmt.Errorf("setting %q: pmax %q is not a number (want e.g. 0.3%% or 0.003)", s, parts[2])
	}
	pmax *= scale
	switch {
	case kmax <= 0:
		return env.Setting{}, fmt.Errorf("setting %q: kmax must be above 0", s)
	case kmin > kmax:
		return env.Setting{}, fmt.Errorf("setting %q: kmin %s is above kmax %s", s, units.FormatBytes(kmin), units.FormatBytes(kmax))
	case !(pmax > 0 && pmax <= 1):
		return env.Setting{}, fmt.Errorf("setting %q: pmax %s is outside (0, 100%%]", s, strings.TrimSpace(parts[2]))
	}
	return env.Setting{KminBytes: kmin, KmaxBytes: kmax, Pmax: pmax}, nil
}

// NewFixed returns a static policy at an explicit setting (see ParseFixed),
// scaled linearly to each port's rate like a preset. Its name is
// "fixed:" followed by spec; eval does not count it as a vendor preset.
func NewFixed(spec string) (Static, error) {
	s, err := ParseFixed(spec)
	if err != nil {
		return Static{}, err
	}
	return FixedSetting(strings.TrimSpace(spec), s), nil
}

// FixedSetting returns a static policy at setting at100G (given at
// 100 Gb/s, scaled linearly to each port's rate like a preset), named
// "fixed:" followed by name. It does not check the setting.
func FixedSetting(name string, at100G env.Setting) Static {
	return Static{def: presetDef{name: name, at100G: at100G, source: "explicit setting " + name + " at 100 Gb/s"}, kind: KindFixed.Name}
}

// Schedule is a Policy that switches by time: each entry holds from its
// offset until the next entry's, and is a fixed setting or a policy of its
// own (such as builtin:prefer=1 in a phase an operator knows carries the
// small flows). Offsets count from the start of the first interval the
// schedule is asked about (the first observation's time less its measured
// interval), so a schedule runs the same in the simulator (where that is
// time 0) and against switches (where it is when the agent started). It is
// what an engineer does by hand when a fabric's traffic has known phases,
// and it is the yardstick for an adaptive policy on a time-varying
// scenario: a schedule that knows the phase boundaries in advance.
//
// Only the entry in force is asked to decide: a stateful policy (adaptive)
// in a later entry starts when its entry does. A daily: schedule (NewDaily)
// is a Schedule whose offsets are times of day.
type Schedule struct {
	name    string
	loc     *time.Location  // daily: offsets are times of day in this zone; nil: from the first decision
	offsets []time.Duration // strictly increasing
	from    []string        // each entry's start as its reason shows it
	steps   []Policy
	started bool
	t0      int64
}

// NewSchedule parses a schedule with the zero Resolver (every entry but
// model:NAME); see Resolver.NewSchedule.
func NewSchedule(spec string) (*Schedule, error) { return Resolver{}.NewSchedule(spec) }

// NewSchedule parses "WHAT,OFFSET=WHAT,...": the first entry starts at
// once (an offset, if given, must be 0), later ones at strictly increasing
// offsets such as 3ms. Each WHAT is a preset name, KMIN/KMAX/PMAX at
// 100 Gb/s, or a policy spec without a comma (builtin[:prefer=P],
// model:NAME, adaptive, static:NAME, fixed:...); "+headroom=" and
// "+alpha=" rules after the last entry apply to every entry. Example:
// "sonic-default,3ms=387KB/774KB/0.3%,6ms=builtin:prefer=1".
func (r Resolver) NewSchedule(spec string) (*Schedule, error) {
	sp := Spec{Text: SchedulePrefix + spec, Base: SchedulePrefix + spec, Kind: KindSchedule, Arg: spec}
	if err := (&Parser{}).timed(&sp, spec, false); err != nil {
		return nil, err
	}
	return r.timed(sp)
}

// timed resolves the entries of a parsed schedule: or daily: spec (times
// of day in sp.Zone).
func (r Resolver) timed(sp Spec) (*Schedule, error) {
	s := &Schedule{loc: sp.Zone}
	s.name = s.kind() + ":" + strings.TrimSpace(sp.Arg)
	for i, e := range sp.Entries {
		p, err := r.Resolve(e.Spec)
		if err != nil {
			return nil, fmt.Errorf("%s entry %d (at %s) %q: %w", s.kind(), i+1, e.At, e.What, err)
		}
		from := e.Offset.String()
		if sp.Zone != nil {
			from = e.At + " " + sp.Zone.String()
		}
		s.offsets, s.from, s.steps = append(s.offsets, e.Offset), append(s.from, from), append(s.steps, p)
	}
	return s, nil
}

// ScheduleEntry is one entry of a schedule: or daily: spec, as written.
type ScheduleEntry struct {
	Offset time.Duration // from the schedule's start, or for daily: since midnight in its zone
	At     string        // the offset or time of day as written ("0s" when not given)
	What   string        // a preset name, KMIN/KMAX/PMAX or a policy spec (see ScheduleEntryIsPolicy), trimmed, not resolved
}

// SplitSchedule reads a schedule spec ("WHAT,OFFSET=WHAT,...", without
// "schedule:") into its entries. It checks the offsets (the first is 0,
// later ones given and strictly increasing) and that every entry applies
// something, not what.
func SplitSchedule(spec string) ([]ScheduleEntry, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("empty schedule (want WHAT,OFFSET=WHAT,..., e.g. sonic-default,3ms=387KB/774KB/0.3%%)")
	}
	var out []ScheduleEntry
	for i, e := range strings.Split(spec, ",") {
		e = strings.TrimSpace(e)
		at, what, timed := strings.Cut(e, "=")
		if _, err := ParseTimeOfDay(strings.TrimSpace(at)); timed && err == nil {
			return nil, fmt.Errorf("schedule entry %d %q: %s is a time of day; schedule: takes offsets from its first decision (3ms, 8h), daily:HH:MM=WHAT,... times of day", i+1, e, strings.TrimSpace(at))
		}
		if timed && strings.Contains(at, ":") { // a policy's own "=" (builtin:prefer=P), not an offset
			at, what, timed = e, "", false
		}
		en := ScheduleEntry{At: "0s"}
		if timed {
			en.At = strings.TrimSpace(at)
			if en.At == "prefer" {
				return nil, fmt.Errorf("schedule entry %d %q: a comma separates entries, so model:NAME,prefer=P cannot be one (write model:NAME:prefer=P)", i+1, e)
			}
			d, err := units.ParseDuration(at)
			if err != nil {
				return nil, fmt.Errorf("schedule entry %d %q: offset: %w", i+1, e, err)
			}
			en.Offset = d
		} else {
			what = at
			if i > 0 {
				return nil, fmt.Errorf("schedule entry %d %q: needs an offset (OFFSET=WHAT)", i+1, e)
			}
		}
		if i == 0 && en.Offset != 0 {
			return nil, fmt.Errorf("schedule entry 1 %q: the first entry starts at 0", e)
		}
		if i > 0 && en.Offset <= out[i-1].Offset {
			return nil, fmt.Errorf("schedule entry %d %q: offset %v is not after the previous entry's %v", i+1, e, en.Offset, out[i-1].Offset)
		}
		if en.What = strings.TrimSpace(what); en.What == "" {
			return nil, fmt.Errorf("schedule entry %d %q: nothing to apply (want a preset name, KMIN/KMAX/PMAX or a policy such as builtin:prefer=1)", i+1, e)
		}
		out = append(out, en)
	}
	return out, nil
}

// ScheduleEntryIsPolicy tells a schedule entry that is a policy spec a
// schedule can hold (builtin:prefer=1, model:NAME, adaptive, static:NAME,
// fixed:...) from a preset name, KMIN/KMAX/PMAX, or a spec it cannot hold
// (another schedule:, daily: or roles:).
func ScheduleEntryIsPolicy(what string) bool {
	for _, p := range []string{SchedulePrefix, DailyPrefix, RolesPrefix} {
		if strings.HasPrefix(what, p) {
			return false
		}
	}
	return strings.Contains(what, ":") || what == BuiltinSpec || what == AdaptiveSpec
}

// Name is "schedule:" or "daily:" followed by the spec.
func (s *Schedule) Name() string { return s.name }

// Decide asks the entry in force at the observations' time (the end of the
// interval just measured, when the decision takes effect): by the time
// since the first interval it was asked about, or for daily: by the time
// of day in its zone, where before the first entry's time the last one's
// holds (from the day before).
func (s *Schedule) Decide(obs []env.Observation) []Decision {
	if len(obs) == 0 {
		return nil
	}
	now := obs[0].TimeNs
	var pos time.Duration
	if s.loc != nil {
		t := time.Unix(0, now).In(s.loc)
		pos = time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
			time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
	} else {
		if !s.started {
			s.started, s.t0 = true, now-max(0, obs[0].Metrics.IntervalNs)
		}
		pos = time.Duration(now - s.t0)
	}
	i := 0
	if s.loc != nil {
		i = len(s.offsets) - 1 // the last entry until the first one's time, from the day before
	}
	for k := range s.offsets {
		if s.offsets[k] <= pos {
			i = k
		}
	}
	out := s.steps[i].Decide(obs)
	if len(out) != len(obs) {
		panic(fmt.Sprintf("%s step %d (%s) gave %d decisions for %d queues", s.kind(), i+1, s.steps[i].Name(), len(out), len(obs)))
	}
	prefixReasons(out, s.kind()+" step "+strconv.Itoa(i+1)+" (from "+s.from[i]+"): ")
	return out
}

// kind is "schedule" or "daily".
func (s *Schedule) kind() string {
	if s.loc != nil {
		return KindDaily.Name
	}
	return KindSchedule.Name
}
