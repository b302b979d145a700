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
}

// Lookup resolves spec with the zero Resolver: every spec but "model:NAME".
func Lookup(spec string) (Policy, error) { return Resolver{}.Lookup(spec) }

// Specs describes the spec forms Lookup accepts, for help texts and errors.
func Specs() []string {
	return []string{"static:NAME (" + strings.Join(PresetNames(), ", ") + ")", "fixed:KMIN/KMAX/PMAX (at 100G, e.g. 387KB/774KB/0.3%)",
		"schedule:WHAT,OFFSET=WHAT,... (WHAT a preset name, KMIN/KMAX/PMAX or a policy without a comma other than roles:, schedule: and daily:, e.g. sonic-default,3ms=387KB/774KB/0.3%,6ms=builtin:prefer=1; a +headroom= or +alpha= rule after the last entry applies to every entry)",
		"daily:[tz=ZONE,]HH:MM=WHAT,... (by the time of day on the switches' clock, in UTC or an IANA zone, e.g. tz=Europe/Berlin,08:00=builtin:prefer=1,20:00=builtin)", "adaptive",
		"builtin[:prefer=P]", "model:NAME[:prefer=P] (P in [-1, 1]: toward throughput below 0, latency above)",
		"roles:host=SPEC;fabric=SPEC[;other=SPEC] (one policy for host-facing ports, another for fabric ports)",
		"SPEC+headroom=floor[*F]|default|model:NAME (every lossless PG's headroom at F times its lossless floor, or one headroom per switch by a switch-level model)",
		"SPEC+alpha=A (every lossless PG's dynamic-threshold alpha at A, a power of two from 1/64 to 8)"}
}

// errNoModels is the error for "model:NAME" without a ModelSource.
var errNoModels = errors.New("no model registry to load it from (the caller gave the policy package none)")

// Lookup resolves a policy spec: "static:NAME" (a preset),
// "fixed:KMIN/KMAX/PMAX" (an explicit setting at 100 Gb/s), "schedule:..."
// (settings or policies by time, see NewSchedule), "daily:..." (by the
// time of day, see NewDaily), "adaptive" (the step-search
// baseline with default settings), "builtin[:prefer=P]" (the embedded
// model), "model:NAME[:prefer=P]" (a model from r.Models) or
// "roles:host=SPEC;fabric=SPEC[;other=SPEC]" (per port role, see Roles).
// Each call returns a fresh policy (stateful policies start empty).
func (r Resolver) Lookup(spec string) (Policy, error) {
	s := strings.TrimSpace(spec)
	if arg, ok := strings.CutPrefix(s, "roles:"); ok {
		ro, err := r.newRoles(spec, arg)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", spec, err)
		}
		return ro, nil
	}
	for _, rule := range []string{"+alpha=", "+headroom="} {
		if strings.Count(s, rule) > 1 {
			return nil, fmt.Errorf("policy %q: %s twice: give each rule once", spec, strings.TrimSuffix(rule, "="))
		}
		// in a schedule a rule applies to every entry: it goes after the last
		if _, after, ok := strings.Cut(s, rule); ok && strings.Contains(after, ",") &&
			(strings.HasPrefix(s, "schedule:") || strings.HasPrefix(s, "daily:")) {
			return nil, fmt.Errorf("policy %q: %s inside a schedule: give it after the last entry, where it applies to every entry", spec, strings.TrimSuffix(rule, "="))
		}
	}
	if base, arg, ok := SplitAlpha(s); ok {
		inner, err := r.Lookup(base)
		if err != nil {
			return nil, err
		}
		a, err := NewAlpha(inner, spec, arg)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", spec, err)
		}
		return a, nil
	}
	if base, hr, ok := strings.Cut(s, "+headroom="); ok {
		inner, err := r.Lookup(base)
		if err != nil {
			return nil, err
		}
		if ref, ok := strings.CutPrefix(hr, "model:"); ok {
			sh, err := r.switchHeadroom(inner, spec, ref)
			if err != nil {
				return nil, fmt.Errorf("policy %q: %w", spec, err)
			}
			return sh, nil
		}
		h, err := NewHeadroom(inner, spec, hr)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", spec, err)
		}
		return h, nil
	}
	prefix, arg, hasArg := strings.Cut(s, ":")
	var (
		p   Policy
		err error
	)
	switch prefix {
	case "static":
		if !hasArg || arg == "" {
			return nil, fmt.Errorf("policy %q: want static:NAME with NAME one of %s", spec, strings.Join(PresetNames(), ", "))
		}
		p, err = NewStatic(arg)
	case "fixed":
		p, err = NewFixed(arg)
	case "schedule":
		p, err = r.NewSchedule(arg)
	case "daily":
		p, err = r.NewDaily(arg)
	case "adaptive":
		if hasArg {
			return nil, fmt.Errorf("policy %q: adaptive takes no argument", spec)
		}
		return NewAdaptive(DefaultAdaptiveConfig()), nil
	case "builtin":
		p, err = resolveBuiltin(arg)
	case "model":
		p, err = r.resolveModel(arg)
	default:
		return nil, fmt.Errorf("unknown policy %q (want one of: %s)", spec, strings.Join(Specs(), "; "))
	}
	if err != nil {
		return nil, fmt.Errorf("policy %q: %w", spec, err)
	}
	return p, nil
}

// switchHeadroom resolves POLICY+headroom=model:REF.
func (r Resolver) switchHeadroom(inner Policy, spec, ref string) (Policy, error) {
	if ref == "" {
		return nil, errors.New("headroom=model:NAME: no model name")
	}
	if r.Models == nil {
		return nil, errNoModels
	}
	m, err := r.Models(ref)
	if err != nil {
		return nil, err
	}
	return SwitchHeadroomFromModel(inner, spec, "model:"+ref, m)
}

// SpecWarnings lists what looks wrong in a policy spec without being
// invalid: a fixed: setting, or a schedule: or daily: entry's, with Kmin or Kmax
// below one MTU (env.Setting.Warnings; usually a size in KB written in
// bytes). A spec that does not parse has none (Lookup reports it).
func SpecWarnings(spec string) []string {
	if arg, ok := strings.CutPrefix(strings.TrimSpace(spec), "roles:"); ok {
		parts, err := ParseRoles(arg)
		if err != nil {
			return nil
		}
		var out []string
		for _, role := range []string{"host", "fabric", "other"} {
			for _, w := range SpecWarnings(parts[role]) {
				out = append(out, role+": "+w)
			}
		}
		return out
	}
	// the base spec: before the first +alpha= or +headroom= rule, in
	// whichever order they come
	s := strings.TrimSpace(spec)
	for _, rule := range []string{"+alpha=", "+headroom="} {
		s, _, _ = strings.Cut(s, rule)
	}
	var out []string
	if arg, ok := strings.CutPrefix(s, "fixed:"); ok {
		if st, err := ParseFixed(arg); err == nil {
			out = append(out, st.Warnings()...)
		}
	}
	entries, _, err := TimedEntries(s)
	if err != nil {
		return nil
	}
	for i, e := range entries {
		var ws []string
		switch {
		case strings.Contains(e.What, ":"):
			ws = SpecWarnings(e.What) // a policy (fixed:..., or one without settings)
		case strings.Contains(e.What, "/"):
			if st, err := ParseFixed(e.What); err == nil {
				ws = st.Warnings()
			}
		}
		for _, w := range ws {
			out = append(out, fmt.Sprintf("entry %d (at %s): %s", i+1, e.At, w))
		}
	}
	return out
}
