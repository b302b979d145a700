package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ecntune/ecntune/internal/units"
)

// ParseValidInterval reads a validated_interval hyper-parameter
// ("100µs-50ms": MIN-MAX, 0 < MIN <= MAX), as ModelValidInterval reads
// it and train --validated-interval records it.
func ParseValidInterval(v string) (lo, hi time.Duration, err error) {
	a, b, found := strings.Cut(v, "-")
	if found {
		lo, err = units.ParseDuration(a)
		if err == nil {
			hi, err = units.ParseDuration(b)
		}
	}
	if !found || err != nil || lo <= 0 || hi < lo {
		return 0, 0, fmt.Errorf("validated_interval %q: want MIN-MAX, e.g. 100µs-50ms", v)
	}
	return lo, hi, nil
}

// IntervalBound is a learned model a policy runs, with the decision
// intervals it acts at (see Learned.WithValidInterval): at any other it
// holds every queue it decides.
type IntervalBound struct {
	Policy string // its name: builtin, model:NAME@V
	Lo, Hi time.Duration
}

// Excludes reports whether the bound's model holds every queue at
// decision interval d (counters spanning d: outside [Lo, Hi] widened by
// SpanJitter, as Decide judges it).
func (b IntervalBound) Excludes(d time.Duration) bool {
	return outsideSpan(int64(d), b.Lo, b.Hi, "") != ""
}

// Range is "20µs to 2ms".
func (b IntervalBound) Range() string { return fmtSpan(b.Lo) + " to " + fmtSpan(b.Hi) }

// String is "model:NAME@V (20µs to 2ms)".
func (b IntervalBound) String() string { return b.Policy + " (" + b.Range() + ")" }

// IntervalBounds are the learned models bounded to decision intervals
// that p runs: p itself, or the policies a roles:, rate:, schedule: or
// daily: policy is made of, the inner policy of a +headroom= or +alpha=
// rule, and a switch-level headroom model; each once, by name.
func IntervalBounds(p Policy) []IntervalBound {
	var out []IntervalBound
	add := func(name string, lo, hi time.Duration) {
		b := IntervalBound{Policy: name, Lo: lo, Hi: hi}
		if hi > 0 && !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	var walk func(Policy)
	walk = func(p Policy) {
		switch p := p.(type) {
		case *Learned:
			lo, hi := p.ValidInterval()
			add(p.Name(), lo, hi)
		case *SwitchHeadroom:
			lo, hi := p.ValidInterval()
			add(p.model, lo, hi)
			walk(p.inner)
		case *Headroom:
			walk(p.inner)
		case *Alpha:
			walk(p.inner)
		case *ByRate:
			for _, q := range p.parts {
				walk(q)
			}
		case *Roles:
			for _, q := range p.byPeer {
				walk(q)
			}
		case *Schedule:
			for _, q := range p.steps {
				walk(q)
			}
		}
	}
	walk(p)
	slices.SortFunc(out, func(a, b IntervalBound) int {
		return cmp.Or(strings.Compare(a.Policy, b.Policy), cmp.Compare(a.Lo, b.Lo), cmp.Compare(a.Hi, b.Hi))
	})
	return out
}
