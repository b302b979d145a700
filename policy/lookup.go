package policy

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Resolver builds a policy from the argument of a spec: for "model:NAME"
// the Resolver registered under "model" gets "NAME"; for a bare "builtin"
// the one registered under "builtin" gets "".
type Resolver func(arg string) (Policy, error)

var (
	resolversMu sync.RWMutex
	resolvers   = map[string]Resolver{}
)

// specUsage describes the argument of this package's own registered
// prefixes in Specs.
var specUsage = map[string]string{
	"builtin": "builtin[:prefer=P]",
	"model":   "model:NAME[,prefer=P] (P in [-1, 1]: toward throughput below 0, latency above)",
}

// Register adds a spec prefix that Lookup resolves, such as "model" or
// "builtin" for learned policies (packages that cannot be imported here
// register themselves). It fails for an empty prefix, one with a colon, one
// already registered, and the built-in "static", "fixed", "schedule" and
// "adaptive".
func Register(prefix string, r Resolver) error {
	if prefix == "" || strings.Contains(prefix, ":") || r == nil {
		return fmt.Errorf("policy: cannot register prefix %q (want a non-empty name without ':' and a resolver)", prefix)
	}
	if prefix == "static" || prefix == "adaptive" || prefix == "fixed" || prefix == "schedule" {
		return fmt.Errorf("policy: prefix %q is built in", prefix)
	}
	resolversMu.Lock()
	defer resolversMu.Unlock()
	if _, dup := resolvers[prefix]; dup {
		return fmt.Errorf("policy: prefix %q is already registered", prefix)
	}
	resolvers[prefix] = r
	return nil
}

// Specs describes the spec forms Lookup accepts, for help texts and errors.
func Specs() []string {
	out := []string{"static:NAME (" + strings.Join(PresetNames(), ", ") + ")", "fixed:KMIN/KMAX/PMAX (at 100G, e.g. 387KB/774KB/0.3%)",
		"schedule:SETTING,OFFSET=SETTING,... (SETTING a preset name or KMIN/KMAX/PMAX, e.g. sonic-default,3ms=387KB/774KB/0.3%)", "adaptive"}
	resolversMu.RLock()
	var extra []string
	for p := range resolvers {
		u, ok := specUsage[p]
		if !ok {
			u = p + "[:ARG]"
		}
		extra = append(extra, u)
	}
	resolversMu.RUnlock()
	sort.Strings(extra)
	return append(out, extra...)
}

// Lookup resolves a policy spec: "static:NAME" (a preset),
// "fixed:KMIN/KMAX/PMAX" (an explicit setting at 100 Gb/s), "schedule:..."
// (settings by time, see NewSchedule), "adaptive" (the step-search
// baseline with default settings) or a registered prefix.
// Each call returns a fresh policy (stateful policies start empty).
func Lookup(spec string) (Policy, error) {
	s := strings.TrimSpace(spec)
	prefix, arg, hasArg := strings.Cut(s, ":")
	switch prefix {
	case "static":
		if !hasArg || arg == "" {
			return nil, fmt.Errorf("policy %q: want static:NAME with NAME one of %s", spec, strings.Join(PresetNames(), ", "))
		}
		p, err := NewStatic(arg)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", spec, err)
		}
		return p, nil
	case "fixed":
		p, err := NewFixed(arg)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", spec, err)
		}
		return p, nil
	case "schedule":
		p, err := NewSchedule(arg)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", spec, err)
		}
		return p, nil
	case "adaptive":
		if hasArg {
			return nil, fmt.Errorf("policy %q: adaptive takes no argument", spec)
		}
		return NewAdaptive(DefaultAdaptiveConfig()), nil
	}
	resolversMu.RLock()
	r := resolvers[prefix]
	resolversMu.RUnlock()
	if r == nil {
		return nil, fmt.Errorf("unknown policy %q (want one of: %s)", spec, strings.Join(Specs(), "; "))
	}
	p, err := r(arg)
	if err != nil {
		return nil, fmt.Errorf("policy %q: %w", spec, err)
	}
	return p, nil
}
