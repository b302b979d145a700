package policy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
)

// Headroom wraps a policy and sets every lossless PG's headroom: to its
// computed lossless floor times a factor ("floor", "floor*1.5"), reclaiming
// the rest of the vendor default for the shared pool (which delays XOFF),
// or leaves it ("default"). A PG whose floor is unknown keeps its headroom.
// Spec: POLICY+headroom=floor[*F] (e.g. static:hpcc+headroom=floor).
type Headroom struct {
	inner  Policy
	name   string
	factor float64 // 0: leave the headroom alone
}

// NewHeadroom wraps inner; arg is "floor", "floor*F" (F in [1, 10]) or
// "default".
func NewHeadroom(inner Policy, name, arg string) (*Headroom, error) {
	f, err := parseHeadroom(arg)
	if err != nil {
		return nil, err
	}
	return &Headroom{inner: inner, name: name, factor: f}, nil
}

// parseHeadroom reads the factor of a +headroom= value other than
// model:NAME: floor*F is F, floor 1, default 0.
func parseHeadroom(arg string) (float64, error) {
	switch {
	case arg == "default":
		return 0, nil
	case arg == "floor":
		return 1, nil
	case strings.HasPrefix(arg, "floor*"):
		f, err := strconv.ParseFloat(arg[len("floor*"):], 64)
		if err != nil || !(f >= 1 && f <= 10) {
			return 0, fmt.Errorf("headroom=%s: want floor*F with F in [1, 10]", arg)
		}
		return f, nil
	}
	return 0, fmt.Errorf("headroom=%s: want floor, floor*F, default or model:NAME (a switch-level headroom model)", arg)
}

// Name is the spec.
func (h *Headroom) Name() string { return h.name }

// Decide is the inner policy's decision with the headroom set.
func (h *Headroom) Decide(obs []env.Observation) []Decision {
	ds := h.inner.Decide(obs)
	if h.factor == 0 {
		return ds
	}
	nb := newNotes(ds)
	var lastFloor int64 = -1 // a switch's ports mostly share a rate: the note is made once per floor
	var note string
	for i := range ds {
		if i >= len(obs) {
			continue
		}
		hb, ok := obs[i].HeadroomAt(h.factor)
		if !ok {
			continue
		}
		ds[i].Setting.HeadroomBytes = hb
		ruleConfidence(&ds[i], obs[i].Current)
		if floor := obs[i].MinHeadroomBytes; floor != lastFloor {
			note = "; headroom " + units.FormatBytes(hb) + " (" + strconv.FormatFloat(h.factor, 'g', -1, 64) + " × the lossless floor " + units.FormatBytes(floor) + ")"
			lastFloor = floor
		}
		nb.add(i, note)
	}
	nb.done()
	return ds
}
