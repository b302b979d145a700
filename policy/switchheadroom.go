package policy

import (
	"fmt"
	"strconv"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy/nn"
)

// SwitchHeadroom wraps a policy with a switch-level headroom model
// (observation spec env.SwitchSpecVersion, action spec
// env.HeadroomActionSpec; train --headroom-for): the inner policy decides
// every queue's ECN setting, the model one headroom per switch, for all of
// the switch's lossless PGs whose headroom and floor are known, from what
// they show together (env.SwitchFeatures). The headroom it sets is a
// multiple of each PG's own lossless floor, never below it. A switch whose
// queues were not measured keeps its headroom. Spec:
// POLICY+headroom=model:NAME.
type SwitchHeadroom struct {
	inner Policy
	name  string
	model string // "model:NAME", for reasons
	net   *nn.Net
	spec  string // env.HeadroomActionSpec or env.HeadroomAlphaActionSpec
	// validMin, validMax bound the decision interval the model was
	// validated for (0, 0: any); outside it a switch keeps its headroom.
	validMin, validMax time.Duration
}

// NewSwitchHeadroom wraps inner with the switch-level headroom network
// net of action spec env.HeadroomActionSpec, named model in reasons.
func NewSwitchHeadroom(inner Policy, name, model string, net *nn.Net) (*SwitchHeadroom, error) {
	return NewSwitchLevel(inner, name, model, env.HeadroomActionSpec, net)
}

// NewSwitchLevel is NewSwitchHeadroom for a network of action spec spec:
// env.HeadroomActionSpec (headroom) or env.HeadroomAlphaActionSpec
// (headroom and alpha).
func NewSwitchLevel(inner Policy, name, model, spec string, net *nn.Net) (*SwitchHeadroom, error) {
	heads := env.SwitchHeads(spec)
	switch {
	case heads == nil:
		return nil, fmt.Errorf("switch-level model %s: action spec %q: want one of %v", model, spec, env.SwitchActionSpecs)
	case net == nil:
		return nil, fmt.Errorf("switch-level headroom model %s: no network", model)
	case net.InDim() != env.NumSwitchFeatures || net.OutDim() != sumInts(heads):
		return nil, fmt.Errorf("switch-level headroom model %s: network is %d→%d, want %d features (%s) → %d outputs (%s)",
			model, net.InDim(), net.OutDim(), env.NumSwitchFeatures, env.SwitchSpecVersion, sumInts(heads), spec)
	case net.Kind != nn.OutputLogits && net.Kind != nn.OutputQ:
		return nil, fmt.Errorf("switch-level headroom model %s: network outputs %s, want logits or q-values", model, net.Kind)
	}
	return &SwitchHeadroom{inner: inner, name: name, model: model, net: net, spec: spec}, nil
}

func sumInts(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// CheckModelSpec is nil when this build can run model m: an ECN policy of
// a readable observation and action spec (LearnedFromModel), or a
// switch-level model of sw-v1/hdrm-v1 or hdrm-v2 (SwitchHeadroomFromModel).
func CheckModelSpec(m models.Model) error {
	if m.ObsSpec == env.SwitchSpecVersion {
		return models.CheckSpecIn(m, []string{env.SwitchSpecVersion}, env.SwitchActionSpecs)
	}
	return models.CheckSpecIn(m, env.ReadableObsSpecs, env.ReadableActionSpecs)
}

// SwitchHeadroomFromModel is NewSwitchLevel over a registry model, which
// must speak sw-v1/hdrm-v1 or sw-v1/hdrm-v2.
func SwitchHeadroomFromModel(inner Policy, name, model string, m models.Model) (*SwitchHeadroom, error) {
	if err := models.CheckSpecIn(m, []string{env.SwitchSpecVersion}, env.SwitchActionSpecs); err != nil {
		return nil, fmt.Errorf("%w (a switch-level headroom model, trained with train --headroom-for, speaks %s/%s or %s/%s)", err,
			env.SwitchSpecVersion, env.HeadroomActionSpec, env.SwitchSpecVersion, env.HeadroomAlphaActionSpec)
	}
	net, err := nn.UnmarshalNet(m.Weights)
	if err != nil {
		return nil, fmt.Errorf("model %s: weights: %w", m.Ref(), err)
	}
	s, err := NewSwitchLevel(inner, name, model, m.ActSpec, net)
	if err != nil {
		return nil, err
	}
	if s.validMin, s.validMax, err = ModelValidInterval(m); err != nil {
		return nil, err
	}
	return s, nil
}

// ValidInterval is the range of decision intervals the model acts in (0,
// 0: any); see ModelValidInterval.
func (s *SwitchHeadroom) ValidInterval() (lo, hi time.Duration) { return s.validMin, s.validMax }

// outsideInterval says why a switch's counters are outside the intervals
// the model was validated for ("" when inside or unbounded).
func (s *SwitchHeadroom) outsideInterval(obs []env.Observation, members []int) string {
	if s.validMax == 0 {
		return ""
	}
	what := "the switch-level model " + s.model
	for _, i := range members {
		if !obs[i].Valid {
			continue
		}
		if why := outsideSpan(obs[i].Metrics.IntervalNs, s.validMin, s.validMax, what); why != "" {
			return why
		}
	}
	return ""
}

// Name is the spec.
func (s *SwitchHeadroom) Name() string { return s.name }

// Decide is the inner policy's decisions with each switch's headroom set.
func (s *SwitchHeadroom) Decide(obs []env.Observation) []Decision {
	ds := s.inner.Decide(obs)
	groups := env.SwitchGroups(obs)
	if len(groups) == 0 {
		return ds
	}
	all := env.SwitchFeatureRows(obs, groups)
	rows := make([][]float32, 0, len(groups))
	live := make([]int, 0, len(groups))
	for g, grp := range groups {
		f := all[g]
		if f[0] == 0 { // no member measured: keep
			continue
		}
		if why := s.outsideInterval(obs, grp.Members); why != "" {
			for _, i := range grp.Members {
				if i < len(ds) {
					ds[i].Reason += "; headroom kept: " + why
				}
			}
			continue
		}
		rows = append(rows, f)
		live = append(live, g)
	}
	if len(rows) == 0 {
		return ds
	}
	acts, err := s.net.GreedyJoint(rows, env.SwitchHeads(s.spec))
	if err != nil { // the network was checked at construction: not input
		panic("policy: switch-level headroom model " + s.model + ": " + err.Error())
	}
	nb := newNotes(ds)
	for k, g := range live {
		ch := env.SwitchDecision(s.spec, acts[k])
		f := rows[k]
		why := fmt.Sprintf("; switch-level model %s over %d PGs: PFC sent %.2f, paused %.2f, max queue %.2f)",
			s.model, len(groups[g].Members), f[1], f[3], f[8])
		var alphaNote string
		if ch.AlphaOK {
			alphaNote = "; alpha " + env.FormatAlpha(ch.Alpha) + " (" + why[2:]
		}
		fs := strconv.FormatFloat(ch.Factor, 'g', -1, 64)
		var lastFloor int64 = -1 // a switch's ports mostly share a rate: format the note once per floor
		var note string
		for _, i := range groups[g].Members {
			if i >= len(ds) {
				continue
			}
			if ch.AlphaOK && obs[i].Current.Alpha > 0 {
				ds[i].Setting.Alpha = ch.Alpha
				nb.add(i, alphaNote)
			}
			if !ch.HeadroomOK {
				continue
			}
			floor := obs[i].MinHeadroomBytes
			h, ok := obs[i].HeadroomAt(ch.Factor)
			if !ok {
				continue
			}
			if floor != lastFloor {
				note = "; headroom " + units.FormatBytes(h) + " (" + fs + " × the lossless floor " + units.FormatBytes(floor) + why
				lastFloor = floor
			}
			ds[i].Setting.HeadroomBytes = h
			nb.add(i, note)
		}
	}
	nb.done()
	return ds
}
