package policy

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ecntune/ecntune/env"
)

// AlphaMin and AlphaMax bound the alpha a +alpha= rule may set (SONiC's
// dynamic_th is log2 alpha); they are the agent guard's default limits.
const (
	AlphaMin = 1.0 / 64
	AlphaMax = 8.0
)

// Alpha wraps a policy and sets every lossless PG's dynamic-threshold
// factor alpha (how much of the free shared buffer the PG may take before
// XOFF) to one value; a PG whose alpha the switch does not show keeps it.
// Spec: POLICY+alpha=A, A a power of two in [1/64, 8] ("2", "0.5", "1/8").
type Alpha struct {
	inner Policy
	name  string
	alpha float64
	note  string
}

// NewAlpha wraps inner; arg is the alpha.
func NewAlpha(inner Policy, name, arg string) (*Alpha, error) {
	a, err := ParseAlpha(arg)
	if err != nil {
		return nil, err
	}
	return newAlpha(inner, name, a), nil
}

// newAlpha wraps inner with alpha a, checked.
func newAlpha(inner Policy, name string, a float64) *Alpha {
	return &Alpha{inner: inner, name: name, alpha: a, note: "; alpha " + env.FormatAlpha(a) + " (the +alpha rule)"}
}

// ParseAlpha reads a +alpha= value: a power of two in [AlphaMin,
// AlphaMax], as a number ("2", "0.125") or a fraction ("1/8").
func ParseAlpha(arg string) (float64, error) {
	s := strings.TrimSpace(arg)
	var a float64
	var err error
	if num, den, ok := strings.Cut(s, "/"); ok {
		var n, d float64
		n, err = strconv.ParseFloat(num, 64)
		if err == nil {
			d, err = strconv.ParseFloat(den, 64)
		}
		if err == nil && n > 0 && d > 0 {
			a = n / d
		}
	} else {
		a, err = strconv.ParseFloat(s, 64)
	}
	if err != nil || !(a >= AlphaMin && a <= AlphaMax) || math.Abs(math.Log2(a)-math.Round(math.Log2(a))) > 1e-9 {
		return 0, fmt.Errorf("alpha=%s: want a power of two from 1/64 to 8 (e.g. 2, 1/8): a switch keeps alpha as log2 (SONiC's dynamic_th)", arg)
	}
	// exactly the power of two: SONiC stores log2 alpha as an integer, and
	// a value a rounding error away from it would be refused at Set time
	return math.Ldexp(1, int(math.Round(math.Log2(a)))), nil
}

// SplitAlpha splits "SPEC+alpha=A" into SPEC and A when the spec ends in
// an +alpha= rule (one after +headroom= or before it: both wrap the same
// decisions); ok is false for a spec without one.
func SplitAlpha(spec string) (base, arg string, ok bool) {
	i := strings.LastIndex(spec, AlphaRule)
	if i < 0 {
		return spec, "", false
	}
	rest := spec[i+len(AlphaRule):]
	if j := strings.Index(rest, HeadroomRule); j >= 0 {
		// SPEC+alpha=A+headroom=H: the headroom wraps SPEC+alpha=A.
		return spec, "", false
	}
	return spec[:i], rest, true
}

// Name is the spec.
func (a *Alpha) Name() string { return a.name }

// Decide is the inner policy's decisions with every known alpha set.
func (a *Alpha) Decide(obs []env.Observation) []Decision {
	ds := a.inner.Decide(obs)
	nb := newNotes(ds)
	for i := range ds {
		if i >= len(obs) || !(obs[i].Current.Alpha > 0) {
			continue
		}
		ds[i].Setting.Alpha = a.alpha
		ruleConfidence(&ds[i], obs[i].Current)
		nb.add(i, a.note)
	}
	nb.done()
	return ds
}

// ruleConfidence gives a decision whose ECN part holds the queue's current
// setting the confidence of the rule that changed its headroom or alpha
// (1): the inner policy's confidence (0 on a hold) judges its ECN change,
// and a hold must not read as an unsure change (the guard would put the
// fallback preset in its place).
func ruleConfidence(d *Decision, cur env.Setting) {
	if d.Setting.SameECN(cur) {
		d.Confidence = 1
	}
}
