package gnmipath

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// Val is a decoded leaf value. Which member is meaningful depends on the
// leaf's Field: counts and bytes in U, rates (bps), percentages and average
// queue lengths in F, names in S, flags in B, signed numbers in I.
type Val struct {
	U uint64
	F float64
	S string
	B bool
	I int64
}

// Tree holds the leaves of one switch by identity.
type Tree map[Leaf]Val

// Clone copies a tree.
func (t Tree) Clone() Tree {
	c := make(Tree, len(t))
	for k, v := range t {
		c[k] = v
	}
	return c
}

type valKind uint8

const (
	kUint valKind = iota
	kFloat
	kString
	kBool
	kInt
)

func kindOf(d Dialect, f Field) valKind {
	switch f {
	case AvgQueue, WREDProb, PortSpeed, PortCable:
		return kFloat
	case QueueProfile, PGProfile, BPPool, WREDECNMode, WREDName, LLDPSystemName, LLDPPortID, LLDPChassisID, PortAlias:
		return kString
	case WREDEnableECN, WREDGreenEnable, LLDPCapEnabled:
		return kBool
	case BPDynamicTh:
		return kInt
	}
	return kUint
}

var sonicECNModes = map[string]bool{"ecn_none": true, "ecn_green": true, "ecn_yellow": true, "ecn_red": true,
	"ecn_green_yellow": true, "ecn_green_red": true, "ecn_yellow_red": true, "ecn_all": true}

// stripRef turns a SONiC reference "[WRED_PROFILE|name]" into "name".
func stripRef(s string) string {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
		t = t[1 : len(t)-1]
		if i := strings.Index(t, "|"); i >= 0 {
			t = t[i+1:]
		}
	}
	return t
}

// parseOCSpeed parses an openconfig ETHERNET_SPEED identity such as
// "openconfig-if-ethernet:SPEED_100GB" into bits per second.
func parseOCSpeed(s string) (float64, error) {
	if bps, ok := ocSpeedBps(stripIdentity(strings.TrimSpace(s))); ok {
		return bps, nil
	}
	return 0, fmt.Errorf("port speed %q is not an openconfig SPEED_<n>GB identity", s)
}

// ocSpeedBps parses a SPEED_<n>GB / MB / TB identity without its module
// prefix. It keeps no reference to t.
func ocSpeedBps(t string) (float64, bool) {
	body, ok := strings.CutPrefix(t, "SPEED_")
	mult := 0.0
	switch {
	case !ok:
	case strings.HasSuffix(body, "GB"):
		mult, body = 1e9, strings.TrimSuffix(body, "GB")
	case strings.HasSuffix(body, "MB"):
		mult, body = 1e6, strings.TrimSuffix(body, "MB")
	case strings.HasSuffix(body, "TB"):
		mult, body = 1e12, strings.TrimSuffix(body, "TB")
	}
	if mult == 0 {
		return 0, false
	}
	n, err := strconv.ParseFloat(body, 64)
	if err != nil || n <= 0 || math.IsInf(n, 0) {
		return 0, false
	}
	return n * mult, true
}

// ocSpeedOf is parseOCSpeed for a decoded string value; for one read
// straight from JSON bytes it makes no string unless the value is wrong.
func ocSpeedOf(x *scal) (float64, error) {
	if x.k == sString && x.raw != nil {
		t := trimASCIISpace(x.raw)
		if i := bytes.LastIndexByte(t, ':'); i >= 0 {
			t = t[i+1:]
		}
		if len(t) <= 32 { // converted on the stack
			if bps, ok := ocSpeedBps(string(t)); ok {
				return bps, nil
			}
		}
	}
	s, err := stringOf(x)
	if err != nil {
		return 0, err
	}
	return parseOCSpeed(s)
}

// formatOCSpeed renders bps as an openconfig speed identity; rates that are
// not whole Gb/s use a SPEED_<n>MB form.
func formatOCSpeed(bps float64) string {
	if g := bps / 1e9; g == math.Trunc(g) && g >= 1 {
		return "openconfig-if-ethernet:SPEED_" + strconv.FormatFloat(g, 'f', -1, 64) + "GB"
	}
	return "openconfig-if-ethernet:SPEED_" + strconv.FormatFloat(math.Round(bps/1e6), 'f', -1, 64) + "MB"
}

// MinPortMTU and MaxPortMTU bound a SONiC port's mtu (sonic-port.yang);
// MaxCableMeters bounds a cable length.
const (
	MinPortMTU     = 68
	MaxPortMTU     = 9216
	MaxCableMeters = 100_000
)

// cableOf reads a SONiC cable length, "<metres>m" ("40m"; sonic-cable-length.yang
// has [0-9]+m, a decimal is taken too), for port.
func cableOf(x *scal, port string) (float64, error) {
	s, err := stringOf(x)
	if err != nil {
		return 0, fmt.Errorf("cable length of %s: %v", port, err)
	}
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "m")
	m, perr := strconv.ParseFloat(num, 64)
	if !ok || perr != nil || strings.ContainsAny(num, "eE+-xXpP_") || !(m >= 0 && m <= MaxCableMeters) {
		return 0, fmt.Errorf("cable length %q of %s is not metres like 40m (0 to %dm)", s, port, MaxCableMeters)
	}
	return m, nil
}

// DecodeVal decodes and range-checks the value of one leaf. Errors say
// what was wrong and what is allowed.
func DecodeVal(d Dialect, l Leaf, tv *gnmi.TypedValue) (Val, error) {
	var x scal
	if err := scalarOf(tv, &x); err != nil {
		return Val{}, err
	}
	return decodeScal(d, l, &x)
}

// decodeScal is DecodeVal for a scalar already read.
func decodeScal(d Dialect, l Leaf, x *scal) (Val, error) {
	var v Val
	var err error
	switch kindOf(d, l.Field) {
	case kUint:
		v.U, err = uintOf(x)
		if err == nil && l.Field == PortMTU && (v.U < MinPortMTU || v.U > MaxPortMTU) {
			err = fmt.Errorf("mtu %d of port %s is outside %d..%d", v.U, l.Port, MinPortMTU, MaxPortMTU)
		}
	case kFloat:
		if l.Field == PortSpeed {
			if d == OpenConfig {
				v.F, err = ocSpeedOf(x)
			} else {
				var mbps uint64
				if mbps, err = uintOf(x); err == nil {
					if mbps == 0 {
						err = fmt.Errorf("port speed 0 Mb/s is not allowed")
					}
					v.F = float64(mbps) * 1e6
				}
			}
			break
		}
		if l.Field == PortCable {
			v.F, err = cableOf(x, l.Port)
			break
		}
		v.F, err = floatOf(x)
		if err == nil && l.Field == WREDProb && !(v.F >= 0 && v.F <= 100) {
			// 0..100 in both models (openconfig's uint8 percentage,
			// SONiC's green_drop_probability): 0 marks nothing between
			// the thresholds and every packet above max, a profile a
			// switch may run; the agent never writes it (ValidateSetting)
			err = fmt.Errorf("drop probability %g%% is outside [0, 100]", v.F)
		}
		if err == nil && l.Field == WREDProb && v.F != math.Trunc(v.F) {
			// a whole percent in both models (openconfig uint8, SONiC's
			// YANG 0..100): 0.3 was taken, run as 0.3% and read back as 0
			err = fmt.Errorf("drop probability %g%% is not a whole percent", v.F)
		}
	case kString:
		v.S, err = stringOf(x)
		if err == nil {
			if d == Sonic && (l.Field == QueueProfile || l.Field == PGProfile || l.Field == BPPool) {
				v.S = stripRef(v.S)
			}
			if v.S == "" && l.Field != WREDECNMode {
				err = fmt.Errorf("empty name is not allowed")
			}
			if l.Field == WREDName && v.S != l.Name {
				err = fmt.Errorf("name %q differs from the list key %q", v.S, l.Name)
			}
			if l.Field == WREDECNMode && !sonicECNModes[v.S] {
				err = fmt.Errorf("ecn mode %q is not one of ecn_none, ecn_green, ecn_yellow, ecn_red, ecn_green_yellow, ecn_green_red, ecn_yellow_red, ecn_all", v.S)
			}
		}
	case kBool:
		v.B, err = boolOf(x)
	case kInt:
		v.I, err = intOf(x)
		if err != nil {
			err = fmt.Errorf("dynamic_th of buffer profile %s: %v (want an integer %d..%d, log2 of alpha)", l.Name, err, MinDynamicTh, MaxDynamicTh)
		} else if v.I < MinDynamicTh || v.I > MaxDynamicTh {
			err = fmt.Errorf("dynamic_th %d of buffer profile %s is outside %d..%d", v.I, l.Name, MinDynamicTh, MaxDynamicTh)
		}
	}
	return v, err
}

// EncodeVal renders a leaf value in the dialect's native form: openconfig
// uses typed scalars (uint64 counters and bytes, uint8 percent, booleans,
// identity strings), sonic uses strings throughout as sonic-gnmi does.
func EncodeVal(d Dialect, l Leaf, v Val) *gnmi.TypedValue {
	if d == Sonic {
		switch kindOf(d, l.Field) {
		case kUint:
			return strVal(strconv.FormatUint(v.U, 10))
		case kFloat:
			switch l.Field {
			case PortSpeed:
				return strVal(strconv.FormatFloat(math.Round(v.F/1e6), 'f', -1, 64))
			case PortCable:
				return strVal(strconv.FormatFloat(v.F, 'f', -1, 64) + "m")
			}
			return strVal(strconv.FormatFloat(v.F, 'f', -1, 64))
		case kString:
			return strVal(v.S)
		case kBool:
			return strVal(strconv.FormatBool(v.B))
		case kInt:
			return strVal(strconv.FormatInt(v.I, 10))
		}
	}
	switch kindOf(d, l.Field) {
	case kUint:
		return uintVal(v.U)
	case kFloat:
		switch l.Field {
		case PortSpeed:
			return strVal(formatOCSpeed(v.F))
		case AvgQueue, WREDProb:
			return uintVal(uint64(math.Round(v.F)))
		}
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: v.F}}
	case kString:
		return strVal(v.S)
	case kBool:
		return boolVal(v.B)
	}
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_IntVal{IntVal: v.I}}
}

// PercentOf converts Pmax (probability in (0, 1]) to the whole percent both
// dialects carry: rounded, at least 1, at most 100.
func PercentOf(pmax float64) uint64 {
	p := math.Round(pmax * 100)
	if p < 1 {
		p = 1
	}
	if p > 100 {
		p = 100
	}
	return uint64(p)
}

// Quantize returns the setting as a switch will read it back: Pmax rounded
// to a whole percent (both dialects carry uint8 / integer percent).
func Quantize(s env.Setting) env.Setting {
	s.Pmax = float64(PercentOf(s.Pmax)) / 100
	return s
}

// pgIndex maps port → PG → buffer-profile binding from a tree, expanding
// ranges such as "3-4". It also returns the key each PG is bound through.
// When keys overlap (BUFFER_PG|p|3 and BUFFER_PG|p|3-4), the narrower key
// binds the PG, and of two as narrow the one sorting first.
type pgBind struct{ pgs, profile string }

// pgBeats reports whether PG key a takes precedence over key b.
func pgBeats(a, b string) bool {
	alo, ahi, _ := pgRange(a)
	blo, bhi, _ := pgRange(b)
	if ahi-alo != bhi-blo {
		return ahi-alo < bhi-blo
	}
	return a < b
}

func pgIndex(t Tree) map[string]*[8]pgBind {
	idx := map[string]*[8]pgBind{}
	for l, v := range t {
		if l.Field != PGProfile || strings.EqualFold(v.S, "NULL") {
			// "NULL": SONiC's dynamic buffer model computes the PG's
			// profile (buffermgrd); CONFIG_DB binds none
			continue
		}
		lo, hi, err := pgRange(l.PGs)
		if err != nil {
			continue
		}
		a := idx[l.Port]
		if a == nil {
			a = new([8]pgBind)
			idx[l.Port] = a
		}
		for p := lo; p <= hi; p++ {
			if a[p].pgs == "" || pgBeats(l.PGs, a[p].pgs) {
				a[p] = pgBind{pgs: l.PGs, profile: v.S}
			}
		}
	}
	return idx
}

// resolveSetting finds the ECN setting, headroom and (sonic) alpha of
// (port, q) through the queue's profile binding. missing lists what is
// absent.
func resolveSetting(d Dialect, t Tree, pgs map[string]*[8]pgBind, port string, q int) (s env.Setting, missing []string) {
	b, ok := t[Leaf{Field: QueueProfile, Port: port, Index: q}]
	if !ok {
		missing = append(missing, "queue profile binding")
	} else {
		if v, ok := t[Leaf{Field: WREDMin, Name: b.S}]; ok {
			s.KminBytes = int64(min(v.U, math.MaxInt64))
		} else {
			missing = append(missing, "min threshold of profile "+b.S)
		}
		if v, ok := t[Leaf{Field: WREDMax, Name: b.S}]; ok {
			s.KmaxBytes = int64(min(v.U, math.MaxInt64))
		} else {
			missing = append(missing, "max threshold of profile "+b.S)
		}
		if v, ok := t[Leaf{Field: WREDProb, Name: b.S}]; ok {
			s.Pmax = v.F / 100
		} else {
			missing = append(missing, "drop probability of profile "+b.S)
		}
	}
	if d == OpenConfig {
		if v, ok := t[Leaf{Field: PFCHeadroom, Port: port, Index: q}]; ok {
			s.HeadroomBytes = int64(min(v.U, math.MaxInt64))
		}
	} else if a := pgs[port]; a != nil && a[q].profile != "" {
		if v, ok := t[Leaf{Field: BPXoff, Name: a[q].profile}]; ok {
			s.HeadroomBytes = int64(min(v.U, math.MaxInt64))
		}
		if v, ok := t[Leaf{Field: BPDynamicTh, Name: a[q].profile}]; ok {
			// absent (a static profile): alpha stays 0, unknown
			s.Alpha = AlphaOf(v.I)
		}
	}
	return s, missing
}

// headroomReported says whether the switch reports (port, q)'s headroom
// (as resolveSetting finds it): a 0 there is then 0 B, not unknown.
func headroomReported(d Dialect, t Tree, pgs map[string]*[8]pgBind, port string, q int) bool {
	if d == OpenConfig {
		_, ok := t[Leaf{Field: PFCHeadroom, Port: port, Index: q}]
		return ok
	}
	if a := pgs[port]; a != nil && a[q].profile != "" {
		_, ok := t[Leaf{Field: BPXoff, Name: a[q].profile}]
		return ok
	}
	return false
}

// Alpha limits: SONiC's dynamic_th (log2 alpha) is an integer in
// MinDynamicTh..MaxDynamicTh.
const (
	MinDynamicTh = -8
	MaxDynamicTh = 8
)

// AlphaOf is the dynamic-threshold factor of a SONiC dynamic_th:
// 2^th; 0 (unknown) for a th outside MinDynamicTh..MaxDynamicTh.
func AlphaOf(th int64) float64 {
	if th < MinDynamicTh || th > MaxDynamicTh {
		return 0
	}
	return math.Ldexp(1, int(th))
}

// DynamicThOf is the SONiC dynamic_th of a dynamic-threshold factor:
// log2(alpha). SONiC stores an integer, so alpha must be a power of two
// within 2^MinDynamicTh..2^MaxDynamicTh; anything else is an error.
func DynamicThOf(alpha float64) (int64, error) {
	frac, exp := math.Frexp(alpha)
	if !(alpha > 0) || math.IsInf(alpha, 0) || frac != 0.5 || exp-1 < MinDynamicTh || exp-1 > MaxDynamicTh {
		return 0, fmt.Errorf("alpha %g is not a power of two within 2^%d..2^%d: SONiC's dynamic_th (log2 alpha) cannot represent it",
			alpha, MinDynamicTh, MaxDynamicTh)
	}
	return int64(exp - 1), nil
}

// Binding is how a queue's settings are bound on a switch, as a Set needs
// to know: the ECN profile and whether other queues share it, and (sonic)
// the BUFFER_PG entry and buffer profile carrying the PG's headroom.
type Binding struct {
	ECNProfile string
	ECNShared  bool // other queues are bound to ECNProfile too
	// SONiC only.
	PGKey         string // part of the BUFFER_PG key after the port, e.g. "3-4"
	BufferProfile string
	BufferShared  bool // other (port, PG) use BufferProfile too, or PGKey is a range
	BufferFields  Tree // the profile's current leaves (to copy into a new profile)
}

// bindingOf works out the Binding of (port, q) from a tree.
func bindingOf(d Dialect, t Tree, port string, q int) Binding {
	var b Binding
	if v, ok := t[Leaf{Field: QueueProfile, Port: port, Index: q}]; ok {
		b.ECNProfile = v.S
		for l, w := range t {
			if l.Field == QueueProfile && w.S == v.S && (l.Port != port || l.Index != q) {
				b.ECNShared = true
				break
			}
		}
	}
	if d != Sonic {
		return b
	}
	a := pgIndex(t)[port]
	if a == nil || a[q].profile == "" {
		return b
	}
	b.PGKey, b.BufferProfile = a[q].pgs, a[q].profile
	if lo, hi, _ := pgRange(b.PGKey); hi > lo {
		b.BufferShared = true
	}
	b.BufferFields = Tree{}
	for l, w := range t {
		if l.Field == PGProfile && w.S == b.BufferProfile && (l.Port != port || l.PGs != b.PGKey) {
			b.BufferShared = true
		}
		if l.Name == b.BufferProfile && (l.Field >= BPSize && l.Field <= BPPool) {
			b.BufferFields[l] = w
		}
	}
	return b
}
