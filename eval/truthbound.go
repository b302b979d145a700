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

func parseTruthBound(spec string, lookup func(string) (policy.Policy, error)) (*truthBound, error) {
	body, ok := strings.CutPrefix(spec, TruthPrefix)
	if !ok {
		return nil, fmt.Errorf("policy %q: not a %s spec", spec, TruthPrefix)
	}
	var small, rest string
	for _, part := range strings.Split(body, ";") {
		k, v, ok := strings.Cut(part, "=")
		switch {
		case !ok || v == "":
			return nil, fmt.Errorf("policy %q: %q: want small=SPEC;else=SPEC", spec, part)
		case k == "small" && small == "":
			small = v
		case k == "else" && rest == "":
			rest = v
		default:
			return nil, fmt.Errorf("policy %q: %q: want small=SPEC;else=SPEC, each once", spec, part)
		}
	}
	if small == "" || rest == "" {
		return nil, fmt.Errorf("policy %q: want both small=SPEC and else=SPEC", spec)
	}
	b := &truthBound{name: spec}
	var err error
	if b.small, err = lookup(small); err != nil {
		return nil, fmt.Errorf("policy %q: small: %w", spec, err)
	}
	if b.rest, err = lookup(rest); err != nil {
		return nil, fmt.Errorf("policy %q: else: %w", spec, err)
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
			out[i].Reason = "small flows crossing: " + a[i].Reason
		} else {
			out[i] = r[i]
		}
	}
	return out
}
