package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
)

// ByRate runs one policy on the queues of ports below the lowest of its
// rates, and another from each rate up: the way one sets 25-100 Gb/s
// ports and 400-800 Gb/s ports apart, or runs a model only on the port
// speeds it was validated for.
//
// Spec: rate:SPEC;RATE=SPEC[;RATE=SPEC...], the part without a rate for
// the ports below the lowest RATE, each RATE=SPEC for the ports from
// RATE (inclusive) up to the next; each SPEC any policy spec but roles:
// and rate: (a +headroom= or +alpha= suffix belongs to the part it ends).
// rate:builtin;400G=builtin:400g runs the built-in model below 400 Gb/s
// and the model for 400 Gb/s and faster ports from there. A queue whose
// rate is unknown goes to the part below the lowest rate (and holds: its
// interval cannot be measured).
type ByRate struct {
	name   string
	from   []float64 // ascending: parts[i+1] decides the ports from from[i] up
	parts  []Policy  // parts[0] the ports below from[0]
	specs  []string
	labels []string // what each part's ports are, for its reasons: "port below 400Gbps", "port from 400Gbps"
}

// RatePart is one part of a rate: spec: the ports from FromBps up (0: the
// part below the lowest rate) get Spec; Rate is FromBps as written.
type RatePart struct {
	FromBps float64
	Rate    string
	Spec    string
}

// ParseRateSplit splits the argument of rate: into its parts, the part
// below the lowest rate first, then by rate ascending, checking that
// there is one part without a rate and at least one with, no rate twice,
// and no roles: or rate: inside. It does not parse the parts' specs.
func ParseRateSplit(arg string) ([]RatePart, error) {
	var below *RatePart
	var from []RatePart
	for _, p := range strings.Split(arg, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		part := RatePart{Spec: p}
		// RATE=SPEC: what stands before the first = is a rate, not a spec
		// whose +headroom= or +alpha= suffix holds the = (builtin+headroom=floor)
		if r, spec, ok := strings.Cut(p, "="); ok && !strings.Contains(r, ":") && !strings.Contains(r, "+") {
			bps, err := units.ParseRate(r)
			if err != nil {
				return nil, fmt.Errorf("part %q: %w (want RATE=SPEC, e.g. 400G=builtin:400g)", p, err)
			}
			part = RatePart{FromBps: bps, Rate: strings.TrimSpace(r), Spec: strings.TrimSpace(spec)}
			if part.Spec == "" {
				return nil, fmt.Errorf("part %q: no policy spec after %s=", p, part.Rate)
			}
		}
		for _, nested := range []string{RolesPrefix, RatePrefix} {
			if strings.HasPrefix(part.Spec, nested) {
				return nil, fmt.Errorf("part %q: %s does not nest in rate: (split by role or by port speed, not both; one rate: holds every speed)", p, nested)
			}
		}
		switch {
		case part.FromBps == 0 && below != nil:
			return nil, fmt.Errorf("two parts without a rate (%q and %q): give one, for the ports below the lowest rate, and RATE=SPEC for the rest", below.Spec, part.Spec)
		case part.FromBps == 0:
			below = &part
			continue
		}
		for _, q := range from {
			if q.FromBps == part.FromBps {
				return nil, fmt.Errorf("rate %s given twice (%s and %s)", units.FormatRate(part.FromBps), q.Rate, part.Rate)
			}
		}
		from = append(from, part)
	}
	if below == nil {
		return nil, fmt.Errorf("no part for the ports below the lowest rate: want rate:SPEC;RATE=SPEC[;RATE=SPEC...], e.g. rate:builtin;400G=builtin:400g")
	}
	if len(from) == 0 {
		return nil, fmt.Errorf("no RATE=SPEC part: want rate:SPEC;RATE=SPEC[;RATE=SPEC...], e.g. rate:builtin;400G=builtin:400g")
	}
	slices.SortFunc(from, func(a, b RatePart) int { return cmp.Compare(a.FromBps, b.FromBps) })
	return append([]RatePart{*below}, from...), nil
}

// Name is the spec.
func (br *ByRate) Name() string { return br.name }

// Part is the policy the queues of a port of rateBps get.
func (br *ByRate) Part(rateBps float64) Policy { return br.parts[br.partOf(rateBps)] }

// partOf is the index of the part that decides the ports of rateBps.
func (br *ByRate) partOf(rateBps float64) int {
	if !env.KnownRate(rateBps) {
		return 0
	}
	i := 0
	for i < len(br.from) && rateBps >= br.from[i] {
		i++
	}
	return i
}

// Decide gives each part's queues to its policy, in one batch per part
// (in the order they came), and each decision's reason says which part
// and policy made it.
func (br *ByRate) Decide(obs []env.Observation) []Decision {
	out := make([]Decision, len(obs))
	parts := make([]splitPart, len(br.parts))
	for i := range parts {
		parts[i] = splitPart{policy: br.parts[i], label: br.labels[i], spec: br.specs[i]}
	}
	for i := range obs {
		k := br.partOf(obs[i].RateBps)
		parts[k].idx = append(parts[k].idx, i)
	}
	decideSplit("rate", obs, out, parts)
	return out
}

// parseRate reads rate:SPEC;RATE=SPEC... into its Parts, the part below
// the lowest rate first (labelled "below"), then by rate (labelled with
// the rate as written, FromBps set).
func parseRate(p *Parser, sp *Spec, arg string) error {
	parts, err := ParseRateSplit(arg)
	if err != nil {
		return specErr(sp, err)
	}
	for i, rp := range parts {
		label := "below " + parts[1].Rate
		if i > 0 {
			label = rp.Rate
		}
		ps, err := p.builtin(rp.Spec)
		if err != nil {
			return specErr(sp, fmt.Errorf("part %s: %w", label, err))
		}
		sp.Parts = append(sp.Parts, Part{Label: label, Spec: ps, FromBps: rp.FromBps})
	}
	return nil
}

// resolveRate resolves every part of a rate: spec.
func resolveRate(r Resolver, sp Spec) (Policy, error) {
	br := &ByRate{name: sp.Base}
	for _, pt := range sp.Parts {
		p, err := r.Resolve(pt.Spec)
		if err != nil {
			return nil, specErr(&sp, fmt.Errorf("part %s: %w", pt.Label, err))
		}
		if pt.FromBps > 0 {
			br.from = append(br.from, pt.FromBps)
		}
		br.parts, br.specs = append(br.parts, p), append(br.specs, pt.Spec.Text)
	}
	if len(br.parts) != len(br.from)+1 || len(br.from) == 0 {
		return nil, specErr(&sp, fmt.Errorf("%d parts for %d rates: not a parsed rate: spec", len(br.parts), len(br.from)))
	}
	br.labels = []string{"port below " + units.FormatRate(br.from[0])}
	for _, r := range br.from {
		br.labels = append(br.labels, "port from "+units.FormatRate(r))
	}
	return br, nil
}
