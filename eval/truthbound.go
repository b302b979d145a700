package eval

import (
	"fmt"
	"strings"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv/gym"
)

// TruthPrefix starts the spec of a ground-truth bound,
// "truth:small=SPEC;else=SPEC": every interval, each queue through which
// a small flow (< 100 KB) is in flight at the decision gets the decision
// of the first policy, every other queue the second's. No switch can tell
// which flows cross a queue, so it is not a policy an agent can run: it
// bounds what any policy deciding on that interval could gain by setting
// a queue apart while small flows cross it.
const TruthPrefix = "truth:"

// truthBound is a TruthPrefix spec resolved.
type truthBound struct {
	name        string
	small, rest policy.Policy
	truth       [][]float32 // gym.Env.Truth at the decision
}

// TruthSpecs splits a TruthPrefix spec, "truth:small=A;else=B", into A
// and B. The first ";else=" ends A, so either may be a roles: spec with
// its own ";".
func TruthSpecs(spec string) (small, rest string, err error) {
	body, ok := strings.CutPrefix(spec, TruthPrefix)
	if !ok {
		return "", "", fmt.Errorf("policy %q: not a %s spec", spec, TruthPrefix)
	}
	const want = "want " + TruthPrefix + "small=SPEC;else=SPEC"
	body, ok = strings.CutPrefix(body, "small=")
	if !ok {
		return "", "", fmt.Errorf("policy %q: %s: it does not start with small=", spec, want)
	}
	small, rest, ok = strings.Cut(body, ";else=")
	switch {
	case !ok:
		return "", "", fmt.Errorf("policy %q: %s: no ;else=", spec, want)
	case small == "":
		return "", "", fmt.Errorf("policy %q: %s: small= is empty", spec, want)
	case rest == "":
		return "", "", fmt.Errorf("policy %q: %s: else= is empty", spec, want)
	}
	return small, rest, nil
}

func parseTruthBound(spec string, lookup func(string) (policy.Policy, error)) (*truthBound, error) {
	small, rest, err := TruthSpecs(spec)
	if err != nil {
		return nil, err
	}
	b := &truthBound{name: spec}
	if b.small, err = lookup(small); err != nil {
		return nil, fmt.Errorf("policy %q: small=%s: %w", spec, small, err)
	}
	if b.rest, err = lookup(rest); err != nil {
		return nil, fmt.Errorf("policy %q: else=%s: %w", spec, rest, err)
	}
	return b, nil
}

func (b *truthBound) Name() string { return b.name }

// Decide takes each queue's decision from the small-flow policy when the
// truth shows a small flow crossing it, else from the other.
func (b *truthBound) Decide(obs []env.Observation) []policy.Decision {
	a, r := b.small.Decide(obs), b.rest.Decide(obs)
	out := make([]policy.Decision, len(obs))
	for i := range obs {
		if i < len(b.truth) && b.truth[i][gym.TruthActiveSmall] > 0 {
			out[i] = a[i]
			// Appended, so that eval still counts a hold outside a learned
			// policy's validated intervals (it reads the reason's start).
			out[i].Reason = a[i].Reason + " (small flows crossing)"
		} else {
			out[i] = r[i]
		}
	}
	return out
}

// SpecWarnings is policy.SpecWarnings for every spec eval takes: a
// TruthPrefix bound is warned about through its two specs.
func SpecWarnings(spec string) []string {
	if !strings.HasPrefix(spec, TruthPrefix) {
		return policy.SpecWarnings(spec)
	}
	small, rest, err := TruthSpecs(spec)
	if err != nil {
		return nil // RunAll names what is wrong with it
	}
	var out []string
	for _, w := range policy.SpecWarnings(small) {
		out = append(out, "small: "+w)
	}
	for _, w := range policy.SpecWarnings(rest) {
		out = append(out, "else: "+w)
	}
	return out
}
