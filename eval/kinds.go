package eval

import (
	"fmt"
	"strings"

	"github.com/ecntune/ecntune/policy"
)

// eval's own spec forms, added to the policy package's as a
// policy.Resolver's Kinds: specResolver tells them apart and parses them
// (and resolves truth:) with the rest of the grammar.
var (
	// oracleKind is static:best (Oracle): no policy, the fixed setting
	// picked in hindsight.
	oracleKind = &policy.Kind{Name: Oracle, Alone: Oracle}
	// scheduleBestKind is schedule:best@OFFSET,... (ScheduleBestPrefix;
	// the bare schedule:best is refused by name): no policy, a search.
	scheduleBestKind = &policy.Kind{Name: strings.TrimSuffix(ScheduleBestPrefix, "@"), Prefix: ScheduleBestPrefix,
		Alone: strings.TrimSuffix(ScheduleBestPrefix, "@"), Parse: parseScheduleBestKind}
	// truthKind is a ground-truth bound (TruthPrefix), whose parts are
	// its two policies.
	truthKind = &policy.Kind{Name: "truth", Prefix: TruthPrefix, Parse: parseTruthKind, Resolve: resolveTruthKind}
)

// specResolver parses every spec eval takes: the policy package's and
// eval's own kinds.
var specResolver = policy.Resolver{Kinds: []*policy.Kind{oracleKind, scheduleBestKind, truthKind}}

// parseScheduleBestKind checks a schedule:best@ spec (parseScheduleBest).
func parseScheduleBestKind(_ *policy.Parser, sp *policy.Spec, _ string) error {
	_, err := parseScheduleBest(sp.Text)
	return err
}

// parseTruthKind reads a truth: spec's two policy specs into its parts,
// small (or arriving) and else.
func parseTruthKind(p *policy.Parser, sp *policy.Spec, _ string) error {
	small, rest, err := TruthSpecs(sp.Text)
	if err != nil {
		return err
	}
	for _, pt := range []policy.Part{{Label: "small", Spec: policy.Spec{Text: small}}, {Label: "else", Spec: policy.Spec{Text: rest}}} {
		ps, err := p.Parse(pt.Spec.Text)
		if err != nil {
			return fmt.Errorf("policy %q: %s=%s: %w", sp.Text, pt.Label, pt.Spec.Text, err)
		}
		sp.Parts = append(sp.Parts, policy.Part{Label: pt.Label, Spec: ps})
	}
	return nil
}

// resolveTruthKind is the bound of a parsed truth: spec, its parts
// resolved by r.
func resolveTruthKind(r policy.Resolver, sp policy.Spec) (policy.Policy, error) {
	return newTruthBound(sp, r.Resolve)
}
