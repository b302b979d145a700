package eval

import (
	"fmt"
	"strings"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/gym"
)

// TruthPrefix starts the spec of a ground-truth bound,
// "truth:small=SPEC;else=SPEC": every interval, each queue through which
// a small flow (< 100 KB) is in flight at the decision gets the decision
// of the first policy, every other queue the second's. No switch can tell
// which flows cross a queue, so it is not a policy an agent can run: it
// bounds what any policy deciding on that interval could gain by setting
// a queue apart while small flows cross it. "truth:arriving=SPEC;else=SPEC"
// knows the future instead: the first policy decides for every queue that
// a small flow starting in the coming interval will cross, read from a
// first run of the same seed (the scenario's arrivals must not depend on
// the network, as a trace, CDF or incast workload's do not).
const TruthPrefix = "truth:"

// truthBound is a TruthPrefix spec resolved.
type truthBound struct {
	name        string
	small, rest policy.Policy
	arriving    bool   // truth:arriving=: the small flows that will start, not those crossing
	marked      []bool // per queue at the decision: the small-flow policy decides
}

// mark finds the queues the small-flow policy decides for at e's decision:
// those a small flow crosses now (gym.Env.Truth), or, arriving, those a
// small flow starting in the coming interval will cross (arr from k on, in
// start order; it returns the cursor for the next call).
func (b *truthBound) mark(e *gym.Env, n int, arr []arrival, k int) int {
	if len(b.marked) != n {
		b.marked = make([]bool, n)
	}
	if b.arriving {
		now := e.Sim().Now()
		return markArriving(b.marked, arr, k, now, now+e.Interval())
	}
	clear(b.marked)
	for i, r := range e.Truth() {
		b.marked[i] = r[gym.TruthActiveSmall] > 0
	}
	return k
}

// TruthSpecs splits a TruthPrefix spec, "truth:small=A;else=B", into A
// and B. The first ";else=" ends A, so either may be a roles: spec with
// its own ";".
func TruthSpecs(spec string) (small, rest string, err error) {
	body, ok := strings.CutPrefix(spec, TruthPrefix)
	if !ok {
		return "", "", fmt.Errorf("policy %q: not a %s spec", spec, TruthPrefix)
	}
	const want = "want " + TruthPrefix + "small=SPEC;else=SPEC or " + TruthPrefix + "arriving=SPEC;else=SPEC"
	key := "small="
	if strings.HasPrefix(body, "arriving=") {
		key = "arriving="
	}
	body, ok = strings.CutPrefix(body, key)
	if !ok {
		return "", "", fmt.Errorf("policy %q: %s: it starts with neither small= nor arriving=", spec, want)
	}
	small, rest, ok = strings.Cut(body, ";else=")
	switch {
	case !ok:
		return "", "", fmt.Errorf("policy %q: %s: no ;else=", spec, want)
	case small == "":
		return "", "", fmt.Errorf("policy %q: %s: %s is empty", spec, want, key)
	case rest == "":
		return "", "", fmt.Errorf("policy %q: %s: else= is empty", spec, want)
	}
	return small, rest, nil
}

// parseTruthBound parses a TruthPrefix spec and resolves its two
// policies with lookup.
func parseTruthBound(spec string, lookup func(string) (policy.Policy, error)) (*truthBound, error) {
	sp, err := specResolver.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	if sp.Kind != truthKind {
		return nil, fmt.Errorf("policy %q: not a %s spec", spec, TruthPrefix)
	}
	return newTruthBound(sp, func(part policy.Spec) (policy.Policy, error) { return lookup(part.Text) })
}

// newTruthBound is the bound of a parsed TruthPrefix spec, its two
// policies (its parts) resolved with resolve.
func newTruthBound(sp policy.Spec, resolve func(policy.Spec) (policy.Policy, error)) (*truthBound, error) {
	var pols [2]policy.Policy
	for i, pt := range sp.Parts[:2] {
		p, err := resolve(pt.Spec)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %s=%s: %w", sp.Text, pt.Label, pt.Spec.Text, err)
		}
		pols[i] = p
	}
	return &truthBound{name: sp.Text, arriving: strings.HasPrefix(sp.Text, TruthPrefix+"arriving="), small: pols[0], rest: pols[1]}, nil
}

func (b *truthBound) Name() string { return b.name }

// Decide takes each queue's decision from the small-flow policy when the
// truth shows a small flow crossing it, else from the other.
func (b *truthBound) Decide(obs []env.Observation) []policy.Decision {
	a, r := b.small.Decide(obs), b.rest.Decide(obs)
	out := make([]policy.Decision, len(obs))
	// Appended to the reason: the policy's own reason stays first.
	note := " (small flows crossing)"
	if b.arriving {
		note = " (small flows arriving)"
	}
	for i := range obs {
		if i < len(b.marked) && b.marked[i] {
			out[i] = a[i]
			out[i].Reason += note
		} else {
			out[i] = r[i]
		}
	}
	return out
}

// SpecWarnings is policy.SpecWarnings for every spec eval takes: a
// TruthPrefix bound is warned about through its two specs ("small: ...",
// "else: ..."). A spec that does not parse has none (RunAll names what is
// wrong with it).
func SpecWarnings(spec string) []string { return specResolver.SpecWarnings(spec) }

// arrival is a small flow's start and the controlled queues it crosses.
type arrival struct {
	start  simenv.Time
	queues []int
}

// smallArrivals plays sc with seed once, holding every queue, and returns
// its small flows' arrivals in start order, and every flow's start and
// size, which the bound's own run must repeat.
func smallArrivals(sc Scenario, eo gym.Options, seed uint64) ([]arrival, []simenv.FlowRecord, error) {
	eo.Truth = false
	e, err := gym.New(sc.Config, eo)
	if err != nil {
		return nil, nil, err
	}
	obs, err := e.Reset(seed)
	if err != nil {
		return nil, nil, err
	}
	hold := make([]int, len(obs))
	for done := false; !done; {
		if _, _, done, _, err = e.Step(hold); err != nil {
			return nil, nil, fmt.Errorf("first run: %w", err)
		}
	}
	flows := e.Sim().Flows()
	var out []arrival
	for _, f := range flows {
		if f.SizeBytes < SmallFlowBytes {
			out = append(out, arrival{start: f.Start, queues: e.FlowQueues(nil, f.ID)})
		}
	}
	return out, flows, nil
}

// markArriving sets next[i] for every queue i that a small flow starting
// in [from, to) will cross; arr is in start order, from the cursor k on.
func markArriving(next []bool, arr []arrival, k int, from, to simenv.Time) int {
	clear(next)
	for k < len(arr) && arr[k].start < from {
		k++
	}
	for j := k; j < len(arr) && arr[j].start < to; j++ {
		for _, q := range arr[j].queues {
			next[q] = true
		}
	}
	return k
}

// sameArrivals reports whether the bound's run started the flows the
// first run did: as many, each between the same hosts at the same
// priority, at the same time, of the same size.
func sameArrivals(a, b []simenv.FlowRecord) error {
	const moved = "the scenario's arrivals depend on the network, which truth:arriving= cannot foresee"
	for i := range min(len(a), len(b)) {
		x, y := a[i], b[i]
		if x.ID != y.ID || x.Start != y.Start || x.SizeBytes != y.SizeBytes || x.Src != y.Src || x.Dst != y.Dst || x.Priority != y.Priority {
			return fmt.Errorf("flow number %d to start was flow %d at %v (%d B, node %d to %d) in the first run, flow %d at %v (%d B, node %d to %d) under the bound: %s",
				i+1, x.ID, x.Start, x.SizeBytes, x.Src, x.Dst, y.ID, y.Start, y.SizeBytes, y.Src, y.Dst, moved)
		}
	}
	if len(a) != len(b) {
		first := a
		if len(b) > len(a) {
			first = b
		}
		x := first[min(len(a), len(b))]
		return fmt.Errorf("%d flows started in the first run, %d under the bound (the first extra one, flow %d, at %v): %s",
			len(a), len(b), x.ID, x.Start, moved)
	}
	return nil
}
