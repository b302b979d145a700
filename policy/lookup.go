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

// Register adds a spec prefix that Lookup resolves, such as "model" or
// "builtin" for learned policies (packages that cannot be imported here
// register themselves). It fails for an empty prefix, one with a colon, one
// already registered, and the built-in "static" and "adaptive".
func Register(prefix string, r Resolver) error {
	if prefix == "" || strings.Contains(prefix, ":") || r == nil {
		return fmt.Errorf("policy: cannot register prefix %q (want a non-empty name without ':' and a resolver)", prefix)
	}
	if prefix == "static" || prefix == "adaptive" {
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
	out := []string{"static:NAME (" + strings.Join(PresetNames(), ", ") + ")", "adaptive"}
	resolversMu.RLock()
	var extra []string
	for p := range resolvers {
		extra = append(extra, p+"[:ARG]")
	}
	resolversMu.RUnlock()
	sort.Strings(extra)
	return append(out, extra...)
}

// Lookup resolves a policy spec: "static:NAME" (a preset), "adaptive" (the
// step-search baseline with default settings) or a registered prefix.
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
