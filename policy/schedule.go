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
		return env.Setting{}, fmt.Errorf("setting %q: pmax %g is outside (0, 100%%]", s, pmax)
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
	return Static{def: presetDef{name: name, at100G: at100G, source: "explicit setting " + name + " at 100 Gb/s"}, kind: "fixed"}
}

// Schedule is a Policy that applies fixed settings by time: each entry
// holds from its offset until the next entry's. Offsets count from the
// start of the first interval the schedule is asked about (the first
// observation's time less its measured interval), so a schedule runs the
// same in the simulator (where that is time 0) and against switches
// (where it is when the agent started). It is what an engineer does by
// hand when a fabric's traffic has known phases, and it is the yardstick
// for an adaptive policy on a time-varying scenario: a schedule that knows
// the phase boundaries in advance.
type Schedule struct {
	name    string
	offsets []time.Duration
	steps   []Static
	started bool
	t0      int64
}

// NewSchedule parses "SETTING,OFFSET=SETTING,...": the first entry starts at
// once (an offset, if given, must be 0), later ones at strictly increasing
// offsets such as 3ms; each SETTING is a preset name or KMIN/KMAX/PMAX at
// 100 Gb/s. Example: "sonic-default,3ms=387KB/774KB/0.3%,6ms=sonic-default".
func NewSchedule(spec string) (*Schedule, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("empty schedule (want SETTING,OFFSET=SETTING,..., e.g. sonic-default,3ms=387KB/774KB/0.3%%)")
	}
	s := &Schedule{name: "schedule:" + spec}
	for i, e := range strings.Split(spec, ",") {
		at, what, timed := strings.Cut(strings.TrimSpace(e), "=")
		var off time.Duration
		if timed {
			d, err := units.ParseDuration(at)
			if err != nil {
				return nil, fmt.Errorf("schedule entry %d %q: offset: %w", i+1, e, err)
			}
			off = d
		} else {
			what = at
			if i > 0 {
				return nil, fmt.Errorf("schedule entry %d %q: needs an offset (OFFSET=SETTING)", i+1, e)
			}
		}
		if i == 0 && off != 0 {
			return nil, fmt.Errorf("schedule entry 1 %q: the first entry starts at 0", e)
		}
		if i > 0 && off <= s.offsets[i-1] {
			return nil, fmt.Errorf("schedule entry %d %q: offset %v is not after the previous entry's %v", i+1, e, off, s.offsets[i-1])
		}
		what = strings.TrimSpace(what)
		var st Static
		var err error
		if strings.Contains(what, "/") {
			st, err = NewFixed(what)
		} else {
			st, err = Preset(what)
		}
		if err != nil {
			return nil, fmt.Errorf("schedule entry %d %q: %w", i+1, e, err)
		}
		s.offsets = append(s.offsets, off)
		s.steps = append(s.steps, st)
	}
	return s, nil
}

// Name is "schedule:" followed by the spec.
func (s *Schedule) Name() string { return s.name }

// Decide applies the entry in force at the observations' time (the end of
// the interval just measured, when the decision takes effect).
func (s *Schedule) Decide(obs []env.Observation) []Decision {
	if len(obs) == 0 {
		return nil
	}
	now := obs[0].TimeNs
	if !s.started {
		s.started, s.t0 = true, now-max(0, obs[0].Metrics.IntervalNs)
	}
	i := len(s.offsets) - 1
	for i > 0 && time.Duration(now-s.t0) < s.offsets[i] {
		i--
	}
	out := s.steps[i].Decide(obs)
	for k := range out {
		out[k].Reason = fmt.Sprintf("schedule step %d (from %v): %s", i+1, s.offsets[i], out[k].Reason)
	}
	return out
}
