package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ecntune/ecntune/models"
)

// ModelSource loads a stored model by reference ("NAME", "NAME@3",
// "NAME@promoted" or a numeric id, as models.Registry.Resolve takes them).
// The caller decides where models live; this package never opens a file.
type ModelSource func(ref string) (models.Model, error)

// Resolver turns policy specs into policies. Its zero value resolves every
// spec but "model:NAME", which needs Models.
type Resolver struct {
	// Models loads the models "model:NAME" names (nil: such specs are an
	// error that says so).
	Models ModelSource
	// Kinds are spec forms beyond the built-in ones (eval's static:best,
	// schedule:best@ and truth:), tried first, on the spec as given.
	Kinds []*Kind
}

// Lookup resolves spec with the zero Resolver: every spec but "model:NAME".
func Lookup(spec string) (Policy, error) { return Resolver{}.Lookup(spec) }

// Specs describes the spec forms Lookup accepts, for help texts and errors.
func Specs() []string {
	return []string{StaticPrefix + "NAME (" + strings.Join(PresetNames(), ", ") + ")", FixedPrefix + "KMIN/KMAX/PMAX (at 100G, e.g. 387KB/774KB/0.3%)",
		SchedulePrefix + "WHAT,OFFSET=WHAT,... (WHAT a preset name, KMIN/KMAX/PMAX or a policy without a comma other than roles:, schedule: and daily:, e.g. sonic-default,3ms=387KB/774KB/0.3%,6ms=builtin:prefer=1; a +headroom= or +alpha= rule after the last entry applies to every entry)",
		DailyPrefix + "[tz=ZONE,]HH:MM=WHAT,... (by the time of day on the switches' clock, in UTC or an IANA zone, e.g. tz=Europe/Berlin,08:00=builtin:prefer=1,20:00=builtin)", AdaptiveSpec,
		BuiltinSpec + "[:prefer=P] (the built-in model; " + HighRateSpec + ": the one for ports of 400 Gb/s and faster)", ModelPrefix + "NAME[:prefer=P] (P in [-1, 1]: toward throughput below 0, latency above)",
		RolesPrefix + "host=SPEC;fabric=SPEC[;other=SPEC] (one policy for host-facing ports, another for fabric ports)",
		RatePrefix + "SPEC;RATE=SPEC[;RATE=SPEC...] (by port speed: the first SPEC below the lowest RATE, each RATE=SPEC from RATE up, e.g. rate:builtin;400G=builtin:400g)",
		"SPEC" + HeadroomRule + "floor[*F]|default|model:NAME (every lossless PG's headroom at F times its lossless floor, or one headroom per switch by a switch-level model)",
		"SPEC" + AlphaRule + "A (every lossless PG's dynamic-threshold alpha at A, a power of two from 1/64 to 8)"}
}

// errNoModels is the error for "model:NAME" without a ModelSource.
var errNoModels = errors.New("no model registry to load it from (the caller gave the policy package none)")

// Lookup resolves a policy spec: ParseSpec, then Resolve. The forms are
// "static:NAME" (a preset), "fixed:KMIN/KMAX/PMAX" (an explicit setting
// at 100 Gb/s), "schedule:..." (settings or policies by time, see
// NewSchedule), "daily:..." (by the time of day, see NewDaily), "adaptive"
// (the step-search baseline with default settings), "builtin[:prefer=P]"
// (the embedded model), "model:NAME[:prefer=P]" (a model from r.Models),
// "roles:host=SPEC;fabric=SPEC[;other=SPEC]" (per port role, see Roles),
// "rate:SPEC;RATE=SPEC[;...]" (by port speed, see ByRate) and r.Kinds. Each call returns a fresh policy (stateful policies start
// empty).
func (r Resolver) Lookup(spec string) (Policy, error) {
	sp, err := r.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	return r.Resolve(sp)
}

// Resolve builds the policy of a parsed spec: its kind's, inside its
// rules, loading the models it names through r.Models. Each call returns
// a fresh policy.
func (r Resolver) Resolve(sp Spec) (Policy, error) {
	switch {
	case sp.Kind == nil:
		return nil, fmt.Errorf("policy %q: not a parsed spec (ParseSpec gives one)", sp.Text)
	case sp.Kind.Resolve == nil:
		return nil, fmt.Errorf("policy %q: %s names no policy of its own", sp.Text, sp.Kind.Name)
	}
	p, err := sp.Kind.Resolve(r, sp)
	if err != nil {
		return nil, err
	}
	for _, rule := range sp.Rules {
		if p, err = r.applyRule(p, rule); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// applyRule wraps inner in rule.
func (r Resolver) applyRule(inner Policy, rule Rule) (Policy, error) {
	switch {
	case rule.Name == AlphaRule:
		return newAlpha(inner, rule.Text, rule.Alpha), nil
	case rule.Model != "":
		sh, err := r.switchHeadroom(inner, rule.Text, rule.Model)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", rule.Text, err)
		}
		return sh, nil
	}
	return &Headroom{inner: inner, name: rule.Text, factor: rule.Factor}, nil
}

// switchHeadroom resolves POLICY+headroom=model:REF.
func (r Resolver) switchHeadroom(inner Policy, spec, ref string) (Policy, error) {
	if r.Models == nil {
		return nil, errNoModels
	}
	m, err := r.Models(ref)
	if err != nil {
		return nil, err
	}
	return SwitchHeadroomFromModel(inner, spec, ModelPrefix+ref, m)
}

// SpecWarnings is Spec.Warnings of spec parsed with the zero Resolver.
func SpecWarnings(spec string) []string { return Resolver{}.SpecWarnings(spec) }

// SpecWarnings lists what looks wrong in a policy spec without being
// invalid (Spec.Warnings). A spec that does not parse has none (Lookup
// reports it).
func (r Resolver) SpecWarnings(spec string) []string {
	sp, err := r.ParseSpec(spec)
	if err != nil {
		return nil
	}
	return sp.Warnings()
}
