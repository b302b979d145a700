package eval

import (
	"testing"

	"github.com/ecntune/ecntune/policy"
)

// eval's kinds go through the policy package's resolver: told apart by
// KindOf, a truth: bound resolved by Lookup with its parts, and none of
// them known to the policy package's own zero Resolver.
func TestEvalKinds(t *testing.T) {
	for spec, want := range map[string]*policy.Kind{Oracle: oracleKind, "schedule:best@3ms": scheduleBestKind, "schedule:best": scheduleBestKind,
		"truth:small=builtin;else=builtin": truthKind, "static:hpcc": policy.KindStatic, " static:best": policy.KindStatic,
		"schedule:hpcc,3ms=nvidia": policy.KindSchedule} {
		if got := specResolver.KindOf(spec); got != want {
			t.Errorf("KindOf(%q) = %v, want %v", spec, got, want)
		}
	}
	p, err := specResolver.Lookup("truth:arriving=static:hpcc;else=roles:host=static:nvidia;fabric=static:cisco")
	b, ok := p.(*truthBound)
	if err != nil || !ok || !b.arriving || b.small.Name() != "static:hpcc" || b.rest.Name() != "roles:host=static:nvidia;fabric=static:cisco" {
		t.Fatalf("truth bound %+v %v", p, err)
	}
	for _, spec := range []string{Oracle, "schedule:best@3ms"} {
		if _, err := specResolver.Lookup(spec); err == nil {
			t.Errorf("%s resolved to a policy", spec)
		}
	}
	if _, err := policy.Lookup("truth:small=builtin;else=builtin"); err == nil {
		t.Error("policy.Lookup took truth:")
	}
}
