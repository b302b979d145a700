package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ecntune/ecntune/env"
)

// The built-in kinds' parsers and resolvers (Kind.Parse, Kind.Resolve),
// set on them by init. Errors name the spec (its Base) they are about.

// parseStatic reads static:NAME, a preset.
func parseStatic(_ *Parser, sp *Spec, arg string) error {
	if arg == "" {
		return fmt.Errorf("policy %q: want static:NAME with NAME one of %s", sp.Base, strings.Join(PresetNames(), ", "))
	}
	if _, err := Preset(arg); err != nil {
		return specErr(sp, err)
	}
	sp.Preset = arg
	return nil
}

// resolveStatic is a static: spec's preset (or a schedule entry's).
func resolveStatic(_ Resolver, sp Spec) (Policy, error) {
	s, err := Preset(sp.Preset)
	if err != nil {
		return nil, specErr(&sp, err)
	}
	return s, nil
}

// parseFixedKind reads fixed:KMIN/KMAX/PMAX (see ParseFixed).
func parseFixedKind(_ *Parser, sp *Spec, arg string) error {
	s, err := ParseFixed(arg)
	sp.Setting = s
	return specErr(sp, err)
}

// resolveFixedKind is a fixed: spec's setting (or a schedule entry's),
// as NewFixed makes it.
func resolveFixedKind(_ Resolver, sp Spec) (Policy, error) {
	return FixedSetting(strings.TrimSpace(sp.Arg), sp.Setting), nil
}

// parseSchedule reads schedule:WHAT,OFFSET=WHAT,... (see NewSchedule).
func parseSchedule(p *Parser, sp *Spec, arg string) error {
	return specErr(sp, p.timed(sp, arg, false))
}

// parseDaily reads daily:[tz=ZONE,]HH:MM=WHAT,... (see NewDaily).
func parseDaily(p *Parser, sp *Spec, arg string) error {
	return specErr(sp, p.timed(sp, arg, true))
}

// timed reads the entries (and for daily: the zone) of a schedule: or
// daily: spec's argument arg into sp.
func (p *Parser) timed(sp *Spec, arg string, daily bool) error {
	var entries []ScheduleEntry
	var err error
	kind := KindSchedule.Name
	if daily {
		kind = KindDaily.Name
		sp.Zone, entries, err = SplitDaily(arg)
	} else {
		entries, err = SplitSchedule(arg)
	}
	if err != nil {
		return err
	}
	for i, e := range entries {
		es, err := p.entry(e.What)
		switch {
		case err != nil && p.agent:
			return fmt.Errorf("entry %d (at %s): %w", i+1, e.At, err)
		case err != nil:
			return fmt.Errorf("%s entry %d (at %s) %q: %w", kind, i+1, e.At, e.What, err)
		}
		sp.Entries = append(sp.Entries, Entry{ScheduleEntry: e, Spec: es})
	}
	return nil
}

// entry parses what a schedule entry applies: a policy spec a schedule
// can hold, a setting (a fixed spec of it) or a preset name (a static
// spec of it).
func (p *Parser) entry(what string) (Spec, error) {
	switch {
	case strings.HasPrefix(what, SchedulePrefix) || strings.HasPrefix(what, DailyPrefix):
		return Spec{}, errors.New("a schedule cannot hold a schedule (schedule: or daily:)")
	case strings.HasPrefix(what, RolesPrefix):
		return Spec{}, errors.New("a schedule cannot hold roles: (give roles:host=schedule:...;fabric=... instead)")
	case strings.HasPrefix(what, RatePrefix):
		return Spec{}, errors.New("a schedule cannot hold rate: (give rate:schedule:...;400G=... instead)")
	case ScheduleEntryIsPolicy(what):
		return p.builtin(what)
	}
	sp := Spec{Text: what, Base: what, Arg: what}
	var err error
	if strings.Contains(what, "/") {
		sp.Kind = KindFixed
		sp.Setting, err = ParseFixed(what)
	} else {
		sp.Kind, sp.Preset = KindStatic, what
		_, err = Preset(what)
	}
	if err != nil {
		return Spec{}, err
	}
	return sp, nil
}

// resolveTimed is a schedule: or daily: spec's Schedule.
func resolveTimed(r Resolver, sp Spec) (Policy, error) {
	s, err := r.timed(sp)
	if err != nil {
		return nil, specErr(&sp, err)
	}
	return s, nil
}

// parseAdaptive refuses an argument to adaptive.
func parseAdaptive(_ *Parser, sp *Spec, _ string) error {
	if strings.TrimSpace(sp.Base) != AdaptiveSpec {
		return fmt.Errorf("policy %q: adaptive takes no argument", sp.Base)
	}
	return nil
}

// resolveAdaptive is the step search with default settings.
func resolveAdaptive(Resolver, Spec) (Policy, error) {
	return NewAdaptive(DefaultAdaptiveConfig()), nil
}

// parseBuiltin reads builtin[:prefer=P] or builtin:400g; for CheckSpec it
// also loads the embedded model, so that a broken one fails there, not at
// the first decision.
func parseBuiltin(p *Parser, sp *Spec, arg string) error {
	if strings.TrimSpace(arg) == HighRateOption {
		sp.HighRate = true
		if p.agent {
			_, err := resolveBuiltin(Resolver{}, *sp)
			return err
		}
		return nil
	}
	if strings.Contains(arg, HighRateOption) {
		return specErr(sp, fmt.Errorf("builtin:%s takes no other option (its model has no preference input), got %q", HighRateOption, arg))
	}
	rest, pref, set, err := SplitPreference(arg)
	if err == nil && (rest != "" || set && !strings.HasPrefix(arg, PreferOption)) {
		err = fmt.Errorf("builtin takes no argument but prefer=P or %s, got %q", HighRateOption, arg)
	}
	if err != nil {
		return specErr(sp, err)
	}
	sp.Preference, sp.Prefer = pref, set
	if p.agent {
		_, err = resolveBuiltin(Resolver{}, *sp)
	}
	return err
}

// parseModel reads model:REF[:prefer=P] (or ",prefer=P"); the model is
// looked up by Resolve.
func parseModel(p *Parser, sp *Spec, arg string) error {
	ref, pref, set, err := SplitPreference(arg)
	if p.agent {
		if err == nil && ref == "" {
			err = fmt.Errorf("%q names no model", sp.Base)
		}
		if err != nil {
			return err // the agent's check gives these as they are
		}
	}
	if err == nil && ref == "" {
		err = errors.New("want model:NAME (a model name, NAME@VERSION or an id in the registry), optionally model:NAME:prefer=P")
	}
	if err != nil {
		return specErr(sp, err)
	}
	sp.Model, sp.Preference, sp.Prefer = ref, pref, set
	return nil
}

// parseRoles reads roles:host=SPEC;fabric=SPEC[;other=SPEC] into its
// Parts, in that order.
func parseRoles(p *Parser, sp *Spec, arg string) error {
	parts, err := ParseRoles(arg)
	if err != nil {
		return specErr(sp, err)
	}
	for _, role := range roleOrder {
		spec, ok := parts[role]
		if !ok {
			continue
		}
		ps, err := p.builtin(spec)
		if err != nil {
			return specErr(sp, fmt.Errorf("role %s: %w", role, err))
		}
		sp.Parts = append(sp.Parts, Part{Label: role, Spec: ps})
	}
	return nil
}

// resolveRoles resolves every part of a roles: spec.
func resolveRoles(r Resolver, sp Spec) (Policy, error) {
	ro := &Roles{name: sp.Base, byPeer: map[env.Peer]Policy{}, specs: map[env.Peer]string{}}
	for _, pt := range sp.Parts {
		p, err := r.Resolve(pt.Spec)
		if err != nil {
			return nil, specErr(&sp, fmt.Errorf("role %s: %w", pt.Label, err))
		}
		peer := roleNames[pt.Label]
		ro.byPeer[peer], ro.specs[peer] = p, pt.Spec.Text
	}
	return ro, nil
}
