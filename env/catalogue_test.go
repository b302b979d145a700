package env

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/internal/units"
)

func TestCatalogueInvariants(t *testing.T) {
	c := DefaultCatalogue()
	if c.ECNLen() != 83 || c.PFCLen() != 11 || c.Len() != 83*11 || ActionSpecLen("act-v2") != 83 || ActionSpecLen(ActionSpecVersion) != 94 || ActionSpecLen("act-v1") != 0 {
		t.Fatalf("default catalogue has %d+%d actions (act-v2 %d outputs, act-v3 %d), want 83+11 (83, 94)", c.ECNLen(), c.PFCLen(),
			ActionSpecLen("act-v2"), ActionSpecLen(ActionSpecVersion))
	}
	cur := Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 90_000}
	for _, rate := range []float64{25e9, 100e9, 400e9} {
		minKmin, maxKmin := int64(math.MaxInt64), int64(0)
		minKmax, maxKmax := int64(math.MaxInt64), int64(0)
		minP, maxP := 1.0, 0.0
		for a := 0; a < c.Len(); a++ {
			s := c.Setting(a, rate, cur)
			if s.KminBytes < 0 || s.KminBytes > s.KmaxBytes || !(s.Pmax > 0 && s.Pmax <= 1) {
				t.Fatalf("%g bps action %d (%s): %+v breaks kmin <= kmax, pmax in (0,1]", rate, a, c.Describe(a), s)
			}
			if s.HeadroomBytes != 90_000 {
				t.Fatalf("action %d changed headroom to %d", a, s.HeadroomBytes)
			}
			if _, _, _, ok := c.Grid(a); !ok {
				continue
			}
			// At 100G-equivalent.
			k0 := float64(s.KminBytes) * 100e9 / rate
			k1 := float64(s.KmaxBytes) * 100e9 / rate
			minKmin, maxKmin = min(minKmin, int64(k0)), max(maxKmin, int64(k0))
			minKmax, maxKmax = min(minKmax, int64(k1)), max(maxKmax, int64(k1))
			minP, maxP = min(minP, s.Pmax), max(maxP, s.Pmax)
			if want := units.ScaleBytes(k1i(c, a), rate); s.KmaxBytes != want {
				t.Fatalf("%g bps action %d: kmax %d, want %d (linear scaling)", rate, a, s.KmaxBytes, want)
			}
			if got := c.Nearest(s, rate); got != a {
				t.Fatalf("%g bps: Nearest(Setting(%d)) = %d (%s)", rate, a, got, c.Describe(got))
			}
		}
		if minKmin > 50_000 || maxKmin < 9_000_000 || minKmax > 100_000 || maxKmax < 10_000_000 || minP > 0.003 || maxP < 0.01 {
			t.Fatalf("%g bps: grid spans kmin %d..%d kmax %d..%d pmax %g..%g at 100G, want at least 50KB..9MB, 100KB..10MB, 0.3%%..1%%",
				rate, minKmin, maxKmin, minKmax, maxKmax, minP, maxP)
		}
	}
	// Log spacing: consecutive kmax levels share one ratio.
	lv := c.KmaxLevels()
	if lv[0] != 100_000 || lv[len(lv)-1] != 10_000_000 {
		t.Fatalf("kmax levels %v, want 100KB..10MB", lv)
	}
	for i := 1; i < len(lv); i++ {
		if r := float64(lv[i]) / float64(lv[i-1]); math.Abs(r-math.Pow(100, 1.0/18)) > 0.01 {
			t.Fatalf("kmax step %d ratio %g, want %g", i, r, math.Pow(100, 1.0/18))
		}
	}
}

func TestCatalogueRelativeAndHold(t *testing.T) {
	c := DefaultCatalogue()
	// A grid point at 100G: kmax 774 KB (level 8), kmin 50% (387 KB), pmax 1%.
	a := c.Absolute(8, 0, 1)
	s := c.Setting(a, 100e9, Setting{})
	if s.KmaxBytes != 774_000 || s.KminBytes != 387_000 || s.Pmax != 0.01 {
		t.Fatalf("grid (8,0,1) = %+v, want 387000/774000/0.01", s)
	}
	if got := c.Describe(a); got != "kmin 387KB kmax 774KB pmax 1% @100G" {
		t.Fatalf("Describe = %q", got)
	}
	if got := c.Setting(ActionHold, 100e9, s); got != s {
		t.Fatalf("hold changed %+v to %+v", s, got)
	}
	up := c.Setting(ActionKmaxUp, 100e9, s)
	if up.KmaxBytes != 1_000_000 || up.KminBytes != 500_000 || up.Pmax != 0.01 {
		t.Fatalf("kmax up from 774KB = %+v, want kmax 1MB kmin 500KB", up)
	}
	if down := c.Setting(ActionKmaxDown, 100e9, up); down != s {
		t.Fatalf("kmax down after up = %+v, want %+v", down, s)
	}
	if k := c.Setting(ActionKminUp, 100e9, s); k.KminBytes != 696_600 || k.KmaxBytes != 774_000 {
		t.Fatalf("kmin up = %+v, want kmin 696.6KB", k)
	}
	if p := c.Setting(ActionPmaxDown, 100e9, s); p.Pmax != 0.003 {
		t.Fatalf("pmax down = %+v, want 0.3%%", p)
	}
	// At the top edge a raise keeps the snapped setting.
	top := c.Setting(c.Absolute(18, 1, 1), 100e9, Setting{})
	if got := c.Setting(ActionKmaxUp, 100e9, top); got != top {
		t.Fatalf("kmax up at the top = %+v, want %+v", got, top)
	}
	// Relative moves scale with rate: at 400G the same move gives 4x bytes.
	s400 := c.Setting(a, 400e9, Setting{})
	if got := c.Setting(ActionKmaxUp, 400e9, s400); got.KmaxBytes != 4*1_000_000 {
		t.Fatalf("kmax up at 400G = %d, want %d", got.KmaxBytes, 4*1_000_000)
	}
	// Off-grid settings snap: SONiC default 1 MiB/2 MiB/5% is nearest to
	// kmax 2.154 MB, ratio 0.5, pmax 1% (the highest Pmax level).
	near := c.Nearest(Setting{KminBytes: 1_048_576, KmaxBytes: 2_097_152, Pmax: 0.05}, 100e9)
	if i, j, l, _ := c.Grid(near); i != 12 || j != 0 || l != 1 {
		t.Fatalf("nearest to SONiC default = (%d,%d,%d), want (12,0,1)", i, j, l)
	}
	// Bad input holds.
	for _, bad := range []struct {
		a    int
		rate float64
	}{{-1, 100e9}, {c.Len(), 100e9}, {a, 0}, {a, math.NaN()}, {ActionKmaxUp, math.Inf(1)}} {
		if got := c.Setting(bad.a, bad.rate, s); got != s {
			t.Fatalf("Setting(%d, %g) = %+v, want current", bad.a, bad.rate, got)
		}
	}
	if !strings.Contains(c.Describe(999), "invalid") {
		t.Fatalf("Describe(999) = %q", c.Describe(999))
	}
	var zero Catalogue
	if zero.Len() != NumRelativeActions || zero.Setting(ActionKmaxUp, 100e9, s) != s || zero.Nearest(s, 100e9) != ActionHold {
		t.Fatal("zero catalogue must only hold")
	}
}

func TestNewCatalogueErrors(t *testing.T) {
	for _, c := range []struct {
		kmax   []int64
		ratios []float64
		pmax   []float64
		want   string
	}{
		{nil, []float64{0.1}, []float64{0.1}, "non-empty"},
		{[]int64{100, 50}, []float64{0.1}, []float64{0.1}, "kmax level 1"},
		{[]int64{100}, []float64{1.5}, []float64{0.1}, "kmin ratio 0"},
		{[]int64{100}, []float64{0.1}, []float64{0}, "pmax level 0"},
	} {
		if _, err := NewCatalogue(c.kmax, c.ratios, c.pmax); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewCatalogue(%v, %v, %v) err = %v, want %q", c.kmax, c.ratios, c.pmax, err, c.want)
		}
	}
}

func k1i(c Catalogue, a int) int64 {
	i, _, _, _ := c.Grid(a)
	return c.KmaxLevels()[i]
}

// Relative moves from any setting, even off the grid, land on the grid,
// move one step along one axis from the nearest point, and keep kmin <= kmax.
func TestCatalogueRelativeProperty(t *testing.T) {
	c := DefaultCatalogue()
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 2000; n++ {
		rate := []float64{10e9, 25e9, 100e9, 200e9, 400e9, 800e9}[rng.IntN(6)]
		kmax := int64(math.Exp(rng.Float64()*math.Log(1e8))) + 1
		cur := Setting{KminBytes: rng.Int64N(kmax + 1), KmaxBytes: kmax, Pmax: rng.Float64() + 1e-9, HeadroomBytes: 5}
		i0, j0, l0, _ := c.Grid(c.Nearest(cur, rate))
		for a := ActionKmaxUp; a < NumRelativeActions; a++ {
			s := c.Setting(a, rate, cur)
			if s.KminBytes > s.KmaxBytes || !(s.Pmax > 0 && s.Pmax <= 1) || s.HeadroomBytes != 5 {
				t.Fatalf("%s from %+v at %g: %+v", c.Describe(a), cur, rate, s)
			}
			g := c.Nearest(s, rate)
			if c.Setting(g, rate, cur) != s {
				t.Fatalf("%s from %+v at %g: %+v is off the grid", c.Describe(a), cur, rate, s)
			}
			i, j, l, _ := c.Grid(g)
			moved := abs(i-i0) + abs(j-j0) + abs(l-l0)
			if moved > 1 {
				t.Fatalf("%s from grid (%d,%d,%d) went to (%d,%d,%d)", c.Describe(a), i0, j0, l0, i, j, l)
			}
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestCataloguePFCActions: the PFC part of an act-v3 joint action moves
// headroom (as multiples of the floor, never below it) or alpha on top of
// the ECN part's setting, and keeps the PG where the switch does not say
// what it needs; a joint action below ECNLen is the act-v2 action.
func TestCataloguePFCActions(t *testing.T) {
	c := DefaultCatalogue()
	cur := Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 90_000, Alpha: 1}
	var hd, al []float64
	for _, ecn := range []int{ActionHold, ActionKmaxUp, c.Absolute(3, 1, 0)} {
		want := c.SettingFor(ecn, 100e9, cur, 60_000)
		if want.HeadroomBytes != cur.HeadroomBytes || want.Alpha != cur.Alpha {
			t.Fatalf("ECN action %d changed PFC knobs: %+v", ecn, want)
		}
		for pfc := 0; pfc < c.PFCLen(); pfc++ {
			j := c.Joint(ecn, pfc)
			if e, p := c.Split(j); e != ecn || p != pfc {
				t.Fatalf("Split(Joint(%d, %d)) = %d, %d", ecn, pfc, e, p)
			}
			s := c.SettingFor(j, 100e9, cur, 60_000)
			if s.KminBytes != want.KminBytes || s.KmaxBytes != want.KmaxBytes || s.Pmax != want.Pmax {
				t.Fatalf("joint %d (%s): ECN %+v, want the ECN action's %+v", j, c.Describe(j), s, want)
			}
			h, _, ok := c.PFC(pfc)
			switch {
			case pfc == 0:
				if ok || s != want {
					t.Fatalf("keep: %+v", s)
				}
			case h >= 0:
				if s.HeadroomBytes < 60_000 || s.Alpha != 1 {
					t.Fatalf("headroom action %d: %+v (floor 60000)", pfc, s)
				}
				if ecn == ActionHold {
					hd = append(hd, float64(s.HeadroomBytes))
				}
				if u := c.SettingFor(j, 100e9, cur, 0); u.HeadroomBytes != cur.HeadroomBytes {
					t.Fatalf("headroom action %d with the floor unknown: %+v, want kept", pfc, u)
				}
			default:
				if s.HeadroomBytes != cur.HeadroomBytes {
					t.Fatalf("alpha action %d changed headroom: %+v", pfc, s)
				}
				if ecn == ActionHold {
					al = append(al, s.Alpha)
				}
				noAlpha := cur
				noAlpha.Alpha = 0
				if u := c.SettingFor(j, 100e9, noAlpha, 60_000); u.Alpha != 0 {
					t.Fatalf("alpha action %d with alpha unknown: %+v, want kept", pfc, u)
				}
			}
		}
	}
	if len(hd) != 4 || hd[0] != 60_000 || hd[3] != 120_000 || len(al) != 6 || al[0] != 1.0/16 || al[5] != 2 {
		t.Fatalf("headrooms %v, alphas %v; want 60000..120000 and 1/16..2", hd, al)
	}
	if d := c.Describe(c.Joint(ActionHold, 1+4+1)); d != "hold, alpha 1/8" {
		t.Fatalf("Describe = %q", d)
	}
	if _, err := c.WithPFC([]float64{0.5}, nil); err == nil {
		t.Fatal("headroom factor below 1 accepted")
	}
}
