package env

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/ecntune/ecntune/internal/units"
)

// ActionSpecVersion names the layout of DefaultCatalogue's action indices.
// A model records it with SpecVersion.
//
// # Action spec act-v2
//
// Index 0 holds the current setting. Indices 1..6 are relative moves of
// one grid step: Kmax up, Kmax down, Kmin up, Kmin down, Pmax up, Pmax
// down (the current setting is first snapped to the nearest grid point,
// so a relative move always lands on the grid; at the edge of an axis the
// snapped setting is kept). Indices from 7 on are absolute grid points,
// Kmax level slowest and Pmax fastest:
//
//	7 + (i·len(KminRatios) + j)·len(Pmax) + l
//	Kmax = KmaxLevels[i], Kmin = Kmax · KminRatios[j], Pmax = Pmax[l]
//
// with every byte figure stated at 100 Gb/s and scaled linearly to the
// port rate (internal/units.ScaleBytes).
//
// The default grid: Kmax in 19 log-spaced levels from 100 KB to 10 MB
// (step ×1.29: ... 464 KB, 599 KB, 774 KB, 1 MB, 1.29 MB ...), Kmin at 50%
// or 90% of Kmax (a ramp, or near-step marking as DCTCP does), Pmax 0.3%
// or 1%. 7 + 19·2·2 = 83 actions.
//
// The grid does not hold the vendor presets themselves (they mark at 5-30%
// or from a few KB); policy presets are settings, not catalogue entries,
// and Nearest snaps any setting to the grid for relative moves.
//
// Why absolute settings, and the measurements that chose this grid over
// act-v1's, are in env/DESIGN.md.
//
// # Action spec act-v3
//
// A decision is a pair: act-v2's ECN action (0..82) and a PFC action
// (0..10) for the queue's ingress priority group (same port, same
// priority), chosen by two heads of one network (ECN logits first, then
// PFC logits: 83 + 11 = 94 outputs). PFC action 0 keeps the PG as it is;
//
//	1 + h          headroom = HeadroomFactors[h] × the PG's lossless floor
//	1 + len(H) + a alpha = Alphas[a]
//
// Headroom factors 1, 1.25, 1.5, 2 (never below the computed floor:
// headroom returned to the shared pool delays XOFF), alphas 1/16 to 2 in
// powers of two (SONiC's dynamic_th -4..1). A headroom action on a queue
// whose headroom or floor is unknown, or an alpha action where alpha is
// unknown, keeps the PG. The pair travels as one joint action index,
// ecn + ECNLen·pfc (Joint, Split), so that a joint index below ECNLen is
// the act-v2 action of the same number: a model of act-v2 (83 outputs)
// still runs, and never changes the PG.
//
// Why two heads and not one softmax over both kinds: with one list, a PFC
// action meant giving up the ECN choice for that interval, and trained
// models never took a headroom action (docs/model/LAB-NOTES.md).
const ActionSpecVersion = "act-v3"

// ActionSpecLen is the number of network outputs of action spec spec
// in the default catalogue (0: a spec this build cannot act on).
func ActionSpecLen(spec string) int {
	c := DefaultCatalogue()
	switch spec {
	case ActionSpecVersion:
		return c.Outputs()
	case "act-v2":
		return c.ECNLen()
	}
	return 0
}

// ReadableActionSpecs are the action specs ActionSpecLen accepts, this
// build's first.
var ReadableActionSpecs = []string{ActionSpecVersion, "act-v2"}

// Relative actions.
const (
	ActionHold = iota
	ActionKmaxUp
	ActionKmaxDown
	ActionKminUp
	ActionKminDown
	ActionPmaxUp
	ActionPmaxDown
	NumRelativeActions
)

// Catalogue is a discrete action set: relative moves and a grid of
// absolute settings stated at 100 Gb/s. The zero Catalogue has only the
// relative actions and no grid: use DefaultCatalogue or NewCatalogue.
type Catalogue struct {
	kmax   []int64   // at units.RefRateBps, ascending
	ratios []float64 // Kmin/Kmax, ascending, in (0, 1]
	pmax   []float64 // ascending, in (0, 1]
	hdrm   []float64 // headroom as multiples of the lossless floor, ascending, >= 1
	alphas []float64 // dynamic-threshold factors, ascending, in (0, 64]
}

// HeadroomFactors and Alphas are the PFC levels of DefaultCatalogue.
var (
	HeadroomFactors = []float64{1, 1.25, 1.5, 2}
	Alphas          = []float64{1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0 / 2, 1, 2}
)

// DefaultCatalogue returns the act-v2 catalogue.
func DefaultCatalogue() Catalogue {
	kmax := make([]int64, 19)
	for i := range kmax {
		v := 100e3 * math.Pow(100, float64(i)/18)
		kmax[i] = int64(math.Round(v/1000)) * 1000
	}
	c, err := NewCatalogue(kmax, []float64{0.5, 0.9}, []float64{0.003, 0.01})
	if err == nil {
		c, err = c.WithPFC(HeadroomFactors, Alphas)
	}
	if err != nil {
		panic("env: default catalogue is invalid: " + err.Error()) // a programming error, not input
	}
	return c
}

// WithPFC returns c with PFC actions appended: headroom factors (multiples
// of the lossless floor, strictly increasing, each in [1, 16]) and alphas
// (strictly increasing, each in (0, 64]). Either list may be empty.
func (c Catalogue) WithPFC(headroomFactors, alphas []float64) (Catalogue, error) {
	for i, v := range headroomFactors {
		if !(v >= 1 && v <= 16) || (i > 0 && v <= headroomFactors[i-1]) {
			return Catalogue{}, fmt.Errorf("catalogue: headroom factor %d (%g) must be in [1, 16] and above the previous factor", i, v)
		}
	}
	for i, v := range alphas {
		if !(v > 0 && v <= 64) || (i > 0 && v <= alphas[i-1]) {
			return Catalogue{}, fmt.Errorf("catalogue: alpha %d (%g) must be in (0, 64] and above the previous alpha", i, v)
		}
	}
	c.hdrm = append([]float64(nil), headroomFactors...)
	c.alphas = append([]float64(nil), alphas...)
	return c, nil
}

// NewCatalogue builds a catalogue from Kmax levels (bytes at 100 Gb/s),
// Kmin/Kmax ratios and Pmax levels. Each list must be non-empty, strictly
// increasing, and within range.
func NewCatalogue(kmaxAt100G []int64, kminRatios []float64, pmax []float64) (Catalogue, error) {
	if len(kmaxAt100G) == 0 || len(kminRatios) == 0 || len(pmax) == 0 {
		return Catalogue{}, fmt.Errorf("catalogue: kmax levels (%d), kmin ratios (%d) and pmax levels (%d) must all be non-empty",
			len(kmaxAt100G), len(kminRatios), len(pmax))
	}
	for i, v := range kmaxAt100G {
		if v <= 0 || (i > 0 && v <= kmaxAt100G[i-1]) {
			return Catalogue{}, fmt.Errorf("catalogue: kmax level %d (%d B) must be > 0 and above the previous level", i, v)
		}
	}
	for i, v := range kminRatios {
		if !(v > 0 && v <= 1) || (i > 0 && v <= kminRatios[i-1]) {
			return Catalogue{}, fmt.Errorf("catalogue: kmin ratio %d (%g) must be in (0, 1] and above the previous ratio", i, v)
		}
	}
	for i, v := range pmax {
		if !(v > 0 && v <= 1) || (i > 0 && v <= pmax[i-1]) {
			return Catalogue{}, fmt.Errorf("catalogue: pmax level %d (%g) must be in (0, 1] and above the previous level", i, v)
		}
	}
	return Catalogue{
		kmax:   append([]int64(nil), kmaxAt100G...),
		ratios: append([]float64(nil), kminRatios...),
		pmax:   append([]float64(nil), pmax...),
	}, nil
}

// IsZero reports whether c has no grid (the zero Catalogue).
func (c Catalogue) IsZero() bool { return len(c.kmax) == 0 }

// Len is the number of joint actions, ECNLen·PFCLen (ECNLen for a
// catalogue without PFC actions).
func (c Catalogue) Len() int { return c.ECNLen() * c.PFCLen() }

// ECNLen is the number of ECN actions (relative moves and grid): the
// first head.
func (c Catalogue) ECNLen() int { return NumRelativeActions + c.gridLen() }

// PFCLen is the number of PFC actions, keep included (1: no PFC actions).
func (c Catalogue) PFCLen() int { return 1 + len(c.hdrm) + len(c.alphas) }

// Outputs is the number of network outputs the catalogue needs: one per
// ECN action, then one per PFC action when it has any.
func (c Catalogue) Outputs() int {
	if c.PFCLen() == 1 {
		return c.ECNLen()
	}
	return c.ECNLen() + c.PFCLen()
}

// Joint is the joint action of ECN action ecn and PFC action pfc.
func (c Catalogue) Joint(ecn, pfc int) int { return ecn + c.ECNLen()*pfc }

// Split returns the ECN and PFC parts of a joint action.
func (c Catalogue) Split(action int) (ecn, pfc int) {
	n := c.ECNLen()
	if n == 0 || action < 0 {
		return action, 0
	}
	return action % n, action / n
}

// PFC returns which knob PFC action pfc moves: a headroom factor (h >= 0,
// a = -1) or an alpha (a >= 0, h = -1); ok is false for keep (0) and for
// out-of-range actions.
func (c Catalogue) PFC(pfc int) (h, a int, ok bool) {
	k := pfc - 1
	switch {
	case k < 0:
		return -1, -1, false
	case k < len(c.hdrm):
		return k, -1, true
	case k < len(c.hdrm)+len(c.alphas):
		return -1, k - len(c.hdrm), true
	}
	return -1, -1, false
}

func (c Catalogue) gridLen() int { return len(c.kmax) * len(c.ratios) * len(c.pmax) }

// KmaxLevels, KminRatios and PmaxLevels return copies of the grid axes.
func (c Catalogue) KmaxLevels() []int64   { return append([]int64(nil), c.kmax...) }
func (c Catalogue) KminRatios() []float64 { return append([]float64(nil), c.ratios...) }
func (c Catalogue) PmaxLevels() []float64 { return append([]float64(nil), c.pmax...) }
func (c Catalogue) Absolute(i, j, l int) int {
	return NumRelativeActions + (i*len(c.ratios)+j)*len(c.pmax) + l
}

// Grid returns the grid coordinates of an absolute action; ok is false for
// relative or out-of-range actions.
func (c Catalogue) Grid(action int) (i, j, l int, ok bool) {
	g := action - NumRelativeActions
	if g < 0 || g >= c.gridLen() {
		return 0, 0, 0, false
	}
	l = g % len(c.pmax)
	g /= len(c.pmax)
	return g / len(c.ratios), g % len(c.ratios), l, true
}

// Point is the setting of grid point (i, j, l) as stated at 100 Gb/s
// (Kmin = Kmax · ratio, rounded to the byte; no headroom). The indices
// must be within the axes.
func (c Catalogue) Point(i, j, l int) Setting {
	kmax := c.kmax[i]
	kmin := int64(math.Round(float64(kmax) * c.ratios[j]))
	return Setting{KminBytes: kmin, KmaxBytes: kmax, Pmax: c.pmax[l]}
}

// gridSetting is grid point (i, j, l) at rateBps, headroom kept from cur.
func (c Catalogue) gridSetting(i, j, l int, rateBps float64, cur Setting) Setting {
	s := c.Point(i, j, l)
	s.HeadroomBytes, s.Alpha = cur.HeadroomBytes, cur.Alpha
	s = s.ScaledTo(rateBps)
	if s.KmaxBytes < 1 {
		s.KmaxBytes = 1
	}
	if s.KminBytes > s.KmaxBytes {
		s.KminBytes = s.KmaxBytes
	}
	return s
}

// Setting returns the setting action asks for on a port of rateBps whose
// queue is now at current, its PG's lossless floor unknown: SettingFor
// with floor 0 (a headroom action holds).
func (c Catalogue) Setting(action int, rateBps float64, current Setting) Setting {
	return c.SettingFor(action, rateBps, current, 0)
}

// SettingFor returns the setting action asks for on a port of rateBps
// whose queue is now at current and whose PG's computed lossless headroom
// is floorBytes (0: unknown). Hold, an out-of-range action, a catalogue
// without grid, or a rate that is not positive and finite return current
// unchanged; so do a headroom action when the headroom or the floor is
// unknown, and an alpha action when the alpha is unknown (the switch does
// not let it be managed). The ECN part of a joint action sets ECN and
// keeps headroom and alpha; its PFC part then moves one knob of the PG.
func (c Catalogue) SettingFor(action int, rateBps float64, current Setting, floorBytes int64) Setting {
	if action <= ActionHold || action >= c.Len() || c.IsZero() || !KnownRate(rateBps) {
		return current
	}
	ecn, pfc := c.Split(action)
	s := c.ecnSetting(ecn, rateBps, current)
	if h, a, ok := c.PFC(pfc); ok {
		switch {
		case h >= 0 && floorBytes > 0 && s.HeadroomBytes > 0:
			s.HeadroomBytes = int64(math.Ceil(float64(floorBytes) * c.hdrm[h]))
		case a >= 0 && s.Alpha > 0:
			s.Alpha = c.alphas[a]
		}
	}
	return s
}

// ecnSetting is the setting of ECN action action (< ECNLen), headroom
// and alpha kept from current.
func (c Catalogue) ecnSetting(action int, rateBps float64, current Setting) Setting {
	if action <= ActionHold {
		return current
	}
	if i, j, l, ok := c.Grid(action); ok {
		return c.gridSetting(i, j, l, rateBps, current)
	}
	i, j, l, _ := c.Grid(c.Nearest(current, rateBps))
	switch action {
	case ActionKmaxUp:
		i = min(i+1, len(c.kmax)-1)
	case ActionKmaxDown:
		i = max(i-1, 0)
	case ActionKminUp:
		j = min(j+1, len(c.ratios)-1)
	case ActionKminDown:
		j = max(j-1, 0)
	case ActionPmaxUp:
		l = min(l+1, len(c.pmax)-1)
	case ActionPmaxDown:
		l = max(l-1, 0)
	}
	return c.gridSetting(i, j, l, rateBps, current)
}

// Nearest returns the absolute action whose grid point is nearest to s on
// a port of rateBps, measuring each axis on a log scale: Kmax (as stated at
// 100 Gb/s), Kmin/Kmax, Pmax. It returns ActionHold when c has no grid.
// A rate that is not positive and finite is taken as 100 Gb/s.
func (c Catalogue) Nearest(s Setting, rateBps float64) int {
	if c.IsZero() {
		return ActionHold
	}
	if !KnownRate(rateBps) {
		rateBps = units.RefRateBps
	}
	kmax100 := float64(s.KmaxBytes) * units.RefRateBps / rateBps
	i := nearestLog(len(c.kmax), func(k int) float64 { return float64(c.kmax[k]) }, kmax100)
	ratio := 0.0
	if s.KmaxBytes > 0 {
		ratio = float64(s.KminBytes) / float64(s.KmaxBytes)
	}
	j := nearestLog(len(c.ratios), func(k int) float64 { return c.ratios[k] }, ratio)
	l := nearestLog(len(c.pmax), func(k int) float64 { return c.pmax[k] }, s.Pmax)
	return c.Absolute(i, j, l)
}

// nearestLog returns the index k of the ascending positive levels nearest x
// on a log scale (x <= 0 or NaN: the lowest; +Inf: the highest).
func nearestLog(n int, level func(int) float64, x float64) int {
	if !(x > 0) {
		return 0
	}
	lx := math.Log(x)
	k := sort.Search(n, func(k int) bool { return level(k) >= x })
	switch {
	case k == 0:
		return 0
	case k == n:
		return n - 1
	}
	if lx-math.Log(level(k-1)) <= math.Log(level(k))-lx {
		return k - 1
	}
	return k
}

// Describe renders an action for logs and reasons, e.g. "hold",
// "kmax up one step", "kmin 20KB kmax 1MB pmax 10% @100G".
func (c Catalogue) Describe(action int) string {
	switch action {
	case ActionHold:
		return "hold"
	case ActionKmaxUp:
		return "kmax up one step"
	case ActionKmaxDown:
		return "kmax down one step"
	case ActionKminUp:
		return "kmin up one step"
	case ActionKminDown:
		return "kmin down one step"
	case ActionPmaxUp:
		return "pmax up one step"
	case ActionPmaxDown:
		return "pmax down one step"
	}
	if ecn, pfc := c.Split(action); pfc > 0 && action < c.Len() {
		if h, a, ok := c.PFC(pfc); ok {
			d := c.Describe(ecn) + ", "
			if h >= 0 {
				return d + "headroom " + strconv.FormatFloat(c.hdrm[h], 'g', 4, 64) + "× the lossless floor"
			}
			return d + "alpha " + FormatAlpha(c.alphas[a])
		}
	}
	i, j, l, ok := c.Grid(action)
	if !ok {
		return fmt.Sprintf("invalid action %d (catalogue has 0..%d)", action, c.Len()-1)
	}
	return c.Point(i, j, l).Describe() + " @100G"
}

// PmaxStep is the resolution switches hold Pmax at: OpenConfig's
// max-drop-probability-percent and SONiC's WRED drop probability are whole
// percents.
const PmaxStep = 0.01

// QuantizePmax rounds p to a multiple of step, at least one step (a switch
// holding whole percents runs 0.3% as 1%); step 0 or p NaN: p unchanged.
func QuantizePmax(p, step float64) float64 {
	if step <= 0 || math.IsNaN(p) {
		return p
	}
	q := math.Round(p/step) * step
	if q < step {
		q = step
	}
	return math.Round(q*1e9) / 1e9
}

// FormatPmax renders a probability as a percentage, e.g. 0.05 -> "5%".
func FormatPmax(p float64) string { return string(AppendPmax(make([]byte, 0, 8), p)) }

// AppendPmax appends FormatPmax(p) to dst.
func AppendPmax(dst []byte, p float64) []byte {
	return append(strconv.AppendFloat(dst, p*100, 'g', 4, 64), '%')
}
